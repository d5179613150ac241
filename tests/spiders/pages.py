"""Fetches the given pages and follows nothing: for change-detection tests.

``-a urls=u1 u2 ...`` (space separated).  Yields one item per callback call:
``{"url", "name", "price"}`` (h1 text and schema.org price when present), so
a test can count how often the callback ran per URL from the items feed.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.http import Response, TextResponse


class PagesSpider(scrapy.Spider):
    name = "pages"

    def __init__(self, *args: Any, urls: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.urls = [u for u in urls.split(" ") if u]

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.urls:
            yield scrapy.Request(url)

    def parse(self, response: Response) -> Iterator[dict[str, Any]]:
        name = price = None
        if isinstance(response, TextResponse):
            name = response.css("h1::text").get()
            price = response.css("[itemprop=price]::attr(content)").get()
        yield {"url": response.url, "name": name, "price": price, "change": response.meta.get("adaptive_change")}
