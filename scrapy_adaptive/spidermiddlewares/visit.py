"""VisitMiddleware: the verdict on every response a frontier URL got.

Outermost in the spider middleware chain, so it sees each response before
``HttpErrorMiddleware`` can turn a 404 into an error: any HTTP response is a
visit (thesis 6.2) and is rescheduled.  It computes the content digest and
the change state against the record snapshot the scheduler put in
``request.meta["adaptive_record"]``, and commits the verdict; the wait
policy decides the wait.  On the way out it marks embedded resources
(images, stylesheets, scripts) with their embed-hop count so the frontier can
prefer them (``ADAPTIVE_EMBED_HOPS``).
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.http import Response
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware
from scrapy.utils.httpobj import urlparse_cached

from ..engine import find_scheduler
from ..frontier.record import ChangeState, Outcome, Visit

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

META_EMBED = "adaptive_embed"
META_EMBED_HOPS = "adaptive_embed_hops"

#: path endings of resources a page embeds rather than links to
EMBED_EXTENSIONS = frozenset(
    ".png .jpg .jpeg .gif .webp .avif .svg .ico .bmp .css .js .mjs .woff .woff2 .ttf .otf .eot".split()
)


def header(response: Response, name: str) -> str | None:
    """A response header as text (latin-1, as HTTP headers are), or None."""
    value = response.headers.get(name)
    return value.decode("latin-1") if value is not None else None


def is_embed(request: Request) -> bool:
    """True for resources a page embeds (by ``adaptive_embed`` meta or URL)."""
    flag = request.meta.get(META_EMBED)
    if flag is not None:
        return bool(flag)
    path = urlparse_cached(request).path.lower()
    dot = path.rfind(".")
    return dot != -1 and path[dot:] in EMBED_EXTENSIONS


def evaluate(response: Response, record: dict[str, Any]) -> Visit:
    """The verdict on *response* given the URL's record snapshot."""
    body = response.body
    digest = "sha1:" + hashlib.sha1(body).hexdigest() if body else None
    if digest is None:
        change = ChangeState.UNKNOWN
    elif digest != record.get("digest"):
        change = ChangeState.CHANGED  # a first visit is a new version
    else:
        change = ChangeState.UNCHANGED
    return Visit(
        Outcome.VISITED,
        status=response.status,
        change=change,
        content_type=header(response, "Content-Type"),
        size=len(body),
        digest=digest,
        etag=header(response, "ETag"),
        last_modified=header(response, "Last-Modified"),
    )


class VisitMiddleware(BaseSpiderMiddleware):
    """Commits each frontier-issued response's verdict to the scheduler."""

    def __init__(self, crawler: Crawler, embed_hops: int = 0) -> None:
        super().__init__(crawler)
        self.embed_hops = embed_hops

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> VisitMiddleware:
        return cls(crawler, crawler.settings.getint("ADAPTIVE_EMBED_HOPS", 0))

    def process_spider_input(self, response: Response) -> None:
        request = response.request
        scheduler = find_scheduler(self.crawler)
        commit = getattr(scheduler, "commit", None)
        if request is None or commit is None or "adaptive_fp" not in request.meta:
            return
        commit(request, evaluate(response, request.meta.get("adaptive_record") or {}))

    def get_processed_request(self, request: Request, response: Response | None) -> Request | None:
        if self.embed_hops <= 0 or response is None:
            return request
        if is_embed(request):
            parent_meta = response.request.meta if response.request is not None else {}
            parent = parent_meta.get(META_EMBED_HOPS) or 0
            request.meta[META_EMBED_HOPS] = parent + 1
        else:
            request.meta.pop(META_EMBED_HOPS, None)
        return request
