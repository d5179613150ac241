"""StormCrawler's ``AdaptiveScheduler`` as a wait policy.

Changed: the interval moves a fraction ``fetch_interval_decrement`` of the
way down to the minimum, ``(1 − d)·I + d·min`` (a smooth approach rather
than a jump); unchanged (or a 304): ``I·(1 + i)``.  Defaults: d = i = 0.5,
min 60 minutes, max 14 days.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..frontier.record import ChangeState, Visit
from .base import WaitParams, WaitPolicy
from .history import clamp, is_first_visit


class StormCrawlerWaitPolicy(WaitPolicy):
    """Smooth decrease toward the minimum on change, growth otherwise."""

    def __init__(
        self,
        initial: float = 86_400.0,
        minimum: float = 3_600.0,
        maximum: float = 14 * 86_400.0,
        decrement: float = 0.5,
        increment: float = 0.5,
        default: float | None = None,
    ) -> None:
        if not 0.0 <= decrement <= 1.0 or increment < 0.0:
            raise ValueError("StormCrawler rates: 0 <= decrement <= 1 and increment >= 0")
        self.initial = initial
        self.minimum = minimum
        self.maximum = maximum
        self.decrement = decrement
        self.increment = increment
        self.default = initial if default is None else default

    @classmethod
    def from_params(cls, params: WaitParams) -> StormCrawlerWaitPolicy:
        """Initial, default and bounds from the configured wait numbers."""
        return cls(initial=params.initial, minimum=params.minimum, maximum=params.maximum, default=params.default)

    def next_wait(self, history: Mapping[str, Any], visit: Visit) -> float:
        if is_first_visit(history):
            wait = self.initial
        elif visit.change is ChangeState.UNKNOWN:
            wait = self.default
        elif visit.change is ChangeState.CHANGED:
            wait = (1.0 - self.decrement) * float(history["wait"]) + self.decrement * self.minimum
        else:
            wait = float(history["wait"]) * (1.0 + self.increment)
        return clamp(wait, self.minimum, self.maximum)
