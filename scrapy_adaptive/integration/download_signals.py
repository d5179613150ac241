"""Scrapy's download signals, told to the frontier.

A host's politeness wait counts from the end of its last download, and its
capacity from how long fetches take; Scrapy says when a request reaches the
downloader, when its headers arrive and when it leaves, by signals only.  A
robots.txt fetched (again) may set or drop a ``Crawl-delay``, kept with the
host.  :class:`DownloadSignals` receives them for the scheduler, which owns
nothing of this itself: the frontier keeps the times, the host capacities
the delay.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from scrapy import Request, Spider, signals
from scrapy.utils.httpobj import urlparse_cached

from ..humanize import human
from .politeness import QueueKeyer, parse_crawl_delay

if TYPE_CHECKING:
    from scrapy.http import Response
    from scrapy.signalmanager import SignalManager

    from ..runtime.assembly import Runtime
    from ..runtime.issued_requests import IssuedRequests

logger = logging.getLogger(__name__)


class RuntimeOwner(Protocol):
    """Whatever holds the crawl's runtime once it is open (the scheduler)."""

    runtime: Runtime | None


class DownloadSignals:
    """The download signals' receivers, with the runtime as it is when each
    arrives (None before the crawl opened: nothing to tell then)."""

    def __init__(
        self,
        issued: IssuedRequests,
        keyer: QueueKeyer,
        robots_agent: str | None,
        owner: RuntimeOwner,
        wake: Callable[[], None],
        wait_max: float = math.inf,
    ) -> None:
        self.issued = issued
        self.keyer = keyer
        self.robots_agent = robots_agent
        #: read as an attribute, not through a callable: three signals a fetch
        self.owner = owner
        self.wake = wake
        #: ``ADAPTIVE_WAIT_MAX``: a Crawl-delay beyond it is honoured, and said
        self.wait_max = wait_max

    def connect(self, manager: SignalManager) -> None:
        manager.connect(self.reached_downloader, signals.request_reached_downloader)
        manager.connect(self.left_downloader, signals.request_left_downloader)
        manager.connect(self.headers_received, signals.headers_received)
        manager.connect(self.response_received, signals.response_received)

    def reached_downloader(self, request: Request, spider: Spider) -> None:
        runtime = self.owner.runtime
        if runtime is not None and (fp := self.issued.fp_of(request)) is not None:
            runtime.frontier.downloads.fetch_started(fp)

    def headers_received(self, headers: Any, body_length: Any, request: Request, spider: Spider) -> None:
        """Time the fetch from when its request went out: Scrapy's HTTP handlers
        set ``download_latency`` (request sent to headers received) just before
        this signal."""
        latency = request.meta.get("download_latency")
        runtime = self.owner.runtime
        if isinstance(latency, (int, float)) and runtime is not None:
            if (fp := self.issued.fp_of(request)) is not None:
                runtime.frontier.downloads.request_sent(fp, float(latency))

    def left_downloader(self, request: Request, spider: Spider) -> None:
        runtime = self.owner.runtime
        if runtime is not None and (fp := self.issued.fp_of(request)) is not None:
            runtime.frontier.downloads.fetch_ended(fp)
            self.wake()

    def response_received(self, response: Response, request: Request, spider: Spider) -> None:
        """Honour a robots.txt ``Crawl-delay`` (persisted with the host)."""
        runtime = self.owner.runtime
        if runtime is None or not request.meta.get("dont_obey_robotstxt"):
            return
        if urlparse_cached(request).path != "/robots.txt" or response.status != 200:
            return
        delay = parse_crawl_delay(response.body, self.robots_agent)
        queue = self.keyer.key(request)
        if delay is None:  # none, or no longer (robots.txt is fetched again: ADAPTIVE_ROBOTS_REFRESH)
            runtime.frontier.hosts.set_crawl_delay(queue, None)
        else:
            runtime.frontier.hosts.set_crawl_delay(queue, delay)
            runtime.capacity.nominal(queue, delay)
            host = urlparse_cached(request).netloc
            if delay > self.wait_max:  # e.g. 1e12: honoured literally, the host is as good as never fetched
                logger.warning(
                    "%s's robots.txt asks for a Crawl-delay of %s, longer than ADAPTIVE_WAIT_MAX (%s): it is "
                    "honoured, so the host's URLs are fetched at most once per %s.",
                    host,
                    human(delay),
                    human(self.wait_max),
                    human(delay),
                )
            else:
                logger.info("Honouring robots.txt Crawl-delay of %.1fs for %s", delay, host)
