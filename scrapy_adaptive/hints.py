"""Change hints from the spider: ``meta["adaptive_hint"]`` to the frontier.

A spider that reads a sitemap (``<lastmod>``) or a feed (``updated``) knows
that a URL changed before the crawler does.  It says so on the request for
that URL::

    yield scrapy.Request(loc, meta={"adaptive_hint": {"modified": lastmod, "source": "sitemap"}})

``modified`` is an HTTP date, an ISO 8601 / W3C datetime (sitemaps; a date
alone is midnight UTC, a time without zone is UTC), seconds since the epoch
(number or numeric string), a ``datetime``, or None / missing (a ping with
no time).  ``source`` names where the hint comes from (default
``"default"``); trust is learned per host and source.

The scheduler's enqueue path calls :func:`take_hint`: a new URL is simply
added (it is due now anyway), a known one goes to :meth:`Frontier.hint
<scrapy_adaptive.frontier.Frontier.hint>` with the wait policy's
``hint_wait`` (the design is in :mod:`scrapy_adaptive.frontier.hints` and
:mod:`scrapy_adaptive.policies.hints`).  A bad value is logged (a warning)
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
import math
from collections.abc import Callable, Mapping
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING, Any

from .frontier.hints import CONFIRMED, PENDING_SOURCE, REFUTED, Hint, HintResult
from .meta import HINT as META_HINT

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.statscollectors import StatsCollector

    from .frontier import Frontier, Visit

logger = logging.getLogger(__name__)

DEFAULT_SOURCE = "default"
_KEYS = frozenset({"modified", "source"})


class HintError(ValueError):
    """A request's ``adaptive_hint`` cannot be understood; the message says why."""


def parse_time(value: Any) -> float | None:
    """Seconds since the epoch from the accepted forms; raise ValueError.

    >>> parse_time("Sun, 06 Nov 1994 08:49:37 GMT")
    784111777.0
    >>> parse_time("1994-11-06T08:49:37Z"), parse_time("1994-11-06")
    (784111777.0, 784080000.0)
    >>> parse_time(784111777), parse_time("784111777.5"), parse_time(None)
    (784111777.0, 784111777.5, None)
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError("a boolean is not a time")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, datetime):
        seconds = (value if value.tzinfo else value.replace(tzinfo=UTC)).timestamp()
    elif isinstance(value, date):
        seconds = datetime(value.year, value.month, value.day, tzinfo=UTC).timestamp()
    elif isinstance(value, str):
        seconds = _parse_text(value.strip())
    else:
        raise ValueError(f"a {type(value).__name__} is not a time")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError("not a finite time after 1970")
    return seconds


def _parse_text(text: str) -> float:
    if not text:
        raise ValueError("empty")
    try:
        return float(text)
    except ValueError:
        pass
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        parsed = None
    if parsed is None:
        try:
            parsed = parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError, OverflowError):
            raise ValueError("unreadable") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


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
        logger.warning("%s; the hint is ignored, the request is kept.", exc)
        result = None
        reason = "invalid"
    else:
        result = HintResult.NEW if new else frontier.hint(fp, hint, decide)
        reason = result.value
    if result is HintResult.ACTED:
        stats.inc_value("adaptive/hints/acted")
        logger.debug("Change hint (%s) for %s: visit moved forward", hint.source, request.url)
    else:
        stats.inc_value("adaptive/hints/ignored")
        stats.inc_value(f"adaptive/hints/ignored/{reason}")
    return result


def count_settled(stats: StatsCollector, record: Mapping[str, Any] | None, visit: Visit) -> None:
    """Count what the visit that followed an acted-on hint found."""
    for word, name in ((CONFIRMED, "confirmed"), (REFUTED, "refuted")):
        if word in visit.annotations:
            source = ((record or {}).get("hint") or {}).get(PENDING_SOURCE) or DEFAULT_SOURCE
            stats.inc_value(f"adaptive/hints/{name}")
            stats.inc_value(f"adaptive/hints/{name}/{source}")
