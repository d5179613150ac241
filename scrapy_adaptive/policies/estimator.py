"""Estimating a URL's change rate λ from its own visits.

A crawler does not see changes, only whether *some* change happened between
two visits (interval-censored data), and sometimes, from a trusted
Last-Modified, the exact age of the content.  :class:`RateEstimator` keeps a
URL's last observations in its policy memory and turns them into the
posterior of ln λ under a log-normal prior (:func:`posterior_log_rate`); the
prior is learned from the population (:class:`~.prior.PopulationPrior`), and
keeps the estimate finite and sensible after one or two visits, which is
where a budget-driven crawler spends most of its early fetches.

The classical estimators (naive, bias-reduced, interval MLE, Last-Modified
X/T) are not used here; they are the references this one is tested against
(``docs/lab/policy-lab.md``, "Derivations checked").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..dates import parse_http_date
from ..model import ChangeState, Visit
from .history import DAY
from .memory import ESTIMATE, LAST_MODIFIED_AGREEMENT, OBSERVATIONS

#: x/(e^x − 1) is below 1e-300 beyond this: treat as zero, avoid overflow
_BIG = 700.0

#: observation kinds stored in the per-URL memory; AGE is the first visit's
#: Last-Modified age, an EXACT observation unless the URL's own visits refute
#: it; FRESH the lifetime its caching headers granted, an UNCHANGED interval
#: on the same terms (both are the first answer's evidence, :data:`FIRST_ANSWER`)
UNCHANGED, CHANGED, EXACT, AGE, FRESH = 0, 1, 2, 3, 4
#: the kinds that are a first answer's evidence, not the URL's own intervals
FIRST_ANSWER = frozenset({AGE, FRESH})
#: the first visit's age is set aside when the URL's own visits give an age
#: at least this old less than this probability (:meth:`RateEstimator.posterior`)
AGE_OUTLIER = 0.05


@dataclass
class RateEstimator:
    """Keeps a URL's last observations in its memory and estimates λ.

    Memory (:mod:`.keys`): :data:`~.keys.OBSERVATIONS` – the last
    ``window`` observations as ``[seconds, kind]`` (kind :data:`UNCHANGED`
    interval, :data:`CHANGED` interval, :data:`EXACT` age of a change
    known from Last-Modified, or :data:`AGE`, the first visit's age);
    :data:`~.keys.LAST_MODIFIED_AGREEMENT` – how many times the URL's Last-Modified agreed (``[good, bad]``) with what
    the content comparison said; the rate policies keep the last estimate
    under :data:`~.keys.ESTIMATE`, the start of the next solve.

    A bounded window makes the estimate forget: rates drift, and an old
    interval should not outvote recent ones for ever.
    """

    window: int = 24
    #: seconds after which an observation counts half (None: no discount).
    #: Rates drift over years; on stationary pages the window already bounds
    #: the memory (``docs/lab/policy-lab.md``, "The estimator")
    half_life: float | None = 60 * DAY
    trust_last_modified: bool = True

    def observe(
        self, memory: dict[str, Any], interval: float, visit: Visit, previous_fetch: float | None, now: float | None
    ) -> bool:
        """Append this visit's observation to *memory*; False if it made none."""
        if visit.change is ChangeState.UNKNOWN or interval <= 0:
            return False
        changed = visit.change is ChangeState.CHANGED
        obs: list[list[int]] = [list(o) for o in memory.get(OBSERVATIONS, [])]
        entry = [max(1, round(interval)), CHANGED if changed else UNCHANGED]
        if self.trust_last_modified and visit.last_modified and previous_fetch is not None and now is not None:
            modified = parse_http_date(visit.last_modified)
            if modified is not None:
                good, bad = memory.get(LAST_MODIFIED_AGREEMENT, [0, 0])
                # an HTTP date has whole seconds: a change in the second of
                # the previous fetch can carry a date just before it
                consistent = (previous_fetch - 1 < modified <= now + 1) if changed else (modified <= previous_fetch + 1)
                if consistent:
                    good += 1
                else:
                    if bad == 0:
                        # the Last-Modified was believed until now: the exact
                        # ages it gave (the first visit's, changed intervals)
                        # fall back to "a change within that time" (a frozen
                        # one saying "a week old" would hold a changing page
                        # at the slowest rate)
                        obs = [[o[0], CHANGED, *o[2:]] if o[1] in (EXACT, AGE) else o for o in obs]
                    bad += 1
                memory[LAST_MODIFIED_AGREEMENT] = [good, bad]
                if changed and consistent and bad == 0:
                    entry = [max(1, round(now - modified)), EXACT]
        obs.append(entry)
        memory[OBSERVATIONS] = obs[-self.window :]
        return True

    def observe_age(self, memory: dict[str, Any], visit: Visit, now: float | None, floor: float) -> bool:
        """On a URL's first visit: what its first answer says of its rate,
        as prior observations its own visits then update.

        * Its content's age: for a Poisson page the age at a visit is
          exponential with the page's rate, so an age *a* is the likelihood
          λe^(−λa), an :data:`AGE` observation of *a* seconds: a page last
          modified three years ago starts slow, one modified seconds ago
          fast, before any revisit.  The age is the ``Last-Modified``'s or,
          without one, the date the site gave elsewhere (a sitemap
          ``<lastmod>``, ``visit.claimed_modified``).
        * The lifetime its caching headers grant (``visit.freshness``): the
          server expects no change within it, the likelihood e^(−λF) of an
          unchanged interval of F seconds (:data:`FRESH`).

        Either under *floor* (the minimum wait) is ignored: a server that
        stamps every response with the current time, or lets nothing be
        reused, says nothing the policy could act on.  Neither is checked
        yet: :meth:`observe` turns a Last-Modified age into "a change within
        that time" if a later visit shows the header inconsistent, and
        :meth:`posterior` sets either aside once the URL's own visits make
        it implausible, and lets it fade as they span more time.
        """
        if now is None:
            return False
        found: list[list[int]] = []
        if self.trust_last_modified:
            modified = parse_http_date(visit.last_modified) if visit.last_modified else visit.claimed_modified
            if modified is not None and math.isfinite(modified) and now - modified >= max(floor, 1.0):
                found.append([round(now - modified), AGE])
        lifetime = visit.freshness
        if lifetime is not None and math.isfinite(lifetime) and lifetime >= max(floor, 1.0):
            found.append([round(lifetime), FRESH])
        if not found:
            return False
        obs = [list(o) for o in memory.get(OBSERVATIONS, [])]
        obs.extend(found)
        memory[OBSERVATIONS] = obs[-self.window :]
        return True

    def estimate(self, memory: Mapping[str, Any], prior: tuple[float, float]) -> float:
        return math.exp(self.posterior(memory, prior)[0])

    def posterior(self, memory: Mapping[str, Any], prior: tuple[float, float]) -> tuple[float, float]:
        """Laplace posterior of ln λ: (mode, variance).

        Observations are consecutive intervals, so an entry's age is the sum
        of the intervals after it; with a ``half_life`` each counts for
        2^(−age/half_life).

        The first visit's age (:data:`AGE`) tells of the time before the
        crawl watched the page, and that time is often unlike the present:
        the Last-Modified of a deploy or a migration, a page that came
        alive, or simply the inspection paradox (a first visit lands more
        often in a long quiet spell of a bursty page than in a short one).
        So it counts as a/(a + w) of an exact age, a the age and w the time
        the crawl has watched the URL since: in full before any revisit
        (a page last modified three years ago starts slow), fading once the
        URL's own visits span more time than the age does.  And once the
        URL has seen a change of its own, it counts only while the URL's
        own posterior finds an age at least that old plausible (predictive
        probability ≥ :data:`AGE_OUTLIER`).  Counted in full for ever, a
        short first age would hold a fast page below its rate long after
        its own changes said otherwise, and a static page whose files were
        all written when the site was deployed, minutes before the crawl,
        would keep looking like a page changing every few minutes
        (``docs/lab/policy-lab.md``, "How long a first visit's
        Last-Modified age counts").
        """
        changed: list[float] = []
        weights: list[float] = []
        exposure = 0.0
        exact = 0.0
        age = 0.0
        # (seconds, weight, kind) of the first answer's evidence
        first: list[tuple[float, float, int]] = []
        watched = 0.0  # the URL's own intervals since its first visit
        decay = math.log(2.0) / self.half_life if self.half_life else 0.0
        for entry in reversed(memory.get(OBSERVATIONS, [])):
            seconds, kind = float(entry[0]), entry[1]
            w = math.exp(-decay * watched) if decay else 1.0
            if kind in FIRST_ANSWER:
                first.append((seconds, w * seconds / (seconds + watched), kind))
                continue
            age += seconds
            watched = age
            if kind == CHANGED:
                changed.append(seconds)
                weights.append(w)
            else:
                exposure += w * seconds
                exact += w * (kind == EXACT)
        start = memory.get(ESTIMATE)
        if first and (changed or exact):
            mode, variance = posterior_log_rate(
                changed, exposure, exact, prior[0], prior[1], start=start, weights=weights
            )
            # P(this long without a change) under the URL's own visits: an
            # age and a granted lifetime are both quiet spells
            first = [f for f in first if age_tail(f[0], mode, variance) >= AGE_OUTLIER]
        for seconds, weight, kind in first:
            exposure += weight * seconds
            exact += weight * (kind == AGE)
        return posterior_log_rate(changed, exposure, exact, prior[0], prior[1], start=start, weights=weights)


def age_tail(seconds: float, log_rate: float, variance: float) -> float:
    """P(a Poisson page's content is at least *seconds* old at a visit),
    under a posterior of ln λ with this mode and variance.

    The age is exponential given λ; λ's posterior is taken as the gamma
    distribution with the same log-mode and log-variance (shape k = 1/v),
    which gives the closed form (1 + a·λ̂/k)^(−k): with k exact changes
    seen in T seconds, (T/(T + a))^k.
    """
    k = 1.0 / max(variance, 1e-9)
    return math.exp(-k * math.log1p(seconds * math.exp(log_rate) / k))


def _bracket(score_and_slope: Callable[[float], tuple[float, float]], u: float) -> tuple[float, float]:
    """[lo, hi] around the root of a decreasing score, grown geometrically from *u*."""
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
    return lo, hi


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
    (see :class:`~.prior.PopulationPrior`).
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
        if step * step < tol:
            # Newton's error squares at each step (the score's curvature is
            # of order one): after this step the next would be below tol
            return v, -1.0 / slope
    u, slope = _bracketed_root(score_and_slope, u, tol)
    # the slope of the last Newton step: within tol of the mode, as good as
    # the slope at the mode for a variance (and one evaluation fewer)
    return u, -1.0 / slope if slope < 0 else prior_log_sd * prior_log_sd


def _bracketed_root(
    score_and_slope: Callable[[float], tuple[float, float]], u: float, tol: float
) -> tuple[float, float]:
    """The root of a strictly decreasing score from a poor start *u*: Newton
    steps kept inside a bracket, bisection whenever a step leaves it; the
    root and the slope there."""
    lo, hi = _bracket(score_and_slope, u)
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
    return u, slope
