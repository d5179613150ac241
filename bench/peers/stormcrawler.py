"""StormCrawler's ``AdaptiveScheduler`` as a wait policy.

Changed: the interval moves a fraction ``fetch_interval_decrement`` of the
way down to the minimum, ``(1 − d)·I + d·min`` (a smooth approach rather
than a jump); unchanged (or a 304): ``I·(1 + i)``.  Defaults: d = i = 0.5,
min 60 minutes, max 14 days.
"""

from __future__ import annotations

from scrapy_adaptive.policies.base import WaitPolicy

from .interval import IntervalRule


class StormCrawlerWaitPolicy(IntervalRule, WaitPolicy):
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
        super().__init__(initial, minimum, maximum, default)
        self.decrement = decrement
        self.increment = increment

    def changed(self, wait: float) -> float:
        return (1.0 - self.decrement) * wait + self.decrement * self.minimum

    def unchanged(self, wait: float) -> float:
        return wait * (1.0 + self.increment)
