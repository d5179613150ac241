"""The Scrapy extension that keeps ``spider.state`` as JSON in the state folder.

It takes the place of Scrapy's ``SpiderState``, which unpickles a file of
the job folder at every start; the file, its migration and its refusals are
:mod:`..runtime.spiderstate`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from scrapy import Spider, signals

from ..runtime.spiderstate import SpiderStateFile
from ..runtime.wiring import FRONTIER_OPENED

if TYPE_CHECKING:
    from scrapy.crawler import Crawler


class JsonSpiderState:
    """Scrapy extension: ``spider.state`` from and to the state folder, as JSON.

    The spider gets its saved state when the frontier opens (before
    ``spider_opened``); a start refused before that gets an empty one and
    saves nothing.  Saved at ``spider_closed``, after the spider's own
    ``closed()`` (connected first), as Scrapy's ``SpiderState`` did.
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        #: the state folder's file (None: the frontier did not open)
        self.file: SpiderStateFile | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> JsonSpiderState:
        extension = cls(crawler)
        crawler.signals.connect(extension.frontier_opened, FRONTIER_OPENED)
        crawler.signals.connect(extension.spider_opened, signals.spider_opened)
        crawler.signals.connect(extension.spider_closed, signals.spider_closed)
        return extension

    def frontier_opened(self, spider_state: SpiderStateFile) -> None:
        self.file = spider_state
        if self.crawler.spider is not None:
            self.crawler.spider.state = spider_state.value  # type: ignore[attr-defined]

    def spider_opened(self, spider: Spider) -> None:
        if self.file is None:
            spider.state = {}  # type: ignore[attr-defined]

    def spider_closed(self, spider: Spider) -> None:
        if self.file is not None and hasattr(spider, "state"):
            self.file.save(spider.state)
