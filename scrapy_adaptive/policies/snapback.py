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
from ..model import ChangeState, Plan, Visit
from .base import WaitParams, WaitPolicy
from .budget_pace import BudgetPace
from .history import DAY, clamp, is_first_visit, policy_memory, visit_time
from .noise_guard import NoiseDetector, probe_wait

#: the policy-memory key of the URL's normalised last wait
WAIT = "su"


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
        return cls(
            params.crawl.pace_for(params),
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

    def normalised(self, first: bool, visit: Visit, memory: dict[str, Any], old: float | None) -> float:
        """The URL's next wait at scale 1 (normalised seconds); *first*: the
        URL's first visit.

        A first visit starts at ``initial``, times what the first answer
        says (:attr:`first_answer`): a page whose headers say it is slow
        starts further off, and the rule takes it from there (a change
        snaps it back as from any other wait)."""
        if first or old is None:
            factor = self.first_answer(memory, visit) if self.first_answer is not None else 1.0
            if not (factor > 0 and math.isfinite(factor)):
                factor = 1.0
            least = self.least_scale()
            return clamp(self.initial * factor, self.floor, self.maximum / least if least > 0 else self.maximum)
        return self.step(old, visit.change)

    def plan(self, history: Mapping[str, Any], visit: Visit) -> Plan:
        memory = policy_memory(history)
        stored = memory.get(WAIT)
        old = None if stored is None else float(stored)
        first = is_first_visit(history)
        u = self.normalised(first, visit, memory, old)
        self.pace.observe(old, u, visit_time(history, visit), revisit=not first)
        memory[WAIT] = u
        wait = clamp(self.scale() * u, self.minimum, self.maximum)
        if self.noise is not None:
            verdict = self.noise.observe_visit(memory, history, visit)
            wait = self.noise.wait(memory, verdict, wait, self.maximum)
        return Plan(wait, memory)
