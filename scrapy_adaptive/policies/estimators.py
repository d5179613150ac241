"""Change-rate estimators for a page modelled as a Poisson process.

A crawler does not see changes, only whether *some* change happened between
two visits (interval-censored data).  The estimators here turn such
observations into a rate λ (changes per second):

* :func:`naive_rate` – changes seen ÷ time; biased low, because several
  changes inside one interval count once (kept as a reference);
* :func:`bias_reduced_rate` – Cho & Garcia-Molina's estimator for visits at
  a regular interval, finite even when every visit saw a change;
* :func:`interval_mle` – the maximum-likelihood rate for irregular
  intervals (what an adaptive crawler produces), solved by bisection;
* :func:`last_modified_rate` – when the server's Last-Modified is trusted,
  the age of the content at each changed visit is observed exactly and the
  likelihood becomes λ^X·e^(−λT): λ̂ = X/T;
* :func:`posterior_log_rate` – the MLE regularised by a log-normal prior on
  λ (learned from the population), mixing censored and exact observations.
  The prior keeps the estimate finite and sensible after one or two visits,
  which is where a budget-driven crawler spends most of its early fetches.

All functions are pure and use the standard library only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

#: x/(e^x − 1) is below 1e-300 beyond this: treat as zero, avoid overflow
_BIG = 700.0


def _x_over_expm1(x: float) -> float:
    """x / (e^x − 1), continuous at 0 (→ 1) and safe for large x."""
    if x < 1e-12:
        return 1.0 - x / 2.0
    if x > _BIG:
        return 0.0
    return x / math.expm1(x)


def naive_rate(visits: int, changes: int, interval: float) -> float:
    """Changes seen per unit time; its mean is (1 − e^(−λI))/I, not λ."""
    return changes / (visits * interval)


def bias_reduced_rate(visits: int, changes: int, interval: float) -> float:
    """λ̂ = −ln((n − X + 0.5)/(n + 0.5)) / I for *visits* n at interval I.

    The 0.5 corrections make it finite when X = n and remove most of the
    MLE's bias for r = λI up to about 2.
    """
    if visits <= 0 or interval <= 0:
        raise ValueError("need at least one visit and a positive interval")
    return -math.log((visits - changes + 0.5) / (visits + 0.5)) / interval


def interval_mle(changed: Sequence[float], unchanged_total: float, *, rel_tol: float = 1e-10) -> float:
    """Maximum-likelihood rate from irregular visit intervals, by bisection.

    *changed* are the intervals after which a change was seen,
    *unchanged_total* the summed intervals after which none was.  The
    log-likelihood Σ ln(1 − e^(−λtᵢ)) − λ·U has the score
    Σ tᵢ/(e^(λtᵢ) − 1) − U, decreasing in λ, so its root is bracketed and
    bisected (on log λ).  No change seen → 0; never unchanged → infinity.
    """
    if not changed:
        return 0.0
    if unchanged_total <= 0:
        return math.inf

    def score(lam: float) -> float:
        return sum(_x_over_expm1(lam * t) / lam for t in changed) - unchanged_total

    lo = hi = len(changed) / (sum(changed) + unchanged_total)  # naive: below the root
    while score(lo) < 0:
        lo /= 2.0
    while score(hi) > 0:
        hi *= 2.0
    while hi - lo > rel_tol * hi:
        mid = math.sqrt(lo * hi)
        if score(mid) > 0:
            lo = mid
        else:
            hi = mid
    return math.sqrt(lo * hi)


def last_modified_rate(changes: int, exposure: float) -> float:
    """λ̂ = X/T when each changed visit reveals the content's exact age.

    *exposure* T sums the unchanged intervals and, for changed visits, the
    time from the reported Last-Modified to the fetch (time before it says
    nothing: earlier changes were overwritten).
    """
    if exposure <= 0:
        return math.inf if changes else 0.0
    return changes / exposure


def complete_history_rate(
    changes: int, duration: float, *, prior_changes: float = 0.5, prior_time: float = 0.0
) -> float:
    """Rate from a complete change list (a feed that lists every change).

    The MLE is X/T; *prior_changes* and *prior_time* (in the same unit as
    *duration*) add a weak gamma prior so a page never seen to change does
    not get a rate of exactly zero.
    """
    total = duration + prior_time
    if total <= 0:
        return math.inf
    return (changes + prior_changes) / total


def posterior_log_rate(
    changed: Sequence[float],
    exposure: float,
    exact_changes: float,
    prior_log_mean: float,
    prior_log_sd: float,
    *,
    start: float | None = None,
    tol: float = 1e-5,
    weights: Sequence[float] | None = None,
) -> tuple[float, float]:
    """Laplace approximation of the posterior of u = ln λ: (mode, variance).

    Maximises, over u = ln λ,
    Σ ln(1 − e^(−λtᵢ)) + X·u − λ·T − (u − μ)²/(2σ²)
    where *changed* are censored changed intervals tᵢ, *exact_changes* X
    the changes whose time is known (Last-Modified), *exposure* T the time
    known to be change-free, and (μ, σ) the log-normal prior.  The score in
    u is Σ xᵢ/(e^(xᵢ) − 1) + X − λT − (u − μ)/σ² with xᵢ = λtᵢ: strictly
    decreasing, so the root is unique.  Safeguarded Newton (bisection
    whenever a step leaves the bracket) converges in a few steps from the
    previous estimate.  *weights* (one per changed interval) discount old
    observations; *exposure* and *exact_changes* are then weighted sums too.
    The variance is −1/slope at the mode: how much the
    data have narrowed the prior, which the population prior learns from
    (see ``rate.PopulationPrior``).
    """
    inv_var = 1.0 / (prior_log_sd * prior_log_sd)
    ws = weights if weights is not None else [1.0] * len(changed)

    def score_and_slope(u: float) -> tuple[float, float]:
        lam = math.exp(u)
        s = exact_changes - lam * exposure - (u - prior_log_mean) * inv_var
        d = -lam * exposure - inv_var
        for t, w in zip(changed, ws):
            x = lam * t
            if x < 1e-12:
                s += w * (1.0 - x / 2.0)
                d -= w * x / 2.0
            elif x <= _BIG:
                em1 = math.expm1(x)
                s += w * x / em1
                d += w * x * (em1 - x * (em1 + 1.0)) / (em1 * em1)
        return s, d

    u = prior_log_mean if start is None or start <= 0 or not math.isfinite(start) else math.log(start)
    # The log-posterior is concave in u, so damped Newton from a good start
    # (the last estimate) converges in two or three steps; the safeguarded
    # bracket below is the fallback for a poor start.
    v = u
    for _ in range(6):
        s, slope = score_and_slope(v)
        if not slope < 0:
            break
        step = s / slope
        v -= max(-2.0, min(2.0, step))
        if abs(step) < tol:
            return v, -1.0 / slope
    step = 4.0
    lo = hi = u
    s_lo, _ = score_and_slope(lo)
    while s_lo < 0:
        hi, lo = lo, lo - step
        s_lo, _ = score_and_slope(lo)
        step *= 2
    s_hi, _ = score_and_slope(hi)
    while s_hi > 0:
        lo, hi = hi, hi + step
        s_hi, _ = score_and_slope(hi)
        step *= 2
    slope = 0.0
    if lo != hi:
        u = min(max(u, lo), hi)
        for _ in range(100):
            s, slope = score_and_slope(u)
            if s > 0:
                lo = u
            else:
                hi = u
            new = u - s / slope if slope < 0 else (lo + hi) / 2
            if not lo < new < hi:
                new = (lo + hi) / 2
            done = abs(new - u) < tol or hi - lo < tol
            u = new
            if done:
                break
    if slope >= 0 or lo == hi:
        u = lo if lo == hi else u
        _, slope = score_and_slope(u)
    # the slope of the last Newton step: within tol of the mode, as good as
    # the slope at the mode for a variance (and one evaluation fewer)
    return u, -1.0 / slope if slope < 0 else prior_log_sd * prior_log_sd
