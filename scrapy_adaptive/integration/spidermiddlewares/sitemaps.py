"""SitemapsMiddleware: sitemaps and RSS/Atom feeds as revisit triggers.

A site says what changed in its sitemaps (``<lastmod>``) and feeds (an
entry's ``updated``).  This middleware reads them for the spider, with no
code in it:

* seeds: ``ADAPTIVE_SITEMAPS`` and ``ADAPTIVE_FEEDS`` (lists of URLs) are
  requested at start, after the spider's own start requests; with
  ``ADAPTIVE_SITEMAPS_FROM_ROBOTS`` every ``Sitemap:`` line of a robots.txt
  the crawl fetches is requested too (and, since robots.txt is fetched again
  every ``ADAPTIVE_ROBOTS_REFRESH``, a sitemap added later is found);
* a request carrying ``meta["adaptive_signal"] = "sitemap"`` or ``"feed"``
  is read here: its response never reaches the spider's callback (the
  middleware replaces it, as the visit middleware does for an unchanged
  page).  A sitemap index yields its sitemaps (same flag), a ``urlset`` and a
  feed yield one request per entry for the spider's default callback, with
  ``meta["adaptive_hint"] = {"modified": lastmod, "source": "sitemap"}``
  (``"feed"``) when the entry has a date;
* sitemaps and feeds are ordinary frontier URLs: the flag is stored with the
  request, the wait policy revisits them like any page, and an unchanged
  sitemap is not read again (``ADAPTIVE_UNCHANGED = "skip"``).

Sitemaps are parsed with Scrapy's own :class:`~scrapy.utils.sitemap.Sitemap`
(the class ``SitemapSpider`` uses), gzip bodies with
:func:`scrapy.utils.gz.gunzip` bounded by ``DOWNLOAD_MAXSIZE`` (a gzip bomb
is refused, not inflated); feeds with ``feedparser`` (the optional extra
``scrapy-adaptive[feeds]``).

A sitemap or feed that fails (an HTTP error, a body that is not XML or not
a sitemap, a ``<urlset>`` cut before its closing tag) is one WARNING naming
it and what is wrong (again only when the problem changes), counted in
``adaptive/signals/<kind>/unreadable``, and its re-reads are backed off: the
visit middleware reads the body before it commits the verdict
(:func:`read_signal`) and doubles the URL's wait at each failure in a row.
The crawl goes on; a cut sitemap's entries that were read are kept.
"""

from __future__ import annotations

import logging
import re
import struct
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.utils.gz import gunzip
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.sitemap import Sitemap, sitemap_urls_from_robots

from ... import meta
from ...config.spec import counted
from ...model import SIGNAL_UNREADABLE, ChangeState, Visit
from ...runtime.wiring import crawl_config
from .callback import skip_unchanged

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector


logger = logging.getLogger(__name__)

SITEMAP = "sitemap"
FEED = "feed"
KINDS = (SITEMAP, FEED)
#: robots.txt sitemaps remembered per process (beyond it, a repeat is only
#: a duplicate the frontier ignores)
MAX_SEEN_FROM_ROBOTS = 10_000
#: failing sitemaps whose last problem is remembered, so it is said once
MAX_WARNED = 10_000
#: a whole sitemap ends with its root's closing tag (and maybe whitespace)
CLOSED = re.compile(rb"</(?:[\w.-]+:)?(?:urlset|sitemapindex)>\s*$")


class SignalBodyError(ValueError):
    """A sitemap or feed body cannot be read; the message names the URL."""


def sitemap_body(body: bytes, url: str, max_size: int) -> bytes:
    """The XML of a sitemap response, gunzipped within *max_size* bytes."""
    if body[:3] != b"\x1f\x8b\x08":
        return body
    try:
        return gunzip(body, max_size=max_size)
    except ValueError:  # Scrapy's (private) "max size exceeded" error is a ValueError
        raise SignalBodyError(f"sitemap {url} is larger than {counted(max_size, 'byte')} once gunzipped") from None
    except (OSError, EOFError, struct.error) as exc:
        raise SignalBodyError(f"sitemap {url} is not valid gzip ({exc})") from None


def sitemap_entries(body: bytes, url: str) -> tuple[str, list[dict[str, Any]]]:
    """The type (``urlset`` or ``sitemapindex``) and entries of a sitemap."""
    try:
        sitemap = Sitemap(body)
        entries = list(sitemap)
    except StopIteration:  # lxml's recover mode found no element at all
        raise SignalBodyError(f"sitemap {url} is not XML (no element in its {counted(len(body), 'byte')})") from None
    except Exception as exc:  # lxml's recover mode still fails on an empty body
        detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise SignalBodyError(f"sitemap {url} is not XML ({detail})") from None
    if sitemap.type not in ("urlset", "sitemapindex"):
        raise SignalBodyError(f"sitemap {url} is not a sitemap (root element {sitemap.type!r})")
    return sitemap.type, entries


@dataclass
class SignalRead:
    """What one sitemap or feed response gave: its entries' requests, and
    what is wrong with it (None: nothing)."""

    requests: list[Request] = field(default_factory=list)
    problem: str | None = None


def read_signal(response: Response, kind: str, max_size: int) -> SignalRead:
    """Read a sitemap or feed response: entries, or the problem that stops them.

    An HTTP error is a problem whatever its body; a sitemap cut before its
    closing tag is one too, though the entries before the cut are kept.
    """
    url = response.url
    if not 200 <= response.status < 300:
        return SignalRead(problem=f"{kind} {url} answered HTTP {response.status}")
    try:
        if kind != SITEMAP:
            links = feed_entries(response.body, url)
            return SignalRead([hinted(response.urljoin(link), modified, FEED) for link, modified in links])
        body = sitemap_body(response.body, url, max_size)
        root, entries = sitemap_entries(body, url)
    except SignalBodyError as exc:
        return SignalRead(problem=str(exc))
    requests = []
    for entry in entries:
        loc = entry.get("loc")
        if not loc:
            continue
        if root == "sitemapindex":
            requests.append(Request(loc, meta={meta.SIGNAL: SITEMAP}))
        else:
            requests.append(hinted(loc, entry.get("lastmod") or None, SITEMAP))
    if CLOSED.search(body[-256:]) is None:
        return SignalRead(
            requests,
            f"sitemap {url} is cut short (no closing </{root}>; {counted(len(requests), 'entry', 'entries')} read)",
        )
    return SignalRead(requests)


def read_before_verdict(
    request: Request, response: Response, visit: Visit, max_size: int, stats: StatsCollector
) -> Visit:
    """A sitemap or feed is read before its verdict is recorded, so that one
    that fails is said so (``signalUnreadable``, on the verdict returned):
    the policy stack backs its wait off rather than give it the short wait
    of a page that keeps changing.  What was read waits in the request's
    meta for the callback that stands in for the spider's (:class:`SitemapsMiddleware`)."""
    kind = str(request.meta[meta.SIGNAL])
    if response.status < 400 and (visit.change is ChangeState.UNCHANGED or visit.size is None):
        # the bytes read last time, or no body (a 304, an aborted fetch):
        # nothing new to read or to say
        return visit
    read = read_signal(response, kind, max_size)
    request.meta[meta.SIGNAL_READ] = read
    if read.problem is None:
        return visit
    stats.inc_value(f"adaptive/signals/{kind}/unreadable")
    return replace(visit, annotations=(*visit.annotations, SIGNAL_UNREADABLE))


def feed_entries(body: bytes, url: str) -> list[tuple[str, str | None]]:
    """``(link, updated or published)`` of each entry of an RSS/Atom feed."""
    try:
        import feedparser
    except ImportError:
        raise SignalBodyError(
            f"feed {url} cannot be read: install the feeds extra (pip install 'scrapy-adaptive[feeds]')"
        ) from None
    parsed = feedparser.parse(body, sanitize_html=False, resolve_relative_uris=False)
    if parsed.get("bozo") and not parsed.get("entries"):
        raise SignalBodyError(f"feed {url} is not an RSS or Atom feed ({parsed.get('bozo_exception')})")
    found = []
    for entry in parsed.get("entries", ()):
        link = entry.get("link")
        if link:
            # dict.get: feedparser's own get() maps a missing "updated" to
            # "published" with a DeprecationWarning
            found.append((link, dict.get(entry, "updated") or dict.get(entry, "published")))
    return found


def hinted(url: str, modified: str | None, source: str) -> Request:
    """A request for an entry, with the site's date as a change hint."""
    return Request(url, meta={meta.HINT: {"modified": modified, "source": source}} if modified else None)


class SitemapsMiddleware:
    """Requests the configured sitemaps and feeds and reads their responses."""

    def __init__(
        self,
        stats: StatsCollector,
        *,
        max_size: int = 0,
        crawler: Crawler | None = None,
    ) -> None:
        self.stats = stats
        #: DOWNLOAD_MAXSIZE: the most a gzip sitemap may inflate to (0: no limit)
        self.max_size = max_size
        self.crawler = crawler
        # set by from_crawler() from the crawl's parsed settings
        self.sitemaps: tuple[str, ...] = ()
        self.feeds: tuple[str, ...] = ()
        self.from_robots = False
        self._seen_from_robots: set[str] = set()
        #: the last problem said of each failing sitemap or feed
        self._warned: dict[str, str] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> SitemapsMiddleware:
        mw = cls(
            crawler.stats,  # type: ignore[arg-type]
            max_size=crawler.settings.getint("DOWNLOAD_MAXSIZE"),
            crawler=crawler,
        )
        config = crawl_config(crawler)
        if config is not None:
            mw.sitemaps = tuple(config.sitemaps)
            mw.feeds = tuple(config.feeds)
            mw.from_robots = config.sitemaps_from_robots
        if mw.from_robots:
            # a handler on every response only when robots.txt lines are wanted
            crawler.signals.connect(mw._on_response_received, signals.response_received)
        return mw

    # -- seeds ---------------------------------------------------------------------

    async def process_start(self, start: AsyncIterator[Any]) -> AsyncIterator[Any]:
        async for obj in start:
            yield obj
        # read after the spider's own start: the scheduler is open and bound
        for kind, urls in ((SITEMAP, self.sitemaps), (FEED, self.feeds)):
            for url in urls:
                yield Request(url, meta={meta.SIGNAL: kind})

    def _on_response_received(self, response: Response, request: Request, spider: Any) -> None:
        """A robots.txt passed: request its ``Sitemap:`` lines."""
        if response.status != 200 or urlparse_cached(request).path != "/robots.txt":
            return
        engine = self.crawler.engine if self.crawler is not None else None
        if engine is None:
            return
        for url in sitemap_urls_from_robots(response.body, base_url=response.url):
            if url in self._seen_from_robots:
                continue
            if len(self._seen_from_robots) < MAX_SEEN_FROM_ROBOTS:
                self._seen_from_robots.add(url)
            self.stats.inc_value("adaptive/signals/from_robots")
            engine.crawl(Request(url, meta={meta.SIGNAL: SITEMAP}))

    # -- reading -------------------------------------------------------------------

    def process_spider_input(self, response: Response) -> None:
        request = response.request
        if request is None or request.meta.get(meta.SIGNAL) not in KINDS:
            return
        # an HTTP error is read here, said once and counted, not dropped by
        # HttpErrorMiddleware ("Ignoring response") at every re-read
        request.meta["handle_httpstatus_all"] = True
        if request.callback is not skip_unchanged:  # an unchanged sitemap says nothing new
            request.callback = self._read
            request.errback = None

    def _read(self, response: Response, **kwargs: Any) -> Iterator[Request]:
        """Stands in for the callback of a sitemap or feed."""
        kind = str(response.meta.get(meta.SIGNAL))
        read = response.meta.pop(meta.SIGNAL_READ, None)
        if not isinstance(read, SignalRead):  # no visit middleware read it first
            read = read_signal(response, kind, self.max_size)
            if read.problem is not None:
                self.stats.inc_value(f"adaptive/signals/{kind}/unreadable")
        if read.problem is not None:
            self._warn(response.url, read.problem)
            if not read.requests:
                return iter(())
        else:
            self._warned.pop(response.url, None)
        self.stats.inc_value(f"adaptive/signals/{kind}/read")
        self.stats.inc_value(f"adaptive/signals/{kind}/entries", len(read.requests))
        return iter(read.requests)

    def _warn(self, url: str, problem: str) -> None:
        """One WARNING per failing sitemap and problem; its repeats at DEBUG."""
        if self._warned.get(url) == problem:
            logger.debug("%s (again).", problem)
            return
        if url in self._warned or len(self._warned) < MAX_WARNED:
            self._warned[url] = problem
        logger.warning("%s; its re-reads are backed off, the crawl goes on.", problem)
