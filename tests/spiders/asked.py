"""Asks again for a URL it already has, as spiders do (issue 47).

``-a url=U``.  ``parse`` yields ``{"cb": "parse"}`` and, the first time
only, a second request for the same URL with ``dont_filter=True``, another
callback, ``cb_kwargs`` and meta; ``parse2`` yields what it was called with.
Plain Scrapy calls ``parse2`` once with ``k=1`` and ``tag="second"``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.http import Response


class AskedSpider(scrapy.Spider):
    name = "asked"

    def __init__(self, *args: Any, url: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.url = url
        self.asked = False

    async def start(self) -> AsyncIterator[scrapy.Request]:
        yield scrapy.Request(self.url, meta={"tag": "first"})

    def parse(self, response: Response) -> Iterator[Any]:
        yield {"cb": "parse", "tag": response.meta.get("tag")}
        if not self.asked:
            self.asked = True
            yield scrapy.Request(
                response.url,
                dont_filter=True,
                callback=self.parse2,
                errback=self.failed,
                cb_kwargs={"k": 1},
                meta={"tag": "second"},
            )

    def parse2(self, response: Response, k: int) -> Iterator[Any]:
        yield {"cb": "parse2", "k": k, "tag": response.meta.get("tag"), "change": response.meta.get("adaptive_change")}

    def failed(self, failure: Any) -> None:
        self.logger.error("errback called: %s", failure)
