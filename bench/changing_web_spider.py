"""The spider every crawler of :mod:`bench.changing_web` runs: follow the site, one item per response.

``python -m scrapy runspider bench/changing_web_spider.py -a start=URL1,URL2 ...``

Each item says which version of which URL the crawler *received*: the
version id is read from the body (:func:`bench.changing_web_world.version_of`),
so a response without the bytes (a 304, a stopped download) reports none.
Links and image sources are followed on the same host; the same spider runs
in the plain recrawl loop, the HttpCache loop and the adaptive crawl, so
only the crawler differs.

Each request that reaches the downloader as scrapy-adaptive's deliberate
full download to check validators carries ``X-Bench-Fetch``, which the
server logs (:mod:`bench.changing_web_site`): ``check`` while the URL's
first-visit Last-Modified is still being checked (its policy memory's
``ua``, ``policies/belief.py``), ``verify`` for any other verification (a
sampled one, a noise probe).  The other crawlers never send it.
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

    @classmethod
    def from_crawler(cls, crawler: Any, *args: Any, **kwargs: Any) -> ChangingWebSpider:
        spider = super().from_crawler(crawler, *args, **kwargs)
        crawler.signals.connect(tag_fetch, signal=scrapy.signals.request_reached_downloader)
        return spider

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


def tag_fetch(request: scrapy.Request, spider: Any = None) -> None:
    """``X-Bench-Fetch`` on a verification (after the middlewares decided it, before the download)."""
    if getattr(request.meta.get("_adaptive_fetch"), "validation", None) == "verified":
        memory = (request.meta.get("adaptive_record") or {}).get("policy") or {}
        request.headers["X-Bench-Fetch"] = "check" if memory.get("ua") else "verify"
