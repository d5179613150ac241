"""How one response is judged: its change state against the URL's record.

The pure part of the visit middleware (:mod:`.visit`): which header a
response carries, whether a request is an embedded resource, the change
state from two digests (or two identical bodies), and the first verdict of
a response before any digest rule runs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from scrapy import Request
from scrapy.http import Response
from scrapy.utils.httpobj import urlparse_cached

from ... import meta
from ...change.digest import Digester, payload_digest
from ...change.freshness import freshness, last_modified_problem
from ...dates import parse_http_date, parse_time
from ...model import NOT_CONTENT, ChangeState, FetchResult, Outcome, Visit, delivers_content

#: path endings of resources a page embeds rather than links to
EMBED_EXTENSIONS = frozenset(
    ".png .jpg .jpeg .gif .webp .avif .svg .ico .bmp .css .js .mjs .woff .woff2 .ttf .otf .eot".split()
)


def header(response: Response, name: str) -> str | None:
    """A response header as text (latin-1, as HTTP headers are), or None."""
    value = response.headers.get(name)
    return value.decode("latin-1") if value is not None else None


def is_embed(request: Request) -> bool:
    """True for resources a page embeds (by ``adaptive_embed`` meta or URL)."""
    flag = request.meta.get(meta.EMBED)
    if isinstance(flag, bool):  # any other value was refused at enqueue (metacheck)
        return flag
    path = urlparse_cached(request).path.lower()
    dot = path.rfind(".")
    return dot != -1 and path[dot:] in EMBED_EXTENSIONS


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


def same_payload(record: dict[str, Any], visit: Visit) -> bool:
    """True if this visit's body is byte for byte the last visit's.

    Such a page did not change, whatever rule digests it now: a digest rule
    switch (a sibling's learned noise adopted, the settings edited) changes
    the digest's form, never the page.
    """
    last = record.get("payload_digest")
    return last is not None and visit.payload_digest == last


def items_verdict_before(record: Mapping[str, Any], response: Response) -> str:
    """What an items-mode callback reads in ``response.meta["adaptive_change"]``.

    The page is judged by the items the callback yields, so the verdict
    comes after it: before, the one verdict known is a body byte for byte
    the last visit's (``"unchanged"``, final: :func:`same_payload`);
    anything else is ``"unknown"`` until the items are digested (the meta
    key then holds the verdict, for what runs after the callback)."""
    last = record.get("payload_digest")
    if last is not None and payload_digest(response.body) == last:
        return ChangeState.UNCHANGED.value
    return ChangeState.UNKNOWN.value


def base_visit(response: Response, now: float | None = None) -> Visit:
    """What any response tells, before its content is judged.

    With its caching headers read (:mod:`~...change.freshness`: the lifetime
    they grant, the problems met, as annotations) and the site's own date
    of the content from the request that found it (a sitemap ``<lastmod>``),
    both rate evidence for a first visit's wait.  *now*: when the response
    arrived (default: the clock), standing in for a missing ``Date``.
    """
    depth = response.meta.get("depth") if response.request is not None else None
    note = response.meta.get(meta.ARCHIVE_NOTE) if response.request is not None else None
    fetch = response.meta.get(meta.FETCH) if response.request is not None else None
    validation = fetch.validation if isinstance(fetch, FetchResult) else None
    arrived = time.time() if now is None else now
    # the headers read here as header() reads them, without a call each (this runs at every response)
    texts = [None if v is None else v.decode("latin-1") for v in map(response.headers.get, _VISIT_HEADERS)]
    last_modified, date, expires, content_type, etag = texts
    fresh = freshness(joined_header(response, "Cache-Control"), expires, date, arrived)
    problems = list(fresh.problems)
    if lm_problem := last_modified_problem(last_modified, date, arrived):
        problems.append(lm_problem)
    return Visit(
        Outcome.VISITED,
        status=response.status,
        content_type=content_type,
        size=len(response.body),
        etag=etag,
        last_modified=last_modified,
        url=response.url,
        depth=depth if isinstance(depth, int) else None,
        annotations=([note] if isinstance(note, str) else []) + problems,
        validation=validation,
        prediction=fetch.prediction if validation is not None else None,  # type: ignore[union-attr]
        freshness=fresh.lifetime,
        claimed_modified=hinted_modified(response),
    )


#: the headers every visit's verdict reads (:func:`base_visit`)
_VISIT_HEADERS = ("Last-Modified", "Date", "Expires", "Content-Type", "ETag")


def joined_header(response: Response, name: str) -> str | None:
    """Every line of a list-valued header, joined by commas as HTTP allows."""
    values = response.headers.getlist(name)
    return ", ".join(v.decode("latin-1") for v in values) if values else None


def hinted_modified(response: Response) -> float | None:
    """The content date the request's ``adaptive_hint`` claims (a sitemap's
    ``<lastmod>``), or None: no hint, no date, or one that cannot be read
    (the scheduler already warned about it when the request came in)."""
    if response.request is None:
        return None
    hint = response.meta.get(meta.HINT)
    if not isinstance(hint, dict):
        return None
    try:
        modified = parse_time(hint.get("modified"))
    except (ValueError, OverflowError, OSError, TypeError):
        return None
    return modified if modified is not None and math.isfinite(modified) else None


#: answers that say the server could not serve the page now, nothing about
#: the page itself: a 5xx, and 429 (too many requests)
TRANSIENT = 429


def transient(status: int) -> bool:
    """True for an answer that says nothing about the page's content."""
    return status >= 500 or status == TRANSIENT


def evaluate(response: Response, record: Mapping[str, Any], digester: Digester | None = None) -> Visit:
    """The verdict on *response* given the URL's record as issued.

    Only a 2xx is the page's content, compared with the last 2xx capture
    (:func:`~...model.delivers_content`).  A server error (a 5xx, a 429) is
    a visit whose change is unknown and whose body, type and validators are
    not the page's.  Any other answer (a redirect, a 4xx) is judged as an
    answer, never as a version (:func:`judge_other_answer`); its body is
    still digested, for the host's not-found page (soft 404s), but the
    record keeps its last capture."""
    visit = base_visit(response)
    if transient(response.status):
        visit.size = visit.content_type = visit.etag = visit.last_modified = None
        return visit  # change unknown, no digest
    digest = (digester or Digester()).digest(response)
    if digest is not None:
        visit.digest = digest
        visit.payload_digest = payload_digest(response.body, exact_digest=digest)
    if not delivers_content(response.status):
        judge_other_answer(response, record, visit)
        return visit
    if same_payload(record, visit) or same_empty_answer(record, visit):
        visit.change = ChangeState.UNCHANGED
    else:
        visit.change = compare(record.get("digest"), digest)
    return visit


def same_empty_answer(record: dict[str, Any], visit: Visit) -> bool:
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


def judge_other_answer(response: Response, record: Mapping[str, Any], visit: Visit) -> None:
    """The change of an answer that is not the page's content (a 3xx that
    reached the spider, a 4xx): never a version, whatever its body.

    The same answer as last time (the same status, for a redirect the same
    target) found no change, so the wait policy backs off a gone or moved
    page as it does an unchanged one; a different answer says nothing about
    the page's content (unknown: no observation for the rate estimator).
    What happened to the page is the change events' to say (``gone``,
    ``moved``, ``back``).  A redirect's target is read from its
    ``Location``, as the scheduler reads a followed one."""
    if 300 <= response.status < 400 and (location := header(response, "Location")):
        visit.location = response.urljoin(location)
        visit.reason = f"redirect to {visit.location}"
    same = same_redirect(record, visit.status, visit.reason)
    visit.change = ChangeState.UNCHANGED if same else ChangeState.UNKNOWN


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


def skip_unchanged(response: Response, **kwargs: Any) -> tuple[()]:
    """Stands in for the callback of an unchanged page: nothing to do."""
    return ()
