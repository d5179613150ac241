"""The spider of the e2e benchmark: follow every link, one item per page.

Run by :mod:`bench.e2e_bench` as
``python -m scrapy runspider bench/e2e_spider.py -a start=URL1,URL2 ...``.
It does the least a real spider does (parse, extract links, yield an item)
so that the crawl's speed is set by the engine, the downloader and the
scheduler being compared, not by spider code.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import scrapy
from scrapy.http import Response


class E2EBenchSpider(scrapy.Spider):
    """Follows links from the start pages; yields ``{"url", "title"}`` per page."""

    name = "e2e_bench"

    def __init__(self, start: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = [u for u in start.split(",") if u]

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        yield {"url": response.url, "title": response.css("title::text").get()}
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, callback=self.parse)
