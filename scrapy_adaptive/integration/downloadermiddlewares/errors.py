"""FetchErrorMiddleware: the verdict on fetches that end without a response
(and RedirectGuardMiddleware: a redirect no request can follow is a response).

Placed outermost (closest to the engine), its ``process_exception`` sees
only what the other middlewares gave up on: robots.txt and offsite
``IgnoreRequest`` (disregarded), and download errors after RetryMiddleware's
quick retries are spent (the frontier then retries after
``ADAPTIVE_RETRY_DELAY``, up to ``ADAPTIVE_MAX_RETRIES``).  It only returns a
verdict; the user's errback still runs.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING
from urllib.parse import urljoin

from scrapy import Request
from scrapy.exceptions import IgnoreRequest, NotSupported
from scrapy.http import Response
from scrapy.utils.httpobj import urlparse_cached
from twisted.internet import error as net
from w3lib.url import safe_url_string

from ...model import Outcome, Visit
from ..stopgrace import AbandonedDownload
from ..wiring import FRONTIER_OPENED

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

    from ..verdicts import FrontierServices

logger = logging.getLogger(__name__)

#: the host itself cannot be reached: its whole queue rests the retry delay
HOST_LEVEL_ERRORS: tuple[type[BaseException], ...] = (
    net.ConnectionRefusedError,
    net.DNSLookupError,
    net.NoRouteError,
    net.TCPTimedOutError,
    net.ConnectError,
)


def classify(exception: BaseException) -> Visit:
    """The verdict for a fetch that raised *exception* (thesis 6.2 outcomes)."""
    reason = f"{type(exception).__name__}: {exception}".rstrip(": ")
    if isinstance(exception, IgnoreRequest):
        return Visit(Outcome.DISREGARDED, reason=reason)
    if isinstance(exception, NotSupported):
        return Visit(Outcome.FAILED, reason=reason)
    return Visit(Outcome.RETRY, reason=reason, host_level=isinstance(exception, HOST_LEVEL_ERRORS))


class FetchErrorMiddleware:
    """Reports failed fetches of frontier-issued requests to the frontier."""

    def __init__(self, services: FrontierServices | None = None) -> None:
        #: bound by the scheduler at open (None: not an adaptive crawl)
        self.services = services

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> FetchErrorMiddleware:
        mw = cls()
        crawler.signals.connect(mw.frontier_opened, FRONTIER_OPENED)
        return mw

    def frontier_opened(self, services: FrontierServices) -> None:
        """The scheduler opened the frontier: verdicts go to *services*."""
        self.services = services

    def process_exception(self, request: Request, exception: Exception) -> None:
        # an abandoned download (a stop ran out of ADAPTIVE_STOP_GRACE) has
        # no verdict: the URL keeps its record and is due on restart
        if self.services is not None and not isinstance(exception, AbandonedDownload):
            self.services.commit(request, classify(exception))
        return None


#: the statuses Scrapy's RedirectMiddleware follows
REDIRECTS = frozenset({301, 302, 303, 307, 308})


def unusable_redirect(request: Request, location: bytes) -> bool:
    """True if *location* gives no URL a request can be made for (``javascript:``,
    a bare ``mailto:``): Scrapy's RedirectMiddleware, which returns a redirect
    to a scheme other than http(s) as the response, raises building the
    request for such a one, and the fetch then ended in an error no
    downloader middleware sees."""
    text = safe_url_string(location)
    if location.startswith(b"//"):
        text = f"{urlparse_cached(request).scheme}://{text.lstrip('/')}"
    try:
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
