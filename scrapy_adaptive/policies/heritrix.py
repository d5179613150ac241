"""The thesis's WaitEvaluator (Sigurðsson 2005, 6.3.2), with its defaults.

* first visit (no wait yet): the initial wait, halved when the server sends
  no Last-Modified (such pages are about twice as likely to change, thesis
  ch. 5) and scaled per link hop from the seed if a depth factor is set;
* changed: the last wait ÷ ``changed_factor``;
* unchanged: the last wait × ``unchanged_factor``;
* unknown (no body to compare): the fixed default wait;
* optionally the time the visit was overdue is added to the last wait
  before the factor (the wait really observed);
* always clamped to [min, max].

A multiplicative rule settles where P(change per visit) =
ln a / (ln a + ln b): one change in two visits with the 1.5/1.5 defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..frontier.record import ChangeState, Visit
from .base import WaitParams, WaitPolicy


class HeritrixWaitPolicy(WaitPolicy):
    """Multiplicative wait adjustment on change / no change."""

    def __init__(self, params: WaitParams) -> None:
        self.p = params

    @classmethod
    def from_params(cls, params: WaitParams) -> HeritrixWaitPolicy:
        return cls(params)

    def initial_wait(self, visit: Visit) -> float:
        p = self.p
        wait = p.initial
        if not visit.last_modified:
            wait *= p.no_last_modified_factor
        if visit.depth:
            wait *= p.depth_factor**visit.depth
        return wait

    def next_wait(self, history: Mapping[str, Any], visit: Visit) -> float:
        p = self.p
        last = history.get("wait")
        if visit.change is ChangeState.UNKNOWN:
            wait = p.default
        elif not history.get("visits") or last is None:
            wait = self.initial_wait(visit)
        else:
            base = float(last)
            if p.use_overdue and visit.overdue:
                base += visit.overdue
            if visit.change is ChangeState.CHANGED:
                wait = base / p.changed_factor
            else:
                wait = base * p.unchanged_factor
        return p.clamp(wait)
