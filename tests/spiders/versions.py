"""Follows every link and yields one item per page version, for delivery tests.

``-a start_urls=URL1,URL2``.  Each item is ``{"url", "status", "payload",
"version", "change"}``: ``payload`` is the body's WARC-style SHA-1 (the
record's ``payload_digest``), ``version`` the mock server's version text,
``change`` what the visit found.  :class:`SlowPipeline` holds each item for
``VERSIONS_PIPELINE_DELAY`` seconds, then appends it to
``VERSIONS_PIPELINE_FILE`` (opened and closed per item: durable when
``process_item`` returns, as the delivery contract asks of a pipeline).
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.http import Response, TextResponse

from scrapy_adaptive.change.digest import payload_digest

_URL_SEP = re.compile(r",(?=\s*https?://)")


class VersionsSpider(scrapy.Spider):
    name = "versions"

    def __init__(self, *args: Any, start_urls: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.start_urls = [u.strip() for u in _URL_SEP.split(start_urls) if u.strip()]

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.start_urls:
            yield scrapy.Request(url)

    def parse(self, response: Response) -> Iterator[Any]:
        yield {
            "url": response.url,
            "status": response.status,
            "payload": payload_digest(response.body),
            "version": response.css("p.extra::text").get() if isinstance(response, TextResponse) else None,
            "change": response.meta.get("adaptive_change"),
        }
        if isinstance(response, TextResponse):
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href)


class SlowPipeline:
    def __init__(self, path: str, delay: float) -> None:
        self.path = path
        self.delay = delay

    @classmethod
    def from_crawler(cls, crawler: Any) -> SlowPipeline:
        settings = crawler.settings
        return cls(settings.get("VERSIONS_PIPELINE_FILE"), settings.getfloat("VERSIONS_PIPELINE_DELAY"))

    async def process_item(self, item: Any) -> Any:
        if self.delay > 0:
            await asyncio.sleep(self.delay)
        with open(self.path, "a", encoding="utf-8") as file:
            file.write(json.dumps(dict(item)) + "\n")
        return item
