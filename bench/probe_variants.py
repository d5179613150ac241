"""A lab variant of the default whose new URLs' early revisits are timed for what they teach (issue 37).

``union-probe``: the union (:class:`~scrapy_adaptive.policies.union.UnionWaitPolicy`)
plus a **probe**: while a URL's rate posterior is wide, its next visit may
come sooner than either plan asks, at the wait where one visit's expected
value — what it captures and what its verdict teaches — most exceeds the
price of a fetch.  Registered on import.

The reasoning, with no constant fitted to a source:

* **The price.** The allocator spends the budget where every fetch earns
  the same at the margin: one more scheduled fetch captures
  φ(r\\*) = 1 − (1 + r\\*)e^(−r\\*) versions
  (:func:`~scrapy_adaptive.policies.hint_decisions.marginal_value`, the price
  a change hint must clear).  A probe is a fetch like any other and must
  earn as much.
* **The plan's value.** A URL of rate λ revisited at frequency f captures
  f(1 − e^(−λ/f)) versions a second and costs p·f, p = φ(r\\*); its best f
  is λ/r\\* (the allocator's own plan).  Planned on a belief about λ, the
  best f maximises the belief's expectation of that net value
  (:func:`best_value`).
* **The posterior.** The URL's rate posterior on a grid over the population
  prior (:class:`~scrapy_adaptive.policies.prior.PopulationPrior`, the
  burst part's), times the likelihood of its own observations — a changed
  interval of t seconds is 1 − e^(−λt), censored: "at least one change",
  which is what a change found after 50 days says of a URL changing every
  three (:func:`grid_posterior`).  Not the Laplace approximation the
  estimator times its waits by: the probe's value lies in the right tail
  a censored history leaves open, which a curvature at the mode misses.
* **What a probe teaches** (a one-step knowledge gradient): a visit after t
  seconds finds a change with probability E[1 − e^(−λt)]; each verdict
  updates the posterior and the best plan with it.  The gain is the
  expected net value of the re-planned frequency over the current one,
  per second, times the time the lesson stays in use — the rate
  estimator's memory, its half-life ÷ ln 2 (the product's own statement of
  how long a rate observation counts).
* **What it captures**: splitting the plan's interval w at t adds
  E[(1 − e^(−λt))(1 − e^(−λ(w−t)))] captures.

The probe is taken at the t (on a log grid below the union's wait) where
captures + lesson − p is largest, if positive; otherwise the union's wait
stands.  As a URL's own visits narrow the posterior the lesson shrinks by
itself, so no count of observations switches it off.  The probe's fetch is
a revisit like any other: the one budget loop (the allocator's, which the
snap-back pace follows) re-prices every plan for it.

Figures and verdict (no): ``docs/lab/policy-real-traces.md``, "A new URL's
first revisits priced for what they teach".
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from scrapy_adaptive.model import Visit
from scrapy_adaptive.policies.estimator import CHANGED, EXACT, FIRST_ANSWER, _bracketed_root
from scrapy_adaptive.policies.hint_decisions import marginal_value
from scrapy_adaptive.policies.history import visit_queue
from scrapy_adaptive.policies.memory import OBSERVATIONS
from scrapy_adaptive.policies.prior import PopulationPrior
from scrapy_adaptive.policies.union import UnionWaitPolicy

from .sim.lineup import LabContext, _burst, _snapback, register

#: the grid over the prior, in prior standard deviations (±4: the lesson lives in the tails)
GRID_Z = tuple(-4.0 + k / 4.0 for k in range(33))
#: the probe times tried: this many, log-spaced between the minimum wait and the union's wait
PROBE_TIMES = 12


def grid_posterior(
    observations: Sequence[Sequence[Any]], prior: tuple[float, float], z: Sequence[float] = GRID_Z
) -> tuple[list[float], list[float]]:
    """The URL's rate posterior on a grid over the prior: (rates λₖ, weights wₖ summing to 1).

    Likelihood of each observation (the estimator's kinds): a changed
    interval t, 1 − e^(−λt) (censored: at least one change); an unchanged
    one, e^(−λt); an exact age (Last-Modified), λe^(−λt).  The first
    answer's evidence (its own rules of belief in the estimator) is left
    out: the lab's traces have none."""
    mu, sd = prior
    rates = [math.exp(mu + sd * zk) for zk in z]
    logs = [-0.5 * zk * zk for zk in z]
    for entry in observations:
        seconds, kind = float(entry[0]), int(entry[1])
        if kind in FIRST_ANSWER:
            continue
        for k, lam in enumerate(rates):
            x = lam * seconds
            if kind == CHANGED:
                logs[k] += math.log(-math.expm1(-x)) if x > 1e-300 else -745.0
            else:
                logs[k] -= x
                if kind == EXACT:
                    logs[k] += math.log(lam)
    top = max(logs)
    weights = [math.exp(v - top) for v in logs]
    total = sum(weights)
    return rates, [w / total for w in weights]


def best_value(rates: Sequence[float], weights: Sequence[float], ratio: float) -> float:
    """max over f of E[f(1 − e^(−λ/f)) − φ(r\\*)·f] under the belief (net captures
    per second), *ratio* the allocator's r\\*.

    The derivative in ln f, f·(1 − φ − E[e^(−x)(1 + x)]) with x = λ/f,
    falls as f grows, so its root is the best f (the estimator's safeguarded
    Newton, from the posterior mean's plan E[λ]/r\\*); for a known λ it is
    λ/r\\*, the allocator's own plan."""
    keep = 1.0 - marginal_value(ratio)
    mean = sum(w * lam for lam, w in zip(rates, weights))

    def score_and_slope(s: float) -> tuple[float, float]:
        f = math.exp(s)
        h, slope = keep, 0.0
        for lam, w in zip(rates, weights):
            x = lam / f
            if x < 700:
                e = math.exp(-x)
                h -= w * e * (1.0 + x)
                slope -= w * x * x * e
        return h, slope

    s, _ = _bracketed_root(score_and_slope, math.log(mean) - math.log(ratio), 1e-4)
    f = math.exp(s)
    return f * (keep - sum(w * math.exp(-lam / f) for lam, w in zip(rates, weights) if lam / f < 700))


def probe_value(
    rates: Sequence[float], weights: Sequence[float], t: float, wait: float, ratio: float, horizon: float, base: float
) -> float:
    """Captures + lesson − price of one visit after *t* seconds, where the plan
    waits *wait*; *base* is :func:`best_value` under the current belief."""
    price = marginal_value(ratio)
    p_changed = 0.0
    split = 0.0
    w_changed: list[float] = []
    w_quiet: list[float] = []
    for lam, w in zip(rates, weights):
        found = -math.expm1(-lam * t)
        p_changed += w * found
        split += w * found * -math.expm1(-lam * max(wait - t, 0.0))
        w_changed.append(w * found)
        w_quiet.append(w * (1.0 - found))
    lesson = 0.0
    if 1e-12 < p_changed < 1.0 - 1e-12:
        changed = best_value(rates, [w / p_changed for w in w_changed], ratio)
        quiet = best_value(rates, [w / (1.0 - p_changed) for w in w_quiet], ratio)
        lesson = max(0.0, horizon * (p_changed * changed + (1.0 - p_changed) * quiet - base))
    return split + lesson - price


def best_probe(
    rates: Sequence[float],
    weights: Sequence[float],
    wait: float,
    ratio: float,
    horizon: float,
    min_wait: float,
    times: int = PROBE_TIMES,
) -> tuple[float, float] | None:
    """(t, net value) of the best probe before *wait*, or None if none earns the
    price φ(*ratio*).

    A quick bound first: no probe can earn more than splitting the interval
    at its middle plus perfect information over the horizon."""
    if wait <= min_wait * 1.5 or ratio <= 0:
        return None
    price = marginal_value(ratio)
    base = best_value(rates, weights, ratio)
    # E[max_f V(f; λ)] = E[λ]/r*·(1 − e^(−r*) − φ(r*)): each rate at its own plan
    perfect = sum(w * lam for lam, w in zip(rates, weights)) / ratio * (-math.expm1(-ratio) - price)
    split = sum(w * (-math.expm1(-lam * wait / 2)) ** 2 for lam, w in zip(rates, weights))
    if split + horizon * max(0.0, perfect - base) <= price:
        return None
    best: tuple[float, float] | None = None
    lo, hi = math.log(min_wait), math.log(wait)
    for k in range(times):
        t = math.exp(lo + (hi - lo) * k / times)
        value = probe_value(rates, weights, t, wait, ratio, horizon, base)
        if value > 0 and (best is None or value > best[1]):
            best = (t, value)
    return best


class ProbeUnion(UnionWaitPolicy):
    """The union, visiting sooner while a visit's lesson pays for its fetch.

    *life*: the lesson is used over the URL's expected remaining life, taken
    as the crawl's age so far (Gott's estimate: a process seen at a random
    moment of its span has as long to run as it has run; a crawl that does
    not see URLs die knows no better), instead of the rate estimator's
    memory.

    *spread*: the belief's prior is learned from the URLs' grid posteriors
    (the same online EM as :class:`~scrapy_adaptive.policies.prior.PopulationPrior`,
    with the exact moments of ln λ on the grid as each URL's contribution),
    not the burst part's prior, whose Laplace moments miss the right tail a
    censored history leaves (its docstring: σ comes out narrower than the
    truth, which pays when the mode times a wait, and hides the tail a
    lesson is about)."""

    def __init__(self, *args: Any, life: bool = False, spread: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.life = life
        #: the belief's own population prior (*spread*), else None: the burst part's
        self.spread: PopulationPrior | None = PopulationPrior(key="pv") if spread else None
        #: decisions that took a probe, and those that weighed one
        self.probes = 0
        self.weighed = 0
        self.started: float | None = None
        self._memo: dict[tuple[Any, ...], tuple[float, float] | None] = {}

    def horizon(self, now: float | None = None) -> float:
        """How long a lesson about the rate stays in use: the estimator's mean
        memory, or (*life*) the crawl's age at *now*."""
        if self.life:
            return 0.0 if now is None or self.started is None else max(0.0, now - self.started)
        half_life = self.burst.estimator.half_life
        return (half_life or self.burst.max_wait) / math.log(2.0)

    def decide(self, history: Mapping[str, Any], visit: Visit) -> tuple[float, str]:
        now = float(visit.fetched) if visit.fetched is not None else None
        if self.started is None and now is not None:
            self.started = now
        wait, family = super().decide(history, visit)
        horizon = self.horizon(now)
        memory = visit.policy_state or {}
        if self.burst.is_noise(memory):
            return wait, family
        prior = self.burst.prior.get(self.burst.fallback_rate())
        if self.spread is not None and self.spread.learned:
            prior = self.spread.get()
        observations = memory.get(OBSERVATIONS) or ()
        belief = grid_posterior(observations, prior) if observations else None
        if self.spread is not None and belief is not None:
            rates, weights = belief
            mean = sum(w * math.log(lam) for lam, w in zip(rates, weights))
            variance = sum(w * (math.log(lam) - mean) ** 2 for lam, w in zip(rates, weights))
            self.spread.update(memory, mean, variance)
        ratio = self.allocator.ratio_for(visit_queue(visit))
        key = None
        if not observations:  # every new URL has the same belief: decide it once per plan
            key = (
                round(prior[0], 2),
                round(prior[1], 2),
                round(math.log(max(wait, 1.0)), 2),
                round(ratio, 3),
                round(math.log1p(horizon), 2),
            )
        if key is not None and key in self._memo:
            found = self._memo[key]
        else:
            rates, weights = belief or grid_posterior(observations, prior)
            self.weighed += 1
            found = best_probe(rates, weights, wait, ratio, horizon, self.burst.min_wait)
            if key is not None:
                if len(self._memo) > 10_000:
                    self._memo.clear()
                self._memo[key] = found
        if found is None or found[0] >= wait:
            return wait, family
        self.probes += 1
        return found[0], "probe"


def _union_probe(ctx: LabContext, *, life: bool = False, spread: bool = False) -> ProbeUnion:
    return ProbeUnion(_burst(ctx), _snapback(ctx), life=life, spread=spread)  # type: ignore[arg-type]


register("union-probe", _union_probe, budgeted=True)
register("union-probe-life", partial(_union_probe, life=True), budgeted=True)
register("union-probe-spread", partial(_union_probe, life=True, spread=True), budgeted=True)
