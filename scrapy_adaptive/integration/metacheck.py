"""The public meta keys you set, checked as a request enters the crawl.

A value of the wrong kind (``adaptive_embed="no"``, a rule given as a
number, ``adaptive_unchanged="maybe"``) would otherwise be read by each
middleware its own way: taken as true, ignored without a word, or raised
as a spider error on every visit of that URL.  Checked once at
``enqueue_request``, a misfit is said once per key and value, with the
request's URL and what the key takes, and removed from the request before
it is stored, so every later reader, on every revisit, sees the key as
unset and applies the settings.  The request itself is kept.

``adaptive_hint`` is not checked here: a hint belongs to one fetch, and
its reader (:mod:`.request_hints`) checks its fields and says what is
wrong with them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import meta
from ..config.spec import UNCHANGED_MODES
from .spidermiddlewares.sitemaps import KINDS

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

#: distinct misfits said at most (then counted only)
SAID_MAX = 1_000

#: key -> (does the value fit, what the key takes)
EXPECTED: dict[str, tuple[Callable[[Any], bool], str]] = {
    meta.UNCHANGED: (lambda v: v in UNCHANGED_MODES, " or ".join(f'"{m}"' for m in UNCHANGED_MODES)),
    meta.DIGEST_RULE: (
        lambda v: isinstance(v, (str, dict)),
        'a digest rule name or an entry dict, like "text" or {"rule": "regex", "patterns": [...]}',
    ),
    meta.WAIT_POLICY: (lambda v: isinstance(v, dict), 'a dict of wait keys, like {"initial": 600, "min": 60}'),
    meta.EMBED: (lambda v: isinstance(v, bool), "True or False"),
    meta.SIGNAL: (lambda v: v in KINDS, " or ".join(f'"{k}"' for k in KINDS)),
}
_KEYS = frozenset(EXPECTED)


class MetaCheck:
    """Removes public meta values of the wrong kind from requests, saying so once."""

    def __init__(self, stats: StatsCollector) -> None:
        self.stats = stats
        self._said: set[tuple[str, str]] = set()

    def __call__(self, request: Request) -> None:
        request_meta = request.meta
        if _KEYS.isdisjoint(request_meta):
            return
        for key in _KEYS.intersection(request_meta):
            fits, expected = EXPECTED[key]
            value = request_meta[key]
            if value is None or fits(value):
                continue
            del request_meta[key]
            self.stats.inc_value("adaptive/meta/ignored")
            self._say(key, value, expected, request.url)

    def _say(self, key: str, value: Any, expected: str, url: str) -> None:
        label = repr(value)
        if len(label) > 80:
            label = label[:77] + "..."
        if (key, label) in self._said or len(self._said) >= SAID_MAX:
            return
        self._said.add((key, label))
        logger.warning(
            "meta[%r] of %s is %s, but it takes %s: the key is ignored (the settings apply) and the request "
            "is kept. Said once for this value; adaptive/meta/ignored counts the requests.",
            key,
            url,
            label,
            expected,
        )
