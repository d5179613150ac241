"""What a difference means: an answer's change state against the URL's record.

The judge (:func:`.judge.judge`) hands over an answer's first verdict (its
headers read, :func:`.freshness.base_visit`) and its digests; the change
state is decided here, by what the answer is:

* a fetch the downloader decided (a 304, a download stopped after its
  headers): its change stands (:func:`downloader_verdict`);
* a server error (a 5xx, a 429): unknown, nothing of the page's
  (:func:`~..model.transient`);
* a redirect or a 4xx: an answer, never a version (:func:`judge_other_answer`);
* a 2xx, the page's content: unchanged when its body is byte for byte the
  last capture's, else the two digests compared (:func:`compare`);
* a page judged by its items (:func:`items_verdict_before`, :func:`judge_items`).

Pure: the record is read as issued, nothing is written.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..model import NOT_CONTENT, ChangeState, FetchResult, Visit, delivers_content, transient
from .answer import Answer


def verdict(
    answer: Answer, record: Mapping[str, Any], base: Visit, digest: str | None, payload: str | None, same: bool
) -> Visit:
    """The verdict on *answer* given the URL's record as issued (*base*: what
    its headers tell; *digest*, *payload*: its rule's digest and its body's
    payload digest, None when not digested; *same*: the body is byte for
    byte the last capture's).

    Only a 2xx is the page's content, compared with the last 2xx capture
    (:func:`~..model.delivers_content`).  A server error (a 5xx, a 429) is
    a visit whose change is unknown and whose body, type and validators are
    not the page's.  Any other answer (a redirect, a 4xx) is judged as an
    answer, never as a version (:func:`judge_other_answer`); its body is
    still digested, for the host's not-found page (soft 404s), but the
    record keeps its last capture."""
    fetch = answer.fetch
    if fetch is not None and fetch.change is not None:
        return downloader_verdict(fetch, base)
    if transient(answer.status):
        # change unknown, no digest
        return replace(base, size=None, content_type=None, etag=None, last_modified=None)
    if not delivers_content(answer.status):
        visit = base if digest is None else replace(base, digest=digest, payload_digest=payload)
        return judge_other_answer(answer, record, visit)
    # the verdict made in one copy (a dataclass copy is the costly part of a small page's judging)
    if same or (digest is None and same_empty_answer(record, base)):
        change = ChangeState.UNCHANGED
    else:
        change = compare(record.get("digest"), digest)
    return replace(base, digest=digest, payload_digest=payload, change=change)


def compare(previous: str | None, current: str | None) -> ChangeState:
    """The change state from the last digest and this one.

    A first digest is a new version; digests of different rules (the URL's
    rule was changed) cannot be compared: unknown.
    """
    if current is None:
        return ChangeState.UNKNOWN
    if previous is None:
        return ChangeState.CHANGED
    if previous.split(":", 1)[0] != current.split(":", 1)[0]:
        return ChangeState.UNKNOWN
    return ChangeState.UNCHANGED if previous == current else ChangeState.CHANGED


def downloader_verdict(fetch: FetchResult, base: Visit) -> Visit:
    """The verdict of a fetch the downloader decided (*fetch*: what it
    found, a 304 or a download stopped after its headers): its change
    stands, no body was digested, and the record keeps its last digest and
    size."""
    annotations = (*base.annotations, fetch.annotation) if fetch.annotation else base.annotations
    return replace(base, change=fetch.change, annotations=annotations, size=None)


def same_empty_answer(record: Mapping[str, Any], visit: Visit) -> bool:
    """True if this visit, without a body, answered as the last one did (the
    same status, no body then either): no digest can say "unchanged" of an
    empty answer, and without it the URL was revisited at the minimum wait
    for ever."""
    return (
        visit.digest is None
        and visit.size == 0
        and bool(record.get("visits"))
        and record.get("size") == 0
        and record.get("status") == visit.status
    )


def same_redirect(record: Mapping[str, Any], status: int | None, reason: str | None) -> bool:
    """True if the URL answered as at its last visit: the same status, and
    for a redirect the same target (in *reason*)."""
    return bool(record.get("visits")) and record.get("status") == status and record.get("reason") == reason


def judge_other_answer(answer: Answer, record: Mapping[str, Any], visit: Visit) -> Visit:
    """*visit* judged as an answer that is not the page's content (a 3xx
    that reached the spider, a 4xx), as a new verdict: never a version,
    whatever its body.

    The same answer as last time (the same status, for a redirect the same
    target) found no change, so the wait policy backs off a gone or moved
    page as it does an unchanged one; a different answer says nothing about
    the page's content (unknown: no observation for the rate estimator).
    What happened to the page is the change events' to say (``gone``,
    ``moved``, ``back``).  A redirect's target is its ``Location``, as the
    scheduler reads a followed one."""
    if 300 <= answer.status < 400 and answer.location:
        visit = replace(visit, location=answer.location, reason=f"redirect to {answer.location}")
    same = same_redirect(record, visit.status, visit.reason)
    return replace(visit, change=ChangeState.UNCHANGED if same else ChangeState.UNKNOWN)


def items_verdict_before(same: bool) -> str:
    """What an items-mode callback reads in ``response.meta["adaptive_change"]``.

    The page is judged by the items the callback yields, so the verdict
    comes after it: before, the one verdict known is a body byte for byte
    the last visit's (*same*: ``"unchanged"``, final); anything else is
    ``"unknown"`` until the items are digested (the meta key then holds the
    verdict, for what runs after the callback)."""
    return ChangeState.UNCHANGED.value if same else ChangeState.UNKNOWN.value


def judge_items(record: Mapping[str, Any], visit: Visit, digest: str, payload: str, same: bool) -> Visit:
    """*visit* judged by the page's items (*digest*: their digest; *payload*:
    the page's payload digest; *same*: the body is byte for byte the last
    capture's), as a new verdict.  A body byte for byte the last one did not
    change, whatever its items digest to now."""
    change = ChangeState.UNCHANGED if same else compare(record.get("digest"), digest)
    return replace(visit, digest=digest, payload_digest=payload, change=change)


def not_content(visit: Visit) -> bool:
    """True for a soft 404 or a parked page (the frontier's judgement at commit)."""
    return not NOT_CONTENT.isdisjoint(visit.annotations)
