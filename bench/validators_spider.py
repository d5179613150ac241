"""The validators benchmark's spider: fetches a list of URLs, follows nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import scrapy


class ValidatorsBenchSpider(scrapy.Spider):
    name = "validators_bench"

    def __init__(self, *args: Any, urls_file: str = "", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        with open(urls_file, encoding="utf-8") as f:
            self.urls = [line.strip() for line in f if line.strip()]

    async def start(self) -> AsyncIterator[scrapy.Request]:
        for url in self.urls:
            yield scrapy.Request(url)

    def parse(self, response: scrapy.http.Response) -> None:
        return None
