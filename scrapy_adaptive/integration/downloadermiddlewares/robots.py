"""RobotsRefreshMiddleware: robots.txt, fetched again when it is old.

Scrapy's ``RobotsTxtMiddleware`` fetches each host's robots.txt once and
keeps the parser for the process's lifetime, and a failed fetch means
"allow everything" for ever.  A crawl that never ends would then obey a
robots.txt of months ago.  This middleware does the same job with a copy
that ages: when a host's copy is ``ADAPTIVE_ROBOTS_REFRESH`` seconds old,
the next request for the host fetches it again (the request waits for it;
others meanwhile use the old copy), so a changed ``Disallow`` or
``Crawl-delay`` takes effect (the scheduler reads ``Crawl-delay`` from every
robots.txt response that passes).  A refresh that fails keeps the old copy
until the next interval; a first fetch that fails allows everything until
then, as Scrapy does.

The add-on puts it in place of Scrapy's (same order, 100) unless the project
configured ``RobotsTxtMiddleware`` itself.  It uses only public Scrapy API:
``ROBOTSTXT_PARSER`` classes, ``engine.download_async``, the
``robots_parsed`` signal.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.misc import build_from_crawler, load_object
from twisted.internet.defer import Deferred

from ...config.spec import clause
from ...config.table import DEFAULTS
from ...runtime.wiring import crawl_config

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.robotstxt import RobotParser


logger = logging.getLogger(__name__)


@dataclass
class HostRobots:
    """One host's robots.txt: the parser (None: allow all), when it was fetched."""

    parser: RobotParser | None = None
    fetched: float = 0.0
    #: fired when a fetch in progress ends (None: no fetch in progress)
    fetching: Deferred[None] | None = None


class RobotsRefreshMiddleware:
    """Obeys robots.txt like Scrapy's middleware, and re-fetches it when old."""

    DOWNLOAD_PRIORITY = 1000

    def __init__(
        self,
        crawler: Crawler,
        parser_class: Any,
        *,
        refresh: float = DEFAULTS["ADAPTIVE_ROBOTS_REFRESH"],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.crawler = crawler
        self.parser_class = parser_class
        self.useragent: str = crawler.settings.get("USER_AGENT")
        self.robots_useragent: str | None = crawler.settings.get("ROBOTSTXT_USER_AGENT")
        #: seconds after which a host's copy is fetched again (0: never)
        self.refresh = refresh
        self.clock = clock
        self.hosts: dict[str, HostRobots] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> RobotsRefreshMiddleware:
        if not crawler.settings.getbool("ROBOTSTXT_OBEY"):
            raise NotConfigured
        parser_class = load_object(crawler.settings.get("ROBOTSTXT_PARSER"))
        build_from_crawler(parser_class, crawler, b"")  # fails now if the parser's dependency is missing
        mw = cls(crawler, parser_class)
        config = crawl_config(crawler)
        if config is not None:
            mw.refresh = config.robots_refresh
        return mw

    async def process_request(self, request: Request) -> None:
        if request.meta.get("dont_obey_robotstxt") or request.url.startswith(("data:", "file:")):
            return
        parser = await self.robot_parser(request)
        if parser is None:
            return
        useragent: str | bytes | None = self.robots_useragent or request.headers.get(b"User-Agent", self.useragent)
        assert useragent is not None
        if not parser.allowed(request.url, useragent):
            logger.debug("Forbidden by robots.txt: %s", request)
            self.crawler.stats.inc_value("robotstxt/forbidden")  # type: ignore[union-attr]
            raise IgnoreRequest("Forbidden by robots.txt")

    def stale(self, host: HostRobots) -> bool:
        """True when *host*'s copy is old enough to be fetched again."""
        return self.refresh > 0 and self.clock() - host.fetched >= self.refresh

    async def robot_parser(self, request: Request) -> RobotParser | None:
        url = urlparse_cached(request)
        host = self.hosts.get(url.netloc)
        if host is None:
            host = self.hosts[url.netloc] = HostRobots()
            await self._fetch(host, f"{url.scheme}://{url.netloc}/robots.txt", request)
        elif host.fetching is not None and host.fetched == 0.0:
            await maybe_deferred_to_future(host.fetching)  # the first fetch is on its way
        elif host.fetching is None and self.stale(host):
            await self._fetch(host, f"{url.scheme}://{url.netloc}/robots.txt", request)
        return host.parser

    async def _fetch(self, host: HostRobots, robots_url: str, request: Request) -> None:
        stats = self.crawler.stats
        assert stats is not None and self.crawler.engine is not None
        refresh = host.fetched > 0.0
        host.fetching = done = Deferred[None]()
        robots_request = Request(
            robots_url, priority=self.DOWNLOAD_PRIORITY, meta={"dont_obey_robotstxt": True}, callback=NO_CALLBACK
        )
        try:
            response = await self.crawler.engine.download_async(robots_request)
            stats.inc_value("robotstxt/response_count")
            stats.inc_value(f"robotstxt/response_status_count/{response.status}")
            parser = build_from_crawler(self.parser_class, self.crawler, response.body)
            await self.crawler.signals.send_catch_log_async(
                signal=signals.robots_parsed, robotparser=parser, request=request
            )
            host.parser = parser
            if refresh:
                stats.inc_value("adaptive/robots/refreshed")
                logger.debug("robots.txt of %s fetched again", robots_url)
        except Exception as exc:
            if not isinstance(exc, IgnoreRequest):
                stats.inc_value(f"robotstxt/exception_count/{type(exc)}")
                reason = clause(exc)
                logger.error("Error downloading %s: %s; %s", robots_url, reason, self._after_failure(refresh))
        finally:
            stats.inc_value("robotstxt/request_count")
            host.fetched = self.clock()
            host.fetching = None
            done.callback(None)

    def _after_failure(self, refresh: bool) -> str:
        kept = "the previous copy is kept" if refresh else "everything is allowed"
        return f"{kept} until it is fetched again" + ("" if self.refresh > 0 else " (never: ADAPTIVE_ROBOTS_REFRESH=0)")
