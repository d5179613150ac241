"""Hands an item from one callback to the next, as spiders do.

``-a url=U``: ``parse`` makes a :class:`Listing` item with a ``Decimal``
and a date, and requests *U* again for ``parse_detail`` with the item in
``cb_kwargs`` and ``meta``; ``parse_detail`` yields what it was handed, at
each visit that found the page changed.  The request must survive the state
folder for those revisits (Scrapy's ``meta={"item": item}`` pattern).
"""

from __future__ import annotations

import datetime
import decimal
from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.http import Response


class Listing(scrapy.Item):
    name = scrapy.Field()
    price = scrapy.Field()
    listed = scrapy.Field()


class HandedSpider(scrapy.Spider):
    name = "handed"

    def __init__(self, *args: Any, url: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.url = url

    async def start(self) -> AsyncIterator[scrapy.Request]:
        yield scrapy.Request(self.url + "?list=1")

    def parse(self, response: Response) -> Iterator[Any]:
        item = Listing(name="chair", price=decimal.Decimal("19.90"), listed=datetime.date(2026, 11, 29))
        yield scrapy.Request(self.url, callback=self.parse_detail, cb_kwargs={"item": item}, meta={"seen": {"a"}})

    def parse_detail(self, response: Response, item: Listing) -> Iterator[Any]:
        yield {
            "type": type(item).__name__,
            "price": str(item["price"]),
            "listed": item["listed"].isoformat(),
            "seen": sorted(response.meta["seen"]),
        }
