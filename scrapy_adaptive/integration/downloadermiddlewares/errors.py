"""FetchErrorMiddleware: the verdict on fetches that end without a response
(and RedirectGuardMiddleware: a redirect no request can follow is a response).

Placed outermost (closest to the engine), its ``process_exception`` sees
only what the other middlewares gave up on: robots.txt and offsite
``IgnoreRequest`` (disregarded), and download errors after RetryMiddleware's
quick retries are spent (the frontier then retries after
``ADAPTIVE_RETRY_DELAY``, up to ``ADAPTIVE_MAX_RETRIES``).  It only returns a
verdict; the user's errback still runs.

A download a setting ended gets a reason naming it: a body cut at
``DOWNLOAD_MAXSIZE``, an answer still incomplete at ``DOWNLOAD_TIMEOUT``.
A network failure (Scrapy's ``RETRY_EXCEPTIONS``, a timeout, a cut body) is
the server's doing, not a bug: Scrapy would log it with a traceback of some
sixty lines through its own download machinery.  The middleware notes the
reason on the exception and the crawl's log says it in one line
(:func:`..engine.say_in_one_line`), as is a URL the HTTP client refuses
to send (a space in its host: failed, never retried); any other exception
keeps its traceback, which is where a bug in a middleware shows.  One that
a component raised (a middleware's ``process_request``, say) is stored and
said with that component's name, in one line of the crawler's beside
Scrapy's traceback.

An exception a downloader middleware raises in ``process_response`` reaches
no ``process_exception`` (Scrapy hands it straight to the request's errback,
or logs it): :class:`SettlingDownloader`, Scrapy's downloader with one
errback more, hands it to the same verdict, so the URL is not left checked
out until its lease (``ADAPTIVE_LEASE``) lapses.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from scrapy import Request
from scrapy import exceptions as scrapy_errors
from scrapy.core.downloader import Downloader
from scrapy.exceptions import IgnoreRequest, NotSupported
from scrapy.http import Response
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import load_object
from twisted.internet import defer
from twisted.internet import error as net
from w3lib.url import safe_url_string

from ...model import Outcome, Visit
from ...runtime.stop_grace import AbandonedDownload
from ...runtime.wiring import FRONTIER_OPENED
from ..engine import say_in_one_line

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from twisted.python.failure import Failure

    from ...runtime.verdicts import FrontierServices

logger = logging.getLogger(__name__)

#: the host itself cannot be reached: its whole queue rests the retry delay
HOST_LEVEL_ERRORS: tuple[type[BaseException], ...] = (
    net.ConnectionRefusedError,
    net.DNSLookupError,
    net.NoRouteError,
    net.TCPTimedOutError,
    net.ConnectError,
)


def _scrapy_errors(*names: str) -> tuple[type[BaseException], ...]:
    """Scrapy's own download exceptions (its handlers raise them since 2.15;
    earlier ones raise Twisted's)."""
    return tuple(getattr(scrapy_errors, name) for name in names if hasattr(scrapy_errors, name))


#: a download that ran past DOWNLOAD_TIMEOUT
TIMEOUTS: tuple[type[BaseException], ...] = (
    net.TimeoutError,
    defer.TimeoutError,
    *_scrapy_errors("DownloadTimeoutError"),
)
#: a download the handler cancelled: Scrapy's HTTP handlers cancel one only
#: when its body passes DOWNLOAD_MAXSIZE (an abandoned one is AbandonedDownload)
CANCELLED: tuple[type[BaseException], ...] = (defer.CancelledError, *_scrapy_errors("DownloadCancelledError"))


def over_maxsize(limit: int, what: str = "body") -> str:
    """The reason of a body refused at ``DOWNLOAD_MAXSIZE`` (on the wire or inflated)."""
    return f"{what} exceeds DOWNLOAD_MAXSIZE ({limit} B)"


def limit_reason(exception: BaseException, timeout: float, maxsize: int) -> str | None:
    """The setting that ended the download, in words (None: none did).

    *timeout* and *maxsize* are the request's limits (its ``download_timeout``
    / ``download_maxsize`` meta, else the settings).
    """
    if isinstance(exception, TIMEOUTS) and timeout:
        return f"no complete answer within DOWNLOAD_TIMEOUT ({timeout:g} s)"
    if isinstance(exception, CANCELLED) and maxsize:
        return over_maxsize(maxsize)
    return None


def network_errors(settings: BaseSettings) -> tuple[type[BaseException], ...]:
    """The exceptions that are the network's or the server's doing: the ones
    Scrapy retries (``RETRY_EXCEPTIONS``), timeouts and cut bodies."""
    retried = tuple(load_object(e) if isinstance(e, str) else e for e in settings.getlist("RETRY_EXCEPTIONS"))
    return (*retried, *TIMEOUTS, *CANCELLED)


def describe(exception: BaseException) -> str:
    """An exception in the words of a stored reason.  One that wraps Twisted's
    list of failures (``ResponseFailed``, which Scrapy's ``DownloadFailedError``
    carries as its cause and as its words, a list of reprs) is said by what
    each failure was."""
    reasons = getattr(exception, "reasons", None) or getattr(exception.__cause__, "reasons", None)
    if isinstance(reasons, list) and reasons:
        causes = "; ".join(describe(getattr(reason, "value", reason)) for reason in reasons)
        return f"{type(exception).__name__}: {causes}"
    return f"{type(exception).__name__}: {exception}".rstrip(": ")


#: how Twisted's HTTP client refuses a URL it cannot send, before any connection
INVALID_URI = "Invalid URI "


def unsendable_url(exception: BaseException) -> bool:
    """True when the HTTP client refused the URL itself before connecting
    (Twisted's ``ValueError("Invalid URI ...")``: a space or a control
    character in the host, say).  The URL's fault, the same at every try:
    neither the network's (retried) nor a bug (kept with its traceback)."""
    return type(exception) is ValueError and str(exception).startswith(INVALID_URI)


def classify(exception: BaseException, reason: str | None = None) -> Visit:
    """The verdict for a fetch that raised *exception* (thesis 6.2 outcomes);
    *reason* replaces the exception's words (a setting that ended it)."""
    reason = reason or describe(exception)
    if isinstance(exception, IgnoreRequest):
        return Visit(Outcome.DISREGARDED, reason=reason)
    if isinstance(exception, NotSupported) or unsendable_url(exception):
        return Visit(Outcome.FAILED, reason=reason)
    return Visit(Outcome.RETRY, reason=reason, host_level=isinstance(exception, HOST_LEVEL_ERRORS))


#: the methods through which Scrapy calls a middleware: the innermost frame
#: of one of them in a traceback names the component that raised
COMPONENT_METHODS = frozenset(
    {
        "process_request",
        "process_response",
        "process_exception",
        "process_spider_input",
        "process_spider_output",
        "process_spider_output_async",
        "process_spider_exception",
    }
)


def raised_in(exception: BaseException) -> str | None:
    """The component method *exception* was raised in
    (``module.Class.process_response``), or None when no middleware's
    method is in its traceback (a download handler, a callback)."""
    found = None
    tb = exception.__traceback__
    for _ in range(1000):  # a traceback is finite; the bound keeps a cycle from hanging a crawl
        if tb is None:
            break
        frame = tb.tb_frame
        if frame.f_code.co_name in COMPONENT_METHODS:
            found = f"{frame.f_globals.get('__name__', '?')}.{frame.f_code.co_qualname}"
        tb = tb.tb_next
    return found


def settle_component_error(services: FrontierServices, request: Request, exception: BaseException, reason: str) -> None:
    """The verdict on *request*'s URL when a component raised *exception*
    (:func:`classify`), its stored reason naming the component.  A retry is
    said in one line naming the URL and the component (Scrapy logs its own
    traceback); a URL out of retries is said by the verdict itself ("Failed
    ...").  Nothing happens for a request the frontier did not issue."""
    component = raised_in(exception)
    if component is not None:
        reason = f"{reason} (raised in {component})"
    recorded = services.commit(request, classify(exception, reason))
    if recorded is not None and component is not None and recorded.record.outcome == Outcome.RETRY.value:
        logger.warning("%s: %s; counted as a retry.", request.url, reason)


class FetchErrorMiddleware:
    """Reports failed fetches of frontier-issued requests to the frontier."""

    def __init__(self, services: FrontierServices | None = None, *, settings: BaseSettings | None = None) -> None:
        #: bound by the scheduler at open (None: not an adaptive crawl)
        self.services = services
        self.timeout = settings.getfloat("DOWNLOAD_TIMEOUT") if settings is not None else 0.0
        self.maxsize = settings.getint("DOWNLOAD_MAXSIZE") if settings is not None else 0
        self.network = network_errors(settings) if settings is not None else (*TIMEOUTS, *CANCELLED)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FetchErrorMiddleware:
        mw = cls(settings=crawler.settings)
        crawler.signals.connect(mw.frontier_opened, FRONTIER_OPENED)
        return mw

    def frontier_opened(self, services: FrontierServices) -> None:
        """The scheduler opened the frontier: verdicts go to *services*."""
        self.services = services

    def process_exception(self, request: Request, exception: Exception) -> None:
        self.settle(request, exception)
        return None

    def settle(self, request: Request, exception: BaseException) -> None:
        """The verdict on a fetch of *request* that ended in *exception*."""
        timeout = request.meta.get("download_timeout", self.timeout)
        maxsize = request.meta.get("download_maxsize", self.maxsize)
        reason = limit_reason(exception, timeout, maxsize) or describe(exception)
        network = isinstance(exception, self.network) and not isinstance(exception, IgnoreRequest)
        outside = network or unsendable_url(exception)  # the network's, the server's or the URL's doing
        if outside:
            say_in_one_line(exception, reason)
        # an abandoned download (a stop ran out of ADAPTIVE_STOP_GRACE) has
        # no verdict: the URL keeps its record and is due on restart
        if self.services is None or isinstance(exception, AbandonedDownload):
            return
        if outside or isinstance(exception, IgnoreRequest):  # robots.txt, offsite: not a component's error
            self.services.commit(request, classify(exception, reason))
        else:
            settle_component_error(self.services, request, exception, reason)

    def settle_unsettled(self, request: Request, exception: BaseException) -> None:
        """The verdict on a fetch that ended in *exception* where no
        ``process_exception`` saw it (:class:`SettlingDownloader`); none if
        the URL already has one (this middleware's, or another's)."""
        if self.services is not None and self.services.record(request) is not None:
            self.settle(request, exception)


class SettlingDownloader(Downloader):
    """Scrapy's downloader, whose failed fetches all reach :class:`FetchErrorMiddleware`.

    Scrapy calls the downloader middlewares' ``process_exception`` for what
    the download or a ``process_request`` raised, never for what a
    ``process_response`` raised: that failure goes to the request's errback
    or the log, and no signal says so.  The engine fetches through its
    ``DOWNLOADER`` (this class, set by the add-on unless the project chose
    its own), so this errback sees every fetch that ended in an exception
    and gives a URL still without a verdict the fetch-error middleware's.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.verdicts = next((mw for mw in self.middleware.middlewares if isinstance(mw, FetchErrorMiddleware)), None)

    def fetch(self, request: Request, spider: Spider | None = None) -> defer.Deferred[Any]:
        fetched: defer.Deferred[Any] = super().fetch(request)
        fetched.addErrback(self._failed, request)
        return fetched

    def _failed(self, failure: Failure, request: Request) -> Failure:
        if self.verdicts is not None:
            self.verdicts.settle_unsettled(request, failure.value)
        return failure


#: the statuses Scrapy's RedirectMiddleware follows
REDIRECTS = frozenset({301, 302, 303, 307, 308})


def unusable_redirect(request: Request, location: bytes) -> bool:
    """True if *location* gives no URL a request can be made for (``javascript:``,
    a bare ``mailto:``): Scrapy's RedirectMiddleware, which returns a redirect
    to a scheme other than http(s) as the response, raises building the
    request for such a one, and the fetch then ended in an error no
    downloader middleware sees; so is a host or port no URL parser accepts
    (``http://[::1``, a port of 99999), on which w3lib's ``safe_url_string``
    raises, in Scrapy's middleware as here."""
    try:
        text = safe_url_string(location)
        if location.startswith(b"//"):
            text = f"{urlparse_cached(request).scheme}://{text.lstrip('/')}"
        Request(urljoin(request.url, text))
    except ValueError:
        return True
    return False


class RedirectGuardMiddleware:
    """A redirect no request can follow is the page's answer (a 3xx visit).

    Placed just inside Scrapy's RedirectMiddleware (600), so it sees the 3xx
    response first: for an unusable ``Location`` it sets ``dont_redirect``,
    and the response goes on to the visit middleware like any other status,
    instead of the fetch ending with no verdict until its lease runs out.
    """

    def process_response(self, request: Request, response: Response) -> Response:
        location = response.headers.get("Location")
        if response.status in REDIRECTS and location is not None and not request.meta.get("dont_redirect"):
            if unusable_redirect(request, location):
                request.meta["dont_redirect"] = True
        return response
