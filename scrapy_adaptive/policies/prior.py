"""The population prior: what a URL's change rate is believed to be before
its own visits say much, learned from the whole crawl (empirical Bayes)."""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from typing import Any

from .history import DAY
from .memory import PRIOR_CONTRIBUTION


class PopulationPrior:
    """Log-normal prior on λ, learned from the whole population (empirical Bayes).

    The prior decides the early allocation, and early allocation is most of
    what a learner loses against an oracle.  It is fitted by online EM over
    every URL with at least one observation: each URL contributes the
    Laplace posterior of its u = ln λ, a mode m and a variance v, and the
    prior is μ = mean(m), σ² = mean(v + m²) − μ².  Learning only from
    *mature* URLs (many observations) would be biased: fast pages mature
    first, so the prior would sit too high for months.

    The Laplace variance misses the long right tail of a URL that changed
    at each of its few visits, so σ comes out narrower than the truth;
    with the posterior *mode* setting the wait, that extra shrinkage of
    sparse histories pays, so the Laplace moments are kept over exact ones
    (``docs/lab/policy-lab.md``, "The estimator").

    Aggregate state only (three sums).  A URL keeps its last contribution in
    its memory (under *key*, ``[epoch, m, v]``, see :mod:`.keys`) so that a
    new one replaces it exactly; contributions made by another instance
    (``epoch``, e.g. before a restart) are left alone.  Contributions are
    computed under the prior of the moment, so the sums converge as URLs are
    revisited, which is the E-step done incrementally.  Until ``min_count``
    URLs contribute, the configured fallback is used.
    """

    def __init__(
        self,
        rate: float = 1.0 / (7 * DAY),
        log_sd: float = 2.0,
        *,
        min_count: int = 50,
        min_sd: float = 0.5,
        epoch: str | None = None,
        key: str = PRIOR_CONTRIBUTION,
    ) -> None:
        self.fallback = (math.log(rate), log_sd)
        self.key = key  #: where a URL's memory keeps its contribution
        self.min_count = min_count
        self.min_sd = min_sd
        self.epoch = epoch or uuid.uuid4().hex[:8]
        self.count = 0  #: URLs contributing
        self.sum_modes = 0.0  #: Σ m
        self.sum_squares = 0.0  #: Σ (m² + v)

    def update(self, memory: dict[str, Any], log_rate: float | None, variance: float = 0.0) -> None:
        """Replace this URL's contribution (kept in *memory*); None withdraws it.
        (The three sums are moved in place: this runs several times a visit.)"""
        old = memory.pop(self.key, None)
        if old and old[0] == self.epoch:
            mode, var = float(old[1]), float(old[2])
            self.count -= 1
            self.sum_modes -= mode
            self.sum_squares -= mode * mode + var
        if log_rate is not None and math.isfinite(log_rate):
            mode, var = round(log_rate, 6), round(max(0.0, variance), 6)
            self.count += 1
            self.sum_modes += mode
            self.sum_squares += mode * mode + var
            memory[self.key] = [self.epoch, mode, var]

    def state(self) -> dict[str, Any]:
        """The aggregate, JSON-safe (saved with the frontier, see :mod:`.persist`)."""
        return {"epoch": self.epoch, "n": self.count, "s1": self.sum_modes, "s2": self.sum_squares}

    def restore(self, state: Mapping[str, Any]) -> None:
        """Continue from a saved aggregate: same epoch, so URLs' contributions
        made before the restart are replaced exactly when they are revisited."""
        self.epoch = str(state["epoch"])
        self.count, self.sum_modes, self.sum_squares = int(state["n"]), float(state["s1"]), float(state["s2"])

    @property
    def learned(self) -> bool:
        """True once enough URLs contribute for the fallback to be replaced."""
        return self.count >= self.min_count

    def get(self, fallback_rate: float | None = None) -> tuple[float, float]:
        """(μ, σ) of ln λ (λ in changes per second).

        Until the prior is learned: the configured fallback, or one centred
        on *fallback_rate* (a policy's reading of the crawl's own time scale,
        see ``ProportionalWaitPolicy.fallback_rate``) with the fallback's σ.
        """
        if self.count < self.min_count:
            if fallback_rate is not None and fallback_rate > 0 and math.isfinite(fallback_rate):
                return math.log(fallback_rate), self.fallback[1]
            return self.fallback
        mean = self.sum_modes / self.count
        var = max(self.sum_squares / self.count - mean * mean, 0.0)
        return mean, max(self.min_sd, math.sqrt(var))
