"""Links of one page asked for with priorities, as Scrapy projects do (issue 47).

``-a url=U`` (a page), ``-a links=NAME:PRIORITY,...``: the page's callback
yields a request for ``U`` + ``-NAME`` with each priority, in that order.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import scrapy
from scrapy.http import Response


class PrioritizedSpider(scrapy.Spider):
    name = "prioritized"

    def __init__(self, *args: Any, url: str = "", links: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.start_urls = [url]
        self.links = [(name, int(priority)) for name, priority in (link.split(":") for link in links.split(","))]

    def parse(self, response: Response) -> Iterator[Any]:
        if response.url == self.start_urls[0]:
            for name, priority in self.links:
                yield scrapy.Request(f"{self.start_urls[0]}-{name}", priority=priority)
