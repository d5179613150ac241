"""``ADAPTIVE_DIGEST_RULES``: which digest rule applies to which response.

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
from dataclasses import dataclass
from typing import Any

from ..config.matching import MATCH_KEYS, Matcher, check_entries
from ..config.patterns import UserPattern
from ..config.spec import ConfigError
from .digest import DIGESTERS, Digester, ItemsDigester, RegexDigester, TextDigester

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
