"""A spider that follows every link: the generic workload for end-to-end tests.

Run with ``scrapy runspider tests/spiders/follow.py -a start_urls=URL1,URL2``.
Arguments (all optional except ``start_urls``):

``start_urls``
    Comma-separated absolute URLs to start from (split only before ``http://``
    or ``https://``, so commas inside a URL's query are kept).
``all_statuses``
    ``1`` to receive (and yield items for) non-2xx responses too, instead of
    letting HttpErrorMiddleware drop them (sets ``handle_httpstatus_all``,
    which also stops RedirectMiddleware from following 3xx).

Yields one item per response: ``{"url", "status", "title", "links"}``.
It uses Scrapy 2.13+'s ``async def start()`` (not ``start_requests``).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy
from scrapy.http import Response, TextResponse

_URL_SEP = re.compile(r",(?=\s*https?://)")


class FollowSpider(scrapy.Spider):
    """Follow all ``<a href>`` links from the start URLs (dupes filtered as usual)."""

    name = "follow"

    def __init__(
        self,
        *args: Any,
        start_urls: str | list[str] = "",
        all_statuses: str = "0",
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        if isinstance(start_urls, str):
            # Split only on commas that start a new absolute URL, so a start URL
            # may itself carry a comma-separated query (e.g. ?links=/a,/b).
            start_urls = [u.strip() for u in _URL_SEP.split(start_urls) if u.strip()]
        self.start_urls = list(start_urls)
        self.all_statuses = str(all_statuses).lower() in ("1", "true", "yes")

    def _meta(self) -> dict[str, Any]:
        return {"handle_httpstatus_all": True} if self.all_statuses else {}

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.start_urls:
            yield scrapy.Request(url, callback=self.parse, meta=self._meta())

    def parse(self, response: Response) -> Iterator[dict[str, Any] | scrapy.Request]:
        links: list[str] = []
        title: str | None = None
        if isinstance(response, TextResponse):  # a 304/empty body may not be text
            links = response.css("a::attr(href)").getall()
            title = response.css("title::text").get()
        yield {
            "url": response.url,
            "status": response.status,
            "title": title,
            "links": links,
        }
        for href in links:
            yield response.follow(href, callback=self.parse, meta=self._meta())
