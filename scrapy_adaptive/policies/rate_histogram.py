"""The rate allocator's arithmetic: histograms of rates, and the ratio that spends a target.

A histogram *cell* is ``[count, sum of rates]`` for the URLs whose rate
falls in one bin (:data:`ZERO_BIN` for rate 0, :data:`FALLBACK_BIN` for URLs
nothing is known of).  :func:`cells_rate` is the fetch rate a plan at ratio
r (expected changes per visit) asks of some cells, each URL clipped to the
fastest and slowest rates the waits allow; :func:`log_bracket` bounds the
r worth searching; :func:`solve_ratio` finds the r that spends a target.
Under the freshness objective the knob is μ, not r, and a cell's URLs are
planned at its mean rate (:mod:`.objective`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable

from .objective import VERSIONS, Objective

#: the bin of a rate of 0
ZERO_BIN = -(10**6)
#: URLs nothing is known of yet: their rate is the current fallback
#: (:meth:`.allocator.RateAllocator.fallback_rate`), read at solve time, so that they do
#: not keep the rate of the moment they were registered while the crawl grows
FALLBACK_BIN = 10**6


def cells_rate(
    cells: dict[int, list[float]],
    r: float,
    f_min: float,
    f_max: float,
    fallback: float,
    objective: Objective = VERSIONS,
) -> float:
    """Fetches per second a plan at knob *r* (the ratio, under the versions objective) asks of *cells*."""
    total = 0.0
    versions = not objective.freshness
    for b, (n, s) in cells.items():
        if b == FALLBACK_BIN:
            s = n * fallback
        if s <= 0:
            total += n * f_min
        else:
            f = s / (n * r) if versions else objective.frequency(s / n, r)
            total += n * (f_min if f < f_min else f_max if f > f_max else f)
    return total


def log_bracket(
    groups: Iterable[dict[int, list[float]]],
    fallback: float,
    f_min: float,
    f_max: float,
    objective: Objective = VERSIONS,
) -> tuple[float, float]:
    """ln r bounds outside which the fetch rate of *groups* of cells no longer moves.

    Every URL of rate λ is at the fastest rate for r ≤ λ/f_max and at the
    slowest for r ≥ λ/f_min, so the bisection needs nothing beyond
    [min λ/f_max, max λ/f_min].  A target out of reach then lands on the
    edge where the plan saturates, a meaningful r, not e^±40.
    """
    rates = [
        fallback if b == FALLBACK_BIN else s / n
        for cells in groups
        for b, (n, s) in cells.items()
        if s > 0 and n > 0 and (fallback > 0 or b != FALLBACK_BIN)
    ]
    return objective.bracket(rates, f_min, f_max)


def solve_ratio(fetch_rate: Callable[[float], float], target: float, bracket: tuple[float, float]) -> float:
    """The r with fetch_rate(r) = target (fetch_rate decreases in r),
    searched in ln r within *bracket*; the nearer edge if out of reach."""
    lo, hi = bracket
    if fetch_rate(math.exp(lo)) <= target:
        return math.exp(lo)
    if fetch_rate(math.exp(hi)) >= target:
        return math.exp(hi)
    for _ in range(60):
        mid = (lo + hi) / 2
        if fetch_rate(math.exp(mid)) > target:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-4:
            break
    return math.exp((lo + hi) / 2)
