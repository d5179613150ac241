"""The Scrapy glue of composite captures (:mod:`..ops.composites`).

How an embed's fetch knows the page capture it belongs to:

1. every response is stamped, as the downloader hands it over (Scrapy's
   ``response_downloaded``, before any downloader middleware's
   ``process_response``), with the time it came: ``meta["_adaptive_downloaded"]``,
   the WARC-Date its records are written with;
2. the visit middleware marks each embed a page captured anew yields
   (:meth:`.VisitMiddleware._child`) with ``meta["_adaptive_page"] = (page
   URL, the page's _adaptive_downloaded)``;
3. as that request is scheduled (``request_scheduled``) the watch awaits the
   embed for that page capture: the request itself does not reach the
   downloader (the frontier issues the URL's stored request, which keeps no
   private key), so the link is kept by URL in the watch;
4. when the embed's URL is fetched, the watch sets ``meta["_adaptive_page"]``
   of that fetch to the page captures it came for (a tuple of (page URL,
   capture time) pairs, usually one), which the WARC middleware writes as
   ``metadata`` records (``via``), and settles the page captures whose
   embeds all came: the ``adaptive/embeds/*`` stats, the summary line and
   the report's section.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy import signals

from .. import meta
from ..ops.composites import COUNTS, CompositeWatch
from ..ops.reporting import EMBED_STATS as STATS
from ..ops.reporting import STAT_OF
from ..runtime.wiring import FRONTIER_OPENED
from .spidermiddlewares.reading import is_embed

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

    from ..ops.console.api import FrontierConsole

#: each count's stat name (``within`` names its window)
STAT_NAMES = {name: STAT_OF.get(name, name) for name in COUNTS}


class CompositeCaptures:
    """Feeds a :class:`CompositeWatch` from Scrapy's signals and publishes its figures."""

    def __init__(
        self,
        stats: StatsCollector | None,
        *,
        watch: CompositeWatch | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.stats = stats
        self.watch = watch or CompositeWatch()
        self.clock = clock

    @classmethod
    def connect(cls, crawler: Crawler) -> CompositeCaptures:
        glue = cls(crawler.stats)
        crawler.signals.connect(glue.downloaded, signals.response_downloaded)
        crawler.signals.connect(glue.scheduled, signals.request_scheduled)
        crawler.signals.connect(glue.closed, signals.spider_closed)
        crawler.signals.connect(glue.frontier_opened, FRONTIER_OPENED)
        return glue

    def frontier_opened(self, console: FrontierConsole | None = None) -> None:
        """The report's section (``scrapy frontier report`` on the running crawl, report.html)."""
        if console is not None:
            console.sections["composites"] = self.watch.figures

    def downloaded(self, response: Response, request: Request) -> None:
        now = self.clock()
        request.meta[meta.DOWNLOADED] = now
        pages, settled = self.watch.fetched(request.url, now, embed=is_embed(request))
        if pages:
            request.meta[meta.PAGE] = tuple(pages)
        else:
            request.meta.pop(meta.PAGE, None)
        if pages or settled:
            self.publish()

    def scheduled(self, request: Request) -> None:
        page = request.meta.get(meta.PAGE)
        # a pair (page URL, capture time) as the visit middleware sets it on an
        # embed it lets out; a redirect's request carries its hop's pairs instead
        if not (isinstance(page, tuple) and len(page) == 2 and isinstance(page[0], str)):
            return
        url, captured = page
        if not isinstance(captured, float):
            return
        self.watch.expect(url, captured, request.url, self.clock())
        self.publish()

    def closed(self) -> None:
        self.watch.close()
        self.publish()

    def publish(self) -> None:
        if self.stats is None:
            return
        figures: dict[str, Any] = self.watch.figures()
        for name, stat in STAT_NAMES.items():
            self.stats.set_value(STATS + stat, figures[name])
        self.stats.set_value(STATS + "pending", figures["pending"])
        if figures["gap_p50"] is not None:
            self.stats.set_value(STATS + "gap_p50", round(figures["gap_p50"], 3))
