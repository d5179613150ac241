"""The ``demo`` spider: a plain Scrapy spider for the bundled demo site.

Nothing in it knows about revisiting.  It follows links and asks for embedded
assets like any crawler; the scrapy-adaptive add-on (enabled in settings.py)
keeps every URL it has seen in its frontier and fetches it again and again,
sooner for pages that change often.  So the spider must be idempotent: the
same page reaches ``parse`` many times and yields a fresh item each time.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, Self
from urllib.parse import urlparse

import scrapy
from scrapy.crawler import Crawler
from scrapy.http import Response, TextResponse

from ..items import PageItem

#: Request meta understood by scrapy-adaptive: "this URL is embedded in a
#: page" (an image or stylesheet).  Harmless without the add-on.
EMBED_META = {"adaptive_embed": True}

#: Visible article text: every text node inside <article> except script/style.
ARTICLE_TEXT_XPATH = "//article//text()[not(ancestor::script) and not(ancestor::style)]"


class DemoSpider(scrapy.Spider):
    """Crawl the demo site: pages via links, images/CSS as assets, items per article."""

    name = "demo"
    # The demo site's default host; from_crawler() replaces it with the host
    # of DEMO_SITE_URL so `-s DEMO_SITE_URL=http://localhost:9000/` also works.
    allowed_domains = ["127.0.0.1"]

    site_url: str

    @classmethod
    def from_crawler(cls, crawler: Crawler, *args: Any, **kwargs: Any) -> Self:
        """Read DEMO_SITE_URL once; OffsiteMiddleware reads allowed_domains later."""
        spider = super().from_crawler(crawler, *args, **kwargs)
        spider.site_url = crawler.settings.get("DEMO_SITE_URL", "http://127.0.0.1:8731/")
        host = urlparse(spider.site_url).hostname
        if host:
            spider.allowed_domains = [host]
        return spider

    async def start(self) -> AsyncIterator[scrapy.Request]:
        """Seed the crawl with the index page; links reach everything else."""
        yield scrapy.Request(self.site_url, callback=self.parse)

    def parse(self, response: Response, **kwargs: Any) -> Iterator[PageItem | scrapy.Request]:
        """Extract an item from article/product pages, then follow links and assets."""
        if not isinstance(response, TextResponse):
            return  # e.g. a link that turned out to be an image
        if response.css("article"):
            yield self.extract_item(response)
        for href in response.css("a::attr(href)").getall():
            if self.is_same_site(response, href):
                yield response.follow(href, callback=self.parse)
        assets = response.css("img::attr(src)").getall()
        assets += response.css('link[rel~="stylesheet"]::attr(href)').getall()
        for src in assets:
            if self.is_same_site(response, src):
                yield response.follow(src, callback=self.parse_asset, meta=EMBED_META)

    def parse_asset(self, response: Response) -> None:
        """Assets are fetched (and revisited) for change tracking; nothing to extract."""
        self.logger.debug("asset %s: %d bytes", response.url, len(response.body))

    def is_same_site(self, response: Response, href: str) -> bool:
        """Stay on the demo site: same scheme/host/port as the page, http(s) only."""
        url = urlparse(response.urljoin(href))
        return url.scheme in ("http", "https") and url.netloc == urlparse(response.url).netloc

    @staticmethod
    def extract_item(response: TextResponse) -> PageItem:
        """One snapshot of an article or product page."""
        text = " ".join(t.strip() for t in response.xpath(ARTICLE_TEXT_XPATH).getall() if t.strip())
        price = response.css('[itemprop="price"]::attr(content)').get()
        if price is None:
            price = response.css('[itemprop="price"]::text').get()
        title = response.css("article h1::text").get() or response.css("title::text").get() or ""
        return PageItem(
            url=response.url,
            title=title.strip(),
            text_length=len(text),
            price=price.strip() if price else None,
        )
