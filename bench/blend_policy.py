"""Two views of a page's change rate, weighted by how well each predicted its own visits.

Explored, not shipped: see docs/lab/policy-real-traces.md.

A page that changes at a steady rate is best visited at a steady pace set by
a long-memory rate estimate (proportional allocation: every interval carries
the same expected number of changes).  A page whose changes cluster is best
followed by a short-memory rule that snaps back after a change and backs off
while it is quiet (StormCrawler's).  Each rule loses where the other wins:
the long memory plans past a burst's follow-ups, the short one wanders on a
steady page and spends visits on its noise.

This policy keeps both as rate estimates of the same page and lets the
page's own visits choose:

* **short**: StormCrawler's wait W updated on the interval t actually
  observed (changed: W ← (t + m)/2; unchanged: W ← 1.5·t, m the minimum
  wait), read as a rate λ_s = ln 2 / W;
* **long**: a Gamma(A, B) belief forgetting slowly (ρ per observation:
  changed A ← ρA + 1, B ← ρB + t/2; unchanged A ← ρA, B ← ρB + t),
  λ_l = A/B, started from one pseudo-observation at the first wait;
* **weights**: before each update, both predicted the chance that the
  interval would show a change, 1 − e^(−λt); the log-likelihoods of the
  verdicts are kept with a short memory (σ per observation), and the short
  view's weight is π = 1/(1 + e^(S_l − S_s)), the posterior of a two-model
  Bayesian mixture whose prior is refreshed every few visits.

The hazard is λ = π·λ_s + (1 − π)·λ_l and the wait at scale 1 is r₀/λ,
r₀ = −ln(1 − p\\*) (a change found with probability p\\* per visit), within
[minimum, maximum].  The crawl-wide scale and the budget are
:class:`~.snapback.BudgetPace`'s, as for :class:`~.snapback.SnapBackWaitPolicy`.

Per-URL memory: the normalised wait, W, [A, B], [S_s, S_l] (JSON-safe).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scrapy_adaptive.model import ChangeState, Visit
from scrapy_adaptive.policies.base import WaitParams
from scrapy_adaptive.policies.history import DAY, clamp, elapsed, is_first_visit
from scrapy_adaptive.policies.noise_guard import NoiseDetector
from scrapy_adaptive.policies.snapback import PACE_KEY, BudgetPace, SnapBackWaitPolicy

#: memory keys: the short view's wait, the long view's belief, the scores
SHORT, LONG, SCORES = "bw", "bl", "bs"
#: the long view's forgetting per observation (about 30 observations)
LONG_MEMORY = 0.97
#: the scores' forgetting per observation (about 10 observations)
SCORE_MEMORY = 0.9


def _log_p(p: float, changed: bool) -> float:
    p = min(max(p, 1e-4), 1.0 - 1e-4)
    return math.log(p if changed else 1.0 - p)


class BlendWaitPolicy(SnapBackWaitPolicy):
    """Short (snap-back) and long (rate) views, weighted by their predictions."""

    def __init__(
        self,
        pace: BudgetPace | None = None,
        *,
        minimum: float = 3_600.0,
        maximum: float = 365 * DAY,
        initial: float = DAY,
        precision: float = 0.5,
        long_memory: float = LONG_MEMORY,
        score_memory: float = SCORE_MEMORY,
        noise: NoiseDetector | None = None,
    ) -> None:
        super().__init__(pace, minimum=minimum, maximum=maximum, initial=initial, noise=noise)
        if not 0.0 < precision < 1.0:
            raise ValueError("precision must be in (0, 1)")
        self.ratio = -math.log1p(-precision)
        self.long_memory = long_memory
        self.score_memory = score_memory

    @classmethod
    def from_params(cls, params: WaitParams) -> BlendWaitPolicy:
        """As :meth:`SnapBackWaitPolicy.from_params`, r₀ from ``ADAPTIVE_TARGET_PRECISION``."""
        shared = getattr(params, "shared", None)
        pace = shared.get(PACE_KEY) if isinstance(shared, dict) else None
        if pace is None:
            pace = BudgetPace(None if params.budget is None else params.budget / DAY, horizon=params.budget_window)
            if isinstance(shared, dict):
                shared[PACE_KEY] = pace
        return cls(
            pace,
            minimum=params.minimum,
            maximum=params.maximum,
            initial=params.initial,
            precision=params.target_precision,
            noise=NoiseDetector(params.minimum or 1.0),
        )

    def normalised(self, history: Mapping[str, Any], visit: Visit, memory: dict[str, Any], old: float | None) -> float:
        t = elapsed(history, visit)
        if is_first_visit(history) or old is None or SHORT not in memory or t is None:
            rate = self.ratio / self.initial
            memory[SHORT] = math.log(2) / rate
            memory[LONG] = [1.0, 1.0 / rate]
            memory[SCORES] = [0.0, 0.0]
            return self.initial
        w = float(memory[SHORT])
        a, b = (float(x) for x in memory[LONG])
        ss, sl = (float(x) for x in memory[SCORES])
        if visit.change is not ChangeState.UNKNOWN:
            changed = visit.change is ChangeState.CHANGED
            short, long = math.log(2) / w, a / b
            g = self.score_memory
            ss = g * ss + _log_p(-math.expm1(-short * t), changed)
            sl = g * sl + _log_p(-math.expm1(-long * t), changed)
            t = max(t, 1e-9)
            w = clamp(0.5 * (t + self.minimum) if changed else 1.5 * t, self.minimum, self.maximum)
            r = self.long_memory
            a, b = (r * a + 1.0, r * b + t / 2.0) if changed else (r * a, r * b + t)
        weight = 1.0 / (1.0 + math.exp(clamp(sl - ss, -50.0, 50.0)))
        rate = weight * math.log(2) / w + (1.0 - weight) * a / max(b, 1e-9)
        memory[SHORT], memory[LONG], memory[SCORES] = w, [a, b], [ss, sl]
        return clamp(self.ratio / rate if rate > 0 else self.maximum, self.minimum, self.maximum)
