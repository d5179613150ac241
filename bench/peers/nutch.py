"""Apache Nutch's ``AdaptiveFetchSchedule`` as a wait policy.

Unmodified: interval × (1 + inc_rate); modified: interval × (1 − dec_rate);
clamped to [min, max].  Defaults are those of ``nutch-default.xml``
(inc 0.4, dec 0.2, min 60 s, max 365 days).  The rule settles where the
probability of seeing a change per visit is ln(1.4) / (ln 1.4 − ln 0.8) ≈ 0.60.

Nutch's optional ``sync_delta`` (shift the schedule toward the server's
Last-Modified) is deliberately left out: its known defect (NUTCH-1564)
scheduled unmodified pages into the past, and the rate policies of
:mod:`.rate` use Last-Modified in a principled way instead.
"""

from __future__ import annotations

from scrapy_adaptive.policies.base import WaitPolicy

from .interval import IntervalRule

YEAR = 365 * 86_400.0


class NutchWaitPolicy(IntervalRule, WaitPolicy):
    """Additive-rate multiplicative adjustment of the fetch interval."""

    def __init__(
        self,
        initial: float = 86_400.0,
        minimum: float = 60.0,
        maximum: float = YEAR,
        inc_rate: float = 0.4,
        dec_rate: float = 0.2,
        default: float | None = None,
    ) -> None:
        if not 0.0 <= dec_rate < 1.0 or inc_rate < 0.0:
            raise ValueError("Nutch rates: 0 <= dec_rate < 1 and inc_rate >= 0")
        super().__init__(initial, minimum, maximum, default)
        self.inc_rate = inc_rate
        self.dec_rate = dec_rate

    def changed(self, wait: float) -> float:
        return wait * (1.0 - self.dec_rate)

    def unchanged(self, wait: float) -> float:
        return wait * (1.0 + self.inc_rate)
