"""The spider every crawler of :mod:`bench.changing_web` runs: follow the site, one item per response.

``python -m scrapy runspider bench/changing_web_spider.py -a start=URL1,URL2 ...``

Each item says which version of which URL the crawler *received*: the
version id is read from the body (:func:`bench.changing_web_world.version_of`),
so a response without the bytes (a 304, a stopped download) reports none.
Links and image sources are followed on the same host; the same spider runs
in the plain recrawl loop, the HttpCache loop and the adaptive crawl, so
only the crawler differs.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import scrapy
from scrapy.http import Response, TextResponse

from bench.changing_web_world import version_of


class ChangingWebSpider(scrapy.Spider):
    """Yields ``{"url", "status", "version", "t", "cached"}`` per response."""

    name = "changing_web"

    def __init__(self, start: str = "", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.start_urls = [u for u in start.split(",") if u]

    def parse(self, response: Response, **kwargs: Any) -> Iterator[Any]:
        yield {
            "url": response.url,
            "status": response.status,
            "version": version_of(response.body),
            "t": time.time(),
            "cached": "cached" in response.flags,
        }
        if isinstance(response, TextResponse):
            for href in response.css("a::attr(href), img::attr(src)").getall():
                yield response.follow(href, callback=self.parse)
