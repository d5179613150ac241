"""Old import path of :class:`~scrapy_adaptive.integration.downloadermiddlewares.warc.WarcMiddleware`
(``scrapy_adaptive.WarcMiddleware``): settings and imports naming it keep working."""

from ..integration.downloadermiddlewares.warc import DUPLICATE_ANNOTATION, WarcMiddleware, exchange_of

__all__ = ["DUPLICATE_ANNOTATION", "WarcMiddleware", "exchange_of"]
