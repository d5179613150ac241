"""Fetches the given pages and follows nothing: for change-detection tests.

``-a urls=u1 u2 ...`` (space separated); ``-a embeds=1`` also fetches the
pages' images (callback ``parse_asset``, no items).  ``-a meta=<json>`` adds meta to
every start request (e.g. scrapy-deltafetch's ``deltafetch_key``).  Yields one item per callback call:
``{"url", "name", "price"}`` (h1 text and schema.org price when present), so
a test can count how often the callback ran per URL from the items feed.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.http import Response, TextResponse


class PagesSpider(scrapy.Spider):
    name = "pages"

    def __init__(self, *args: Any, urls: str = "", meta: str = "{}", embeds: str = "0", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.embeds = embeds == "1"
        self.urls = [u for u in urls.split(" ") if u]
        self.extra_meta = json.loads(meta)

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.urls:
            yield scrapy.Request(url, meta=dict(self.extra_meta))

    def parse(self, response: Response) -> Iterator[Any]:
        name = price = None
        if isinstance(response, TextResponse):
            name = response.css("h1::text").get()
            price = response.css("[itemprop=price]::attr(content)").get()
            if self.embeds:
                for src in response.css("img::attr(src)").getall():
                    yield response.follow(src, callback=self.parse_asset)
        yield {"url": response.url, "name": name, "price": price, "change": response.meta.get("adaptive_change")}

    def parse_asset(self, response: Response) -> Iterator[Any]:
        return iter(())


class EventsPipeline:
    """Writes every change event it gets (``scrapy_adaptive.ChangeEvent``)
    to ``EVENTS_PIPELINE_FILE``, one JSON line each, and passes the spider's
    items on; the file is open only between ``open_spider`` and
    ``close_spider``, so an event handed over outside them fails.
    ``EVENTS_PIPELINE_FAIL``: a URL ending whose events raise ``ValueError``
    (``EVENTS_PIPELINE_DROP``: are dropped), for the events' at-least-once tests."""

    def __init__(self, path: str, fail: str, drop: str) -> None:
        self.path, self.fail, self.drop = path, fail, drop
        self.file: Any = None

    @classmethod
    def from_crawler(cls, crawler: Any) -> EventsPipeline:
        settings = crawler.settings
        return cls(
            settings["EVENTS_PIPELINE_FILE"],
            settings.get("EVENTS_PIPELINE_FAIL") or "\0",
            settings.get("EVENTS_PIPELINE_DROP") or "\0",
        )

    def open_spider(self) -> None:
        self.file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115 - closed in close_spider

    def close_spider(self) -> None:
        self.file.close()

    def process_item(self, item: Any) -> Any:
        from itemadapter import ItemAdapter
        from scrapy.exceptions import DropItem

        from scrapy_adaptive import ChangeEvent

        if not isinstance(item, ChangeEvent):
            return item
        if item.url.endswith(self.fail):
            raise ValueError(f"no room for {item.kind}")
        if item.url.endswith(self.drop):
            raise DropItem("not wanted")
        self.file.write(json.dumps(ItemAdapter(item).asdict()) + "\n")
        self.file.flush()
        return item
