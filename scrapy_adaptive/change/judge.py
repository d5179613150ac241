"""How one answer is judged: one call, in stages, each decided in its own module.

The visit middleware reads a Scrapy response once into an
:class:`~.answer.Answer`, calls :func:`judge` (or :func:`judge_by_items`
once a page's items are known) and attaches the verdict.  The judge runs
the stages in one order, each once, and nothing comes back to an earlier
one:

1. what the answer's headers tell (:func:`.freshness.base_visit`);
2. which digest rule reads it (:meth:`.rules.DigestRules.choose`);
3. its digests (:mod:`.digest`);
4. what the difference means (:func:`.difference.verdict`);
5. learned noise, which may hold a change back for a probe: whether it
   takes the visit and the page's fields (:mod:`.noise`), its URL's class
   (:mod:`.url_class`), the learner's step (:func:`.noise_learner.learn_noise`);
6. a changed page's visible text, for the next text diff (:func:`.text_diff.with_text`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..config.table import DEFAULTS
from ..model import ChangeState, Visit, delivers_content, transient
from . import fields
from .answer import Answer
from .difference import items_verdict_before, judge_items, verdict
from .digest import items_digest, payload_digest, same_payload
from .freshness import base_visit
from .noise import learns_from, page_fields
from .noise_learner import NoisePool, learn_noise
from .rules import Digester, DigestRules, ItemsDigester, RegexDigester
from .text_diff import with_text
from .url_class import url_class

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Judging:
    """What judging needs beyond one answer and its record: the crawl's
    settings and what it learns across pages.

    *rules*: the digest rules (``ADAPTIVE_DIGEST_RULES``);
    *noise*: the masks learned on pages, offered to their siblings (None:
    learned noise is off); *probe_window*: the longest a noise probe may come
    after the fetch it checks; *keep_text*: a changed page's visible text
    goes with its verdict (``ADAPTIVE_TEXT_DIFF`` with change events on);
    *field_diffs*: items mode says which fields changed.
    """

    rules: DigestRules = field(default_factory=lambda: DigestRules((), Digester()))
    #: the regex rule's ``max_size`` where a request's own rule names none
    max_size: int = DEFAULTS["ADAPTIVE_DIGEST_MAX_SIZE"]
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
    ``noise/learned``, ..., ``fields/missing_key``).

    In items mode (*items*: the page's rule) the verdict waits for the
    callback's items: *visit* is what the headers tell, and *before* what
    the callback reads in ``meta["adaptive_change"]`` meanwhile."""

    visit: Visit
    counts: tuple[str, ...] = ()
    items: ItemsDigester | None = None
    before: str | None = None


def judge(answer: Answer, record: Mapping[str, Any], judging: Judging) -> Judged:
    """The verdict on *answer* against the URL's *record* (as issued): the
    downloader's own on a 304 or a stopped download (no body to digest),
    else the digests compared, with learned noise folded in (a rule the user
    wrote as a regex already says what the noise is: learned or a sibling's
    exclusions never replace it).  A page its rule judges by its items waits
    for them (:attr:`Judged.items`)."""
    base = base_visit(answer)
    decided = answer.fetch is not None and answer.fetch.change is not None
    status = answer.status
    rule = None if decided or transient(status) else judging.rules.choose(answer, judging.max_size)
    items = rule if isinstance(rule, ItemsDigester) and delivers_content(status) else None
    if isinstance(rule, ItemsDigester) and items is None:
        # a redirect or an error has no items of the page: judged as an
        # answer now (its body digested as is, for the host's not-found page)
        rule = Digester()
    digest = None if rule is None or items is not None else rule.digest(answer)
    payload = payload_digest(answer.body, exact_digest=digest) if digest is not None or items is not None else None
    same = payload is not None and same_payload(record, payload)
    if items is not None:
        # judged once the callback's items are known (process_spider_output)
        return Judged(base, items=items, before=items_verdict_before(same))
    visit = verdict(answer, record, base, digest, payload, same)
    counts: tuple[str, ...] = ()
    if (
        judging.noise is not None
        and not decided
        and (rule is None or rule.name != RegexDigester.name)
        and learns_from(answer, visit, record.get("noise"), same_payload=same)
    ):
        fields = page_fields(answer, visible=rule is not None and rule.name == "text")
        key = url_class(answer.url)  # the masks its siblings learned are kept under it
        visit, happened = learn_noise(
            answer,
            record,
            visit,
            fields,
            key=key,
            pool=judging.noise,
            window=judging.probe_window,
            now=judging.clock(),
        )
        counts = tuple(f"noise/{word}" for word in happened)
    if judging.keep_text:
        visit = with_text(answer, visit)
    return Judged(visit, counts)


def judge_by_items(
    answer: Answer,
    record: Mapping[str, Any],
    before: Visit,
    rule: ItemsDigester,
    items: Sequence[Any],
    judging: Judging,
) -> Judged:
    """Items mode: *before* (:func:`.freshness.base_visit`) judged by the page's *items*;
    with field diffs, the items' per-field summary for the record and, on a
    change, what changed field by field (the change event says it)."""
    if not items:
        return Judged(before)  # the callback yielded none: nothing to judge the page by
    payload = payload_digest(answer.body)
    visit = judge_items(record, before, items_digest(items, rule.fields), payload, same_payload(record, payload))
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
    if judging.keep_text:
        visit = with_text(answer, visit)
    return Judged(visit, counts)


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
