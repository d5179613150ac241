"""A drifting change rate, learned with forgetting, visited at a common hazard.

Explored, not shipped: see docs/lab/policy-real-traces.md.

Real pages do not change at a steady rate: they are quiet for months, then
change several times in a few days, and a rate estimated over a long
history plans past those follow-ups.  This policy keeps, per URL, a
Gamma(α, β) belief over the page's *current* rate λ and forgets old
evidence at every observation:

* an interval of t seconds that saw no change:   α ← γα,       β ← γβ + t;
* an interval of t seconds that saw a change:    α ← γα + 1,   β ← γβ + t/2
  (one change somewhere in the interval; ``1 − e^(−λt) ≈ λt·e^(−λt/2)``).

With only a few observations' worth of evidence (α, β small), the
belief's predictive distribution of the wait until the next change is
heavy-tailed: right after a change the expected hazard is high and it falls
as the page stays quiet, which is what clustered changes look like.  The
predictive probability that the page has changed w seconds after a visit
is ``1 − (β/(β + w))^α``: its cumulative hazard is ``α·ln(1 + w/β)``.

The next visit is when that cumulative hazard reaches a common threshold
r, the optimum's rule for a time-varying intensity (every interval carries
the same expected number of changes), so

    wait = β·(e^(r/α) − 1),   clamped to [minimum, maximum].

The dynamics follow from the model, not from hand-set factors: a quiet
visit grows the wait by about e^(r/α) (multiplicative back-off), a change
shrinks it (α grows, so does the hazard), and the forgetting factor γ
bounds how much evidence a URL keeps (1/(1 − γ) observations), so a page
that woke up is trusted to be awake within a few visits.

**The one knob** is r.  With a fetch budget, a crawl-wide :class:`HazardPace`
holds the realised revisit rate to the budget by moving r (a slow
multiplicative feedback loop, as the rate allocator's); without one, r is
set by the target precision p\\*: r = −ln(1 − p\\*), so a visit finds a
change with probability p\\* under the URL's belief.

**Cold start.**  A new URL starts from the population's belief: one
pseudo-observation at the geometric mean rate of the URLs of its politeness
queue (siblings), or of the whole crawl while its queue has taught too
little, or, before anything is known, at the rate that makes the first wait
``initial``.

A noise guard (:class:`~scrapy_adaptive.policies.noise_guard.NoiseDetector`) holds pages whose bytes
differ at every fetch at the maximum wait, as for the Heritrix policy; with
normalised change detection it stays quiet.

Per-URL memory: ``[α, β]`` and the noise guard's few numbers (JSON-safe).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scrapy_adaptive.model import ChangeState, Visit
from scrapy_adaptive.policies.base import WaitParams, WaitPolicy
from scrapy_adaptive.policies.history import DAY, clamp, elapsed, is_first_visit, policy_memory, visit_queue, visit_time
from scrapy_adaptive.policies.noise_guard import NoiseDetector

#: the policy-memory key of the URL's beliefs ``[α, β, A, B]`` (fast, slow)
BELIEF = "db"
#: where :meth:`DriftWaitPolicy.from_params` keeps the crawl's :class:`HazardPace`
PACE_KEY = "drift_pace"
#: the fast belief's forgetting γ: the last two observations' worth of evidence
FORGET = 0.5
#: the slow belief's forgetting: about ten observations (the URL's long-run rate)
MEMORY = 0.9
#: how strongly the fast belief is pulled to the slow one's mean, in
#: pseudo-observations held in steady state (small: a pull, not a vote)
ANCHOR = 0.25
#: weight of the population's belief for a new URL (pseudo-observations)
PRIOR_WEIGHT = 1.0
#: queues whose siblings taught fewer rates than this use the crawl-wide belief
SIBLINGS_MIN = 3
#: at most this many queues' pooled beliefs are kept (the oldest dropped)
QUEUES_KEPT = 10_000
#: revisits a budget window holds when none is configured (as the allocator)
WINDOW_REVISITS = 720.0


class HazardPace:
    """Crawl-wide state: the threshold r, the budget loop and the pooled belief.

    ``budget`` is revisits per second over the whole crawl, or None: then r
    is fixed at ``ratio``.  With a budget, every revisit is counted in an
    exponentially decayed window; once a window has passed, r is moved by
    ``(realised/budget)^(gain·dt/window)`` (more revisits than budgeted
    raise the threshold, so waits grow), within ``limits`` × the start
    value.  State is small and JSON-safe (:meth:`state`, :meth:`restore`).
    """

    def __init__(
        self,
        budget: float | None = None,
        *,
        ratio: float = math.log(2.0),
        window: float | None = None,
        gain: float = 0.5,
        limits: tuple[float, float] = (1e-3, 1e3),
    ) -> None:
        if budget is not None and budget <= 0:
            raise ValueError("the budget must be positive (revisits per second)")
        if not ratio > 0:
            raise ValueError("the hazard threshold must be positive")
        self.budget = budget
        self.ratio = ratio
        self.window = window
        self.gain = gain
        self.low, self.high = ratio * limits[0], ratio * limits[1]
        self._count = 0.0
        self._t0: float | None = None
        self._t_last: float | None = None
        #: pooled log-rates: queue -> [sum, count] (decayed), and the crawl's
        self._queues: dict[str, list[float]] = {}
        self._crawl = [0.0, 0.0]

    def set_budget(self, budget: float | None) -> None:
        """Revisits per second (None: keep r where it is)."""
        self.budget = budget

    @property
    def control_window(self) -> float:
        if self.window is not None:
            return self.window
        return WINDOW_REVISITS / self.budget if self.budget else 3 * DAY

    def note_fetch(self, now: float | None) -> None:
        """Count one revisit at *now* and let the loop act."""
        if now is None:
            return
        if self._t0 is None:
            self._t0 = self._t_last = now
        window = self.control_window
        last = self._t_last if self._t_last is not None else now
        dt = max(0.0, now - last)
        self._count = self._count * math.exp(-dt / window) + 1.0
        self._t_last = max(now, last)
        span = self._t_last - self._t0
        if self.budget is None or span < window or dt <= 0:
            return
        realised = self._count / (window * (1.0 - math.exp(-span / window)))
        exponent = clamp(self.gain * dt / window, 0.0, 1.0)
        self.ratio = clamp(self.ratio * (realised / self.budget) ** exponent, self.low, self.high)

    def learn(self, queue: str, log_rate: float) -> None:
        """Pool a URL's current log-rate into its queue's belief and the crawl's."""
        for cell in (self._queues.get(queue), self._crawl):
            if cell is None:
                if len(self._queues) >= QUEUES_KEPT:
                    self._queues.pop(next(iter(self._queues)))
                cell = self._queues[queue] = [0.0, 0.0]
            # decayed so the pool follows the crawl as rates drift
            cell[0] = 0.999 * cell[0] + log_rate
            cell[1] = 0.999 * cell[1] + 1.0

    def pooled_rate(self, queue: str) -> float | None:
        """The geometric mean rate of *queue*'s URLs (the crawl's while it has
        too few), or None before any URL was revisited."""
        cell = self._queues.get(queue)
        if cell is None or cell[1] < SIBLINGS_MIN:
            cell = self._crawl
        return math.exp(cell[0] / cell[1]) if cell[1] > 0 else None

    def state(self) -> dict[str, Any]:
        return {
            "ratio": self.ratio,
            "count": self._count,
            "t": [self._t0, self._t_last],
            "crawl": list(self._crawl),
            "queues": {q: list(c) for q, c in self._queues.items()},
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        self.ratio = float(state["ratio"])
        self._count = float(state["count"])
        self._t0, self._t_last = state["t"]
        self._crawl = [float(x) for x in state["crawl"]]
        self._queues = {str(q): [float(c[0]), float(c[1])] for q, c in state["queues"].items()}


def hazard_wait(alpha: float, beta: float, ratio: float) -> float:
    """Seconds until the belief's cumulative hazard ``α·ln(1 + w/β)`` reaches *ratio*."""
    return beta * math.expm1(min(ratio / max(alpha, 1e-9), 50.0))


class DriftWaitPolicy(WaitPolicy):
    """Forgetting Gamma belief per URL, anchored to its own long run; visit at a common cumulative hazard."""

    def __init__(
        self,
        pace: HazardPace | None = None,
        *,
        minimum: float = 3_600.0,
        maximum: float = 365 * DAY,
        initial: float = DAY,
        forget: float = FORGET,
        memory: float = MEMORY,
        anchor: float = ANCHOR,
        noise: NoiseDetector | None = None,
        surprise: bool = True,
    ) -> None:
        if not 0.0 < forget < 1.0 or not 0.0 < memory < 1.0:
            raise ValueError("forget and memory must be in (0, 1)")
        if anchor < 0:
            raise ValueError("anchor must be >= 0")
        if maximum < minimum:
            raise ValueError("maximum must not be lower than minimum")
        self.pace = pace or HazardPace()
        self.minimum = minimum
        self.maximum = maximum
        self.initial = clamp(initial, minimum, maximum)
        self.forget = forget
        self.memory = memory
        self.anchor = anchor
        self.noise = noise
        self.surprise = surprise

    @classmethod
    def from_params(cls, params: WaitParams) -> DriftWaitPolicy:
        """Bounds and first wait from the wait numbers; ``ADAPTIVE_BUDGET``
        revisits per day, else r from ``ADAPTIVE_TARGET_PRECISION``.

        One :class:`HazardPace` serves every instance built from the params
        of one stack (kept in ``params.shared`` when the params have it), so
        the crawl spends one budget.
        """
        shared = getattr(params, "shared", None)
        pace = shared.get(PACE_KEY) if isinstance(shared, dict) else None
        if pace is None:
            pace = HazardPace(
                None if params.budget is None else params.budget / DAY,
                ratio=-math.log1p(-params.target_precision),
                window=params.budget_window,
            )
            if isinstance(shared, dict):
                shared[PACE_KEY] = pace
        return cls(
            pace,
            minimum=params.minimum,
            maximum=params.maximum,
            initial=params.initial,
            noise=NoiseDetector(params.minimum or 1.0),
        )

    def prior(self, queue: str) -> tuple[float, float]:
        """The belief ``(α, β)`` of a URL nothing is known of: one
        pseudo-observation at its siblings' (or the crawl's) rate."""
        rate = self.pace.pooled_rate(queue)
        if rate is None or rate <= 0:
            # before any revisit: the rate whose first wait is ``initial``
            rate = math.expm1(min(self.pace.ratio / PRIOR_WEIGHT, 50.0)) * PRIOR_WEIGHT / self.initial
        return PRIOR_WEIGHT, PRIOR_WEIGHT / rate

    @staticmethod
    def evidence(interval: float, changed: bool) -> tuple[float, float]:
        """What one revisit adds to (α, β): a change somewhere in the interval
        (``1 − e^(−λt) ≈ λt·e^(−λt/2)``), or t seconds without one."""
        return (1.0, interval / 2.0) if changed else (0.0, interval)

    def observe(
        self, fast: tuple[float, float], slow: tuple[float, float], interval: float, changed: bool
    ) -> tuple[tuple[float, float], tuple[float, float]]:
        """Fold one revisit into both beliefs; the fast one is pulled toward
        the slow one's mean by ``anchor`` × (1 − γ) pseudo-observations."""
        da, db = self.evidence(interval, changed)
        m = self.memory
        slow = (m * slow[0] + da, m * slow[1] + db)
        g, pull = self.forget, (1.0 - self.forget) * self.anchor
        if self.surprise:
            quiet = math.exp(-fast[0] * math.log1p(interval / max(fast[1], 1e-12)))
            g *= (1.0 - quiet) if changed else quiet
        long_rate = max(slow[0], 1e-12) / max(slow[1], 1e-12)
        fast = (g * fast[0] + da + pull, g * fast[1] + db + pull / long_rate)
        return fast, slow

    def next_wait(self, history: Mapping[str, Any], visit: Visit) -> float:
        memory = policy_memory(history)
        queue = visit_queue(visit)
        stored = memory.get(BELIEF)
        if is_first_visit(history) or not stored or len(stored) < 4:
            fast = slow = self.prior(queue)
        else:
            fast, slow = (float(stored[0]), float(stored[1])), (float(stored[2]), float(stored[3]))
            interval = elapsed(history, visit)
            if interval is not None and visit.change is not ChangeState.UNKNOWN:
                fast, slow = self.observe(fast, slow, interval, visit.change is ChangeState.CHANGED)
                self.pace.learn(queue, math.log(max(slow[0], 1e-12) / max(slow[1], 1e-12)))
            self.pace.note_fetch(visit_time(history, visit))
        memory[BELIEF] = [fast[0], fast[1], slow[0], slow[1]]
        wait = clamp(hazard_wait(fast[0], fast[1], self.pace.ratio), self.minimum, self.maximum)
        if self.noise is not None:
            verdict = self.noise.observe(memory, visit.change, elapsed(history, visit))
            wait = self.noise.wait(memory, verdict, wait, self.maximum)
        visit.policy_state = memory
        return wait
