"""A follow-links spider with switches for the awkward cases of e2e tests.

``CASES_LOSE=<path>`` (a setting): a downloader middleware raises inside
``process_response`` for URLs with that path, so the response never reaches the
spider and no ``process_exception`` runs (the add-on's downloader settles it).
``CASES_SWAP=<path>``: a downloader middleware answers URLs with that path
with a response whose request is a new one of its own: the issued request
never reaches the spider, and only its lease brings the URL back.
``CASES_FAIL_INPUT=<path>``: a spider middleware raises in
``process_spider_input`` for responses with that path.
``-a raise_on=<path>``: the callback raises for the response with that path
(after yielding its item and links).
``-a pad=<n>``: every followed request carries ``n`` bytes in ``meta`` (to
grow the state quickly).
``-a lambda_url=<url>``: the first page also yields a request for that URL
with a lambda callback, which cannot be stored.
``CASES_FAIL_WRITES_AFTER=<n>`` with the :class:`FailStoreWrites` extension:
the frontier's store fails every write after the first *n* (a disk that
fills up during the crawl).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
from scrapy.http import Response, TextResponse


class OnePath:
    """A test middleware acting on the URLs whose path its setting names."""

    #: the setting that names the path
    setting = ""

    def __init__(self, pattern: str) -> None:
        self.pattern = pattern

    @classmethod
    def from_crawler(cls, crawler: Any) -> Any:
        return cls(crawler.settings.get(cls.setting) or "\x00")

    def matches(self, url: str) -> bool:
        return urlsplit(url).path == self.pattern


class LoseResponses(OnePath):
    """Downloader middleware that raises in ``process_response`` for ``CASES_LOSE``."""

    setting = "CASES_LOSE"

    def process_response(self, request: scrapy.Request, response: Response) -> Response:
        if self.matches(request.url):
            raise RuntimeError(f"lost {request.url} on purpose")
        return response


class SwapRequests(OnePath):
    """Downloader middleware that hands ``CASES_SWAP``'s responses on with a request of its own."""

    setting = "CASES_SWAP"

    def process_response(self, request: scrapy.Request, response: Response) -> Response:
        if self.matches(request.url):
            return response.replace(request=scrapy.Request(request.url, callback=request.callback))
        return response


class FailInput(OnePath):
    """Spider middleware that raises in ``process_spider_input`` for ``CASES_FAIL_INPUT``."""

    setting = "CASES_FAIL_INPUT"

    def process_spider_input(self, response: Response) -> None:
        if self.matches(response.url):
            raise ValueError(f"refused {response.url} on purpose")


class FailStoreWrites:
    """Extension: the frontier's writes fail after ``CASES_FAIL_WRITES_AFTER``."""

    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler
        self.after = crawler.settings.getint("CASES_FAIL_WRITES_AFTER")

    @classmethod
    def from_crawler(cls, crawler: Any) -> FailStoreWrites:
        ext = cls(crawler)
        crawler.signals.connect(ext.spider_opened, signal=scrapy.signals.spider_opened)
        return ext

    def spider_opened(self, spider: scrapy.Spider) -> None:
        from scrapy_adaptive.store.base import StoreError

        store = self.crawler.engine.scheduler.frontier.store
        write = store.write
        done = [0]

        def failing_write(batch: Any) -> None:
            done[0] += 1
            if done[0] > self.after:
                raise StoreError("injected write failure")
            write(batch)

        store.write = failing_write


class CasesSpider(scrapy.Spider):
    name = "cases"

    def __init__(
        self,
        *args: Any,
        start_urls: str = "",
        lambda_url: str = "",
        pad: str = "0",
        raise_on: str = "",
        token: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        #: start requests carry ``Authorization: Bearer <token>`` and a ``Cookie`` header, set by hand
        self.token = token
        self.raise_on = raise_on
        self.pad = "x" * int(pad)
        self.start_urls = [u for u in start_urls.split(" ") if u]
        self.lambda_url = lambda_url

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.start_urls:
            if self.token:
                yield scrapy.Request(
                    url, headers={"Authorization": f"Bearer {self.token}", "Cookie": f"t={self.token}"}
                )
            else:
                yield scrapy.Request(url)
        if self.lambda_url:
            yield scrapy.Request(self.lambda_url, callback=lambda r: None)

    def parse(self, response: Response) -> Iterator[Any]:
        yield {"url": response.url, "status": response.status}
        if isinstance(response, TextResponse):
            for href in response.css("a::attr(href)").getall():
                yield response.follow(href, meta={"pad": self.pad} if self.pad else None)
        if self.raise_on and urlsplit(response.url).path == self.raise_on:
            raise RuntimeError(f"callback failed on {response.url} on purpose")
