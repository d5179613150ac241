"""Snap back after a change, back off while quiet, and spend a budget doing it.

Real pages change in clusters: a change makes another one soon far likelier
than the page's long-run rate says (an edit session, a rollout, a page
whose bytes move at every crawl for a season).  The rule that follows such
pages best is also the simplest, StormCrawler's: after a change the wait
moves halfway down to a short floor, ``(I + m)/2``; after a quiet visit it
grows by half, ``1.5·I``.  It forgets in a few visits, so it is back near
the floor within a visit or two of a burst starting and far from the page
within a few of it ending, where a rate estimate with a long memory plans
past the follow-ups (and a short-memory Bayesian rate, tried as the *drift*
policy, was no better at equal fetches).

What the rule lacks is a budget: its pace is set by its constants (the
floor, the first wait, the bounds), so it spends whatever they imply.  This
policy keeps the rule's dynamics in *normalised* time and multiplies every
wait by one crawl-wide **scale** s, the one knob:

* per URL: u, the last wait in normalised seconds; first visit
  u = ``initial``; changed u ← (1 − d)·u + d·m (m = ``floor``); unchanged
  u ← (1 + i)·u; u stays within [m, ``maximum``]; unknown verdict (no body
  to compare): u is kept;
* the wait is s·u, clamped to [``minimum``, ``maximum``] seconds.

With a budget, a crawl-wide :class:`BudgetPace` moves s so that realised
revisits match it (a slow multiplicative feedback on the realised rate, as
the rate allocator's); scaling every time constant of a multiplicative rule
is exactly how a rule is held to a number of fetches, so the policy is the
rule at whatever budget it is given.  Without a budget s = 1 and the policy
is StormCrawler's rule with the configured numbers.

A noise guard (:class:`~.noise.NoiseDetector`) holds pages whose bytes differ
at every fetch at the maximum wait, as for the Heritrix policy (with
normalised change detection it stays quiet).

Per-URL memory: ``{"su": u}`` plus the noise guard's few numbers (JSON-safe).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..frontier.record import ChangeState, Visit
from .base import WaitParams, WaitPolicy
from .history import DAY, clamp, elapsed, is_first_visit, policy_memory, visit_time
from .noise import NoiseDetector

#: the policy-memory key of the URL's normalised last wait
WAIT = "su"
#: where :meth:`SnapBackWaitPolicy.from_params` keeps the crawl's :class:`BudgetPace`
PACE_KEY = "snapback_pace"
#: revisits a budget window holds when none is configured: ten times the
#: rate allocator's, so the budget is held over weeks (at 240 revisits a day)
#: and spending can follow a burst of changes instead of being cut to the
#: daily average while it lasts (held over the allocator's window, the rule
#: lost a tenth of its recall on real histories at equal fetches)
WINDOW_REVISITS = 7_200.0


class BudgetPace:
    """Crawl-wide: the scale s of every wait, held to a revisit budget.

    ``budget`` is revisits per second over the whole crawl, or None (s stays
    at ``scale``).  Every revisit is counted in an exponentially decayed
    window (``window`` seconds; by default the time the budget takes to buy
    :data:`WINDOW_REVISITS` revisits, so the loop works on the crawl's own
    time scale); once a window has passed, each revisit moves s by
    ``(realised/budget)^(gain·dt/window)``: more revisits than budgeted
    lengthen every wait.  s stays within ``limits``.  A multiplicative rule
    holds a fixed share of visits finding a change whatever its scale, so
    its fetch rate is about proportional to 1/s and the loop is well
    conditioned.  State is small and JSON-safe (:meth:`state`,
    :meth:`restore`).
    """

    def __init__(
        self,
        budget: float | None = None,
        *,
        scale: float = 1.0,
        window: float | None = None,
        gain: float = 0.5,
        limits: tuple[float, float] = (1e-3, 1e3),
    ) -> None:
        if budget is not None and budget <= 0:
            raise ValueError("the budget must be positive (revisits per second)")
        if not scale > 0:
            raise ValueError("the scale must be positive")
        self.budget = budget
        self.scale = scale
        self.window = window
        self.gain = gain
        self.limits = limits
        self._count = 0.0
        self._t0: float | None = None
        self._t_last: float | None = None
        #: URLs seen (first visits) and the normalised wait of a URL nothing is
        #: known of, for the scale before the loop has a window of revisits
        self.urls = 0
        self.reference: float | None = None
        self._engaged = budget is None

    def note_url(self, reference: float) -> None:
        """Count a URL's first visit; *reference* is its normalised first wait."""
        self.urls += 1
        self.reference = reference

    def current(self) -> float:
        """The scale to apply now.

        Until a window of revisits has been counted, with a budget B over N
        URLs: the scale that makes a new URL's first wait N/B (the budget
        spread evenly, as the rate allocator starts), so the crawl starts near
        its budget instead of at the rule's own pace.
        """
        if not self._engaged and self.budget and self.reference and self.urls:
            return clamp(self.urls / self.budget / self.reference, *self.limits)
        return self.scale

    def set_budget(self, budget: float | None) -> None:
        """Revisits per second (None: keep the scale where it is)."""
        self.budget = budget

    @property
    def control_window(self) -> float:
        if self.window is not None:
            return self.window
        return WINDOW_REVISITS / self.budget if self.budget else 3 * DAY

    def realised_rate(self) -> float | None:
        """Revisits per second over the window (None until a window has passed)."""
        if self._t0 is None or self._t_last is None:
            return None
        span = self._t_last - self._t0
        window = self.control_window
        if span < window:
            return None
        return self._count / (window * -math.expm1(-span / window))

    def note_fetch(self, now: float | None) -> None:
        """Count one revisit at *now*; with a budget, move the scale toward it."""
        if now is None:
            return
        if self._t0 is None:
            self._t0 = self._t_last = now
        last = self._t_last if self._t_last is not None else now
        dt = max(0.0, now - last)
        window = self.control_window
        self._count = self._count * math.exp(-dt / window) + 1.0
        self._t_last = max(now, last)
        realised = self.realised_rate()
        if self.budget is None or realised is None or dt <= 0:
            return
        if not self._engaged:
            self.scale, self._engaged = self.current(), True
        exponent = min(self.gain * dt / window, 1.0)
        self.scale = clamp(self.scale * (realised / self.budget) ** exponent, *self.limits)

    def state(self) -> dict[str, Any]:
        return {
            "scale": self.scale,
            "count": self._count,
            "t": [self._t0, self._t_last],
            "urls": self.urls,
            "reference": self.reference,
            "engaged": self._engaged,
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        self.scale = float(state["scale"])
        self._count = float(state["count"])
        self._t0, self._t_last = state["t"]
        self.urls = int(state.get("urls", 0))
        self.reference = state.get("reference")
        self._engaged = bool(state.get("engaged", True))


class SnapBackWaitPolicy(WaitPolicy):
    """StormCrawler's snap-back rule in normalised time, scaled to a budget."""

    def __init__(
        self,
        pace: BudgetPace | None = None,
        *,
        minimum: float = 3_600.0,
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

    @classmethod
    def from_params(cls, params: WaitParams) -> SnapBackWaitPolicy:
        """Bounds, floor and first wait from the wait numbers; ``ADAPTIVE_BUDGET``
        revisits per day (None: the plain rule).

        One :class:`BudgetPace` serves every instance built from the params of
        one stack (kept in ``params.shared`` when the params have it), so the
        crawl spends one budget.
        """
        shared = getattr(params, "shared", None)
        pace = shared.get(PACE_KEY) if isinstance(shared, dict) else None
        if pace is None:
            pace = BudgetPace(None if params.budget is None else params.budget / DAY, window=params.budget_window)
            if isinstance(shared, dict):
                shared[PACE_KEY] = pace
        return cls(
            pace,
            minimum=params.minimum,
            maximum=params.maximum,
            initial=params.initial,
            noise=NoiseDetector(params.minimum or 1.0),
        )

    def step(self, u: float, change: ChangeState) -> float:
        """The rule in normalised seconds: snap toward the floor, or back off."""
        if change is ChangeState.CHANGED:
            u = (1.0 - self.decrement) * u + self.decrement * self.floor
        elif change is ChangeState.UNCHANGED:
            u = u * (1.0 + self.increment)
        return clamp(u, self.floor, self.maximum)

    def next_wait(self, history: Mapping[str, Any], visit: Visit) -> float:
        memory = policy_memory(history)
        stored = memory.get(WAIT)
        if is_first_visit(history) or stored is None:
            u = self.initial
            if is_first_visit(history):
                self.pace.note_url(self.initial)
        else:
            u = self.step(float(stored), visit.change)
            self.pace.note_fetch(visit_time(history, visit))
        memory[WAIT] = u
        wait = clamp(self.pace.current() * u, self.minimum, self.maximum)
        if self.noise is not None:
            verdict = self.noise.observe(memory, visit.change, elapsed(history, visit))
            wait = self.noise.wait(memory, verdict, wait, self.maximum)
        visit.policy_state = memory
        return wait
