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
* **Trust per host** (:mod:`scrapy_adaptive.change.trust`): until a host has
  been right ``ADAPTIVE_TRUST_WARMUP`` times, and then now and then
  (down to ``ADAPTIVE_TRUST_MIN_RATE``), a fetch is a *verification*: no
  validators, no abort, the headers' prediction compared with the digest.
  One lie sends the host back to full downloads.

This middleware only sets request headers and ``meta`` verdicts
(``adaptive_fetch``, ``adaptive_validation``, ``adaptive_prediction``); the
visit middleware and the scheduler fold them into the record.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider, signals
from scrapy.exceptions import StopDownload
from scrapy.http import Headers, Response

from ..change.trust import Trust, TrustParams
from ..change.validators import Prediction, predict, request_validators
from ..engine import find_scheduler
from ..settings import AdaptiveConfig

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)

META_FP = "adaptive_fp"
META_RECORD = "adaptive_record"
META_FETCH = "adaptive_fetch"
META_VALIDATION = "adaptive_validation"
META_PREDICTION = "adaptive_prediction"
META_SENT = "adaptive_validators_sent"
META_ABORTED = "adaptive_abort_length"


def body_length_of(value: Any) -> int | None:
    """``body_length`` as Scrapy's handlers give it: an int, None, or (HTTP/1.1
    chunked) the string ``'twisted.web.iweb.UNKNOWN_LENGTH'``."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class ValidatorsMiddleware:
    """Conditional GETs, mid-fetch aborts and verification fetches."""

    def __init__(
        self,
        crawler: Crawler,
        *,
        conditional: bool = True,
        abort: bool = True,
        scheme: str = "both",
        trust: TrustParams | None = None,
    ) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.conditional = conditional
        self.abort = abort
        self.scheme = scheme
        self.trust = trust or TrustParams()

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ValidatorsMiddleware:
        config = AdaptiveConfig.from_settings(crawler.settings)
        mw = cls(
            crawler,
            conditional=config.conditional_get,
            abort=config.midfetch_abort,
            scheme=config.validator_scheme,
            trust=TrustParams(warmup=config.trust_warmup, min_rate=config.trust_min_rate),
        )
        if mw.abort:
            crawler.signals.connect(mw._on_headers_received, signals.headers_received)
        return mw

    def _verify(self, request: Request) -> bool:
        """Ask the scheduler (the host's trust lives in the frontier)."""
        decide = getattr(find_scheduler(self.crawler), "decide_verification", None)
        if decide is None:
            return Trust().should_verify(self.trust)
        return bool(decide(request, self.trust))

    def process_request(self, request: Request) -> None:
        if META_FP not in request.meta or not (self.conditional or self.abort):
            return None
        record = request.meta.get(META_RECORD) or {}
        if not (record.get("etag") or record.get("last_modified")):
            return None  # nothing to validate against: a plain fetch
        if self._verify(request):
            request.meta[META_VALIDATION] = "verified"
            self.stats.inc_value("adaptive/validators/verifications")
            return None
        request.meta[META_VALIDATION] = "trusted"
        if self.conditional:
            headers = request_validators(record.get("etag"), record.get("last_modified"))
            if headers:
                for name, value in headers.items():
                    request.headers[name] = value
                request.meta[META_SENT] = True
                self.stats.inc_value("adaptive/validators/conditional_sent")
        return None

    def _on_headers_received(self, headers: Headers, body_length: Any, request: Request, spider: Spider) -> None:
        """Abort a download whose headers say nothing changed (synchronous)."""
        if request.meta.get(META_VALIDATION) != "trusted":
            return
        length = body_length_of(body_length)
        if length == 0:
            return  # nothing to save (a 304 among others)
        record = request.meta.get(META_RECORD) or {}
        prediction = predict(
            self.scheme,
            old_etag=record.get("etag"),
            old_last_modified=record.get("last_modified"),
            etag=headers.getlist("ETag"),
            last_modified=headers.getlist("Last-Modified"),
        )
        if prediction is Prediction.UNCHANGED:
            request.meta[META_ABORTED] = length if length is not None else record.get("size")
            raise StopDownload(fail=False)

    def process_response(self, request: Request, response: Response) -> Response:
        if META_FP not in request.meta:
            return response
        record = request.meta.get(META_RECORD) or {}
        if response.status == 304:
            if request.meta.get(META_SENT):
                request.meta[META_FETCH] = {"change": "unchanged", "annotation": "notModified"}
                self.stats.inc_value("adaptive/validators/not_modified")
                self._avoided(record.get("size"))
            else:
                request.meta[META_FETCH] = {"change": "unknown", "annotation": "unexpected304"}
                self.stats.inc_value("adaptive/validators/unexpected_304")
        elif META_ABORTED in request.meta and "download_stopped" in response.flags:
            request.meta[META_FETCH] = {"change": "unchanged", "annotation": "midFetchAbort"}
            self.stats.inc_value("adaptive/validators/aborted")
            self._avoided(request.meta.get(META_ABORTED))
        elif request.meta.get(META_VALIDATION) == "verified":
            request.meta[META_PREDICTION] = predict(
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
