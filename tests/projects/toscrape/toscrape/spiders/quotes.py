"""The quotes of a quotes site, page after page by its "Next" link: the
shape of the crawl Scrapy's tutorial writes (not its code)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import scrapy
from scrapy.http import Response


class QuotesSpider(scrapy.Spider):
    """One item per quote; follows the pager's "Next" link to the last page."""

    name = "quotes"
    allowed_domains = ["quotes.toscrape.test"]
    start_urls = ["http://quotes.toscrape.test/quotes/"]

    def parse(self, response: Response) -> Iterator[Any]:
        for quote in response.css("div.quote"):
            yield {
                "text": quote.css("span.text::text").get(),
                "author": quote.css("small.author::text").get(),
                "tags": quote.css("div.tags a.tag::text").getall(),
            }
        next_page = response.css("li.next a::attr(href)").get()
        if next_page is not None:
            yield response.follow(next_page, callback=self.parse)
