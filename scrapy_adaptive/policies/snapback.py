"""Snap back after a change, back off while quiet, and spend a budget doing it.

Real pages change in clusters: a change makes another one soon far likelier
than the page's long-run rate says (an edit session, a rollout, a page
whose bytes move at every crawl for a season).  The rule that follows such
pages best is also the simplest, StormCrawler's: after a change the wait
moves halfway down to a short floor, ``(I + m)/2``; after a quiet visit it
grows by half, ``1.5·I``.  It forgets in a few visits, so it is back near
the floor within a visit or two of a burst starting and far from the page
within a few of it ending, where a rate estimate with a long memory plans
past the follow-ups (the rate estimates compared with it:
``docs/lab/policy-real-traces.md``, "What was tried").

What the rule lacks is a budget: its pace is set by its constants (the
floor, the first wait, the bounds), so it spends whatever they imply.  This
policy keeps the rule's dynamics in *normalised* time and multiplies every
wait by one crawl-wide **scale** s, the one knob:

* per URL: u, the last wait in normalised seconds; first visit
  u = ``initial``; changed u ← (1 − d)·u + d·m (m = ``floor``); unchanged
  u ← (1 + i)·u; u stays within [m, ``maximum``]; unknown verdict (no body
  to compare): u is kept;
* the wait is s·u, clamped to [``minimum``, ``maximum``] seconds.

With a budget, a crawl-wide :class:`BudgetPace` sets s from the rule's own
demand (what the URLs' normalised waits ask for, averaged over a horizon of
a few weeks) and corrects it slowly by the realised revisits.  Scaling every
time constant of a multiplicative rule is how a rule is held to a number of
fetches, so the policy is the rule at whatever budget it is given.  Within
the horizon spending follows the rule's bursts; over it the budget is spent.
A rule at a fixed scale may spend unevenly over months, which a budget does
not allow.  Without a budget s = 1 and the policy is StormCrawler's rule
with the configured numbers.
Under a ceiling (a crawl without ``ADAPTIVE_BUDGET`` is given its
politeness capacity) the pace sets s, never below :meth:`~SnapBackWaitPolicy.least_scale`.

A noise guard (:class:`~.noise.NoiseDetector`) holds pages whose bytes differ
at every fetch at the maximum wait, as for the Heritrix policy (with
normalised change detection it stays quiet).

Per-URL memory: ``{"su": u}`` plus the noise guard's few numbers (JSON-safe).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..config.table import DEFAULTS
from ..model import ChangeState, Visit
from .allocator import RateAllocator
from .base import WaitParams, WaitPolicy
from .history import DAY, clamp, elapsed, is_first_visit, policy_memory, visit_time
from .noise_guard import NoiseDetector, probe_wait

#: the policy-memory key of the URL's normalised last wait
WAIT = "su"
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
    second; each URL registers its u as it changes (:meth:`register`), so
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

    @property
    def correcting(self) -> float:
        """c: the factor on the demand-based scale (this pace's own, or its loop's)."""
        return 1.0 / self._loop.correction if self._loop is not None else self.correction

    def set_budget(self, budget: float | None, *, ceiling: bool = False) -> None:
        """Revisits per second over the crawl, or None (scale 1: the plain rule).

        *ceiling*: the most the crawl may spend (its politeness capacity), not
        what it is asked to spend.
        """
        self.budget = budget
        self.ceiling = ceiling and budget is not None

    def span(self) -> float:
        if self.horizon is not None:
            return self.horizon
        return HORIZON_REVISITS / self.budget if self.budget else 30 * DAY

    def register(self, old: float | None, new: float) -> None:
        """A URL's normalised wait moved from *old* (None: a new URL) to *new*."""
        if old is None:
            self.urls += 1
        self.demand = max(0.0, self.demand + 1.0 / new - (1.0 / old if old else 0.0))

    def observe(self, old: float | None, new: float, now: float | None, *, revisit: bool) -> None:
        """A URL visited at *now* moved its normalised wait from *old* to *new*
        (:meth:`register`, then :meth:`advance`): what a policy paced by this
        tells it at every visit."""
        self.register(old, new)
        self.advance(now, revisit)

    def scale(self) -> float:
        """The factor every normalised wait is multiplied by now."""
        if not self.budget or not self.urls:
            return 1.0
        d_sum, t_sum = self._sums[0], self._sums[1]
        mean = d_sum / t_sum if t_sum > 0 else self.demand / self.urls
        per_url = self.budget / self.urls
        return self.correcting * mean / per_url if mean > 0 else 1.0

    def advance(self, now: float | None, revisit: bool) -> None:
        """Move the clock to *now* (integrating demand and budget); count a revisit."""
        if now is None:
            return
        if self._t_last is None:
            self._t_last = now
        dt = max(0.0, now - self._t_last)
        self._t_last = max(now, self._t_last)
        keep = math.exp(-dt / self.span())
        sums = self._sums
        if dt > 0 and self.urls:
            # exact integral of a constant over dt, decayed: (1 − keep)·span
            w = -math.expm1(-dt / self.span()) * self.span()
            sums[0] = sums[0] * keep + w * self.demand / self.urls
            sums[1] = sums[1] * keep + w
            sums[3] = sums[3] * keep + w * (self.budget or 0.0)
            sums[2] *= keep
        sums[2] += revisit
        if self._loop is None and self.budget and dt > 0 and sums[3] > 0 and sums[2] >= ENGAGE_REVISITS:
            exponent = min(1.0, self.gain * dt * CORRECTIONS / self.span())
            corrected = clamp(self.correction * (sums[2] / sums[3]) ** exponent, *self.limits)
            if self.ceiling and corrected < self.correction:
                # a ceiling left unspent is not a shortfall: the loop may slow
                # the crawl down to it but not wind up to spend it, or it would
                # plan far too fast for months once the ceiling binds
                corrected = max(corrected, min(self.correction, 1.0))
            self.correction = corrected

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


class SnapBackWaitPolicy(WaitPolicy):
    """StormCrawler's snap-back rule in normalised time, scaled to a budget."""

    def __init__(
        self,
        pace: BudgetPace | None = None,
        *,
        minimum: float = DEFAULTS["ADAPTIVE_WAIT_MIN"],
        maximum: float = 365 * DAY,
        initial: float = DAY,
        floor: float | None = None,
        decrement: float = 0.5,
        increment: float = 0.5,
        noise: NoiseDetector | None = None,
    ) -> None:
        if not 0.0 <= decrement <= 1.0 or increment < 0.0:
            raise ValueError("rates: 0 <= decrement <= 1 and increment >= 0")
        if maximum < minimum:
            raise ValueError("maximum must not be lower than minimum")
        self.pace = pace or BudgetPace()
        self.minimum = minimum
        self.maximum = maximum
        #: the snap target m, in normalised seconds (the minimum wait unless set)
        self.floor = minimum if floor is None else floor
        self.initial = clamp(initial, self.floor, maximum)
        self.decrement = decrement
        self.increment = increment
        self.noise = noise
        #: how many times ``initial`` a URL's first normalised wait is, from
        #: what its first answer said (None: always ``initial``); the union
        #: sets it from its rate part's reading of the first answer
        self.first_answer: Callable[[Mapping[str, Any], Visit], float] | None = None

    @classmethod
    def from_params(cls, params: WaitParams) -> SnapBackWaitPolicy:
        """Bounds, floor and first wait from the wait numbers; ``ADAPTIVE_BUDGET``
        revisits per day (None: the plain rule).

        One :class:`BudgetPace` serves every instance built from the params of
        one stack (``params.crawl.pace``), so the crawl spends one budget.
        """
        pace = params.crawl.pace
        if not isinstance(pace, BudgetPace):
            pace = BudgetPace(None if params.budget is None else params.budget / DAY, horizon=params.budget_window)
            params.crawl.pace = pace
        return cls(
            pace,
            minimum=params.minimum,
            maximum=params.maximum,
            initial=params.initial,
            noise=NoiseDetector(probe_wait(params.minimum)),
        )

    def least_scale(self) -> float:
        """The lowest scale the crawl's pace may set (0: none).

        Under a ceiling (no budget: the crawl's politeness capacity is the
        most it may spend) the scale from the pace falls as pages go quiet,
        to keep the capacity spent; pages that never change would then take
        whatever the changing ones leave, revisited at the minimum wait for
        ever.  The least scale is the one at which a new URL's first wait is
        the minimum: where capacity is short the pace's scale is above it
        and decides, where it is plentiful a new page is checked after the
        minimum wait, each quiet visit makes its wait 1.5 times longer (up
        to the maximum), and the rest of the capacity is left unspent.
        """
        return self.floor / self.initial if self.pace.ceiling else 0.0

    def scale(self) -> float:
        """The factor on this policy's normalised waits now."""
        return max(self.pace.scale(), self.least_scale())

    def step(self, u: float, change: ChangeState) -> float:
        """The rule in normalised seconds: snap toward the floor, or back off
        (to the maximum wait at the least scale)."""
        if change is ChangeState.CHANGED:
            u = (1.0 - self.decrement) * u + self.decrement * self.floor
        elif change is ChangeState.UNCHANGED:
            u = u * (1.0 + self.increment)
        least = self.least_scale()
        return clamp(u, self.floor, self.maximum / least if least > 0 else self.maximum)

    def normalised(self, history: Mapping[str, Any], visit: Visit, memory: dict[str, Any], old: float | None) -> float:
        """The URL's next wait at scale 1 (normalised seconds).

        A first visit starts at ``initial``, times what the first answer
        says (:attr:`first_answer`): a page whose headers say it is slow
        starts further off, and the rule takes it from there (a change
        snaps it back as from any other wait)."""
        if is_first_visit(history) or old is None:
            factor = self.first_answer(memory, visit) if self.first_answer is not None else 1.0
            if not (factor > 0 and math.isfinite(factor)):
                factor = 1.0
            least = self.least_scale()
            return clamp(self.initial * factor, self.floor, self.maximum / least if least > 0 else self.maximum)
        return self.step(old, visit.change)

    def next_wait(self, history: Mapping[str, Any], visit: Visit) -> float:
        memory = policy_memory(history)
        stored = memory.get(WAIT)
        old = None if stored is None else float(stored)
        u = self.normalised(history, visit, memory, old)
        self.pace.observe(old, u, visit_time(history, visit), revisit=not is_first_visit(history))
        memory[WAIT] = u
        wait = clamp(self.scale() * u, self.minimum, self.maximum)
        if self.noise is not None:
            verdict = self.noise.observe(memory, visit.change, elapsed(history, visit))
            wait = self.noise.wait(memory, verdict, wait, self.maximum)
        visit.policy_state = memory
        return wait
