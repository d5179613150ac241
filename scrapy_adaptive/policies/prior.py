"""The population prior: what a URL's change rate is believed to be before
its own visits say much, learned from the whole crawl (empirical Bayes),
and within it from the URLs of the same kind of content."""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from typing import Any

from ..config.matching import media_type
from .history import DAY
from .memory import PRIOR_CONTRIBUTION

#: the kinds of content the prior is kept apart for (media type → kind);
#: other media types are learned from in the crawl-wide prior only
KINDS = {
    "text/html": "page",
    "application/xhtml+xml": "page",
    "text/css": "stylesheet",
    "text/javascript": "script",
    "application/javascript": "script",
    "application/x-javascript": "script",
    "application/ecmascript": "script",
}
#: weight, in URLs, of the crawl-wide prior in a kind's: a kind few URLs
#: have shown follows the crawl's, one hundreds have shown its own
KIND_WEIGHT = 20.0


def content_kind(content_type: str | None) -> str | None:
    """The kind of content a ``Content-Type`` says (None: none apart).

    >>> content_kind("image/png"), content_kind("Text/HTML; charset=utf-8"), content_kind("application/pdf")
    ('image', 'page', None)
    """
    media = media_type(content_type)
    if media.startswith("image/"):
        return "image"
    return KINDS.get(media)


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

    Kept per kind of content too (:func:`content_kind`): a site's images
    and stylesheets are not its pages, and most of them never change.
    Under a prior learned over every URL a figure that never changes stays
    near the pages' rate for several unchanged visits, and a freshness plan
    gives such a slow URL more than its share (``docs/changing-web.md``,
    "Where the freshness objective loses, by class").  A URL of a kind is
    estimated under its kind's prior: the kind's sums plus
    :data:`KIND_WEIGHT` URLs at the crawl-wide moments, so a kind few URLs
    have shown starts from the crawl's prior.

    Aggregate state only (three sums, crawl-wide and per kind).  A URL
    keeps its last contribution in its memory (under *key*,
    ``[epoch, m, v]`` or ``[epoch, m, v, kind]``, see :mod:`.memory`) so
    that a new one replaces it exactly; contributions made by another
    instance (``epoch``, e.g. before a restart) are left alone.
    Contributions are computed under the prior of the moment, so the sums
    converge as URLs are revisited, which is the E-step done incrementally.
    Until ``min_count`` URLs contribute, the configured fallback is used,
    for every kind.
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
        #: per kind of content: [URLs contributing, Σ m, Σ (m² + v)]
        self.kinds: dict[str, list[float]] = {}

    def _add(self, mode: float, variance: float, sign: int, kind: str | None) -> None:
        self.count += sign
        self.sum_modes += sign * mode
        self.sum_squares += sign * (mode * mode + variance)
        if kind is not None:
            sums = self.kinds.setdefault(kind, [0.0, 0.0, 0.0])
            sums[0] += sign
            sums[1] += sign * mode
            sums[2] += sign * (mode * mode + variance)
            if sums[0] < 0.5:  # its last URL withdrew
                del self.kinds[kind]

    def update(
        self, memory: dict[str, Any], log_rate: float | None, variance: float = 0.0, kind: str | None = None
    ) -> None:
        """Replace this URL's contribution (kept in *memory*), of *kind*; None withdraws it."""
        old = memory.pop(self.key, None)
        if old and old[0] == self.epoch:
            self._add(float(old[1]), float(old[2]), -1, str(old[3]) if len(old) > 3 else None)
        if log_rate is not None and math.isfinite(log_rate):
            mode, var = round(log_rate, 6), round(max(0.0, variance), 6)
            self._add(mode, var, 1, kind)
            memory[self.key] = [self.epoch, mode, var] if kind is None else [self.epoch, mode, var, kind]

    def state(self) -> dict[str, Any]:
        """The aggregate, JSON-safe (saved with the frontier, see :mod:`.persist`)."""
        state: dict[str, Any] = {"epoch": self.epoch, "n": self.count, "s1": self.sum_modes, "s2": self.sum_squares}
        if self.kinds:
            state["kinds"] = {kind: list(sums) for kind, sums in self.kinds.items()}
        return state

    def restore(self, state: Mapping[str, Any]) -> None:
        """Continue from a saved aggregate: same epoch, so URLs' contributions
        made before the restart are replaced exactly when they are revisited.
        A state saved before kinds were kept has none: each kind then
        follows the crawl-wide prior until its URLs are revisited."""
        self.epoch = str(state["epoch"])
        self.count, self.sum_modes, self.sum_squares = int(state["n"]), float(state["s1"]), float(state["s2"])
        self.kinds = {
            str(kind): [float(n), float(s1), float(s2)] for kind, (n, s1, s2) in (state.get("kinds") or {}).items()
        }

    @property
    def learned(self) -> bool:
        """True once enough URLs contribute for the fallback to be replaced."""
        return self.count >= self.min_count

    def get(self, fallback_rate: float | None = None, kind: str | None = None) -> tuple[float, float]:
        """(μ, σ) of ln λ (λ in changes per second), for a URL of *kind*
        (None: the crawl-wide prior).

        Until the prior is learned: the configured fallback, or one centred
        on *fallback_rate* (a policy's reading of the crawl's own time scale,
        see ``ProportionalWaitPolicy.fallback_rate``) with the fallback's σ.
        """
        if self.count < self.min_count:
            if fallback_rate is not None and fallback_rate > 0 and math.isfinite(fallback_rate):
                return math.log(fallback_rate), self.fallback[1]
            return self.fallback
        n, first, second = float(self.count), self.sum_modes, self.sum_squares
        sums = self.kinds.get(kind) if kind is not None else None
        if sums is not None:
            # the kind's URLs plus KIND_WEIGHT URLs at the crawl-wide moments
            scale = KIND_WEIGHT / n
            n, first, second = sums[0] + KIND_WEIGHT, sums[1] + scale * first, sums[2] + scale * second
        mean = first / n
        var = max(second / n - mean * mean, 0.0)
        return mean, max(self.min_sd, math.sqrt(var))
