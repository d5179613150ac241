"""Proportional allocation that follows bursts: rates conditioned on recent verdicts.

Many pages do not change at a steady rate: they are quiet for weeks, then
change several times within hours or days (an edit session, a news story,
a terms-of-service rollout).  The optimum for such a page visits when the
*expected* hazard since the last visit reaches the common threshold r\\*,
and right after a change the hazard is high.

The burst state is hidden, but the last verdicts are a cheap proxy for it.
Each interval is filed under the state it started from:

* ``0`` – the visit before it found a change (likely inside a burst);
* ``1`` – one unchanged visit since the last change (the burst may be over);
* ``2`` – two or more (quiet).

A URL's rate in state s is λ̄·e^(δ_s), where λ̄ is its overall rate (the
plain :class:`~.rate.RateEstimator` estimate) and δ_s is the *population's*
offset for that state, learned by the same online EM as the rate prior
(:class:`~.rate.PopulationPrior`, one per state, over each URL's offset
instead of its log-rate).  A single URL sees a handful of bursts in months,
too few to learn its own burst structure, but thousands of URLs share it,
so the policy reacts from a URL's first burst on.  On Poisson pages the
offsets are learned near 0 and the policy is
:class:`~.rate.ProportionalWaitPolicy`.

Why three states, why a quiet page is visited just as equal hazard asks,
and how the policy compares with plain proportional allocation and
Heritrix's rule: ``docs/lab/policy-lab.md``, "The burst policy".

The next wait is r_h/λ_s for the current state s, so every interval carries
about the same expected number of changes, and the page is fetched about
λ̄/r times per unit time whatever its pattern: the allocator registers λ̄
and its accounting is unchanged (the feedback loop absorbs the rest).

The first visit of a URL is no evidence of a burst (a new URL is always
"changed"), so the interval after it uses λ̄.
"""

from __future__ import annotations

import math
from typing import Any

from ..model import ChangeState, Visit
from .allocator import RateAllocator
from .base import WaitParams
from .estimator import EXACT, UNCHANGED, RateEstimator, posterior_log_rate
from .memory import BURST_OFFSETS, BURST_STATE, OBSERVATIONS
from .prior import PopulationPrior
from .rate import ProportionalWaitPolicy

#: verdict-history states: after a change, after one unchanged visit, quiet
STATES = (0, 1, 2)
#: the interval after a URL's first visit (no verdict history yet)
FIRST = 3


def offset_priors(epoch: str | None = None) -> list[PopulationPrior]:
    """One population prior per state, over δ_s = ln λ_s − ln λ̄ (fallback 0 ± 1)."""
    return [PopulationPrior(1.0, 1.0, min_sd=0.25, epoch=epoch, key=BURST_OFFSETS[s]) for s in STATES]


class BurstWaitPolicy(ProportionalWaitPolicy):
    """State-conditioned rates (population-regularised), one shared budget.

    Memory adds :data:`~.keys.BURST_STATE` (the current state) and tags
    each observation with the state its interval started from
    (:data:`~.keys.OBSERVATIONS` entries ``[seconds, kind, state]``).
    *offsets* are the per-state population priors; instances of one crawl
    share them (``from_params`` keeps them in ``params.crawl``).
    """

    def __init__(
        self,
        allocator: RateAllocator,
        *,
        estimator: RateEstimator | None = None,
        offsets: list[PopulationPrior] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(allocator, estimator=estimator, **kwargs)
        self.offsets = offsets or offset_priors(allocator.epoch)
        #: the verdict-history states (the last one: every further quiet visit) and the
        #: state of the interval after a URL's first visit
        self.states: tuple[int, ...] = STATES
        self.first = FIRST

    @classmethod
    def from_params(cls, params: WaitParams) -> BurstWaitPolicy:
        """As :meth:`ProportionalWaitPolicy.from_params`; the offsets are shared too."""
        policy = super().from_params(params)
        assert isinstance(policy, BurstWaitPolicy)
        policy.offsets = params.crawl.offsets(policy.offsets)
        return policy

    def _learn_offsets(self, memory: dict[str, Any], overall: float) -> None:
        """Contribute this URL's offset in each state to that state's population prior.

        The URL's own δ_s (MAP over the intervals filed under s, around the
        population offset) is only evidence for the population: a URL sees
        too few bursts for it to time the wait (``docs/lab/policy-lab.md``,
        "The burst policy").
        Every state is redone at each observation: offsets are relative to
        λ̄, which just moved.
        """
        centre = math.log(max(overall, 1e-300))
        changed: dict[int, list[float]] = {s: [] for s in self.states}
        exposure = dict.fromkeys(self.states, 0.0)
        exact = dict.fromkeys(self.states, 0)
        for entry in memory.get(OBSERVATIONS, []):
            if len(entry) < 3 or entry[2] not in exposure:
                continue
            seconds, kind, state = float(entry[0]), entry[1], entry[2]
            if kind == UNCHANGED or kind == EXACT:
                exposure[state] += seconds
                exact[state] += kind == EXACT
            else:
                changed[state].append(seconds)
        for state in self.states:
            prior = self.offsets[state]
            if not changed[state] and not exposure[state]:
                if prior.key in memory:  # (most states of most URLs hold none)
                    prior.update(memory, None)
                continue
            mu, sd = prior.get()
            log_rate, variance = posterior_log_rate(
                changed[state], exposure[state], exact[state], centre + mu, sd, start=overall * math.exp(mu)
            )
            prior.update(memory, log_rate - centre, variance)

    def state_rate(self, state: int, overall: float) -> float:
        """λ_s = λ̄·e^(δ_s), δ_s the population offset (0 before the first visit's verdict)."""
        if state not in self.states:
            return overall
        return overall * math.exp(self.offsets[state].get()[0])

    def schedule_rate(self, memory: dict[str, Any], visit: Visit, rate: float, *, first: bool, observed: bool) -> float:
        """File the new observation under the state it started from, move to
        the next state, learn the offsets; the rate of the state now entered."""
        state = self.first if first else int(memory.get(BURST_STATE, self.first))
        if observed:
            last = memory[OBSERVATIONS][-1]
            memory[OBSERVATIONS][-1] = [last[0], last[1], state]
            self._learn_offsets(memory, rate)
        if not first and visit.change is ChangeState.CHANGED:
            memory[BURST_STATE] = 0
        elif not first and visit.change is ChangeState.UNCHANGED:
            quiet = self.states[-1]
            memory[BURST_STATE] = quiet if state == self.first else min(state + 1, quiet)
        else:
            memory.setdefault(BURST_STATE, self.first)
        return self.state_rate(int(memory[BURST_STATE]), rate)
