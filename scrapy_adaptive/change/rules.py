"""The digest rules: what each reads of a page, and which applies to which response.

* ``exact`` – the body bytes.
* ``regex`` – the thesis's HTTPContentDigest: on a copy of the text, every
  match of the operator's regular expressions is replaced by one blank
  before hashing (clocks, session ids, counters stop counting as change);
  bodies over ``max_size`` fall back to ``exact``.
* ``text`` – the visible text of an HTML page, whitespace-normalised, with
  scripts, styles, comments and attributes dropped (:func:`.text_diff.visible_text`):
  markup, layout and script noise stop counting as change.  Non-HTML falls
  back to ``exact``.
* ``items`` – the items the callback yields for the page (through
  itemadapter, optionally only some fields, :func:`.digest.items_digest`):
  the page changed when its data changed.  Judged after the callback.

Digests are prefixed with the rule (``text:sha1:…``, :mod:`.digest`), so
switching a URL to another rule is recognised as "unknown", not as a change.

``ADAPTIVE_DIGEST_RULES`` says which rule applies to which response.

Each entry names its criteria (see :mod:`scrapy_adaptive.config.matching`) and a
``rule``: ``exact``, ``regex`` (with ``patterns``, a list of regular
expressions, and an optional ``max_size`` in bytes), ``text``, or ``items``
(with optional ``fields``, the ``key`` field that matches items across
versions and the ``values`` a change event carries, :mod:`.fields`).  The first matching entry wins; otherwise
``ADAPTIVE_DIGEST_DEFAULT`` applies.  Everything is checked at start-up; a
bad regex or an unknown rule name stops the crawl with the setting named.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..config.matching import MATCH_KEYS, Matcher, check_entries
from ..config.patterns import UserPattern
from ..config.spec import ConfigError, clause
from .answer import Answer
from .digest import sha1_digest
from .text_diff import visible_text

logger = logging.getLogger(__name__)

DIGESTERS = ("exact", "regex", "text", "items")


class Digester:
    """One digest rule, configured; ``digest`` returns None for an empty body."""

    name = "exact"

    def digest(self, answer: Answer) -> str | None:
        body = answer.body
        return sha1_digest("exact", body) if body else None


class RegexDigester(Digester):
    name = "regex"

    def __init__(self, patterns: Sequence[UserPattern], max_size: int) -> None:
        self.patterns = tuple(patterns)
        self.max_size = max_size

    def digest(self, answer: Answer) -> str | None:
        """The digest of the text once every pattern's matches are blanked;
        of the whole body (``exact``) past ``max_size`` or when a pattern
        runs out of time on this page (:mod:`..config.patterns`)."""
        body = answer.body
        if not body:
            return None
        if len(body) > self.max_size:
            return sha1_digest("exact", body)
        text: str | None = answer.text
        if text is None:
            text = body.decode("latin-1")
        for pattern in self.patterns:
            text = pattern.sub(" ", text, on=answer.url, fallback="pages it cannot finish on are digested exactly")
            if text is None:
                return sha1_digest("exact", body)
        return sha1_digest("regex", text.encode("utf-8"))


class TextDigester(Digester):
    name = "text"

    def digest(self, answer: Answer) -> str | None:
        body = answer.body
        if not body:
            return None
        text = answer.text
        if text is None or "html" not in answer.media_type:
            return sha1_digest("exact", body)
        return sha1_digest("text", visible_text(text).encode("utf-8"))


class ItemsDigester(Digester):
    """Digests the items of a page; the body is not looked at."""

    name = "items"

    def __init__(self, fields: Sequence[str] = (), key: str | None = None, values: Sequence[str] = ()) -> None:
        self.fields = tuple(fields)
        #: the field that identifies an item across versions (None: its position)
        self.key = key
        #: fields whose old and new values a change event carries
        self.values = tuple(values)

    def digest(self, answer: Answer) -> str | None:  # pragma: no cover - not used for items
        raise TypeError("the items rule digests items, not responses: use items_digest()")


RULE_KEYS = {"rule", "patterns", "max_size", "fields", "key", "values"}


def build_digester(spec: dict[str, Any] | str, where: str, default_max_size: int) -> Digester:
    """A digester from a rule name or an entry dict."""
    if isinstance(spec, str) and spec.lstrip().startswith("{"):  # an entry as JSON, as -s NAME='{...}' gives it
        try:
            spec = json.loads(spec)
        except ValueError as exc:
            raise ConfigError(f"{where} is not valid JSON: {exc}") from None
    if isinstance(spec, str):
        spec = {"rule": spec}
    if not isinstance(spec, dict):
        raise ConfigError(f"{where}: a digest rule is a rule name or an entry dict, not {spec!r}.")
    name = spec.get("rule")
    if name not in DIGESTERS:
        raise ConfigError(f"{where}: unknown digest rule {name!r}; use one of {', '.join(DIGESTERS)}.")
    unknown = set(spec) - RULE_KEYS - set(MATCH_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}.")
    if name == "exact":
        return Digester()
    if name == "text":
        return TextDigester()
    if name == "items":
        names = {}
        for option in ("fields", "values"):
            given = spec.get(option) or ()
            if not isinstance(given, (list, tuple)) or not all(isinstance(f, str) for f in given):
                raise ConfigError(f"{where}: {option!r} must be a list of field names, not {given!r}.")
            names[option] = tuple(given)
        key = spec.get("key")
        if key is not None and (not isinstance(key, str) or not key):
            raise ConfigError(f"{where}: 'key' must be a field name, not {key!r}.")
        return ItemsDigester(names["fields"], key, names["values"])
    patterns = spec.get("patterns")
    if not patterns or not isinstance(patterns, (list, tuple)):
        # a lone string is refused too: "a|b" and ["a", "b"] mean the same,
        # but a string where a list belongs is most often a mistake
        raise ConfigError(f"{where}: the regex rule needs 'patterns', a list of regular expressions, not {patterns!r}.")
    compiled = [UserPattern(pattern, f"{where}: pattern {pattern!r}") for pattern in patterns]
    max_size = spec.get("max_size", default_max_size)
    if isinstance(max_size, bool) or not isinstance(max_size, int) or max_size <= 0:  # True is no size
        raise ConfigError(f"{where}: 'max_size' ({max_size!r}) must be a positive number of bytes.")
    return RegexDigester(compiled, max_size)


@dataclass(frozen=True)
class DigestRules:
    """The ordered rules, and the default."""

    entries: tuple[tuple[Matcher, Digester], ...]
    default: Digester

    @classmethod
    def from_settings(cls, rules: Any, default: Any, max_size: int) -> DigestRules:
        entries = []
        for i, entry in enumerate(check_entries(rules, "ADAPTIVE_DIGEST_RULES")):
            where = f"ADAPTIVE_DIGEST_RULES[{i}]"
            entries.append((Matcher.parse(entry, where), build_digester(entry, where, max_size)))
        return cls(tuple(entries), build_digester(default or "exact", "ADAPTIVE_DIGEST_DEFAULT", max_size))

    def select(self, url: str, host: str, content_type: str | None) -> Digester:
        for matcher, digester in self.entries:
            if matcher.matches(url, host, content_type):
                return digester
        return self.default

    def choose(self, answer: Answer, max_size: int) -> Digester:
        """The rule that digests *answer*: the request's own
        (``meta["adaptive_digest_rule"]``, *max_size* its default
        ``max_size``), else the first entry that matches, else the default."""
        override = answer.digest_rule
        if override is not None:
            try:
                return build_digester(override, "meta['adaptive_digest_rule']", max_size)
            except ConfigError as exc:  # stored before requests were checked as they enter (metacheck)
                logger.error("%s (%s); using the configured rules.", clause(exc), answer.url)
        if not self.entries:
            return self.default
        return self.select(answer.url, urlsplit(answer.url).hostname or "", answer.content_type)
