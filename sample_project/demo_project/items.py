"""Items the demo spider extracts from article and product pages."""

from __future__ import annotations

import scrapy


class PageItem(scrapy.Item):
    """One snapshot of an article or product page, taken at each (re)visit.

    The adaptive crawler revisits pages, so the same URL yields a new item
    whenever it is fetched with a full body; comparing items over time (for
    example ``price``) shows what changed.
    """

    url = scrapy.Field()  # final URL of the page
    title = scrapy.Field()  # the article's <h1>, else <title>
    text_length = scrapy.Field()  # characters of visible article text (scripts excluded)
    price = scrapy.Field()  # product price as a string ("123.45"), None elsewhere
