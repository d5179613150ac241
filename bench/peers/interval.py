"""The skeleton of the interval-update peer rules (Nutch, StormCrawler)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Self

from scrapy_adaptive.model import ChangeState, Visit
from scrapy_adaptive.policies.base import WaitParams
from scrapy_adaptive.policies.history import clamp, is_first_visit


class IntervalRule:
    """The skeleton of the interval-update rules (Nutch, StormCrawler).

    First visit: ``initial``; unknown change: ``default``; otherwise the
    subclass's ``changed`` / ``unchanged`` update of the last wait; always
    clamped to [``minimum``, ``maximum``].  Mixed into a ``WaitPolicy``.
    """

    def __init__(self, initial: float, minimum: float, maximum: float, default: float | None) -> None:
        self.initial = initial
        self.minimum = minimum
        self.maximum = maximum
        self.default = initial if default is None else default

    @classmethod
    def from_params(cls, params: WaitParams) -> Self:
        """Initial, default and bounds from the configured wait numbers."""
        return cls(initial=params.initial, minimum=params.minimum, maximum=params.maximum, default=params.default)

    def changed(self, wait: float) -> float:
        raise NotImplementedError

    def unchanged(self, wait: float) -> float:
        raise NotImplementedError

    def next_wait(self, history: Mapping[str, Any], visit: Visit) -> float:
        if is_first_visit(history):
            wait = self.initial
        elif visit.change is ChangeState.UNKNOWN:
            wait = self.default
        elif visit.change is ChangeState.CHANGED:
            wait = self.changed(float(history["wait"]))
        else:
            wait = self.unchanged(float(history["wait"]))
        return clamp(wait, self.minimum, self.maximum)
