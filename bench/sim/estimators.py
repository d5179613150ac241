"""Classical change-rate estimators for a page modelled as a Poisson process.

The lab's reference estimators (the crawler uses none of them): a crawler
does not see changes, only whether *some* change happened between two
visits (interval-censored data), and these turn such observations into a
rate λ (changes per second):

* :func:`naive_rate` – changes seen ÷ time; biased low, because several
  changes inside one interval count once (kept as a reference);
* :func:`bias_reduced_rate` – Cho & Garcia-Molina's estimator for visits at
  a regular interval, finite even when every visit saw a change;
* :func:`interval_mle` – the maximum-likelihood rate for irregular
  intervals (what an adaptive crawler produces), solved by bisection;
* :func:`last_modified_rate` – when the server's Last-Modified is trusted,
  the age of the content at each changed visit is observed exactly and the
  likelihood becomes λ^X·e^(−λT): λ̂ = X/T;
* :func:`complete_history_rate` – from a complete change list (a feed).

The crawler's estimator, the MLE regularised by a population prior, is
:func:`scrapy_adaptive.policies.estimator.posterior_log_rate`; the tests
check it against these.  Pure functions, standard library only.
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
