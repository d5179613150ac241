"""Change hints: a site saying that a URL changed, and how far it is believed.

Sites announce changes: a sitemap's ``<lastmod>``, an RSS/Atom entry's
``updated``, a WebSub ping.  Such a **hint** is ``(URL, claimed modification
time or None, source)``.  Hints are imperfect: some changes are never hinted
(recall < 1), some hints are false or stale (precision < 1), and they arrive
late.  So a hint is evidence, not an order, and who does what is split as
everywhere else in the crawler:

* the **frontier** (owner of records, :meth:`Frontier.hosts.hint
  <scrapy_adaptive.frontier.hostfacts.Hosts.hint>`) drops what cannot be news (an
  unknown URL, a URL being fetched, a claimed modification not later than
  the last visit, a URL with an acted-on hint still pending), asks the wait
  policy, and, if the policy wants the visit earlier than planned, moves the
  URL's queue entry there and keeps the hint on the record (``record.hint``);
* the **wait policy** decides *whether* and *how far*
  (``WaitPolicy.hint_wait(history, hint)``: seconds from the hint's receipt
  until the visit, or None to ignore it).  Policies are pure, so the hint
  carries what they need: its receipt time (the frontier's clock) and the
  track record of its source (below);
* the **visit** that follows an acted-on hint settles it: a changed page
  *confirms* the hint, an unchanged one *refutes* it (unknown: neither).  The
  frontier counts the outcome per host and source in the queue's persisted
  counters and annotates the visit (``hintConfirmed`` / ``hintRefuted``, in
  the crawl log).  Only acted-on hints are scored: a hint left alone and
  followed by a scheduled visit days later says little (the page may have
  changed after the hint, or long before).

"Changed" is not "the hint was right": a page may have changed since the
last visit anyway.  Where hints are plentiful and junk (a sitemap stamping
every ``lastmod`` with the build time) a hinted visit finds a change about
as often as a visit at any other moment, so counting changes would credit
the source with the page's own rate.  The policy therefore states, on the
hinted visit, the probability *q* of a change since the last visit that it
had without the hint (the plan's ``hint_base``).  With P(changed | hint) = p +
(1 − p)·q, the source's own precision is p = (c − Σq)/(n − Σq), and the
counts kept are ``[confirmed, refuted, Σq]``.

Trust is learned, as for HTTP validators (:mod:`scrapy_adaptive.change.trust`),
but the question differs: validators predict "no change" and one lie is
disqualifying, whereas a hint source has a *precision* to be estimated, and a
precision of 0.5 can still be worth acting on.  So the counts here are
``[confirmed, refuted, Σq]`` per source, halved once they pass
:data:`TRUST_MEMORY` (a source's quality drifts), and the decision made from
them lives with the policies (:mod:`scrapy_adaptive.policies.hint_decisions`).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

#: counts per source are halved once confirmed + refuted exceed this, so the
#: estimate follows a source whose quality changes
TRUST_MEMORY = 200

#: the acted-on hint kept on a URL's record until its visit settles it
#: (``UrlRecord.hint``), by stored key: short keys, as in the record itself
PENDING_RECEIVED = "t"  #: when the hint was received (epoch seconds)
PENDING_MODIFIED = "m"  #: the claimed modification time, or None
PENDING_SOURCE = "s"  #: the source's name
PENDING_TRUST = "c"  #: the source's [confirmed, refuted, Σq] on this host then
PENDING_POOLED = "g"  #: the same over every host


def pending(
    received: float, modified: float | None, source: str, own: list[float], pooled: list[float]
) -> dict[str, object]:
    """The record's note of an acted-on hint (see the ``PENDING_*`` keys)."""
    return {
        PENDING_RECEIVED: round(received, 3),
        PENDING_MODIFIED: modified,
        PENDING_SOURCE: source,
        PENDING_TRUST: own,
        PENDING_POOLED: pooled,
    }


#: crawl-log annotations of the visit that settles an acted-on hint
CONFIRMED = "hintConfirmed"
REFUTED = "hintRefuted"


@dataclass(frozen=True)
class Hint:
    """One announcement that *url* changed.

    ``modified`` is the claimed modification time (seconds since the epoch),
    None when the source gives none (a ping).  ``received``, ``trust`` (this
    host's ``(confirmed, refuted, Σq)`` for the source) and ``pooled`` (the same
    over every host) are filled in by the frontier before the policy sees
    the hint.
    """

    url: str
    modified: float | None
    source: str
    received: float = 0.0
    trust: tuple[float, float, float] = (0.0, 0.0, 0.0)
    pooled: tuple[float, float, float] = (0.0, 0.0, 0.0)


class HintResult(StrEnum):
    """What :meth:`.Hosts.hint` did with a hint (stats name the reason)."""

    ACTED = "acted"  #: the URL's next visit was moved earlier
    NEW = "new"  #: the URL was not known: added, due now (by the caller)
    UNKNOWN = "unknown"  #: no record for this fingerprint
    STALE = "stale"  #: claimed modification not later than the last visit
    OUT = "out"  #: the URL is being fetched right now
    PENDING = "pending"  #: an acted-on hint is already waiting for its visit
    NEVER = "never"  #: the URL failed or was disregarded for good
    DECLINED = "declined"  #: the wait policy ignores it
    LATER = "later"  #: the visit the policy wants is not earlier than planned


def counts(raw: object) -> list[float]:
    """``[confirmed, refuted, Σq]`` from what was stored (missing parts 0)."""
    values = list(raw) if isinstance(raw, (list, tuple)) else []
    return [float(v) for v in (values + [0.0, 0.0, 0.0])[:3]]


def observe(before: list[float] | None, confirmed: bool, base: float = 0.0) -> list[float]:
    """The counts after one more settled hint whose visit had probability
    *base* of finding a change anyway (halved when long)."""
    good, bad, expected = counts(before)
    if confirmed:
        good += 1
    else:
        bad += 1
    expected += min(max(base, 0.0), 1.0)
    if good + bad > TRUST_MEMORY:
        good, bad, expected = good / 2, bad / 2, expected / 2
    return [round(good, 3), round(bad, 3), round(expected, 3)]


def pool(total: list[float], part: list[float], sign: int = 1) -> None:
    """Add (with *sign* −1: remove) *part* into *total*, in place."""
    for i, value in enumerate(counts(part)):
        total[i] = round(total[i] + sign * value, 3)
