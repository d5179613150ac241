"""The public meta keys you set, checked as a request enters the crawl.

A value of the wrong kind (``adaptive_embed="no"``, a digest rule given
as a number or with a regex that does not compile,
``adaptive_unchanged="maybe"``) would otherwise be read by each middleware
its own way: taken as true, ignored without a word, or raised as a spider
error or logged on every visit of that URL.  Checked once at
``enqueue_request``, a misfit is said once per key and value, with the
request's URL and what is wrong, and removed from the request before it is
stored, so every later reader, on every revisit, sees the key as unset and
applies the settings.  The request itself is kept.

``adaptive_hint`` is not checked here: a hint belongs to one fetch, and
its reader (:mod:`.request_hints`) checks its fields and says what is
wrong with them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import meta
from ..change.rules import build_digester
from ..config.settings import closest_name
from ..config.spec import UNCHANGED_MODES, ConfigError, clause
from ..config.table import DEFAULTS
from .spidermiddlewares.sitemaps import KINDS

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

#: distinct misfits said at most (then counted only)
SAID_MAX = 1_000


def _kind(fits: Callable[[Any], bool], takes: str) -> Callable[[Any], str | None]:
    """A check that a value is of one kind: None, or what the key takes."""
    return lambda value: None if fits(value) else f"it takes {takes}"


def _digest_rule(value: Any) -> str | None:
    """A rule name or entry dict that builds (a regex that compiles, known keys)."""
    try:
        build_digester(value, "", DEFAULTS["ADAPTIVE_DIGEST_MAX_SIZE"])
    except ConfigError as exc:
        return clause(str(exc).removeprefix(": "))
    return None


#: key -> what is wrong with a value (None: it fits)
CHECKS: dict[str, Callable[[Any], str | None]] = {
    meta.UNCHANGED: _kind(lambda v: v in UNCHANGED_MODES, " or ".join(f'"{m}"' for m in UNCHANGED_MODES)),
    meta.DIGEST_RULE: _digest_rule,
    meta.WAIT_POLICY: _kind(lambda v: isinstance(v, dict), 'a dict of wait keys, like {"initial": 600, "min": 60}'),
    meta.EMBED: _kind(lambda v: isinstance(v, bool), "True or False"),
    meta.SIGNAL: _kind(lambda v: v in KINDS, " or ".join(f'"{k}"' for k in KINDS)),
}
_KEYS = frozenset(CHECKS)
#: the public keys' prefix: a key under it that is not one of them is misspelt
PREFIX = "adaptive_"


class MetaCheck:
    """Removes public meta values of the wrong kind from requests, saying so once."""

    def __init__(self, stats: StatsCollector) -> None:
        self.stats = stats
        self._said: set[tuple[str, str]] = set()

    def __call__(self, request: Request) -> None:
        request_meta = request.meta
        for key in request_meta:
            if isinstance(key, str) and key.startswith(PREFIX) and key not in meta.PUBLIC:
                self._unknown(key, request.url)
        if _KEYS.isdisjoint(request_meta):
            return
        for key in _KEYS.intersection(request_meta):
            value = request_meta[key]
            if value is None or (why := CHECKS[key](value)) is None:
                continue
            del request_meta[key]
            self.stats.inc_value("adaptive/meta/ignored")
            self._say(key, value, why, request.url)

    def _unknown(self, key: str, url: str) -> None:
        """A misspelt key (``adaptive_wait_polcy``) would be ignored without a
        word, like a misspelt setting: said once per key, with the closest
        one; left in the request, which may be the project's own."""
        if (key, "") in self._said or len(self._said) >= SAID_MAX:
            return
        self._said.add((key, ""))
        match = closest_name(key, meta.PUBLIC, PREFIX)
        logger.warning(
            "meta[%r] of %s is not a scrapy-adaptive meta key and means nothing to it%s Said once for this key.",
            key,
            url,
            f"; did you mean {match!r}?" if match else ".",
        )

    def _say(self, key: str, value: Any, why: str, url: str) -> None:
        label = repr(value)
        if len(label) > 80:
            label = label[:77] + "..."
        if (key, label) in self._said or len(self._said) >= SAID_MAX:
            return
        self._said.add((key, label))
        logger.warning(
            "meta[%r] of %s is %s, but %s: the key is ignored (the settings apply) and the request is kept. "
            "Said once for this value; adaptive/meta/ignored counts the requests.",
            key,
            url,
            label,
            why,
        )
