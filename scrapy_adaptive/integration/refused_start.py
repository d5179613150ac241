"""Refusing to start a crawl: one clear message, a clean close, exit code 1."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from scrapy import Request, Spider, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.exceptions import CloseSpider
from scrapy.extensions.spiderstate import SpiderState

from .engine import exit_with_error

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from twisted.internet.defer import Deferred

logger = logging.getLogger(__name__)


class Refusal:
    """Refuses to start the crawl: one CRITICAL line, a clean close, exit code 1.

    The refusal is said at once (from ``open``) and enforced from the
    ``spider_opened`` signal by raising ``CloseSpider``: that is Scrapy's
    public way for a component to stop the start-up once every other part is
    open, so all of them close cleanly.  Raised anywhere earlier (the
    scheduler's ``from_crawler`` or ``open``) Scrapy leaves a wall of
    tracebacks ("Engine slot not assigned", "Scraper close failure").
    """

    def __init__(self, crawler: Crawler | None) -> None:
        self.crawler = crawler
        self.message: str | None = None
        if crawler is not None:
            crawler.signals.connect(self._on_spider_opened, signals.spider_opened)

    def refuse(self, message: str) -> None:
        self.message = message
        logger.critical("scrapy-adaptive cannot start: %s", message)
        if self.crawler is not None:
            self._spare_jobdir(self.crawler)
            exit_with_error(self.crawler)

    @staticmethod
    def _spare_jobdir(crawler: Crawler) -> None:
        """Keeps Scrapy's SpiderState extension away from ``JOBDIR/spider.state``.

        A refused crawl never ran: it has no state to save, and saving it
        would rewrite the file of the crawl that did run (or, when the spider
        never got its ``state``, truncate it to nothing, and every later start
        on the JOBDIR would fail to read it).  Refused before ``spider_opened``,
        the file is not even read.
        """
        extensions = getattr(getattr(crawler, "extensions", None), "middlewares", ())
        for extension in extensions:
            if isinstance(extension, SpiderState):
                crawler.signals.disconnect(extension.spider_opened, signals.spider_opened)
                crawler.signals.disconnect(extension.spider_closed, signals.spider_closed)

    def _on_spider_opened(self, spider: Spider) -> None:
        if self.message is not None:
            raise CloseSpider("adaptive_refused")


class RefusingScheduler(BaseScheduler):
    """Stands in for the scheduler when the settings are refused.

    Built by :meth:`AdaptiveScheduler.from_crawler` instead of raising there:
    Scrapy cannot close an engine whose scheduler failed to build.
    """

    def __init__(self, message: str, crawler: Crawler | None = None) -> None:
        self.message = message
        self.refusal = Refusal(crawler)

    def open(self, spider: Spider) -> Deferred[None] | None:
        self.refusal.refuse(self.message)
        return None

    def has_pending_requests(self) -> bool:
        return False

    def enqueue_request(self, request: Request) -> bool:
        return False

    def next_request(self) -> Request | None:
        return None
