"""How one answer is judged: its change state against the URL's record.

What a difference means, decided here for every response the crawl gets
(an :class:`~.answer.Answer`, read off the Scrapy response by the visit
middleware): the first verdict of any answer before its content is judged
(:func:`base_visit`), the downloader's own verdict on a 304 or a stopped
download (:func:`downloader_verdict`), the change state from two digests
or two identical bodies (:func:`evaluate`), an answer that is not the
page's content (:func:`judge_other_answer`), and a page judged by its
items (:func:`items_verdict_before`, :func:`judge_items`).  Learned noise
refines a verdict afterwards (:func:`.noise_learner.learn_noise`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ..dates import parse_http_date, parse_time
from ..model import NOT_CONTENT, ChangeState, Outcome, Visit, delivers_content
from .answer import Answer
from .digest import Digester, payload_digest
from .freshness import freshness, last_modified_problem


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


def same_payload(record: Mapping[str, Any], visit: Visit) -> bool:
    """True if this visit's body is byte for byte the last visit's.

    Such a page did not change, whatever rule digests it now: a digest rule
    switch (a sibling's learned noise adopted, the settings edited) changes
    the digest's form, never the page.
    """
    last = record.get("payload_digest")
    return last is not None and visit.payload_digest == last


def items_verdict_before(record: Mapping[str, Any], answer: Answer) -> str:
    """What an items-mode callback reads in ``response.meta["adaptive_change"]``.

    The page is judged by the items the callback yields, so the verdict
    comes after it: before, the one verdict known is a body byte for byte
    the last visit's (``"unchanged"``, final: :func:`same_payload`);
    anything else is ``"unknown"`` until the items are digested (the meta
    key then holds the verdict, for what runs after the callback)."""
    last = record.get("payload_digest")
    if last is not None and payload_digest(answer.body) == last:
        return ChangeState.UNCHANGED.value
    return ChangeState.UNKNOWN.value


def judge_items(record: Mapping[str, Any], visit: Visit, digest: str, body: bytes) -> Visit:
    """*visit* judged by the page's items (*digest*: their digest; *body*:
    the page's bytes, for the payload digest), as a new verdict.  A body
    byte for byte the last one did not change, whatever its items digest to
    now."""
    digested = replace(visit, digest=digest, payload_digest=payload_digest(body))
    same = same_payload(record, digested)
    return replace(digested, change=ChangeState.UNCHANGED if same else compare(record.get("digest"), digest))


def base_visit(answer: Answer, now: float | None = None) -> Visit:
    """What any answer tells, before its content is judged.

    With its caching headers read (:mod:`.freshness`: the lifetime they
    grant, the problems met, as annotations) and the site's own date of the
    content from the request that found it (a sitemap ``<lastmod>``), both
    rate evidence for a first visit's wait.  *now*: when the response
    arrived (default: the clock), standing in for a missing ``Date``.
    """
    fetch = answer.fetch
    validation = fetch.validation if fetch is not None else None
    arrived = time.time() if now is None else now
    fresh = freshness(answer.cache_control, answer.expires, answer.date, arrived)
    problems = list(fresh.problems)
    if lm_problem := last_modified_problem(answer.last_modified, answer.date, arrived):
        problems.append(lm_problem)
    return Visit(
        Outcome.VISITED,
        status=answer.status,
        content_type=answer.content_type,
        size=len(answer.body),
        etag=answer.etag,
        last_modified=answer.last_modified,
        url=answer.url,
        depth=answer.depth,
        annotations=(*((answer.note,) if answer.note is not None else ()), *problems),
        validation=validation,
        prediction=fetch.prediction if fetch is not None and validation is not None else None,
        freshness=fresh.lifetime,
        claimed_modified=claimed_modified(answer.hinted_modified),
    )


def claimed_modified(value: Any) -> float | None:
    """The content date a request's ``adaptive_hint`` claims (a sitemap's
    ``<lastmod>``), or None: no date, or one that cannot be read (the
    scheduler already warned about it when the request came in)."""
    try:
        modified = parse_time(value)
    except (ValueError, OverflowError, OSError, TypeError):
        return None
    return modified if modified is not None and math.isfinite(modified) else None


def downloader_verdict(answer: Answer) -> Visit:
    """The verdict of a fetch the downloader decided (a 304, a download
    stopped after its headers): its change stands, no body was digested,
    and the record keeps its last digest and size."""
    visit = base_visit(answer)
    fetch = answer.fetch
    if fetch is None or fetch.change is None:
        return replace(visit, size=None)
    annotations = (*visit.annotations, fetch.annotation) if fetch.annotation else visit.annotations
    return replace(visit, change=fetch.change, annotations=annotations, size=None)


#: answers that say the server could not serve the page now, nothing about
#: the page itself: a 5xx, and 429 (too many requests)
TRANSIENT = 429


def transient(status: int) -> bool:
    """True for an answer that says nothing about the page's content."""
    return status >= 500 or status == TRANSIENT


def evaluate(answer: Answer, record: Mapping[str, Any], digester: Digester | None = None) -> Visit:
    """The verdict on *answer* given the URL's record as issued.

    Only a 2xx is the page's content, compared with the last 2xx capture
    (:func:`~..model.delivers_content`).  A server error (a 5xx, a 429) is
    a visit whose change is unknown and whose body, type and validators are
    not the page's.  Any other answer (a redirect, a 4xx) is judged as an
    answer, never as a version (:func:`judge_other_answer`); its body is
    still digested, for the host's not-found page (soft 404s), but the
    record keeps its last capture."""
    visit = base_visit(answer)
    if transient(answer.status):
        # change unknown, no digest
        return replace(visit, size=None, content_type=None, etag=None, last_modified=None)
    digest = (digester or Digester()).digest(answer)
    if digest is not None:
        visit = replace(visit, digest=digest, payload_digest=payload_digest(answer.body, exact_digest=digest))
    if not delivers_content(answer.status):
        return judge_other_answer(answer, record, visit)
    if same_payload(record, visit) or same_empty_answer(record, visit):
        return replace(visit, change=ChangeState.UNCHANGED)
    return replace(visit, change=compare(record.get("digest"), digest))


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


#: a Last-Modified this close to the fetch (or later) is a generation time,
#: not a content date: it says nothing about change, as on a noise page
FRESH_LAST_MODIFIED = 2.0


def usable_last_modified(value: str | None, now: float) -> bool:
    """True if *value* is a Last-Modified that can tell "no change"."""
    stamp = parse_http_date(value)
    return stamp is not None and stamp < now - FRESH_LAST_MODIFIED


def not_content(visit: Visit) -> bool:
    """True for a soft 404 or a parked page (the frontier's judgement at commit)."""
    return not NOT_CONTENT.isdisjoint(visit.annotations)
