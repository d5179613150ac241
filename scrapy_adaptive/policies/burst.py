"""Proportional allocation that follows bursts: rates conditioned on the last visit.

Many pages do not change at a steady rate: they are quiet for weeks, then
change several times within hours or days (an edit session, a news story,
a terms-of-service rollout).  The optimum for such a page visits when the
*expected* hazard since the last visit reaches the common threshold r\\*,
and right after a change the hazard is high.

The burst state is hidden, but the last visit's verdict is a cheap proxy
for it: a page just seen changed is more likely inside a burst.  So each
URL keeps two rates, estimated from its own intervals split by what the
visit *before* the interval found – λ₁ after a change, λ₀ after none –
each regularised toward the URL's overall rate λ̄ (so a Poisson page,
where both are equal, behaves exactly as under
:class:`~.rate.ProportionalWaitPolicy`).  The next wait is r_h/λ_s for the
current state s, so every interval carries about the same expected hazard.

The budget share is still set by λ̄: with equal hazard per interval a page
is fetched about λ̄/r times per unit time whatever its burst pattern, so
the allocator's accounting is unchanged.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from ..frontier.record import ChangeState, Visit
from .estimators import posterior_mode_rate
from .history import is_first_visit, policy_memory
from .rate import EXACT, UNCHANGED, ProportionalWaitPolicy, RateAllocator, RateEstimator, default_host


class BurstWaitPolicy(ProportionalWaitPolicy):
    """State-conditioned rates (after a change / after none), shared budget.

    Memory adds ``s`` (the last verdict, 1 changed / 0 not) and tags each
    observation with the state it started from (``o`` entries become
    ``[seconds, kind, state]``).  ``state_sd`` is the spread (in ln λ)
    allowed between a state's rate and the overall rate: small values fall
    back to plain proportional allocation.
    """

    def __init__(
        self,
        allocator: RateAllocator,
        *,
        estimator: RateEstimator | None = None,
        host_of: Callable[[str | None], str] = default_host,
        noise_run: int = 8,
        state_sd: float = 1.5,
    ) -> None:
        super().__init__(
            allocator, estimator=estimator or RateEstimator(window=32), host_of=host_of, noise_run=noise_run
        )
        self.state_sd = state_sd

    def _state_rates(self, memory: Mapping[str, Any], overall: float) -> tuple[float, float]:
        """(λ₀, λ₁): MAP rates of the intervals that followed each state."""
        rates = []
        centre = math.log(max(overall, 1e-12))
        for state in (0, 1):
            changed: list[float] = []
            exposure = 0.0
            exact = 0
            for entry in memory.get("o", []):
                if len(entry) < 3 or entry[2] != state:
                    continue
                seconds, kind = float(entry[0]), entry[1]
                if kind == UNCHANGED or kind == EXACT:
                    exposure += seconds
                    exact += kind == EXACT
                else:
                    changed.append(seconds)
            if not changed and not exposure:
                rates.append(overall)
            else:
                rates.append(posterior_mode_rate(changed, exposure, exact, centre, self.state_sd, start=overall))
        return rates[0], rates[1]

    def next_wait(self, history: Mapping[str, Any], visit: Visit) -> float:
        memory = policy_memory(history)
        first = is_first_visit(history)
        previous_state = int(memory.get("s", 1))
        rate, now, observed = self._estimate(history, visit, memory)
        if observed:
            last = memory["o"][-1]
            memory["o"][-1] = [last[0], last[1], previous_state]
        if visit.change is not ChangeState.UNKNOWN:
            memory["s"] = 1 if visit.change is ChangeState.CHANGED else 0
        noise = self.is_noise(memory)
        host = self.host_of(visit.url)
        if noise:
            self.prior.update(memory, None)
        self.allocator.register(memory, host, 0.0 if noise else rate)
        if not first:
            self.allocator.note_fetch(now)
        visit.policy_state = memory
        if noise:
            return self.max_wait
        low, high = self._state_rates(memory, rate)
        state_rate = high if memory.get("s", 1) else low
        return self.allocator.wait(host, state_rate)
