"""The WARC downloader middleware: every transaction archived as sent.

It sits at 610, next to the downloader, so it sees the request as sent and
the response as received; :class:`~scrapy_adaptive.warc.writer.WarcWriter` decides ``response``
or ``revisit`` from its own capture index and writes.  The middleware opens
the WARC folder once the scheduler has opened the frontier (a refused start
leaves it closed), announces the writer to delivery as a durable sink, and
closes it at ``spider_closed``, after the scheduler's last confirmation.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.exceptions import NotConfigured

from ... import meta
from ...config.spec import ConfigError
from ...runtime.delivery import SINK_CLOSED, SINK_OPENED
from ...runtime.sink_failure import SINK_FAILED, SinkError
from ...runtime.stop_grace import AbandonedDownload
from ...runtime.wiring import FRONTIER_OPENED, crawl_config
from ...store.base import StoreError
from ...warc.digests import shared_payloads
from ...warc.fleetdigests import fleet_index
from ...warc.writer import (
    DROPPED_REQUEST_HEADERS,
    DROPPED_RESPONSE_HEADERS,
    EXTRA_MESSAGE,
    HttpExchange,
    WarcError,
    WarcWriter,
)
from ..refused_start import Refusal

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Headers, Response
    from scrapy.statscollectors import StatsCollector

    from ...config.settings import AdaptiveConfig
    from ...ops.console.api import FrontierConsole
    from ...runtime.verdicts import FrontierServices

logger = logging.getLogger(__name__)

#: crawl-log annotation of a body archived as a revisit of another URL's capture
DUPLICATE_ANNOTATION = "duplicate:otherUrl"


#: request headers that carry credentials: their values are not archived
#: unless ADAPTIVE_WARC_KEEP_CREDENTIALS (a WARC file is often shared, replayed, uploaded)
CREDENTIAL_HEADERS = frozenset({b"authorization", b"proxy-authorization", b"cookie"})
REDACTED = b"REDACTED"


def _header_list(
    headers: Headers, dropped: frozenset[bytes], redacted: frozenset[bytes] = frozenset()
) -> list[tuple[str, str]]:
    return [
        (name.decode("latin-1"), (REDACTED if name.lower() in redacted else value).decode("latin-1"))
        for name, values in headers.items()
        if name.lower() not in dropped
        for value in values
    ]


def exchange_of(
    request: Request, response: Response, fetched: float, *, keep_credentials: bool = False
) -> HttpExchange:
    """What the archive stores of one Scrapy request and its response."""
    headers_only = response.status == 304 or "download_stopped" in response.flags
    dropped = DROPPED_REQUEST_HEADERS - CREDENTIAL_HEADERS  # those follow the setting
    redacted = frozenset() if keep_credentials else CREDENTIAL_HEADERS
    return HttpExchange(
        url=response.url,
        method=request.method,
        request_headers=_header_list(request.headers, dropped, redacted),
        request_body=request.body,
        status=response.status,
        protocol=response.protocol or "HTTP/1.1",
        response_headers=_header_list(response.headers, DROPPED_RESPONSE_HEADERS),
        body=b"" if headers_only else response.body,
        headers_only=headers_only,
        fetched=fetched,
        pages=pages_of(request),
    )


def pages_of(request: Request) -> tuple[tuple[str, float], ...]:
    """The page captures an embed's fetch came for (``meta["_adaptive_page"]``
    as :mod:`~scrapy_adaptive.integration.composites` sets it at the download)."""
    pages = request.meta.get(meta.PAGE)
    if not isinstance(pages, tuple):
        return ()
    return tuple(
        (page, captured)
        for page, captured in (p for p in pages if isinstance(p, tuple) and len(p) == 2)
        if isinstance(page, str) and isinstance(captured, float)
    )


class NotArchived(AbandonedDownload):
    """The response could not be archived: it gets no verdict (the URL is
    due again at the next start, when its records are written) and Scrapy
    logs nothing for it (an ``IgnoreRequest``)."""


class WarcMiddleware:
    """The Scrapy glue: archives every response passing through (order 610).

    Opened when the scheduler has opened the frontier (:meth:`frontier_opened`)
    and announced to :class:`~scrapy_adaptive.runtime.delivery.Delivery` as a durable
    sink; closed at ``spider_closed``, after the scheduler's last
    confirmation.
    """

    def __init__(
        self,
        stats: StatsCollector,
        *,
        crawler: Crawler | None = None,
        info: dict[str, str] | None = None,
        clock: Callable[[], float] = time.time,
        config: AdaptiveConfig | None = None,
    ) -> None:
        self.stats = stats
        self.crawler = crawler
        #: the crawl's parsed settings (None: refused, the WARC folder stays closed)
        self.config = config
        self.info = dict(info or {})
        self.clock = clock
        self.writer: WarcWriter | None = None
        self.refusal = Refusal(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WarcMiddleware:
        settings = crawler.settings
        if not settings.get("ADAPTIVE_WARC_DIR"):
            raise NotConfigured("ADAPTIVE_WARC_DIR is not set")
        from ...version import __version__

        info = {
            "software": f"scrapy-adaptive/{__version__}",
            "hostname": socket.gethostname(),
            "http-header-user-agent": str(settings.get("USER_AGENT") or ""),
            "robots": "obey" if settings.getbool("ROBOTSTXT_OBEY") else "ignore",
        }
        mw = cls(crawler.stats, crawler=crawler, info=info, config=crawl_config(crawler))  # type: ignore[arg-type]
        crawler.signals.connect(mw.spider_closed, signals.spider_closed)
        crawler.signals.connect(mw.frontier_opened, FRONTIER_OPENED)
        return mw

    def frontier_opened(self, services: FrontierServices, console: FrontierConsole | None = None) -> None:
        """The scheduler opened the frontier: open the WARC folder, and offer
        the console's report the payloads archived under several URLs."""
        config = self.config
        if config is None or config.warc_dir is None or self.writer is not None:
            return
        try:
            import warcio  # noqa: F401
        except ImportError:
            self.refusal.refuse(EXTRA_MESSAGE)
            return
        fleet = None
        try:
            spider = self.crawler.spider.name if self.crawler is not None and self.crawler.spider else "spider"
            fleet = fleet_index(config, spider)
            writer = WarcWriter(
                config.warc_dir,
                prefix=config.warc_prefix,
                max_size=config.warc_max_size,
                info=self.info,
                dedup_across_urls=config.warc_dedup_across_urls,
                digest_index_size=config.warc_digest_index_size,
                fleet_digests=fleet,
            )
            writer.open()
        except (ConfigError, WarcError, StoreError) as exc:
            if fleet is not None:  # the writer never opened: its connection is closed here
                fleet.close()
            self.refusal.refuse(str(exc))
            return
        self.writer = writer
        if console is not None:
            console.sections["shared_payloads"] = lambda: (
                shared_payloads(writer.index) if writer.index is not None else {"unavailable": "the crawl is closing"}
            )
        logger.info("Writing WARC files to %s (%s)", writer.folder, writer.filename)
        if self.crawler is not None:
            signals_ = self.crawler.signals
            writer.on_failure = lambda error: signals_.send_catch_log(SINK_FAILED, sink=writer, error=error)
            signals_.send_catch_log(SINK_OPENED, sink=writer)

    def process_response(self, request: Request, response: Response) -> Response:
        if self.writer is not None:
            keep = self.config is not None and self.config.warc_keep_credentials
            try:
                # the time the response came (the page capture time its embeds' via records name)
                fetched = request.meta.get(meta.DOWNLOADED)
                fetched = fetched if isinstance(fetched, float) else self.clock()
                self.writer.archive(exchange_of(request, response, fetched, keep_credentials=keep))
            except SinkError as exc:  # said once (SINK_FAILED); the crawl stops
                raise NotArchived(f"{response.url} was not archived ({exc}); due again at the next start") from None
            # the crawl log's annotation (reset: a redirect hop's request shares its meta)
            if self.writer.duplicate_of is not None:
                request.meta[meta.ARCHIVE_NOTE] = DUPLICATE_ANNOTATION
            else:
                request.meta.pop(meta.ARCHIVE_NOTE, None)
            for key, value in self.writer.counts.items():
                self.stats.set_value(f"adaptive/warc/{key}", value)
        return response

    def spider_closed(self, spider: Spider) -> None:
        writer, self.writer = self.writer, None
        if writer is None:
            return
        writer.close()
        if self.crawler is not None:
            self.crawler.signals.send_catch_log(SINK_CLOSED, sink=writer)
