"""What a fetch budget is spent for (``ADAPTIVE_OBJECTIVE``): versions or freshness.

The allocator plans every URL's fetch rate f from its estimated change rate
λ and one knob solved so that the plan spends the budget.  What the plan
maximises decides how f follows λ (Cho and Garcia-Molina, "Synchronizing a
database to improve freshness", 2000; "Effective page refresh policies",
2003):

* **versions** (archives: every version a page goes through): the expected
  versions captured per unit time, Σ λᵢ·(1 − e^(−λᵢ/fᵢ))·fᵢ/λᵢ, is maximised
  under Σ fᵢ = B by visiting every page with the same expected changes per
  visit r = λᵢ/fᵢ: f = λ/r, the knob is r (``docs/lab/policy-lab.md``).
* **freshness** (data teams: the copy is current most of the time): the
  time-averaged share of fresh copies, F(λ, f) = (f/λ)(1 − e^(−λ/f)), is
  maximised where every page's marginal freshness per fetch is the same μ:
  ∂F/∂f = (1 − (1 + x)e^(−x))/λ = μ with x = λ/f.  So x solves
  g(x) = 1 − (1 + x)e^(−x) = μλ, and f = λ/x; the knob is μ (seconds).
  A page with μλ ≥ 1 changes too fast for any affordable visit to keep it
  fresh: it gets the slowest rate.  Slow pages get about √(λ/2μ), more
  than their share under the versions objective; fast ones less.

Both are pure arithmetic on rates; :mod:`.rate_histogram` and the allocator
call them per histogram cell.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ..config.spec import OBJECTIVES
from .hint_decisions import marginal_value as marginal

#: steps at most when inverting g (Newton's, or bisection's where Newton's
#: would leave the bracket: a handful in practice, 200 bound the worst)
_MAX_STEPS = 200


def marginal_inverse(y: float) -> float:
    """The x ≥ 0 with g(x) = 1 − (1 + x)e^(−x) = *y* (*y* in [0, 1));
    ``inf`` for y ≥ 1.  g is the versions one more visit captures
    (:func:`~.hint_decisions.marginal_value`), and λ times the marginal
    freshness of a fetch.

    Newton's method kept inside a bracket that each step narrows (a step
    that would leave it bisects instead), so it converges from any y the
    allocator asks.
    """
    if y <= 0:
        return 0.0
    if y >= 1:
        return math.inf
    lo, hi = 0.0, 1.0
    while marginal(hi) < y:
        lo, hi = hi, hi * 2
    x = (lo + hi) / 2
    for _ in range(_MAX_STEPS):
        gx = marginal(x) - y
        if abs(gx) <= 1e-15:
            break
        if gx > 0:
            hi = x
        else:
            lo = x
        slope = x * math.exp(-x)
        step = x - gx / slope if slope > 0 else lo
        # Newton where it stays inside the bracket, bisection otherwise
        x = step if lo < step < hi else (lo + hi) / 2
        if hi - lo <= 1e-13 * hi:
            break
    return x


@dataclass(frozen=True)
class Objective:
    """One objective's plan: a URL's fetch rate from its change rate and the knob."""

    name: str
    #: the freshness objective (read in the allocator's inner loop: a field, not a property)
    freshness: bool = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "freshness", self.name == "freshness")

    def changes_per_visit(self, rate: float, knob: float) -> float:
        """x = λ/f: the expected changes between two visits of a URL of *rate*."""
        if not self.freshness:
            return knob
        return marginal_inverse(knob * rate)

    def frequency(self, rate: float, knob: float) -> float:
        """f: the fetch rate the plan gives a URL of change rate *rate* (0: as slow as allowed)."""
        if rate <= 0:
            return 0.0
        if not self.freshness:
            return rate / knob
        x = marginal_inverse(knob * rate)
        return 0.0 if math.isinf(x) else rate / x

    def bracket(self, rates: list[float], f_min: float, f_max: float) -> tuple[float, float]:
        """ln-knob bounds outside which a plan of *rates* no longer moves:
        below the lower one every URL is at *f_max*, above the upper one
        at *f_min*."""
        if not rates:
            return 0.0, 0.0
        low, high = min(rates), max(rates)
        if not self.freshness:
            return math.log(low / f_max), math.log(high / f_min)
        # small μλ: f ≈ √(λ/2μ), at least f_max for every rate when μ ≤ λ_min/(2 f_max²);
        # μ ≥ 1/λ_min: μλ ≥ 1 for every rate, all at the slowest
        return math.log(low / (2 * f_max * f_max)) - 1.0, math.log(1.0 / low) + 1.0

    def floor(self, target_ratio: float, typical_rate: float | None) -> float | None:
        """The knob below which a ceiling budget is not spent: a URL of the
        *typical_rate* is never planned denser than *target_ratio* expected
        changes per visit (None: no typical rate known yet)."""
        if not self.freshness:
            return target_ratio
        if not typical_rate or typical_rate <= 0:
            return None
        return marginal(target_ratio) / typical_rate


VERSIONS = Objective("versions")
FRESHNESS = Objective("freshness")


def objective_named(name: str) -> Objective:
    """The objective a setting names (one of :data:`~..config.spec.OBJECTIVES`)."""
    if name not in OBJECTIVES:
        raise ValueError(f"unknown objective {name!r}; one of {', '.join(OBJECTIVES)}")
    return FRESHNESS if name == "freshness" else VERSIONS
