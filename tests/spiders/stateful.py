"""A spider that keeps a count of its starts in ``spider.state``.

``-a url=<url>``: the one page it fetches (none: it fetches nothing).  At
every start ``state["n"]`` grows by one and the spider logs
``state at start: <json>``.  ``-a bad=1`` also puts a set (which JSON
cannot hold) under ``state["seen"]``; ``-a blob=<n>`` puts ``n``
characters under ``state["blob"]`` at close (a state too big for a full disk).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import scrapy
from scrapy.http import Response


class StatefulSpider(scrapy.Spider):
    name = "stateful"

    def __init__(self, *args: Any, url: str = "", bad: str = "0", blob: str = "0", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.url = url
        self.bad = bad == "1"
        self.blob = int(blob)

    async def start(self) -> AsyncIterator[scrapy.Request]:
        self.logger.info("state at start: %s", json.dumps(self.state, sort_keys=True))
        self.state["n"] = self.state.get("n", 0) + 1
        if self.bad:
            self.state["seen"] = {1, 2}
        if self.url:
            yield scrapy.Request(self.url)

    def parse(self, response: Response) -> None:
        return None

    def closed(self, reason: str) -> None:
        if self.blob:
            self.state["blob"] = "x" * self.blob
