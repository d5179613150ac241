"""Change hints from the spider: ``meta["adaptive_hint"]`` to the frontier.

A spider that reads a sitemap (``<lastmod>``) or a feed (``updated``) knows
that a URL changed before the crawler does.  It says so on the request for
that URL::

    yield scrapy.Request(loc, meta={"adaptive_hint": {"modified": lastmod, "source": "sitemap"}})

``modified`` is an HTTP date, an ISO 8601 / W3C datetime (sitemaps, at any
precision: ``"2005"`` is that year's start; a date alone is midnight UTC, a
time without zone is UTC), seconds since the epoch (a number, or a numeric
string other than four digits), a ``datetime``, or None / missing (a ping with
no time).  ``source`` names where the hint comes from (default
``"default"``); trust is learned per host and source.

The scheduler's enqueue path calls :func:`take_hint`: a new URL is simply
added (it is due now anyway), a known one goes to :meth:`Frontier.hosts.hint
<scrapy_adaptive.frontier.hostfacts.Hosts.hint>` with the wait policy's
``hint_wait`` (the design is in :mod:`scrapy_adaptive.frontier.hints` and
:mod:`scrapy_adaptive.policies.hint_decisions`).  A bad value is logged (a warning)
with the meta key and the URL, the hint dropped, the request kept: a sitemap
with one malformed ``lastmod`` must not stop a crawl.

Stats: ``adaptive/hints/received``, ``…/acted``, ``…/ignored`` (with
``…/ignored/<reason>``: ``new``, ``invalid``, ``stale``, ``out``,
``pending``, ``never``, ``declined``, ``later``, ``unknown``),
``…/confirmed`` and ``…/refuted`` (with ``…/<source>``): what the visits
that followed acted-on hints found.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..config.spec import clause
from ..dates import parse_time
from ..frontier.hints import CONFIRMED, PENDING_SOURCE, REFUTED, Hint, HintResult
from ..meta import HINT as META_HINT

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.statscollectors import StatsCollector

    from ..frontier import Frontier

logger = logging.getLogger(__name__)

DEFAULT_SOURCE = "default"
_KEYS = frozenset({"modified", "source"})


class HintError(ValueError):
    """A request's ``adaptive_hint`` cannot be understood; the message says why."""


def hint_from_meta(value: Any, url: str) -> Hint:
    """The hint a request's ``meta["adaptive_hint"]`` describes; raise :class:`HintError`."""
    where = f"meta[{META_HINT!r}] of {url}"
    if not isinstance(value, Mapping):
        raise HintError(f"{where} ({value!r}) must be a dict like {{'modified': ..., 'source': 'sitemap'}}")
    unknown = set(value) - _KEYS
    if unknown:
        raise HintError(f"{where}: unknown key(s) {', '.join(sorted(map(repr, unknown)))}; use 'modified', 'source'")
    raw = value.get("modified")
    try:
        modified = parse_time(raw)
    except (ValueError, OverflowError, OSError):
        raise HintError(
            f"{where}: 'modified' ({raw!r}) is not an HTTP date, an ISO 8601 time or seconds since the epoch"
        ) from None
    source = value.get("source", DEFAULT_SOURCE)
    if not isinstance(source, str) or not source.strip() or "/" in source:
        raise HintError(f"{where}: 'source' ({source!r}) must be a non-empty name without '/'")
    return Hint(url, modified, source.strip())


def take_hint(
    frontier: Frontier,
    decide: Callable[[Mapping[str, Any], Hint], float | None],
    stats: StatsCollector,
    queue: str,
    fp: bytes,
    request: Request,
    *,
    new: bool,
) -> HintResult | None:
    """Hand a request's hint to the frontier (*new*: the URL was just added)."""
    value = request.meta.get(META_HINT)
    if value is None:
        return None
    stats.inc_value("adaptive/hints/received")
    try:
        hint = hint_from_meta(value, request.url)
    except HintError as exc:
        # a warning, not an error: the site's sitemap is wrong, not the crawl
        logger.warning("%s; the hint is ignored, the request is kept.", clause(exc))
        result = None
        reason = "invalid"
    else:
        result = HintResult.NEW if new else frontier.hosts.hint(queue, fp, hint, decide)
        reason = result.value
    if result is HintResult.ACTED:
        stats.inc_value("adaptive/hints/acted")
        logger.debug("Change hint (%s) for %s: visit moved forward", hint.source, request.url)
    else:
        stats.inc_value("adaptive/hints/ignored")
        stats.inc_value(f"adaptive/hints/ignored/{reason}")
    return result


def count_settled(stats: StatsCollector, hint: Mapping[str, Any] | None, notes: list[str]) -> None:
    """Count what the visit that followed an acted-on *hint* found (the
    frontier's *notes* on the update say)."""
    for word, name in ((CONFIRMED, "confirmed"), (REFUTED, "refuted")):
        if word in notes:
            source = (hint or {}).get(PENDING_SOURCE) or DEFAULT_SOURCE
            stats.inc_value(f"adaptive/hints/{name}")
            stats.inc_value(f"adaptive/hints/{name}/{source}")
