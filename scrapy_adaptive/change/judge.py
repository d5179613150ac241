"""How one answer is judged: its change state against the URL's record.

What a difference means, decided here for every response the crawl gets
(an :class:`~.answer.Answer`, read off the Scrapy response by the visit
middleware, which calls :func:`judge`, or :func:`judge_by_items` once a
page's items are known, and attaches the verdict): the first verdict of any answer before its content is judged
(:func:`base_visit`), the downloader's own verdict on a 304 or a stopped
download (:func:`downloader_verdict`), the change state from two digests
or two identical bodies (:func:`evaluate`), an answer that is not the
page's content (:func:`judge_other_answer`), and a page judged by its
items (:func:`items_verdict_before`, :func:`judge_items`).  Learned noise
refines a verdict afterwards (:func:`.noise_learner.learn_noise`).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..dates import parse_time
from ..model import NOT_CONTENT, ChangeState, Outcome, Visit, delivers_content
from . import fields, text_diff
from .answer import Answer
from .digest import Digester, ItemsDigester, RegexDigester, items_digest, payload_digest, same_payload
from .freshness import freshness, last_modified_problem
from .noise import NoisePool
from .noise_learner import learn_noise

logger = logging.getLogger(__name__)


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


def items_verdict_before(record: Mapping[str, Any], answer: Answer) -> str:
    """What an items-mode callback reads in ``response.meta["adaptive_change"]``.

    The page is judged by the items the callback yields, so the verdict
    comes after it: before, the one verdict known is a body byte for byte
    the last visit's (``"unchanged"``, final: :func:`same_payload`);
    anything else is ``"unknown"`` until the items are digested (the meta
    key then holds the verdict, for what runs after the callback)."""
    if same_payload(record, payload_digest(answer.body)):
        return ChangeState.UNCHANGED.value
    return ChangeState.UNKNOWN.value


def judge_items(record: Mapping[str, Any], visit: Visit, digest: str, body: bytes) -> Visit:
    """*visit* judged by the page's items (*digest*: their digest; *body*:
    the page's bytes, for the payload digest), as a new verdict.  A body
    byte for byte the last one did not change, whatever its items digest to
    now."""
    payload = payload_digest(body)
    change = ChangeState.UNCHANGED if same_payload(record, payload) else compare(record.get("digest"), digest)
    return replace(visit, digest=digest, payload_digest=payload, change=change)


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
    payload = None if digest is None else payload_digest(answer.body, exact_digest=digest)
    if not delivers_content(answer.status):
        if digest is not None:
            visit = replace(visit, digest=digest, payload_digest=payload)
        return judge_other_answer(answer, record, visit)
    # the verdict made in one copy (a dataclass copy is the costly part of a small page's judging)
    if same_payload(record, payload) or (digest is None and same_empty_answer(record, visit)):
        change = ChangeState.UNCHANGED
    else:
        change = compare(record.get("digest"), digest)
    return replace(visit, digest=digest, payload_digest=payload, change=change)


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


def not_content(visit: Visit) -> bool:
    """True for a soft 404 or a parked page (the frontier's judgement at commit)."""
    return not NOT_CONTENT.isdisjoint(visit.annotations)


# -- the judge: one call per answer -------------------------------------------------


@dataclass(frozen=True)
class Judging:
    """What judging needs beyond one answer and its record: the crawl's
    settings and what it learns across pages.

    *noise*: the masks learned on pages, offered to their siblings (None:
    learned noise is off); *probe_window*: the longest a noise probe may come
    after the fetch it checks; *keep_text*: a changed page's visible text
    goes with its verdict (``ADAPTIVE_TEXT_DIFF`` with change events on);
    *field_diffs*: items mode says which fields changed.
    """

    noise: NoisePool | None = None
    probe_window: float = 30.0
    clock: Callable[[], float] = time.time
    keep_text: bool = False
    field_diffs: bool = False
    #: item keys found missing, each said once per crawl
    missing_keys: set[str | None] = field(default_factory=set, compare=False)


@dataclass(frozen=True)
class Judged:
    """A verdict, and what happened on the way, for the crawl's stats: each
    an ``adaptive/`` stats key to count once (``noise/held``,
    ``noise/learned``, ..., ``fields/missing_key``)."""

    visit: Visit
    counts: tuple[str, ...] = ()


def judge(answer: Answer, record: Mapping[str, Any], rule: Digester | None, judging: Judging) -> Judged:
    """The verdict on *answer* against the URL's *record*, digested by *rule*
    (None: the default rule): the downloader's own on a 304 or a stopped
    download (no body to digest), else the digests
    compared, with learned noise folded in (a rule the user wrote as a regex
    already says what the noise is: learned or a sibling's exclusions never
    replace it).  Not for items mode (:func:`judge_by_items`)."""
    if answer.fetch is not None and answer.fetch.change is not None:
        return Judged(with_text(answer, downloader_verdict(answer), judging))
    visit = evaluate(answer, record, rule)
    happened: Sequence[str] = ()
    if judging.noise is not None and (rule is None or rule.name != RegexDigester.name):
        visit, happened = learn_noise(
            answer,
            record,
            visit,
            pool=judging.noise,
            window=judging.probe_window,
            now=judging.clock(),
            visible=rule is not None and rule.name == "text",
        )
    return Judged(with_text(answer, visit, judging), tuple(f"noise/{word}" for word in happened) if happened else ())


def judge_by_items(
    answer: Answer,
    record: Mapping[str, Any],
    before: Visit,
    rule: ItemsDigester,
    items: Sequence[Any],
    judging: Judging,
) -> Judged:
    """Items mode: *before* (:func:`base_visit`) judged by the page's *items*;
    with field diffs, the items' per-field summary for the record and, on a
    change, what changed field by field (the change event says it)."""
    if not items:
        return Judged(before)  # the callback yielded none: nothing to judge the page by
    visit = judge_items(record, before, items_digest(items, rule.fields), answer.body)
    counts: tuple[str, ...] = ()
    if judging.field_diffs:
        try:
            summary = fields.item_fields(items, rule.fields, rule.key, rule.values)
        except fields.MissingKey as exc:
            _say_missing_key(exc, answer.url, rule, judging)
            counts = ("fields/missing_key",)
            summary = fields.item_fields(items, rule.fields, None, rule.values)
        changes = fields.diff(record.get("fields"), summary) if visit.change is ChangeState.CHANGED else None
        visit = replace(visit, fields=summary, field_changes=changes)
    return Judged(with_text(answer, visit, judging), counts)


def _say_missing_key(exc: Exception, url: str, rule: ItemsDigester, judging: Judging) -> None:
    """Items are matched by their position when one lacks the rule's key: said once per key."""
    if rule.key not in judging.missing_keys:
        judging.missing_keys.add(rule.key)
        logger.warning(
            "ADAPTIVE_DIGEST_RULES: %s of %s; items without it are matched by their position on the page "
            "(said once per key).",
            exc,
            url,
        )


def with_text(answer: Answer, visit: Visit, judging: Judging) -> Visit:
    """*visit* with a new version's visible text, for the frontier to keep and
    diff the next one against.  Only a changed 2xx is read: an unchanged
    page's text is the one kept already, and the parse costs about as much
    as the digest."""
    if judging.keep_text and visit.change is ChangeState.CHANGED and delivers_content(answer.status):
        return replace(visit, text=text_diff.text_lines(answer))
    return visit
