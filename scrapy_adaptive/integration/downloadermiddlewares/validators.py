"""ValidatorsMiddleware: don't download bodies that did not change.

For a frontier URL whose record has an ETag or a Last-Modified:

* **conditional GET** (``ADAPTIVE_CONDITIONAL_GET``, on by default): the
  stored values are sent back verbatim as ``If-None-Match`` /
  ``If-Modified-Since``.  A 304 to such a request is a visit with the state
  *unchanged*; the record keeps its last digest (a 304 is never digested as
  an empty body, and never reaches the spider as an ``HttpError``).  A 304
  to a request that carried no validators is suspicious: state *unknown*.
* **mid-fetch abort** (``ADAPTIVE_MIDFETCH_ABORT``), for servers that ignore
  validators: when the response headers arrive (Scrapy's
  ``headers_received`` signal), ETag and Last-Modified are compared with the
  record under ``ADAPTIVE_VALIDATOR_SCHEME``; if they predict no change the
  download stops there (``StopDownload``), and the stopped response is never
  digested nor handed to a callback as content.
* A predicted *change* is never trusted alone: the body is downloaded and its
  digest decides.
* A **noise probe** (:mod:`scrapy_adaptive.change.noise`) is always a full
  download: it is compared with the fetch before it.
* **Trust per host and class of URLs** (:mod:`scrapy_adaptive.change.trust`):
  until a class (host, directory, extension) has been right
  ``ADAPTIVE_TRUST_WARMUP`` times, and then now and then (down to
  ``ADAPTIVE_TRUST_MIN_RATE``), a fetch is a *verification*: no validators,
  no abort, the headers' prediction compared with the digest.  One lie sends
  the class, and the URL, back to full downloads.

This middleware only sets request headers and the fetch's
:class:`~scrapy_adaptive.model.FetchResult` (the private ``meta`` key
``_adaptive_fetch``), which the visit middleware reads into its verdict.  It
asks the frontier two things, through the services the scheduler binds at
open: the URL's record as issued, and whether this fetch verifies the
host's validators.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider, signals
from scrapy.exceptions import StopDownload
from scrapy.http import Headers, Response

from ... import meta
from ...change import noise_learner
from ...change.prediction import Prediction, predict, request_validators
from ...config.table import DEFAULTS
from ...model import ChangeState, FetchResult, answers_with_page
from ...runtime.wiring import FRONTIER_OPENED, crawl_config

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from ...runtime.verdicts import FrontierServices

logger = logging.getLogger(__name__)


def fetch_result(request: Request) -> FetchResult | None:
    """The fetch result this middleware keeps on *request*, if any."""
    fetch = request.meta.get(meta.FETCH)
    return fetch if isinstance(fetch, FetchResult) else None


def body_length_of(value: Any) -> int | None:
    """``body_length`` as Scrapy's handlers give it: an int, None, or (HTTP/1.1
    chunked) the string ``'twisted.web.iweb.UNKNOWN_LENGTH'``."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class ValidatorsMiddleware:
    """Conditional GETs, mid-fetch aborts and verification fetches."""

    def __init__(
        self,
        stats: StatsCollector,
        services: FrontierServices | None = None,
        *,
        conditional: bool = DEFAULTS["ADAPTIVE_CONDITIONAL_GET"],
        abort: bool = DEFAULTS["ADAPTIVE_MIDFETCH_ABORT"],
        scheme: str = DEFAULTS["ADAPTIVE_VALIDATOR_SCHEME"],
    ) -> None:
        self.stats = stats
        #: the frontier's services, handed over when the scheduler opens it
        #: (None: not an adaptive crawl, the middleware stays out of the way)
        self.services = services
        self.conditional = conditional
        self.abort = abort
        self.scheme = scheme

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ValidatorsMiddleware:
        config = crawl_config(crawler)
        if config is None:
            mw = cls(crawler.stats)  # type: ignore[arg-type]
        else:
            mw = cls(
                crawler.stats,  # type: ignore[arg-type]
                conditional=config.conditional_get,
                abort=config.midfetch_abort,
                scheme=config.validator_scheme,
            )
        crawler.signals.connect(mw._on_headers_received, signals.headers_received)
        crawler.signals.connect(mw.frontier_opened, FRONTIER_OPENED)
        return mw

    def frontier_opened(self, services: FrontierServices) -> None:
        """The scheduler opened the frontier: verdicts go to *services*."""
        self.services = services

    def process_request(self, request: Request) -> None:
        if self.services is None or meta.FP not in request.meta or not (self.conditional or self.abort):
            return None
        record = self.services.record(request)
        if record is None or not (record.get("etag") or record.get("last_modified")):
            return None  # not an issued URL, or nothing to validate against: a plain fetch
        status = record.get("status")
        if isinstance(status, int) and not answers_with_page(status):
            # the last answer was a redirect or an error: the validators are
            # the capture's from before it, and a 304 now would have the
            # archive refer to the error page; the page's body is compared
            # with its capture instead
            self.stats.inc_value("adaptive/validators/after_error_full_fetches")
            return None
        if noise_learner.probing(record.get("noise")):
            # a noise probe compares two bodies: a 304 or an aborted fetch
            # would show nothing.  It checks the validators too: the fetch
            # whose difference it settles left that check to it
            self.stats.inc_value("adaptive/validators/probe_full_fetches")
            request.meta[meta.FETCH] = FetchResult(validation="verified")
            return None
        fetch = request.meta[meta.FETCH] = FetchResult()
        if self.services.verify(request):
            fetch.validation = "verified"
            self.stats.inc_value("adaptive/validators/verifications")
            return None
        fetch.validation = "trusted"
        if self.conditional:
            headers = request_validators(record.get("etag"), record.get("last_modified"))
            if headers:
                for name, value in headers.items():
                    request.headers[name] = value
                fetch.validators_sent = True
                self.stats.inc_value("adaptive/validators/conditional_sent")
        return None

    def _on_headers_received(self, headers: Headers, body_length: Any, request: Request, spider: Spider) -> None:
        """Abort a download whose headers say nothing changed (synchronous)."""
        fetch = fetch_result(request)
        if not self.abort or fetch is None or fetch.validation != "trusted" or self.services is None:
            return
        length = body_length_of(body_length)
        if length == 0:
            return  # nothing to save (a 304 among others)
        record = self.services.record(request) or {}
        prediction = predict(
            self.scheme,
            old_etag=record.get("etag"),
            old_last_modified=record.get("last_modified"),
            etag=headers.getlist("ETag"),
            last_modified=headers.getlist("Last-Modified"),
        )
        if prediction is Prediction.UNCHANGED:
            fetch.abort_length = length if length is not None else record.get("size")
            raise StopDownload(fail=False)

    def process_response(self, request: Request, response: Response) -> Response:
        if meta.FP not in request.meta or self.services is None:
            return response
        fetch = fetch_result(request)
        if response.status == 304:
            if fetch is None:
                fetch = request.meta[meta.FETCH] = FetchResult()
            if fetch.validators_sent:
                fetch.change, fetch.annotation = ChangeState.UNCHANGED, "notModified"
                self.stats.inc_value("adaptive/validators/not_modified")
                self._avoided((self.services.record(request) or {}).get("size"))
            else:
                fetch.change, fetch.annotation = ChangeState.UNKNOWN, "unexpected304"
                self.stats.inc_value("adaptive/validators/unexpected_304")
        elif fetch is None:
            pass
        elif fetch.abort_length is not None and "download_stopped" in response.flags:
            fetch.change, fetch.annotation = ChangeState.UNCHANGED, "midFetchAbort"
            self.stats.inc_value("adaptive/validators/aborted")
            self._avoided(fetch.abort_length)
        elif fetch.validation == "verified":
            record = self.services.record(request) or {}
            fetch.prediction = predict(
                self.scheme,
                old_etag=record.get("etag"),
                old_last_modified=record.get("last_modified"),
                etag=response.headers.getlist("ETag"),
                last_modified=response.headers.getlist("Last-Modified"),
            ).value
        return response

    def _avoided(self, size: Any) -> None:
        if isinstance(size, int) and size > 0:
            self.stats.inc_value("adaptive/validators/bytes_avoided", size)
