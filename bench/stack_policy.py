# ruff: noqa: E501
"""Lab variant: the union's two plans combined by a calibrated hazard model.

The union visits at the sooner of the burst plan's and the snap-back plan's
waits.  At one fetch per change it captures less than either plan alone on
three of six real sources: taking the sooner of two noisy forecasts spends
the budget wherever one of them is over-optimistic.  Here the verdicts say
how far each plan's "sooner" is to be believed.

At each planning, with m = min(w_b, w_s), d_b = ln(w_b/m) (> 0 when the
snap-back plan is the sooner) and d_s = ln(w_s/m) (> 0 when the burst plan
is), the crawl-wide complementary log-log model of a change in the next t
seconds is

    ln Λ(t) = θ0 + ln(t/m) − θ_b·d_b − θ_s·d_s

(a plan calibrated up to a constant: at t = m the hazard is e^θ0 whatever
m, and θ_b says how much lower it really is when only the snap-back plan
asks for the visit).  θ is fitted online (Newton steps on the expected
information, forgetting over ``memory`` revisits) on every revisit's
interval and verdict, crawl-wide: thousands of paired data points where a
per-URL choice had a handful.  The wait then solves Λ = const:

    w = m·e^(β_b·d_b + β_s·d_s),  β = clip(θ, 0, 1)

β = (0, 0) is the union; β_b = 1 is the burst plan where it is the later
one; β_s = 1 the snap-back plan.  The budget loops are the union's.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import Any

from scrapy_adaptive.model import ChangeState, Visit
from scrapy_adaptive.policies.history import elapsed, is_first_visit
from scrapy_adaptive.policies.union import UnionWaitPolicy

#: the policy-memory key: [d_b, d_s] at the last planning, and m
KEY = "sk"
_DEBUG = int(os.environ.get("STACK_DEBUG", "0"))


class CloglogLearner:
    """Online Newton fit of ln Λ = θ·z + offset (cloglog link), with forgetting."""

    def __init__(
        self, n: int, *, memory: float = 5_000.0, prior: float = 20.0, theta0: list[float] | None = None
    ) -> None:
        self.n = n
        self.keep = 1.0 - 1.0 / memory
        self.prior = prior
        self.theta = list(theta0 or [0.0] * n)
        self.h = [[prior if i == j else 0.0 for j in range(n)] for i in range(n)]
        self.seen = 0

    def observe(self, z: list[float], offset: float, changed: bool) -> None:
        eta = sum(t * x for t, x in zip(self.theta, z, strict=True)) + offset
        lam = math.exp(min(30.0, max(-30.0, eta)))
        em1 = math.expm1(lam)
        grad = (lam / em1 if em1 > 0 else 1.0) if changed else -lam
        info = lam * lam / em1 if em1 > 1e-300 else lam
        n, h, keep = self.n, self.h, self.keep
        for i in range(n):
            row = h[i]
            for j in range(n):
                row[j] = keep * row[j] + info * z[i] * z[j]
            row[i] += (1.0 - keep) * self.prior  # the prior does not fade away
        step = _solve(h, [grad * x for x in z])
        self.theta = [t + s for t, s in zip(self.theta, step, strict=True)]
        self.seen += 1
        if _DEBUG and self.seen % _DEBUG == 0:
            print("theta", self.seen, [round(x, 3) for x in self.theta], flush=True)


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for c in range(n):
        p = max(range(c, n), key=lambda r: abs(m[r][c]))
        m[c], m[p] = m[p], m[c]
        if abs(m[c][c]) < 1e-12:
            return [0.0] * n
        for r in range(n):
            if r != c:
                f = m[r][c] / m[c][c]
                if f:
                    for k in range(c, n + 1):
                        m[r][k] -= f * m[c][k]
    return [m[i][n] / m[i][i] for i in range(n)]


class StackWaitPolicy(UnionWaitPolicy):
    """The union with a learned discount on each plan's being the sooner."""

    def __init__(
        self, burst, snap, *, memory: float = 5_000.0, engage: int = 200, fixed: tuple[float, float] | None = None
    ) -> None:
        super().__init__(burst, snap)
        # theta: [θ0, θ_b, θ_s]; z = [1, −d_b, −d_s]; offset ln(t/m)
        self.learner = CloglogLearner(3, memory=memory)
        self.engage = engage
        self.fixed = fixed

    def betas(self) -> tuple[float, float]:
        if self.fixed is not None:
            return self.fixed
        if self.learner.seen < self.engage:
            return 0.0, 0.0
        _, tb, ts = self.learner.theta
        return min(1.0, max(0.0, tb)), min(1.0, max(0.0, ts))

    def next_wait(self, history: Mapping[str, Any], visit: Visit) -> float:
        w_b, w_s, memory = self.waits(history, visit)
        prev = memory.get(KEY)
        if (
            prev is not None
            and not is_first_visit(history)
            and visit.change in (ChangeState.CHANGED, ChangeState.UNCHANGED)
        ):
            t = elapsed(history, visit)
            if t and t > 0:
                d_b, d_s, m = prev
                self.learner.observe([1.0, -d_b, -d_s], math.log(t / m), visit.change is ChangeState.CHANGED)
        if self.burst.is_noise(memory):
            memory.pop(KEY, None)
            return w_b
        m = min(w_b, w_s)
        d_b, d_s = math.log(w_b / m), math.log(w_s / m)
        memory[KEY] = [d_b, d_s, m]
        beta_b, beta_s = self.betas()
        return m * math.exp(beta_b * d_b + beta_s * d_s)
