"""How far a first visit's Last-Modified age is believed before it is checked.

On a URL's first visit its Last-Modified age is rate evidence
(:meth:`~.estimator.RateEstimator.observe_age`): "last modified a week ago"
says the page is slow, and the page is then revisited on a weekly scale.
But a header that never moves while the content changes says the same, and
a page believed on it is never revisited soon enough to be caught (its
versions are then captured far less often than a plain recrawl captures
them).  The header is checked only at the URL's first revisit, so
how soon that comes must not rest on the header alone.

The population says how far to believe it: how many URLs whose first visit
claimed an *old* age (a rate below the population's typical one) turned
out, at their first full revisit, to have a consistent Last-Modified, and
how many did not, counted per politeness queue and, within it, per sibling
class (directory and extension, :func:`~..change.url_class.url_class`): a
header that lies comes from one generator (a CMS template stamping a fixed
date) while the same host's files keep true dates, so a host's images do
not pay for its lying pages.  With q the probability that such a header
lies (a Beta posterior: the class's counts shrunk towards its host's
other classes', those towards the crawl-wide share), the URL's rate until its check is
the mixture's mean

    λ = (1 − q)·λ̂ + q·λ_lie

λ̂ the estimate that believes the header and λ_lie the rate a lie hides:
how fast the class's caught liars turned out to change, shrunk, until
enough are caught, towards the class's own pace (the rates its revisited
URLs showed: a header that never moves stands in front of the pages its
template serves), and that towards the crawl's caught liars and the
population's typical rate λ₀ (what a URL nothing is known of would get).
λ₀ alone would not do: the crawl's static pages and images pull it down, so
a lying page among pages changing every few minutes would have its first
check timed far too late (``docs/lab/changing-web-runs.md``, "Due URLs served
by lateness, and the pace a lie would hide").  Where old headers keep
proving honest q falls as 1/n and first revisits spread out accordingly;
where they are caught lying q stays high and the next old page is checked
on the population's time scale.  Every old header is still checked once,
at its first revisit (timed by the mixture, so about at λ̂ where q is
small): a class believed without checks could never learn that it had
started to lie.  A *young* claim (a rate at or above λ₀) is not checked:
believed, it costs fetches if it lies, not versions, and counted, its
honest checks would swamp the old claims' (a class's fresh pages and images
would make its lying old headers look honest, and delay their checks:
``docs/lab/changing-web-runs.md``, "Old claims only").
Nothing here is a time constant: λ₀ is the crawl's own, and q a ratio of
counts.

A URL's own full revisits are checks too: a changed page whose header did
not move is a lie (q = 1: the caught liar is then revisited at its real
rate, ``estimator.py``), one whose header moved with it is honest, and an
unchanged one multiplies the odds of a lie by :func:`unchanged_evidence`;
the check ends when the header's claim dominates the mixture (q·λ₀ ≤ λ̂).
While the URL's odds of a lie are above ``change.trust.VERIFY_ABOVE`` the
frontier verifies its fetches (``change.trust.url_trusted``): a 304 acted
on would say nothing.  Below, its validators are used and the
verification schedules (its own, its class's) sample it: for a page
claiming months without a change the claim dominates only once the odds
are down to a hair, and every revisit until then was a full download.

The counts are saved with the policies' other aggregates
(:mod:`.persist`, at each frontier summary and at close), so a restarted
crawl keeps what its checks taught it; a crash loses at most one summary
interval of checks.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..change.url_class import url_class
from .memory import SIBLING_CONTRIBUTION

#: weight, in checks, of the wider share (class: its host's; host: the
#: crawl's) in a narrower one's estimate
PRIOR_CHECKS = 2.0
#: sibling classes counted at most (the least recently added are dropped)
MAX_CLASSES = 100_000


def _keep_recent(mapping: dict[str, Any], key: str, value: Any) -> None:
    """Put *value* under *key* as the most recently counted entry, dropping
    the least recently counted ones beyond :data:`MAX_CLASSES`."""
    mapping.pop(key, None)
    mapping[key] = value
    while len(mapping) > MAX_CLASSES:
        del mapping[next(iter(mapping))]


def _shrunk(counts: list[int] | tuple[int, int], wider: float) -> float:
    good, bad = counts
    return (bad + PRIOR_CHECKS * wider) / (good + bad + PRIOR_CHECKS)


@dataclass
class HeaderBelief:
    """``[honest, lied]`` counts of first-age checks, per queue and per sibling
    class, and the rate they imply."""

    counts: dict[str, list[int]] = field(default_factory=dict)
    classes: dict[str, list[int]] = field(default_factory=dict)
    total: list[int] = field(default_factory=lambda: [0, 0])
    #: ``[caught liars, Σ ln λ̂]`` per sibling class and over the crawl: how
    #: fast the pages whose old header was caught lying turned out to change
    liar_rates: dict[str, list[float]] = field(default_factory=dict)
    liar_total: list[float] = field(default_factory=lambda: [0.0, 0.0])
    #: ``[URLs, Σ ln λ̂]`` per sibling class, over the URLs whose rate rests
    #: on revisits of their own (:meth:`note_sibling`): how fast the pages a
    #: class's template serves change, where no liar of the class is caught yet
    sibling_rates: dict[str, list[float]] = field(default_factory=dict)
    #: tags the sibling contributions URLs keep in their memory (as
    #: PopulationPrior's epoch does): saved with the state, so contributions
    #: made before a restart are replaced exactly
    epoch: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    #: ln λ_lie per sibling class when its unchecked URLs were last planned
    #: by it (:meth:`note_sibling`); in memory, as the frontier's index of
    #: those URLs is
    planned_pace: dict[str, float] = field(default_factory=dict)

    def lie_probability(self, queue: str, url: str | None = None) -> float:
        """q: the chance that an unchecked old Last-Modified of *queue* (of
        *url*'s sibling class, when given) lies."""
        good, bad = self.total
        crawl = (bad + 1.0) / (good + bad + 2.0)
        host = self.counts.get(queue, (0, 0))
        if url is None:
            return _shrunk(host, crawl)
        own = self.classes.get(url_class(url), (0, 0))
        # the class shrunk towards the host's *other* classes: a host of one
        # class is counted once, as it was before classes were counted
        rest = (max(0, host[0] - own[0]), max(0, host[1] - own[1]))
        return _shrunk(own, _shrunk(rest, crawl))

    def note(self, queue: str, lied: bool, url: str | None = None) -> None:
        """Fold in one check: a revisit that saw the content and compared the header."""
        self.counts.setdefault(queue, [0, 0])[lied] += 1
        self.total[lied] += 1
        if url is not None:
            key = url_class(url)
            counts = self.classes.get(key, [0, 0])
            counts[lied] += 1
            _keep_recent(self.classes, key, counts)

    def note_liar_rate(self, url: str, rate: float) -> None:
        """Fold in the rate estimated for a URL just caught lying."""
        if not (rate > 0 and math.isfinite(rate)):
            return
        key = url_class(url)
        sums = self.liar_rates.get(key, [0.0, 0.0])
        for target in (sums, self.liar_total):
            target[0] += 1.0
            target[1] += math.log(rate)
        _keep_recent(self.liar_rates, key, sums)

    def note_sibling(self, memory: dict[str, Any], url: str | None, log_rate: float | None, typical: float) -> bool:
        """Replace *url*'s contribution to its class's sibling rate (kept in
        *memory*); None withdraws it (a URL not revisited yet, one whose own
        header is still being checked, a noise page).

        True when the rate a lie of the class would hide has at least doubled
        since the class's unchecked URLs were planned by it: their first
        checks, timed at their first visits by what was known then (in a
        fresh crawl, before any sibling was revisited), may now come sooner
        (the frontier re-plans them, ``Frontier.hosts.replan_unchecked``).  Each
        doubling counts once: O(log) re-plannings of a class, not one per
        revisit."""
        if url is None:
            return False
        key = url_class(url)
        planned = self.planned_pace.get(key)
        if planned is None:
            planned = self._log_lie_rate(typical, key)
        self._replace_sibling(memory, key, log_rate)
        pace = self._log_lie_rate(typical, key)
        doubled = pace >= planned + math.log(2.0)
        # a slower pace needs no re-planning (only earlier visits are
        # applied) but is the new reference for the next doubling
        _keep_recent(self.planned_pace, key, pace if doubled or pace < planned else planned)
        return doubled

    def _replace_sibling(self, memory: dict[str, Any], key: str, log_rate: float | None) -> None:
        old = memory.pop(SIBLING_CONTRIBUTION, None)
        if old and old[0] == self.epoch:
            sums = self.sibling_rates.get(key)
            if sums is not None:
                sums[0] -= 1.0
                sums[1] -= float(old[1])
                if sums[0] < 0.5:
                    del self.sibling_rates[key]
        if log_rate is None or not math.isfinite(log_rate):
            return
        sums = self.sibling_rates.get(key, [0.0, 0.0])
        mode = round(log_rate, 6)
        sums[0] += 1.0
        sums[1] += mode
        _keep_recent(self.sibling_rates, key, sums)
        memory[SIBLING_CONTRIBUTION] = [self.epoch, mode]

    def lie_rate(self, typical: float, url: str | None = None) -> float:
        """λ_lie: the rate a lying header of *url*'s class hides, the
        geometric mean of its caught liars' rates shrunk towards its revisited
        siblings' (:meth:`note_sibling`), those towards the crawl's caught
        liars', those towards *typical* (λ₀), each by :data:`PRIOR_CHECKS`.

        A lying header stands in front of the pages its template serves, so
        its pages change like their class's, not like the whole crawl's
        typical URL: λ₀ falls as the crawl learns its slow images and static
        pages, while the pages behind a lying template keep their own pace,
        so mixed at λ₀ they would wait far too long for their checks
        (``docs/lab/changing-web-runs.md``, "Due URLs served by lateness, and the pace a lie would hide")."""
        return math.exp(self._log_lie_rate(typical, None if url is None else url_class(url)))

    def _log_lie_rate(self, typical: float, key: str | None) -> float:
        """ln :meth:`lie_rate` for sibling class *key* (None: the crawl's)."""
        n, total = self.liar_total
        crawl = (total + PRIOR_CHECKS * math.log(typical)) / (n + PRIOR_CHECKS)
        if key is None:
            return crawl
        siblings, sibling_sum = self.sibling_rates.get(key, (0.0, 0.0))
        anchor = (sibling_sum + PRIOR_CHECKS * crawl) / (siblings + PRIOR_CHECKS)
        own_n, own = self.liar_rates.get(key, (0.0, 0.0))
        return (own + PRIOR_CHECKS * anchor) / (own_n + PRIOR_CHECKS)

    def state(self) -> dict[str, Any]:
        """The counts, JSON-safe (saved with the frontier, see :mod:`.persist`)."""
        return {
            "total": list(self.total),
            "queues": self.counts,
            "classes": self.classes,
            "liar_total": list(self.liar_total),
            "liar_rates": self.liar_rates,
            "sibling_rates": self.sibling_rates,
            "epoch": self.epoch,
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Continue from saved counts (most recently counted class last)."""

        def pair(value: Any) -> list[int]:
            good, bad = value
            return [int(good), int(bad)]

        self.total = pair(state["total"])
        self.counts = {str(k): pair(v) for k, v in state["queues"].items()}
        classes = list(state["classes"].items())[-MAX_CLASSES:]
        self.classes = {str(k): pair(v) for k, v in classes}
        # absent from states saved before liars' rates were kept
        n, total = state.get("liar_total", (0.0, 0.0))
        self.liar_total = [float(n), float(total)]
        rates = list(state.get("liar_rates", {}).items())[-MAX_CLASSES:]
        self.liar_rates = {str(k): [float(v[0]), float(v[1])] for k, v in rates}
        # absent from states saved before sibling rates were kept: a new
        # epoch then, so no URL withdraws a contribution never counted
        siblings = list(state.get("sibling_rates", {}).items())[-MAX_CLASSES:]
        self.sibling_rates = {str(k): [float(v[0]), float(v[1])] for k, v in siblings}
        if "epoch" in state:
            self.epoch = str(state["epoch"])

    def url_lie_probability(self, queue: str, evidence: float, url: str | None = None) -> float:
        """q for one URL whose own checks so far multiply the odds of a lie
        by *evidence* (the likelihood ratio, 1 before any)."""
        q = self.lie_probability(queue, url)
        return q * evidence / (q * evidence + 1.0 - q)

    def dominates(self, queue: str, believed: float, typical: float, evidence: float, url: str | None = None) -> bool:
        """Does the header's claim dominate the mixture (q·λ_lie ≤ λ̂)?  Then
        checking it further costs more fetches than the versions it could find."""
        return self.url_lie_probability(queue, evidence, url) * self.lie_rate(typical, url) <= believed

    def rate(self, queue: str, believed: float, typical: float, evidence: float = 1.0, url: str | None = None) -> float:
        """The rate of a URL whose first-visit age is unchecked: *believed*
        (λ̂, the header taken at its word) mixed by q with the rate a lie
        would hide (:meth:`lie_rate`, λ₀ until liars are caught).
        A header claiming a rate at or above the typical one is taken as it
        is: believing it costs fetches, not versions."""
        if not believed < typical:
            return believed
        q = self.url_lie_probability(queue, evidence, url)
        return (1.0 - q) * believed + q * max(believed, self.lie_rate(typical, url))


def unchanged_evidence(lie_rate: float, interval: float) -> float:
    """The likelihood ratio (lying header : honest one) of a full revisit that
    found the content unchanged after *interval* seconds, the header
    consistent: a page that lies changes at about *lie_rate* (λ_lie,
    :meth:`HeaderBelief.lie_rate`) and would have changed with probability
    1 − e^(−λ_lie·t), an honest slow page hardly.  Successive unchanged
    checks multiply; the URL's next check is then timed further off, about
    twice as far after each (a doubling verification of its own "no
    change", derived rather than assumed)."""
    return math.exp(-max(0.0, lie_rate * interval))
