"""Visit at the sooner of two rule families' waits, under one budget.

Two families win in different places.  Proportional allocation with a rate
estimate (:class:`~.burst.BurstWaitPolicy`) spends a budget best on pages
that change at a steady rate; StormCrawler's snap-back rule
(:class:`~.snapback.SnapBackWaitPolicy`) follows pages whose changes come in
clusters, where a long-memory rate plans past the follow-ups.  Each URL
runs both and is visited when the *first* of them asks for it.  On a page
that changes at a steady rate the two plans are alike (both are held to the
same budget), so taking the sooner changes little there; on a page that has
just changed after a quiet spell the snap-back rule's wait is far shorter
than the long-run rate's, and the follow-up changes are caught.

The sooner wait, not a per-URL switch judged on the URL's own visits: the
real intervals are set by the family in charge, so the other's record could
only be read through them, and the snap-back rule fed intervals it did not
choose drifts.  Taking the sooner wait needs no score at all, and each rule
still sees every verdict (the switch's figures:
``docs/lab/policy-real-traces.md``, "Per-URL switch").

Both families spend the crawl's one budget: the burst allocator and the
snap-back pace are each sized to it, and one loop, the allocator's,
corrects both by the crawl's realised revisits (a visit is one revisit for
both): the allocator plans ``budget × c`` and the pace's scale is divided
by the same c, so the overlap of the two plans is absorbed once.  With a
loop of its own the pace, faster than the allocator, would cut the
snap-back part's spending back to the mean while its pages are in a burst,
which is when the snap-back rule earns its captures.  The burst policy's
noise guard decides for both: a page whose bytes move at every fetch is
held at the maximum wait.

Under ``ADAPTIVE_OBJECTIVE = "freshness"`` the burst part's wait is taken
alone: catching the follow-ups of a burst adds versions, not freshness.

Per-URL memory: the burst policy's plus the snap-back rule's ``{"su": u}``
(JSON-safe).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..frontier.hints import Hint
from ..model import Plan, Visit
from .base import WaitParams, WaitPolicy
from .belief import HeaderBelief
from .burst import BurstWaitPolicy
from .estimator import FIRST_ANSWER
from .history import visit_queue
from .memory import ESTIMATE, OBSERVATIONS
from .snapback import SnapBackWaitPolicy


class UnionWaitPolicy(WaitPolicy):
    """The sooner of the burst policy's and the snap-back rule's waits."""

    def __init__(self, burst: BurstWaitPolicy, snap: SnapBackWaitPolicy) -> None:
        self.burst = burst
        self.snap = snap
        self.snap.noise = None  # the burst policy's guard decides for both
        self.snap.first_answer = self.first_answer_factor
        self.allocator = burst.allocator
        self.pace = snap.pace
        self.pace.follow(self.allocator)  # one budget loop for both families

    @classmethod
    def from_params(cls, params: WaitParams) -> UnionWaitPolicy:
        """Both families from the same params, so they share the crawl's budget
        (``ADAPTIVE_BUDGET``) or, without one, its target precision and bounds."""
        return cls(BurstWaitPolicy.from_params(params), SnapBackWaitPolicy.from_params(params))

    @property
    def header_belief(self) -> HeaderBelief:
        """The crawl's belief in first-visit Last-Modified ages (the burst part's)."""
        return self.burst.header_belief

    def first_answer_factor(self, memory: Mapping[str, Any], visit: Visit) -> float:
        """How many times the snap-back part's ``initial`` a new URL's first
        normalised wait is: the typical rate over the rate the burst part
        times the URL's first check at (λ₀/λ, never below 1), when the
        first answer gave evidence (a Last-Modified age, a sitemap date, a
        lifetime granted by its caching headers); 1 without any.

        With the sooner of the two waits taken, a first answer that says
        "slow" would otherwise be overruled by the snap-back part's fixed
        first wait.  The rate is the burst part's posterior mixed by the odds
        that the header lies (:meth:`~.rate._RatePolicy.first_check_rate`),
        so a crawl believes old headers only as far as its checks of them
        have proved honest, and the URL's own visits update it from there.
        A first answer that says "fast" shortens nothing here: the burst
        part's wait already carries it, and the sooner wait is taken.  A URL
        whose first answer said nothing starts at ``initial``, not at the
        burst part's wait: where nothing is known that wait is only the
        population prior's (``docs/lab/policy-real-traces.md``, "The
        snap-back part started from the burst part's first wait")."""
        observations = memory.get(OBSERVATIONS) or ()
        rate = memory.get(ESTIMATE)
        if not rate or not any(len(o) > 1 and o[1] in FIRST_ANSWER for o in observations):
            return 1.0
        believed = self.burst.first_check_rate(memory, visit_queue(visit), visit.url, float(rate))
        typical = self.burst.typical_rate()
        return max(1.0, typical / believed) if believed > 0 else 1.0

    def set_budget(self, budget: float | None, *, ceiling: bool = False) -> None:
        """Revisits per second over the crawl (None: no budget), for both families;
        *ceiling*: the most they may spend, not a target (the capacity)."""
        self.allocator.set_budget(budget, ceiling=ceiling)
        self.pace.set_budget(budget, ceiling=ceiling)

    def decide(self, history: Mapping[str, Any], visit: Visit) -> tuple[Plan, str]:
        """The plan and the family whose wait it took (``"burst"`` or
        ``"snap"``), so a replay can tell whose plans its revisits follow.

        The plan keeps both rules' memory and says both parts' notes; a
        hint is credited as the burst part's estimate says (the snap-back
        rule has none).

        Both families plan: the snap-back part reads the memory the burst
        part's plan left and returns it with its own state added, so its
        plan's memory holds both rules' state."""
        burst = self.burst.plan(history, visit)
        # the second family reads the record with the memory the first just wrote
        # (a spread of the record's view: a plain dict, copied in C)
        snap = self.snap.plan({**history, "policy": burst.memory if burst.memory is not None else {}}, visit)
        memory = snap.memory if snap.memory is not None else burst.memory
        if self.burst.is_noise(memory or {}) or burst.wait <= snap.wait or self.allocator.plan.freshness:
            # under the freshness objective the snap-back rule's quick return
            # after a change buys little: a page in a burst of changes is
            # stale again moments after any visit (its state is kept, so a
            # crawl switched back to versions resumes it)
            wait, family = burst.wait, "burst"
        else:
            wait, family = snap.wait, "snap"
        return Plan(wait, memory, burst.hint_base, burst.notes + snap.notes), family

    def plan(self, history: Mapping[str, Any], visit: Visit) -> Plan:
        return self.decide(history, visit)[0]

    def hint_wait(self, history: Mapping[str, Any], hint: Hint) -> float | None:
        """Hints are decided as the burst policy decides them (its allocator's price)."""
        return self.burst.hint_wait(history, hint)

    def recheck_wait(self, history: Mapping[str, Any]) -> float | None:
        return self.burst.recheck_wait(history)

    def header_doubtful(self, history: Mapping[str, Any]) -> bool:
        return self.burst.header_doubtful(history)
