"""Whether to act on a change hint: learned precision against a fetch's worth.

A hint (:mod:`scrapy_adaptive.frontier.hints`) costs one fetch if acted on,
and that fetch captures a new version with probability *p*, the source's
precision.  Under a budget the fetch is taken from the schedule, where the
last fetch is worth φ(r) = 1 − (1 + r)e^{−r} captured versions (the
derivative of f(1 − e^{−λ/f}), with r = λ/f the expected changes per
interval, the same for every page at the optimum).  So a hint is worth
acting on when p > φ(r): at B = Λ (r ≈ 1) that is p > 0.26, so even a
source that is right half the time pays, and junk does not.  The threshold
rises by itself when hints eat the budget: the schedule shrinks, r grows.

*p* is not known; it is learned per host and source from the visits that
followed acted-on hints (``[confirmed, refuted]``), starting from a prior
pooled over the other hosts (at most :data:`POOL_WEIGHT` pseudo-hints, so a
new host of a known-bad source is not explored much and a host's own record
soon dominates).  The decision is Thompson sampling: draw p from the
Beta posterior and act if the draw exceeds the threshold, i.e. act with the
posterior probability that the source is worth it (Kolobov et al.'s
"learned acceptance probability").  A source never scored is acted on (the
first hints are how it gets a record), unknown ones get explored, junk ones
are dropped after a few refutations, a small floor (:data:`EXPLORE`) keeps
a recovered source from being ignored for ever.  The draw comes from a hash
of the hint, so a run repeats exactly and the policy stays pure.

The visit a hint caused is not an ordinary observation for a rate
estimator: it was timed *because* the page changed, so counting "changed
after t" would inflate λ̂ (every hinted interval would end in a change).
Rate policies therefore leave a confirmed hinted visit out of their
estimate when the source is believed right at least half the time
(:func:`confirmed_hint`).  Scheduled intervals then see only the
changes hints do not announce (thinned Poisson processes are independent),
so λ̂ becomes the rate of *unhinted* changes, which is exactly what the
schedule still has to catch.  A refuted hint (no change) is an honest
"unchanged" interval and is kept.  The fetch itself is counted against the
budget as a revisit (``RateAllocator.note_fetch(hinted=True)``), and the
allocator plans the schedule for what hinted fetches leave.
"""

from __future__ import annotations

import hashlib
import math
import random
from collections.abc import Mapping
from typing import Any

from ..frontier.hints import Hint
from ..model import ChangeState, Visit

#: at most this many pseudo-hints of prior taken from the source's record on other hosts
POOL_WEIGHT = 8.0
#: share of hints acted on whatever the record says (a source may improve)
EXPLORE = 0.002


def marginal_value(ratio: float) -> float:
    """φ(r) = 1 − (1 + r)e^{−r}: versions one more scheduled fetch captures."""
    if ratio <= 0:
        return 0.0
    return -math.expm1(-ratio) - ratio * math.exp(-ratio)


def evidence(record: tuple[float, float, float]) -> tuple[float, float]:
    """(right, wrong) from ``(confirmed, refuted, Σq)``: the changes a visit
    would have found anyway (Σq) are taken off the confirmations, so
    right / (right + wrong) = (c − Σq)/(n − Σq) (see frontier/hints.py)."""
    good, bad, expected = record
    return max(0.0, good - expected), max(0.0, bad)


def prior(hint: Hint) -> tuple[float, float]:
    """Beta(a, b) prior on the source's precision on this host.

    The source's record on the *other* hosts, shrunk to at most
    :data:`POOL_WEIGHT` pseudo-hints on top of a uniform Beta(1, 1).
    """
    others = (
        hint.pooled[0] - hint.trust[0],
        hint.pooled[1] - hint.trust[1],
        hint.pooled[2] - hint.trust[2],
    )
    good, bad = evidence(others)
    n = good + bad
    if n <= 0:
        return 1.0, 1.0
    weight = min(n, POOL_WEIGHT) / n
    return 1.0 + good * weight, 1.0 + bad * weight


def posterior(hint: Hint) -> tuple[float, float]:
    """Beta(a, b) posterior on the source's precision on this host."""
    a, b = prior(hint)
    good, bad = evidence(hint.trust)
    return a + good, b + bad


def precision(hint: Hint) -> float:
    """The posterior mean of the source's precision on this host."""
    a, b = posterior(hint)
    return a / (a + b)


def _draws(hint: Hint) -> random.Random:
    key = f"{hint.url}\0{hint.source}\0{hint.received:.3f}".encode()
    return random.Random(int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big"))


def accept(hint: Hint, threshold: float, *, explore: float = EXPLORE) -> bool:
    """Thompson sampling: act if a draw of the precision beats *threshold*.

    A source never scored anywhere is acted on: only an acted-on hint is
    ever scored, and a site may announce a change only once.
    """
    if not any(hint.trust) and not any(hint.pooled):
        return True
    rng = _draws(hint)
    if rng.random() < explore:
        return True
    return rng.betavariate(*posterior(hint)) > threshold


def hinted_visit(history: Mapping[str, Any]) -> bool:
    """True when this visit was brought forward by an acted-on hint."""
    return bool(history.get("hint"))


def base_probability(rate: float, interval: float | None) -> float:
    """P(a change in *interval*) at the rate believed before the visit: what
    a hinted visit would have found without its hint."""
    if interval is None or rate <= 0:
        return 0.0
    return -math.expm1(-rate * interval)


def hint_precision(history: Mapping[str, Any]) -> float:
    """The precision believed, when it was acted on, of the hint that brought
    this visit forward (0 when the visit was not hinted)."""
    stored = history.get("hint") or {}
    if not stored:
        return 0.0
    own, pooled = stored.get("c") or [0, 0, 0], stored.get("g") or [0, 0, 0]
    return precision(Hint("", None, "", trust=(own[0], own[1], own[2]), pooled=(pooled[0], pooled[1], pooled[2])))


def confirmed_hint(history: Mapping[str, Any], visit: Visit) -> bool:
    """A hinted visit that found the change it was told of, so was timed by
    the change itself: one from a source believed right at least half the
    time.  A change found on a junk source's hint was found at a moment
    that says nothing about the change, and is an honest observation; left
    out, it would drag λ̂ down, r* with it, the bar for hints with r*, and
    junk would end up spending the budget.
    """
    return visit.change is ChangeState.CHANGED and hint_precision(history) >= 0.5
