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
