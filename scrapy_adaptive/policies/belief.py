"""How far a first visit's Last-Modified age is believed before it is checked.

On a URL's first visit its Last-Modified age is rate evidence
(:meth:`~.estimator.RateEstimator.observe_age`): "last modified a week ago"
says the page is slow, and the page is then revisited on a weekly scale.
But a header that never moves while the content changes says the same, and
a page believed on it is never revisited soon enough to be caught (issue 13:
the changing web's lying pages, 0.12 of their versions against the plain
recrawl's 0.34).  The header is checked only at the URL's first revisit, so
how soon that comes must not rest on the header alone.

The population says how far to believe it: per politeness queue, how many
URLs whose first visit claimed an *old* age (a rate below the population's
typical one) turned out, at their first full revisit, to have a consistent
Last-Modified, and how many did not.  With q the probability that such a
header lies (a Beta posterior, shrunk towards the crawl-wide share for a
host with few checks), the URL's rate until its check is the mixture's mean

    λ = (1 − q)·λ̂ + q·λ₀

λ̂ the estimate that believes the header and λ₀ the population's typical
rate (what a URL nothing is known of would get).  On a host whose old pages
keep proving honest q falls as 1/n and their first revisits spread out
accordingly; where old headers are caught lying q stays high and the next
old page is checked on the population's time scale.  Nothing here is a
time constant: λ₀ is the crawl's own, and q a ratio of counts.

A URL's own full revisits are checks too: a changed page whose header did
not move is a lie (q = 1: the caught liar is then revisited at its real
rate, ``estimator.py``), one whose header moved with it is honest, and an
unchanged one multiplies the odds of a lie by :func:`unchanged_evidence`;
the check ends when the header's claim dominates the mixture (q·λ₀ ≤ λ̂).
Until then the frontier verifies the URL's fetches
(``change.trust.url_trusted``): a 304 acted on would say nothing.

The counts are a cache of what the crawl saw since it started (not saved):
after a restart they start again from the uninformed q = ½ for the URLs
still unchecked.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

#: weight, in checks, of the crawl-wide share of lying headers in a host's own
PRIOR_CHECKS = 2.0


@dataclass
class HeaderBelief:
    """Per queue ``[honest, lied]`` counts of first-age checks, and the rate they imply."""

    counts: dict[str, list[int]] = field(default_factory=dict)
    total: list[int] = field(default_factory=lambda: [0, 0])

    def lie_probability(self, queue: str) -> float:
        """q: the chance that an unchecked old Last-Modified of *queue* lies."""
        good, bad = self.total
        overall = (bad + 1.0) / (good + bad + 2.0)
        good, bad = self.counts.get(queue, (0, 0))
        return (bad + PRIOR_CHECKS * overall) / (good + bad + PRIOR_CHECKS)

    def note(self, queue: str, lied: bool) -> None:
        """Fold in one check: a first revisit that saw the content and compared the header."""
        counts = self.counts.setdefault(queue, [0, 0])
        counts[lied] += 1
        self.total[lied] += 1

    def url_lie_probability(self, queue: str, evidence: float) -> float:
        """q for one URL whose own checks so far multiply the odds of a lie
        by *evidence* (the likelihood ratio, 1 before any)."""
        q = self.lie_probability(queue)
        return q * evidence / (q * evidence + 1.0 - q)

    def rate(self, queue: str, believed: float, typical: float, evidence: float = 1.0) -> float:
        """The rate of a URL whose first-visit age is unchecked: *believed*
        (λ̂, the header taken at its word) mixed with *typical* (λ₀) by q.
        A header claiming a rate at or above the typical one is taken as it
        is: believing it costs fetches, not versions."""
        if not believed < typical:
            return believed
        q = self.url_lie_probability(queue, evidence)
        return (1.0 - q) * believed + q * typical


def unchanged_evidence(typical: float, interval: float) -> float:
    """The likelihood ratio (lying header : honest one) of a full revisit that
    found the content unchanged after *interval* seconds, the header
    consistent: a page that lies changes at about the *typical* rate and
    would have changed with probability 1 − e^(−λ₀t), an honest slow page
    hardly.  Successive unchanged checks multiply; the URL's next check is
    then timed further off, about twice as far after each (a doubling
    verification of its own "no change", derived rather than assumed)."""
    return math.exp(-max(0.0, typical * interval))
