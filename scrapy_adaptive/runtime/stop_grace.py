"""A graceful stop that does not wait for a hung download.

On SIGINT (or a Scrapyd cancel) Scrapy stops handing out requests and waits
for every download in flight to end: a host that never answers holds the
stop for the whole ``DOWNLOAD_TIMEOUT`` (180 s by default).  A revisiting
crawler loses nothing by giving up on them: a URL without a verdict keeps
its queue entry and is due again at once on restart.  So after
``ADAPTIVE_STOP_GRACE`` seconds the downloads still running are abandoned.

Scrapy has no public way to cancel a running download, but download
handlers are swappable (``DOWNLOAD_HANDLERS``): the add-on puts
:class:`GraceHttpHandler` / :class:`GraceHttpsHandler` around the project's
HTTP handlers (the originals are kept in :data:`INNER_HANDLERS_SETTING`).
Each download runs as a task the wrapper can cancel; cancelling it cancels
the inner handler's download (its connection is closed) and the request
fails with :class:`AbandonedDownload`, an ``IgnoreRequest``: Scrapy logs no
error for it and the fetch-error middleware records no verdict, so the URL
is neither counted as visited nor as a retry.

The scheduler decides when (:meth:`StopGrace.tick`, from its once-a-second
timer) and tells the wrappers through the :data:`abandon_downloads` signal.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy.exceptions import IgnoreRequest, NotConfigured
from scrapy.utils.misc import build_from_crawler, load_object

from ..config.spec import counted

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

#: internal setting the add-on leaves: the handlers the wrappers delegate to
INNER_HANDLERS_SETTING = "SCRAPY_ADAPTIVE_INNER_DOWNLOAD_HANDLERS"

#: signal (sent by the scheduler): abandon every download still running
abandon_downloads = object()


class AbandonedDownload(IgnoreRequest):
    """The crawl stopped and this download ran past ``ADAPTIVE_STOP_GRACE``."""


class GraceHandler:
    """A download handler around the configured one, whose downloads can be abandoned."""

    scheme: ClassVar[str] = ""
    lazy = False

    def __init__(self, inner: Any, crawler: Crawler | None = None) -> None:
        self.inner = inner
        self.running: set[asyncio.Future[Response]] = set()
        self.abandoned = False
        if crawler is not None:
            crawler.signals.connect(self.abandon, abandon_downloads)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> GraceHandler:
        path = (crawler.settings.getdict(INNER_HANDLERS_SETTING) or {}).get(cls.scheme)
        if not path:
            raise NotConfigured(f"no {cls.scheme} download handler to wrap")
        return cls(build_from_crawler(load_object(path), crawler), crawler)

    async def download_request(self, request: Request) -> Response:
        if self.abandoned:
            raise AbandonedDownload(f"the crawl is stopping; {request.url} is due again on restart")
        task = asyncio.ensure_future(self.inner.download_request(request))
        self.running.add(task)
        try:
            return await task
        except asyncio.CancelledError:
            if not self.abandoned:
                raise
            raise AbandonedDownload(
                f"still downloading when ADAPTIVE_STOP_GRACE ran out; {request.url} is due again on restart"
            ) from None
        finally:
            self.running.discard(task)

    def abandon(self) -> int:
        """Cancel every running download; return how many."""
        self.abandoned = True
        running = list(self.running)
        for task in running:
            task.cancel()
        return len(running)

    async def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if close is not None:
            result = close()
            if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
                await result


class GraceHttpHandler(GraceHandler):
    scheme = "http"


class GraceHttpsHandler(GraceHandler):
    scheme = "https"


#: the wrapper of each scheme
WRAPPERS: dict[str, type[GraceHandler]] = {"http": GraceHttpHandler, "https": GraceHttpsHandler}


def wrap_download_handlers(settings: BaseSettings) -> None:
    """Put the wrappers around the HTTP(S) handlers (called by the add-on).

    The project's own handler for a scheme (``DOWNLOAD_HANDLERS``) is wrapped
    if it has one, else Scrapy's default; a scheme switched off (``None``)
    stays off.
    """
    handlers = settings.getdict("DOWNLOAD_HANDLERS")
    base = settings.getdict("DOWNLOAD_HANDLERS_BASE")
    inner: dict[str, Any] = {}
    for scheme, wrapper in WRAPPERS.items():
        original = handlers[scheme] if scheme in handlers else base.get(scheme)
        if original is None or original is wrapper or original == _path(wrapper):
            continue
        inner[scheme] = original
        handlers[scheme] = wrapper
    if inner:
        settings.set("DOWNLOAD_HANDLERS", handlers, max(settings.getpriority("DOWNLOAD_HANDLERS") or 0, 15))
        settings.set(INNER_HANDLERS_SETTING, inner, "addon")


def _path(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


class StopGrace:
    """Counts the grace from the moment the engine stops running."""

    def __init__(self, grace: float, crawler: Crawler | None, *, clock: Any = time.monotonic) -> None:
        self.grace = grace
        self.crawler = crawler
        self.clock = clock
        self.stop_seen: float | None = None
        self.done = False

    def tick(self) -> int | None:
        """Called once a second; abandons the downloads once the grace is over.

        Returns how many were abandoned (None: not now).
        """
        engine = self.crawler.engine if self.crawler is not None else None
        if self.done or engine is None or getattr(engine, "running", True):
            return None
        now = self.clock()
        if self.stop_seen is None:
            self.stop_seen = now
        if now - self.stop_seen < self.grace:
            return None
        self.done = True
        assert self.crawler is not None
        results = self.crawler.signals.send_catch_log(abandon_downloads)
        count = sum(r for _, r in results if isinstance(r, int))
        if count:
            logger.warning(
                "Abandoned %s still running %.0fs after the stop (ADAPTIVE_STOP_GRACE); they are due again on restart.",
                counted(count, "download"),
                self.grace,
            )
        return count
