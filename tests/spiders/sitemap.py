"""Reads sitemaps and passes each entry's ``lastmod`` on as a change hint.

``-a sitemaps="<url> <source> <url> <source> ..."``: each sitemap is
revisited every ``-a every=<seconds>`` (a fixed wait through
``adaptive_wait_policy``) and its entries are requested with
``meta["adaptive_hint"] = {"modified": lastmod, "source": <source>}``, the
README's recipe.  Pages yield ``{"url", "change"}`` items.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.http import Response
from scrapy.utils.sitemap import Sitemap


class SitemapHintsSpider(scrapy.Spider):
    name = "sitemap_hints"

    def __init__(self, *args: Any, sitemaps: str = "", every: str = "0.5", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        words = sitemaps.split()
        self.sitemaps = list(zip(words[::2], words[1::2], strict=True))
        self.every = float(every)

    async def start(self) -> AsyncIterator[scrapy.Request]:
        revisit = {"policy": "scrapy_adaptive.policies.ConstantWaitPolicy", "default": self.every, "min": 0.1}
        for url, source in self.sitemaps:
            yield scrapy.Request(
                url, self.parse_sitemap, cb_kwargs={"source": source}, meta={"adaptive_wait_policy": revisit}
            )

    def parse_sitemap(self, response: Response, source: str) -> Iterator[scrapy.Request]:
        for entry in Sitemap(response.body):
            hint = {"modified": entry.get("lastmod"), "source": source}
            yield scrapy.Request(entry["loc"], self.parse, meta={"adaptive_hint": hint})

    def parse(self, response: Response) -> Iterator[dict[str, Any]]:
        yield {"url": response.url, "change": response.meta.get("adaptive_change")}
