"""How far a host's "no change" headers can be believed (thesis ch. 8).

Acting on a validator's prediction (a 304, or aborting a download whose
ETag / Last-Modified did not change) saves the body but cannot see a change
the headers hide.  So, per host, some fetches are *verification* fetches:
downloaded in full despite the validators, the headers' prediction compared
with what the digest says.  The verification rate falls as the host keeps
being right, down to a floor; one observed lie (headers said "no change",
the content changed) drops the host back to full downloads until it has
been right again ``warmup`` times.  After that the rate halves with each
further confirmation (1/2, 1/4, 1/8 ...) down to ``min_rate``, so a reliable
host costs a handful of full downloads, then one in ``1 / min_rate``.

The schedule is deterministic, not random: every ``ceil(1 / rate)``-th
acted-on prediction is verified, so a host that starts lying is caught
within a bounded number of its predictions (at most ``1 / min_rate``, 200 by
default).

Reported in Clausen's terms (2004): *reliability*, the share of "no change"
predictions that were right; *usefulness*, the share of unchanged pages the
headers predicted as unchanged.

Per host *and per sibling class* (host, directory and extension, the
:func:`~.url_class.url_class` learned noise is pooled by): a host's pages and
its images usually come from different software, and on a host whose pages
lie a host-wide record was reset by each lying page's first lie, so its
honest images were downloaded in full again and again.  Each class keeps its
own record (:class:`TrustBook`); a class seen for the first time starts from
the host-wide record, which every verification fetch of the host updates,
so a new directory of a trusted host is trusted at once and one of a host
just caught lying is not.

The counters live in the host's persistent record, owned by the frontier;
this module only computes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any

from ..config.table import DEFAULTS
from .url_class import url_class


@dataclass(frozen=True)
class TrustParams:
    warmup: int = DEFAULTS["ADAPTIVE_TRUST_WARMUP"]  #: right predictions in a row before any is acted on unverified
    min_rate: float = DEFAULTS["ADAPTIVE_TRUST_MIN_RATE"]  #: verification floor (1 in 200)


@dataclass
class Trust:
    """A host's track record; stored as a small dict in its queue record."""

    said_unchanged: int = 0  #: verified fetches whose headers said "no change"
    right: int = 0  #: ...and the content had not changed
    lies: int = 0  #: ...and the content had changed
    said_changed: int = 0  #: verified fetches whose headers said "changed"
    unchanged_seen: int = 0  #: verified fetches whose content had not changed
    streak: int = 0  #: right "no change" predictions since the last lie
    since_verified: int = 0  #: predictions acted on since the last verification

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Trust:
        return cls(**{k: int(v) for k, v in (data or {}).items() if k in _TRUST_FIELDS})

    def to_dict(self) -> dict[str, int]:
        # read at every fetch with validators: the counters, not asdict's deep copy
        return {k: v for k, v in vars(self).items() if v}

    def verify_rate(self, params: TrustParams) -> float:
        """The share of predictions to verify now: 1 until trusted."""
        if self.streak < params.warmup:
            return 1.0
        return max(params.min_rate, 0.5 ** min(64, self.streak - params.warmup + 1))

    def should_verify(self, params: TrustParams) -> bool:
        """Whether the next fetch with validators is a verification fetch."""
        rate = self.verify_rate(params)
        return rate >= 1.0 or self.since_verified + 1 >= math.ceil(1.0 / rate)

    def decide(self, params: TrustParams) -> bool:
        """Decide for the next fetch with validators, and count the decision.

        Counted when it is made, not when the fetch comes back: with several
        fetches of a host in flight, each must see the others' decisions, or
        they would all verify at once.
        """
        verify = self.should_verify(params)
        self.since_verified = 0 if verify else self.since_verified + 1
        return verify

    def observe_verified(self, prediction: str | None, change: str) -> bool:
        """Fold a verification fetch in; return True if it caught a lie."""
        if change == "unchanged":
            self.unchanged_seen += 1
        if prediction == "unchanged":
            self.said_unchanged += 1
            if change == "changed":
                self.lies += 1
                self.streak = 0
                return True
            if change == "unchanged":
                self.right += 1
                self.streak += 1
        elif prediction == "changed":
            self.said_changed += 1
        return False

    @property
    def reliability(self) -> float | None:
        return self.right / self.said_unchanged if self.said_unchanged else None

    @property
    def usefulness(self) -> float | None:
        return self.right / self.unchanged_seen if self.unchanged_seen else None


_TRUST_FIELDS = frozenset(f.name for f in fields(Trust))

#: the host-wide record's key in a :class:`TrustBook`
HOST = ""
#: class records kept per host; the least recently used is dropped first
#: (it then starts again from the host-wide record)
MAX_CLASSES = 64


class TrustBook:
    """A host's trust records: the host-wide one and one per sibling class.

    Stored as ``{"": host, class key: record, ...}`` (plain dicts of
    counters, most recently used class last; :func:`normalise` reads a
    stored one).  The frontier owns the dict; this wraps it, without a copy
    (it is consulted for every fetch with validators), to decide and to fold
    verdicts in, changing it in place.
    """

    def __init__(self, data: dict[str, dict[str, int]]) -> None:
        self.data = data

    def of(self, url: str) -> Trust:
        """The record deciding for *url*: its class's; for a class not seen
        yet, a new record on the host's schedule (its streak), with no
        counts of its own."""
        return self._of(url_class(url))

    def _of(self, key: str) -> Trust:
        if key in self.data:
            return Trust.from_dict(self.data[key])
        return Trust(streak=self.host().streak)

    def host(self) -> Trust:
        return Trust.from_dict(self.data.get(HOST))

    def classes(self) -> dict[str, Trust]:
        return {key: Trust.from_dict(data) for key, data in self.data.items() if key != HOST}

    def decide(self, url: str, params: TrustParams, own: float | None = None) -> bool | None:
        """Decide for the next fetch of *url* with validators (see
        :meth:`Trust.decide`); None if the URL's own verify rate *own* is the
        laxer schedule: its caller decides on it, and the class's record is
        left as it was."""
        key = url_class(url)
        trust = self._of(key)
        if own is not None and own < trust.verify_rate(params):
            return None
        verify = trust.decide(params)
        self._put(key, trust)
        return verify

    def observe_verified(self, url: str, prediction: str | None, change: str) -> bool:
        """Fold a verification fetch of *url* into its class's and its host's
        records; True if it caught its class's validators lying."""
        key = url_class(url)
        trust = self._of(key)
        lie = trust.observe_verified(prediction, change)
        self._put(key, trust)
        host = self.host()
        host.observe_verified(prediction, change)
        self.data[HOST] = host.to_dict()
        return lie

    def _put(self, key: str, trust: Trust) -> None:
        self.data.pop(key, None)
        self.data[key] = trust.to_dict()
        while len(self.data) > MAX_CLASSES + 1:
            del self.data[next(k for k in self.data if k != HOST)]


def normalise(data: Mapping[str, Any] | None) -> dict[str, dict[str, int]]:
    """A stored trust record as a book: a flat record of counters (written
    before class records existed) becomes the host-wide one."""
    if not data:
        return {}
    if all(not isinstance(v, Mapping) for v in data.values()):
        return {HOST: {str(k): int(v) for k, v in data.items()}}
    return {str(k): dict(v) for k, v in data.items() if isinstance(v, Mapping)}


#: the key of a wait policy's per-URL memory (``record.policy``) under which
#: it still checks the URL's first-visit Last-Modified
#: (``policies/belief.py``): such a URL's fetches are verified, since a 304
#: acted on would say nothing about whether the header lies
HEADER_UNCHECKED = "ua"
#: a URL whose old header lies with a probability at most this (its class's
#: checks and its own, ``policies/belief.py``) uses its validators while the
#: check goes on (the wait policy's ``header_doubtful``): an acted-on 304
#: then hides a lie less than once in twenty, and its own and its class's
#: verification schedules still sample it
VERIFY_ABOVE = 0.05
#: crawl-log annotation of a revisit that caught a first-visit Last-Modified
#: lying (the content changed under it): the URL's siblings still unchecked
#: are planned again (``Frontier.hosts.replan_unchecked``)
HEADER_LIED = "ageLie"
#: crawl-log annotation of a revisit after which the pace a lie of the URL's
#: class would hide has doubled (its revisited siblings change faster than
#: was known when the class's unchecked URLs were planned): those are
#: planned again, as after ``ageLie``
HEADER_PACE = "agePace"


def _own(record: Sequence[int] | None) -> tuple[int, int, int]:
    """A URL's ``[lies, right, since]`` (an older two-item record: since 0)."""
    if not record:
        return 0, 0, 0
    return int(record[0]), int(record[1]), int(record[2]) if len(record) > 2 else 0


def _earn_back(lies: int, params: TrustParams) -> int:
    """Right predictions a URL caught lying *lies* times needs before its
    validators are acted on again: ``warmup``, twice as many per further lie."""
    return max(1, params.warmup) * 2 ** min(16, lies - 1)


def url_trusted(record: Sequence[int] | None, params: TrustParams, policy: Mapping[str, Any] | None = None) -> bool:
    """Whether a URL's own validators may be acted on at all (its own
    record, or its class's, then decides how often they are verified).

    *record* is the URL's ``[lies, right since the last lie, ...]``.  A URL
    caught lying is downloaded in full on its revisits until it has been
    right ``warmup`` times, twice as many after each further lie: a page
    whose ETag never moves while its content does is right only between
    changes, so it earns trust back ever more slowly, while the other URLs
    of an honest host keep theirs.  Nor is a URL whose wait policy (its
    memory, *policy*) still checks its header: believing an honest-looking
    class's 304s for such URLs let lying pages of a class not yet caught
    answer 304.  (The frontier asks the wait policy instead, where it can:
    ``header_doubtful`` lets a URL whose odds of a lie are small use its
    validators while its check goes on.)
    """
    if policy and policy.get(HEADER_UNCHECKED):
        return False
    lies, right, _ = _own(record)
    return lies <= 0 or right >= _earn_back(lies, params)


def url_verify_rate(record: Sequence[int] | None, params: TrustParams) -> float | None:
    """The share of a trusted URL's predictions its own record asks to
    verify, or None where it has no say yet (never verified right).

    As a class's (:meth:`Trust.verify_rate`): once the URL has been right
    ``warmup`` times on its own (after a lie: its earn-back), the rate halves
    with each further right prediction (1/2, 1/4 ... down to ``min_rate``).  It
    rations verification where the URL's class does not: on a host whose
    CMS serves a few pages with frozen validators, the class's record is
    reset by each of their lies, and without a record of their own the
    honest pages of that class were downloaded in full on every revisit.
    """
    if not record:
        return None
    lies, right, _ = _own(record)
    earned = right - (_earn_back(lies, params) if lies else params.warmup) + 1
    if earned <= 0:
        return None
    return max(params.min_rate, 0.5 ** min(64, earned))


def url_decide(record: Sequence[int] | None, rate: float) -> tuple[bool, list[int]]:
    """Decide a trusted URL's next fetch on its own schedule at *rate*
    (deterministic, as :meth:`Trust.decide`: every ``ceil(1 / rate)``-th
    prediction verified); returns the decision and the record to keep."""
    lies, right, since = _own(record)
    verify = since + 1 >= math.ceil(1.0 / rate)
    return verify, [lies, right, 0 if verify else since + 1]


def observe_url(record: Sequence[int] | None, prediction: str | None, change: str) -> list[int] | None:
    """A URL's ``[lies, right, since]`` after a verification fetch.

    A right "no change" counts for the URL (its own schedule thins out), a
    lie starts its earn-back; any verification restarts the count of
    predictions acted on since."""
    lies, right, _ = _own(record)
    if prediction == "unchanged" and change == "changed":
        return [lies + 1, 0, 0]
    if prediction == "unchanged" and change == "unchanged":
        return [lies, right + 1, 0]
    return [lies, right, 0] if record else None
