"""The Twisted web site that serves the demo catalogue.

:class:`SiteModel` maps wall-clock time to each page's current version and
validators (no Twisted involved, so it is unit-testable with a lambda clock);
:class:`DemoResource` turns that into HTTP, including the per-page conditional
request behaviour; :func:`make_site` wires both into a
:class:`twisted.web.server.Site` that callers ``listenTCP`` themselves.
"""

from __future__ import annotations

import itertools
import logging
import math
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from urllib.parse import parse_qs, unquote

from twisted.web import http, resource, server

from ..httputil import http_date, not_modified
from ..serving import answer_not_modified, json_response
from .catalogue import Catalogue, Media, Page, Validators, build_catalogue
from .clock import Clock
from .render import RenderContext, render

__all__ = ["DemoResource", "DemoSite", "PageState", "SiteModel", "make_site"]

logger = logging.getLogger(__name__)

SCHEDULE_PATH = "/_demo/schedule"

CONTENT_TYPES: Mapping[Media, bytes] = MappingProxyType(
    {
        Media.HTML: b"text/html; charset=utf-8",
        Media.PNG: b"image/png",
        Media.CSS: b"text/css; charset=utf-8",
        Media.TEXT: b"text/plain; charset=utf-8",
    }
)


@dataclass(frozen=True)
class PageState:
    """A page's truth at one instant: version, its wall-clock span, validators.

    ``etag`` / ``last_modified`` are what the server *sends* (``None`` when it
    sends nothing); for the lying page they deliberately disagree with
    ``version``.  ``validator_time`` is the whole-second instant behind
    ``last_modified``, used to evaluate ``If-Modified-Since``.
    """

    page: Page
    version: int
    started: float
    next_change: float | None
    etag: str | None
    last_modified: str | None
    validator_time: float | None


class SiteModel:
    """The demo site's state as a function of time (no HTTP, no Twisted).

    ``origin`` is the wall-clock instant of demo time 0; demo time advances
    ``speed`` times faster than the clock.
    """

    def __init__(
        self,
        catalogue: Catalogue,
        *,
        clock: Clock,
        speed: float,
        seed: int,
        origin: float,
        crawl_delay: float | None = None,
    ) -> None:
        if not speed > 0 or math.isinf(speed):
            raise ValueError("speed must be a positive, finite number")
        self.catalogue = catalogue
        self.clock = clock
        self.speed = speed
        self.seed = seed
        self.origin = origin
        self.crawl_delay = crawl_delay

    def demo_time(self, wall: float) -> float:
        return (wall - self.origin) * self.speed

    def to_wall(self, demo: float) -> float:
        return self.origin + demo / self.speed

    def state(self, page: Page, wall: float) -> PageState:
        """Version and validators of ``page`` at wall-clock time ``wall``."""
        span = page.schedule.at(self.demo_time(wall))
        started = self.to_wall(span.started)
        next_change = None if span.ends is None else self.to_wall(span.ends)
        etag, validator_time = self._validators(page, span.version, started)
        return PageState(
            page=page,
            version=span.version,
            started=started,
            next_change=next_change,
            etag=etag,
            last_modified=None if validator_time is None else http_date(validator_time),
            validator_time=validator_time,
        )

    def _validators(self, page: Page, version: int, started: float) -> tuple[str | None, float | None]:
        """(ETag, Last-Modified instant) as sent; the liar pins both to version 0."""
        if page.validators is Validators.NONE:
            return None, None
        if page.validators is Validators.LIE:
            return f'"p{page.id}-v0"', float(math.floor(self.origin))
        return f'"p{page.id}-v{version}"', float(math.floor(started))

    def schedule(self, wall: float, paths: Iterable[str] | None = None) -> dict[str, object]:
        """The ``/_demo/schedule`` document: every page's behaviour and current truth."""
        wanted = None if paths is None else set(paths)
        pages = [self._describe(self.state(p, wall)) for p in self.catalogue if wanted is None or p.path in wanted]
        return {
            "now": wall,
            "demo_time": self.demo_time(wall),
            "origin": self.origin,
            "speed": self.speed,
            "seed": self.seed,
            "crawl_delay": self.crawl_delay,
            "pages": pages,
        }

    def _describe(self, st: PageState) -> dict[str, object]:
        page = st.page
        return {
            "id": page.id,
            "path": page.path,
            "title": page.title,
            "media": str(page.media),
            "role": str(page.role),
            "section": page.section,
            "change": str(page.change),
            "schedule": page.schedule.describe(self.speed),
            "validators": str(page.validators),
            "sends_validators": page.validators.sends_validators,
            "answers_304": page.validators.answers_304,
            "robots_allowed": page.robots_allowed,
            "version": st.version,
            "version_started": st.started,
            "next_change": st.next_change,
            "etag": st.etag,
            "last_modified": st.last_modified,
            "links": list(page.links),
            "images": list(page.images),
            "stylesheets": list(page.stylesheets),
            "note": page.note,
        }


class DemoResource(resource.Resource):
    """A single leaf resource that dispatches on the request path.

    One leaf keeps routing explicit (the catalogue is the routing table) and
    lets every response go through the same validator logic.
    """

    isLeaf = True

    def __init__(self, model: SiteModel) -> None:
        super().__init__()
        self.model = model
        self._renders = itertools.count(1)

    def render(self, request: server.Request) -> bytes | int:
        if request.method not in (b"GET", b"HEAD"):
            request.setResponseCode(405)
            request.setHeader(b"allow", b"GET, HEAD")
            return self._finish(request, b"Method not allowed\n", b"text/plain; charset=utf-8")
        path = unquote((request.path or b"/").decode("utf-8", "replace"))
        if path == SCHEDULE_PATH:
            return self._render_schedule(request)
        page = self.model.catalogue.get(path)
        if page is None:
            return self._render_missing(request, path)
        return self._render_page(request, page)

    def _render_page(self, request: server.Request, page: Page) -> bytes | int:
        now = self.model.clock()
        st = self.model.state(page, now)
        # no-cache: clients may store the page but must revalidate every time,
        # which is exactly the conditional-GET traffic the demo exercises.
        request.setHeader(b"cache-control", b"no-cache")
        request.setHeader(b"x-demo-page", str(page.id).encode())
        request.setHeader(b"x-demo-version", str(st.version).encode())
        if st.etag is not None:
            request.setHeader(b"etag", st.etag.encode("ascii"))
        if st.last_modified is not None:
            request.setHeader(b"last-modified", st.last_modified.encode("ascii"))
        # Pages that ignore conditional requests, or send no validators, never 304.
        if st.page.validators.answers_304 and not_modified(request, st.etag, st.validator_time):
            return answer_not_modified(request)
        ctx = RenderContext(
            catalogue=self.model.catalogue,
            seed=self.model.seed,
            version=st.version,
            now=now,
            render_number=next(self._renders),
            crawl_delay=self.model.crawl_delay,
        )
        return self._finish(request, render(ctx, page), CONTENT_TYPES[page.media])

    def _render_schedule(self, request: server.Request) -> bytes | int:
        query = parse_qs((request.uri or b"").partition(b"?")[2].decode("utf-8", "replace"))
        paths = query.get("path")
        doc = self.model.schedule(self.model.clock(), paths)
        if paths is not None and not doc["pages"]:
            request.setResponseCode(404)
        body = json_response(request, doc, indent=1)
        return self._finish(request, body, None)

    def _render_missing(self, request: server.Request, path: str) -> bytes | int:
        if self.model.catalogue.get(path + "/") is not None:
            request.setResponseCode(301)
            request.setHeader(b"location", (path + "/").encode("utf-8"))
            return self._finish(request, b"Moved to a trailing slash\n", b"text/plain; charset=utf-8")
        request.setResponseCode(404)
        body = (
            b"<!DOCTYPE html>\n<html><head><title>Not found</title></head>\n"
            b'<body><h1>Not found</h1><p><a href="/">Home</a></p></body></html>\n'
        )
        return self._finish(request, body, CONTENT_TYPES[Media.HTML])

    @staticmethod
    def _finish(request: server.Request, body: bytes, content_type: bytes | None) -> bytes | int:
        """Send ``body``; to a HEAD request, its length alone.

        Twisted logs a warning when a HEAD handler returns a body, so HEAD is
        answered here directly.
        """
        if content_type is not None:
            request.setHeader(b"content-type", content_type)
        if request.method == b"HEAD":
            request.setHeader(b"content-length", str(len(body)).encode())
            request.write(b"")
            request.finish()
            return server.NOT_DONE_YET
        return body


class DemoSite(server.Site):
    """A :class:`~twisted.web.server.Site` that is silent unless ``verbose``.

    Twisted's default access log goes to the legacy global log; the demo
    instead logs through :mod:`logging`, and only when asked to.
    """

    noisy = False
    displayTracebacks = False

    def __init__(self, root: DemoResource, *, verbose: bool = False) -> None:
        super().__init__(root)
        self.model = root.model
        self.verbose = verbose

    def log(self, request: http.Request) -> None:
        if self.verbose:
            logger.info(
                '%s "%s %s" %d %d',
                request.getClientAddress().host,
                request.method.decode("latin-1"),
                (request.uri or b"").decode("latin-1"),
                request.code,
                request.sentLength,
            )


def make_site(
    clock: Clock = time.time,
    speed: float = 1.0,
    seed: int = 0,
    *,
    start: float | None = None,
    crawl_delay: float | None = None,
    verbose: bool = False,
) -> DemoSite:
    """Build the demo site; ``reactor.listenTCP(port, make_site(), interface="127.0.0.1")``.

    ``clock`` returns Unix seconds and is the only source of time, so tests can
    drive the schedule.  ``start`` is the wall-clock instant of demo time 0
    (default: the clock's current value).  ``crawl_delay`` adds a
    ``Crawl-delay`` line to ``/robots.txt``.
    """
    model = SiteModel(
        build_catalogue(seed),
        clock=clock,
        speed=speed,
        seed=seed,
        origin=clock() if start is None else start,
        crawl_delay=crawl_delay,
    )
    return DemoSite(DemoResource(model), verbose=verbose)
