"""DecompressionVerdictMiddleware: a body that cannot be decompressed is a verdict.

Scrapy's ``HttpCompressionMiddleware`` refuses a body that inflates past
``DOWNLOAD_MAXSIZE`` (a decompression bomb) with an ``IgnoreRequest``, and a
body that is not what its ``Content-Encoding`` says raises a decoding error.
Both are raised in ``process_response``, which Scrapy hands to no
middleware's ``process_exception``: without a spider errback the failure is
dropped without a word, and the URL would wait for its lease to lapse
(``ADAPTIVE_LEASE``) before it is retried.

This subclass does the same decompression, bounded by the same limits, and
gives the URL its verdict when it fails: a retry (counted, tried again after
``ADAPTIVE_RETRY_DELAY``, failed after ``ADAPTIVE_MAX_RETRIES``, as a body
over ``DOWNLOAD_MAXSIZE`` on the wire is), with a reason that names the
limit or the encoding.  The add-on puts it in place of Scrapy's (same order,
590) unless the project configured ``HttpCompressionMiddleware`` itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy.downloadermiddlewares.httpcompression import HttpCompressionMiddleware
from scrapy.exceptions import IgnoreRequest

from ...model import Outcome, Visit
from ...runtime.wiring import FRONTIER_OPENED
from ..engine import say_in_one_line
from .errors import over_maxsize

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response

    from ...runtime.verdicts import FrontierServices

#: Scrapy's own, which this one replaces
SCRAPY_COMPRESSION = "scrapy.downloadermiddlewares.httpcompression.HttpCompressionMiddleware"


class DecompressionVerdictMiddleware(HttpCompressionMiddleware):
    """Scrapy's decompression, with a verdict for a body it refuses."""

    #: bound by the scheduler at open (None: not an adaptive crawl)
    services: FrontierServices | None = None

    def __init__(self, *args: Any, crawler: Crawler | None = None, **kwargs: Any) -> None:
        super().__init__(*args, crawler=crawler, **kwargs)
        self.services = None
        if crawler is not None:
            crawler.signals.connect(self.frontier_opened, FRONTIER_OPENED)

    def frontier_opened(self, services: FrontierServices) -> None:
        """The scheduler opened the frontier: verdicts go to *services*."""
        self.services = services

    def process_response(  # type: ignore[override]
        self, request: Request, response: Response, spider: Any = None
    ) -> Request | Response:
        try:
            return super().process_response(request, response)
        except IgnoreRequest:
            # the only IgnoreRequest raised here: the inflated body passed DOWNLOAD_MAXSIZE
            limit = request.meta.get("download_maxsize", self._max_size)
            self._verdict(request, over_maxsize(limit, "decompressed body"), "too_large")
            raise
        except Exception as exc:
            encoding = b",".join(response.headers.getlist("Content-Encoding")).decode("latin-1")
            reason = f"body is not valid {encoding} ({type(exc).__name__}: {exc})".replace(" ()", "")
            self._verdict(request, reason, "undecodable")
            say_in_one_line(exc, reason)
            raise

    def _verdict(self, request: Request, reason: str, kind: str) -> None:
        if self.stats is not None:
            self.stats.inc_value(f"adaptive/decompression/{kind}")
        if self.services is not None:
            self.services.commit(request, Visit(Outcome.RETRY, reason=reason))
