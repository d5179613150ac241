"""A visit's verdict and what the crawl's layers hand each other on the way.

The downloader leaves a :class:`FetchResult`, change detection makes the
:class:`Visit` (the verdict), the policy stack returns a :class:`Plan` from
the verdict and the URL's record; the frontier records the two in one write
(:meth:`~..frontier.Frontier.update`, the only place they meet).  Both are
frozen: each layer builds its own value, none writes into another's.
Imports nothing of the package.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

#: "Never" as a time of next visit: the largest unsigned 64-bit value.  Failed
#: and robots-disallowed URLs stay in their queue with this time so that they
#: are not rediscovered (thesis 6.2).
NEVER_MS = 2**64 - 1

#: crawl-log annotation of a verification fetch that caught the host's
#: validators saying "no change" while the content changed
VALIDATOR_LIE = "validatorLie"
#: crawl-log annotations (and visit kinds) of pages that are not the URL's content
SOFT_404 = "soft404"
PARKED = "parked"
#: the annotations of a page that is the host's error or placeholder page, not the URL's content
NOT_CONTENT = frozenset({SOFT_404, PARKED})
#: crawl-log annotation of a sitemap or feed that could not be read (the
#: policy stack backs its wait off)
SIGNAL_UNREADABLE = "signalUnreadable"


def delivers_content(status: int | None) -> bool:
    """True for an answer that carries the page's content (a 2xx): the only
    answer that can be a new version.

    Every other answer says something *about* the page, and the change
    events say it: a redirect that it moved, a 4xx that it is gone, a 5xx
    or a 429 that the server could not serve it now, a 304 that it did not
    change.  The record keeps the last 2xx capture through them, so a page
    that answers again with the same content is not a new version."""
    return status is not None and 200 <= status < 300


#: answers that say the server could not serve the page now, nothing about
#: the page itself: a 5xx, and 429 (too many requests)
TRANSIENT = 429


def transient(status: int) -> bool:
    """True for an answer that says nothing about the page's content."""
    return status >= 500 or status == TRANSIENT


def answers_with_page(status: int | None) -> bool:
    """True for an answer that shows the page is there as captured: its
    content (a 2xx), or a 304 confirming it.  Anything else (a redirect, an
    error) says the URL answers otherwise for now."""
    return delivers_content(status) or status == 304


class Outcome(StrEnum):
    """How one attempt at a URL ended (thesis 6.2)."""

    VISITED = "visited"  #: any HTTP response, 404 included
    RETRY = "retry"  #: a retriable error; tried again after the retry delay
    FAILED = "failed"  #: retries exhausted or not crawlable: never again
    DISREGARDED = "disregarded"  #: robots.txt or a late scope decision: never again


class ChangeState(StrEnum):
    """What a visit says about the content (thesis 5.1)."""

    CHANGED = "changed"
    UNCHANGED = "unchanged"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Visit:
    """The verdict on one attempt, made by the evaluators.

    Frozen: a judge builds it once (or a new one with
    :func:`dataclasses.replace`), and what the wait policy decides from it
    is the policy's own value, the :class:`Plan`, never written into the
    verdict, so every layer reads the verdict as its judge made it.  For
    retriable errors
    ``host_level`` says the whole host is unreachable (connection refused,
    DNS), so the whole queue waits the retry delay, not just this URL.

    ``digest`` is the comparison digest of the content (rule-dependent) and
    ``payload_digest`` the SHA-1 of the exact body (WARC style).  When no
    body was seen (a 304, an aborted fetch, an empty body) both are None
    and the record keeps the previous ones.  ``annotations`` are short
    crawl-log words of the judges (``unchanged``, ``notModified``,
    ``midFetchAbort``); the policy's own words are its plan's ``notes``.

    ``fetched`` is when this visit's fetch ended (set by the scheduler; the
    simulator sets its own clock's time), for policies that measure the
    interval since the last visit.

    ``validation`` says how validators were used (``"verified"``: a full
    download to check them; ``"trusted"``: their "no change" was acted on),
    and ``prediction`` what the headers predicted on a verification fetch;
    the frontier folds a verification into the host's trust record.

    ``queue`` is the politeness queue the URL belongs to (the frontier's
    key, set on every verdict), so policies group URLs as politeness does.
    """

    outcome: Outcome
    status: int | None = None
    change: ChangeState = ChangeState.UNKNOWN
    content_type: str | None = None
    size: int | None = None
    digest: str | None = None
    payload_digest: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    duration: float | None = None
    reason: str | None = None
    host_level: bool = False
    url: str | None = None
    depth: int | None = None
    overdue: float | None = None
    annotations: tuple[str, ...] = ()
    validation: str | None = None
    prediction: str | None = None
    fetched: float | None = None
    #: the politeness queue the URL belongs to (the record's ``queue``: a
    #: host, a registered domain or a download slot, per
    #: ``ADAPTIVE_POLITENESS_KEY``), set by whoever builds the verdict, so
    #: that policies group URLs exactly as the frontier queues them; None:
    #: unknown (policies then fall back to the URL's host name)
    queue: str | None = None
    #: what change detection learned about the page's noise (the record's
    #: ``noise``, :mod:`~..change.noise`); None keeps what the record had
    noise: dict[str, Any] | None = None
    #: a noise probe: visit again within this many seconds whatever the
    #: wait (the frontier's politeness still spaces it); None: no probe
    probe: float | None = None
    #: a redirect's target (the URL it sent the visit to)
    location: str | None = None
    #: items mode: the per-field summary of the page's items (the record's
    #: ``fields``, :mod:`..change.fields`; None keeps the record's), and what
    #: changed field by field since the last one (for the change event)
    fields: dict[str, Any] | None = None
    field_changes: dict[str, Any] | None = None
    #: ``ADAPTIVE_TEXT_DIFF``: the visible text of a changed page, as lines
    #: (:mod:`..change.text_diff`): the frontier keeps it beside the record and
    #: diffs the next version against it; None: nothing to keep
    text: list[str] | None = None
    #: the lifetime the response's caching headers grant (``Cache-Control:
    #: max-age``, or ``Expires`` minus ``Date``; seconds), rate evidence on a
    #: URL's first visit (:mod:`~.change.freshness`); None: none granted
    freshness: float | None = None
    #: when the site says the content was last modified outside HTTP (a
    #: sitemap ``<lastmod>`` or a feed's date on the request that found the
    #: URL; seconds since the epoch), rate evidence on a first visit without
    #: ``Last-Modified``; never a validator; None: not said
    claimed_modified: float | None = None


@dataclass
class FetchResult:
    """What the downloader's middlewares found on one fetch, before any body
    is judged: filled by the validators middleware over the fetch's life
    (request, headers, response) and read once by change detection.

    ``validation`` says how validators were used (``"verified"``: a full
    download to check them; ``"trusted"``: their "no change" may be acted
    on); ``prediction`` is what the headers predicted on a verification;
    ``change`` and ``annotation`` are the downloader's own verdict when it
    decided without a body (a 304, a download stopped after its headers).
    """

    validation: str | None = None
    validators_sent: bool = False
    #: the body length (or the last size) of a download stopped after its headers
    abort_length: int | None = None
    prediction: str | None = None
    change: ChangeState | None = None
    annotation: str | None = None


@dataclass(frozen=True)
class Plan:
    """What the wait policy decided after a visit, beside the verdict.

    The policy reads the URL's record and the visit's verdict and returns
    this (:meth:`~..policies.base.WaitPolicy.plan`); the runtime hands both
    to :meth:`~..frontier.Frontier.update`, which records them in one write.
    Only a visit (``Outcome.VISITED``) has a plan: a retry's or a failure's
    next time is the frontier's (its retry delay, never).

    ``wait`` is the interval until the next visit (the frontier only applies
    it); ``memory`` the policy's new per-URL memory (a small JSON-safe
    dict; None: keep the record's); ``hint_base``, on a visit brought
    forward by a change hint, the probability the policy gave a change since
    the last visit *without* the hint, so the hint is credited only with
    what it adds (:mod:`..frontier.hints`); ``notes`` the crawl-log words
    the policy adds (a first-visit Last-Modified caught lying, the pace that
    moved), logged after the verdict's annotations.
    """

    wait: float
    memory: dict[str, Any] | None = None
    hint_base: float | None = None
    notes: tuple[str, ...] = ()
