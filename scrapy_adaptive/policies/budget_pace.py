"""The crawl's revisit pace: the scale of every snap-back wait, held to a budget.

The snap-back rule plans each URL's wait as a normalised wait times one
crawl-wide scale; :class:`BudgetPace` moves that scale so that the revisits
the waits ask for add up to the crawl's budget (``ADAPTIVE_BUDGET``, or the
share of the politeness capacity).  One pace serves a whole crawl: it is
owned by :class:`~.crawl_state.CrawlWide`, which builds it once.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .history import DAY, clamp

if TYPE_CHECKING:
    from .allocator import RateAllocator

#: revisits the budget is held over when no window is configured: about three
#: weeks at 240 revisits a day.  Within it spending follows the rule (a burst
#: is followed, not cut to the daily mean); over it the budget is spent.  A
#: longer horizon follows longer bursts but lets the crawl spend well under
#: (or over) its budget for months (the trade-off:
#: ``docs/lab/policy-real-traces.md``, "What was tried")
HORIZON_REVISITS = 5_000.0
#: how many times per horizon the correction may move by the whole measured ratio
CORRECTIONS = 10.0
#: revisits counted before the loop acts (a rate measured on fewer is noise)
ENGAGE_REVISITS = 100


class BudgetPace:
    """Crawl-wide: the scale s of every wait, held to a revisit budget.

    At scale 1 a URL whose normalised wait is u asks for 1/u revisits per
    second; each URL registers its u as it changes (:meth:`observe`), so
    the crawl's per-URL demand d = Σ(1/u)/N is known at every moment.  With
    a budget B (revisits per second over the crawl's N URLs) the scale is

        s = c · d̄ / (B/N)

    where d̄ is d averaged over the crawl's history (time-weighted, forgetting
    over ``horizon`` seconds), so s moves slowly: spending follows the rule
    within that horizon (more while pages are in a burst, less while they
    are quiet) and is held to B on average over it, where a loop on the
    recent revisit rate would cut spending to the mean while a burst lasts.
    c corrects what d does not see (the clamps to the minimum and maximum
    wait, late visits): it is multiplied, at each visit dt seconds after the
    last, by (R/∫B)^(``gain``·dt·:data:`CORRECTIONS`/horizon), where R and
    ∫B are the realised and budgeted revisits over the horizon, and stays
    within ``limits``.

    The horizon defaults to the time the budget buys :data:`HORIZON_REVISITS`
    revisits (the crawl's own time scale, compressed or not).  Without a
    budget s = 1.  A *ceiling* (the crawl's politeness capacity, when no
    budget is configured) is the most the crawl may spend, not what it
    must: the policy keeps s from falling below a least scale of its own
    (:meth:`SnapBackWaitPolicy.least_scale`).  State is small and JSON-safe
    (:meth:`state`, :meth:`restore`).

    Inside a policy that also holds the budget with a rate allocator (the
    union), the pace keeps no loop of its own (:meth:`follow`): c is the
    inverse of the allocator's correction, so one loop holds the crawl to
    its budget.  The pace's own loop, faster and wider than the
    allocator's, would cut the snap-back part's spending back to the mean
    whenever its pages are in a burst; following the allocator, that
    spending follows the bursts and is held to the budget over the
    allocator's window.
    """

    def __init__(
        self,
        budget: float | None = None,
        *,
        horizon: float | None = None,
        gain: float = 1.0,
        limits: tuple[float, float] = (0.1, 10.0),
    ) -> None:
        if budget is not None and budget <= 0:
            raise ValueError("the budget must be positive (revisits per second)")
        self.budget = budget
        #: the budget is a ceiling (capacity), not a target (:meth:`set_budget`)
        self.ceiling = False
        self.horizon = horizon
        self.gain = gain
        self.limits = limits
        self.demand = 0.0  #: Σ 1/u over the registered URLs
        self.urls = 0  #: registered URLs
        self.correction = 1.0  #: c
        #: decayed integrals over the horizon: ∫d dt, ∫dt, revisits, ∫B dt
        self._sums = [0.0, 0.0, 0.0, 0.0]
        self._t_last: float | None = None
        #: the loop that corrects the scale when not this pace's own (:meth:`follow`)
        self._loop: RateAllocator | None = None

    def follow(self, allocator: RateAllocator) -> None:
        """Take the correction from *allocator*'s budget loop instead of keeping one.

        The allocator plans ``budget × correction`` revisits, so the scale is
        divided by its correction: both parts of the policy move together.
        """
        self._loop = allocator

    def set_budget(self, budget: float | None, *, ceiling: bool = False) -> None:
        """Revisits per second over the crawl, or None (scale 1: the plain rule).

        *ceiling*: the most the crawl may spend (its politeness capacity), not
        what it is asked to spend.
        """
        self.budget = budget
        self.ceiling = ceiling and budget is not None

    def observe(self, old: float | None, new: float, now: float | None, *, revisit: bool) -> None:
        """A URL visited at *now* moved its normalised wait from *old* (None:
        a new URL) to *new*; *revisit*: the visit counts as one.  What a
        policy paced by this tells it at every visit, in one call: the URL's
        demand is registered, then the clock moves to *now*, integrating
        demand and budget, and the correction loop acts."""
        if old is None:
            self.urls += 1
        self.demand = max(0.0, self.demand + 1.0 / new - (1.0 / old if old else 0.0))
        if now is None:
            return
        if self._t_last is None:
            self._t_last = now
        dt = max(0.0, now - self._t_last)
        self._t_last = max(now, self._t_last)
        if self.horizon is not None:
            span = self.horizon
        else:
            span = HORIZON_REVISITS / self.budget if self.budget else 30 * DAY
        keep = math.exp(-dt / span)
        sums = self._sums
        if dt > 0 and self.urls:
            # exact integral of a constant over dt, decayed: (1 − keep)·span
            w = -math.expm1(-dt / span) * span
            sums[0] = sums[0] * keep + w * self.demand / self.urls
            sums[1] = sums[1] * keep + w
            sums[3] = sums[3] * keep + w * (self.budget or 0.0)
            sums[2] *= keep
        sums[2] += revisit
        if self._loop is None and self.budget and dt > 0 and sums[3] > 0 and sums[2] >= ENGAGE_REVISITS:
            exponent = min(1.0, self.gain * dt * CORRECTIONS / span)
            corrected = clamp(self.correction * (sums[2] / sums[3]) ** exponent, *self.limits)
            if self.ceiling and corrected < self.correction:
                # a ceiling left unspent is not a shortfall: the loop may slow
                # the crawl down to it but not wind up to spend it, or it would
                # plan far too fast for months once the ceiling binds
                corrected = max(corrected, min(self.correction, 1.0))
            self.correction = corrected

    def scale(self) -> float:
        """The factor every normalised wait is multiplied by now: c · d̄ / (B/N)."""
        if not self.budget or not self.urls:
            return 1.0
        d_sum, t_sum = self._sums[0], self._sums[1]
        mean = d_sum / t_sum if t_sum > 0 else self.demand / self.urls
        per_url = self.budget / self.urls
        return self.correcting * mean / per_url if mean > 0 else 1.0

    @property
    def correcting(self) -> float:
        """c: the factor on the demand-based scale (this pace's own, or its loop's)."""
        return 1.0 / self._loop.correction if self._loop is not None else self.correction

    def state(self) -> dict[str, Any]:
        return {
            "demand": self.demand,
            "urls": self.urls,
            "correction": self.correction,
            "sums": list(self._sums),
            "t": self._t_last,
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        self.demand = float(state["demand"])
        self.urls = int(state["urls"])
        self.correction = float(state["correction"])
        self._sums = [float(x) for x in state["sums"]]
        self._t_last = state["t"]
