"""A deterministic HTTP server for end-to-end tests, run as a subprocess.

Why a subprocess: the crawls under test run in their own ``scrapy`` process,
and the test process itself must stay free of a running Twisted reactor, so the
server lives in a third process with its own reactor (the same approach as
Scrapy's own ``tests/mockserver.py``).

Serving, the subprocess and the HTTP details (several loopback hosts, each on
a free port; conditional requests; robots.txt) are :mod:`testsite`'s; this
module is the resource tree. The server refuses anything outside 127.0.0.0/8.

Run it by hand (from the repository root)::

    python -m tests.mockserver --hosts 127.0.0.1,127.0.0.2 [--crawl-delay 1.5]

It prints one line once every port is listening, for example
``READY {"hosts": {"127.0.0.1": 41233, "127.0.0.2": 41877}}``; each host gets
its own ephemeral port and the same resource tree. It stops on SIGTERM/Ctrl-C,
with ``--exit-on-stdin-eof`` when its stdin closes, and after ``--max-seconds``.

Resources (every response is a pure function of the request and of per-key
request counters, so tests are reproducible):

``/page/<anything>?links=/page/a,/page/b&size=N``
    200 HTML naming the path, one ``<a href>`` per comma-separated link and N
    bytes of padding. ``/private/<anything>`` serves the same page (it is
    disallowed by the default robots.txt, so tests can check it is *not* hit).
``/mirror/page/<anything>``
    The same body as ``/page/<anything>`` (a mirror: one payload, two URLs).
``/delay?s=0.5`` or ``/delay/<seconds>/<anything>``
    200 HTML page after the given delay (``reactor.callLater``, not a sleep,
    so many delayed requests are served concurrently). Accepts ``links``/``size``.
``/ring/<n>/<i>?fanout=1&size=N&delay=S``
    Page i of an n-page cyclic site: links to pages i+1 .. i+fanout (mod n),
    each link carrying the same query string (so the whole ring shares
    fanout/size/delay). A ready-made cyclic graph of any size, e.g. to keep a
    never-ending crawl busy; ``delay`` makes every page slow (valence tests).
``/status/<code>/<anything>?retry_after=N``
    That status code with a small body (and ``Retry-After`` if asked).
``/redirect/<code>?to=/page/x``
    Redirect with ``Location: <to>`` (default code 302, default target /page/redirected).
``/drop/<anything>``
    Reads the request, then closes the connection without any response.
``/flaky/<n>/<key>?status=503``
    The first n requests for ``<key>`` are dropped (or answered with
    ``status`` if given), later ones get a 200 page. Counters reset with ``/_reset``.
``/changes/<every>/<key>``
    200 page whose body *version* is ``(hits - 1) // every`` (hits counted per
    key, 1-based), i.e. the content changes every ``every`` requests. Sends
    ``ETag: "<key>-v<version>"`` and answers 304 to a matching If-None-Match.
``/noisy/<every>/<key>``
    200 page whose real content *version* changes every ``every`` requests
    (as ``/changes``), with no validators, and per-request noise in its
    visible text: a server clock (microseconds) and a random token, each in
    its own paragraph (a "noise page" for learned-noise tests).
``/shape/<kind>/<every>/<key>``
    A shop page whose data (version ``(hits - 1) // every``) sits where
    *kind* says and nowhere else: ``jsonld`` (a JSON-LD price), ``meta`` (a
    meta description), ``title``, ``href`` (a link), ``img`` (an image src),
    ``label`` (the second of two rows labelled "Value", the first holding a
    random token), ``counter`` (availability beside a visitor counter),
    ``coarse`` (a stock count beside an ``HH:MM`` clock), ``list`` (a stock
    count beside a related-items list of varying length), ``etag`` (a stock
    count, an ETag that follows it, 304 to a matching If-None-Match).  Every page also
    carries per-request noise: a CSRF token and (but ``coarse``) an
    ``HH:MM:SS`` server clock; no validators.  The learned-noise e2e shapes.
``/validators/<key>?etag=abc&lm=<epoch seconds or HTTP-date>&cc=max-age%3D60&expires=<HTTP-date>``
    200 page with the given ETag (quoted unless already quoted / weak) and/or
    Last-Modified, and ``cc`` / ``expires`` sent as they are as ``Cache-Control``
    / ``Expires``; 304 when If-None-Match matches (takes precedence) or when
    If-Modified-Since is not older than Last-Modified.
``/sitemap/<key>?urls=/page/a,/page/b&fresh_from=N&lie=1&bad=/page/x``
    An XML sitemap (``urlset``) listing the given paths on the requested host.
    Their ``<lastmod>`` is 2001-09-09 until the key's N-th hit (1-based); from
    then on it is the time of that N-th hit (the site announces one change).
    With ``lie=1`` every hit stamps the time of the hit itself (a generator
    that rewrites every lastmod, whether or not anything changed).  ``bad``
    adds an entry whose lastmod is ``garbage``.  Times carry microseconds.
    A key ending in ``.gz`` serves the sitemap as a gzip file.
``/sitemapindex/<key>?maps=/sitemap/a?urls=/page/x|/sitemap/b.gz``
    A sitemap index listing the ``|``-separated paths on the requested host.
``/feed/<key>?urls=/page/a,/page/b&fresh_from=N&lie=1``
    An Atom feed with one entry per path; each entry's ``updated`` follows
    the sitemap's ``lastmod`` rules.
``/composite/<key>/page.html`` and ``/composite/<key>/fig.png``
    A page and the figure it embeds (``<img src="fig.png">``) that change
    together: both show the key's *edition* (1 until ``/_bump``), the page as
    ``page edition N``, the figure as PNG-signed bytes ending ``figure
    edition N``; each sends ``ETag: "<key>-<part>-eN"`` and answers 304 to a
    matching If-None-Match.
``/notfound/<anything>``
    404 with one fixed "not found" body, whatever the path.
``/gone/<n>/<key>``
    The first n hits (per key) a 200 page; later hits 200 with the /notfound
    body (a soft 404: the page is gone, the status says it is fine).
``/parked/<anything>``
    200 with one fixed placeholder body, whatever the path (a parked domain).
``/hostile/<case>/<anything>``
    A server misbehaving on purpose: ``huge-headers`` (one 1 MB header
    line), ``endless`` (a chunked body that never ends, 64 KB every 10 ms,
    until the client hangs up), ``drip?every=S`` (a chunked body of one
    byte every S seconds, 0.2 by default, until the client hangs up: a slow
    answer that never stalls long enough for a read timeout), ``bad-gzip`` (``Content-Encoding: gzip`` over
    bytes that are not gzip), ``never`` (reads the request, never answers),
    ``binary`` (random-looking bytes labelled ``text/html``), ``links?n=N``
    (a page of N distinct links), ``long-link?kb=N`` (a page linking to a URL
    of N KB), ``gzip-bomb?mb=N`` (a small gzip body, ``Content-Encoding:
    gzip``, that inflates to N MB of HTML; 20 by default).
``/quotes/`` and ``/quotes/page/<n>/``
    A quotes site of :data:`QUOTES_PAGES` pages (``/quotes/`` is page 1), each
    with its quotes (``div.quote``: ``span.text``, ``small.author``,
    ``a.tag``) and, but the last, a ``li.next`` "Next" link to the next page:
    the shape of the site Scrapy's tutorial crawls.  Page 2 changes every
    second time it is served (one of its quotes is the day's headline, a new
    one at the 2nd, 4th, 6th... hit, per key ``quotes/2``: a real edit, which
    the crawler's noise probe, the hit after, sees again); the others never
    change.
    :func:`quotes_on` gives the quotes a page shows.
``/robots.txt``
    ``User-agent: *`` / ``Disallow: /private/`` plus ``Crawl-delay`` when the
    server was started with ``--crawl-delay`` or ``/_robots`` set one.

Control endpoints (never recorded in the log):

``/_log``
    JSON list of every other request so far, in arrival order, each
    ``{"host", "port", "client_port", "method", "path", "uri", "status",
    "dropped", "start", "end", "headers"}``. ``start`` is ``time.time()`` when
    the request was received, ``end`` when the response finished or the
    connection was dropped/lost (``null`` while still in flight; ``status``
    is then ``null`` too). ``dropped`` is true when no complete response was
    sent: ``/drop``, ``/flaky`` failures, or the client hanging up first (a
    download timeout, a killed crawl). ``headers``
    maps *lower-cased* request header names to their (first) value.
``/_log/clear``
    Empties the log.
``/_reset``
    Empties the log, resets the per-key counters and the robots.txt override.
``/_bump?key=<key>``
    The next edition of ``/composite/<key>/`` (its page and figure at once).
``/_robots?crawl_delay=1.5&disallow=/private/,/x/&sitemaps=/sitemap/a|/feed/b``
    Overrides robots.txt until the next ``/_reset`` (empty ``disallow=`` means none;
    ``sitemaps``: ``Sitemap:`` lines, paths on the requested host).

The same module provides :class:`MockServer` (a :class:`testsite.process.SiteProcess`
that builds URLs and talks to the control endpoints) and small pure helpers to
measure politeness and concurrency from log entries (:func:`max_concurrency`,
:func:`gaps`).
"""

from __future__ import annotations

import argparse
import functools
import gzip
import html
import itertools
import json
import secrets
import sys
import time
import urllib.parse
import urllib.request
import zlib
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

from testsite.httputil import http_date, not_modified, parse_http_date, quote_etag, robots_txt
from testsite.process import REPO_ROOT, SiteProcess
from testsite.schedule import Periodic
from testsite.serving import (
    add_serving_arguments,
    answer_not_modified,
    check_loopback,
    json_response,
    respond_later,
    serve,
)

if TYPE_CHECKING:
    from twisted.web.server import Request

__all__ = [
    "CHANGING_QUOTES_PAGE",
    "DEFAULT_HOSTS",
    "QUOTES_PAGES",
    "REPO_ROOT",
    "MockServer",
    "check_loopback",
    "gaps",
    "main",
    "max_concurrency",
    "page_html",
    "quotes_edition",
    "quotes_html",
    "quotes_on",
]

DEFAULT_HOSTS: tuple[str, ...] = ("127.0.0.1", "127.0.0.2", "127.0.0.3")
DEFAULT_DISALLOW: tuple[str, ...] = ("/private/",)
#: Run by hand, the server stops after an hour (MockServer sets its own bound).
DEFAULT_MAX_SECONDS = 3600.0

#: Paths (exact or prefix + "/") that are control endpoints and not logged.
_CONTROL_PATHS = ("/_log", "/_reset", "/_robots", "/_bump")

LogEntry = dict[str, Any]


# --------------------------------------------------------------------------
# Server side (only runs inside the subprocess; imports Twisted lazily so that
# importing this module in the pytest process never installs a reactor)
# --------------------------------------------------------------------------


class _State:
    """Mutable server state shared by all listening ports."""

    def __init__(self, crawl_delay: float | None) -> None:
        self.default_crawl_delay = crawl_delay
        self.log: list[LogEntry] = []
        self.counters: dict[str, int] = {}
        self.robots_override: tuple[float | None, tuple[str, ...]] | None = None
        #: ``Sitemap:`` lines of robots.txt, paths on the requested host
        self.robots_sitemaps: tuple[str, ...] = ()
        #: /composite/<key>/: the key's edition (1 until bumped)
        self.editions: dict[str, int] = {}

    def reset(self) -> None:
        self.log.clear()
        self.counters.clear()
        self.editions.clear()
        self.robots_override = None
        self.robots_sitemaps = ()

    def hit(self, key: str) -> int:
        """Count one request for ``key`` and return the 1-based hit number."""
        self.counters[key] = self.counters.get(key, 0) + 1
        return self.counters[key]

    def robots_txt(self, base: str) -> bytes:
        if self.robots_override is not None:
            delay, disallow = self.robots_override
        else:
            delay, disallow = self.default_crawl_delay, DEFAULT_DISALLOW
        return robots_txt(disallow, delay) + "".join(f"Sitemap: {base}{p}\n" for p in self.robots_sitemaps).encode()


def _arg(request: Request, name: str, default: str | None = None) -> str | None:
    args: dict[bytes, list[bytes]] = request.args or {}
    values = args.get(name.encode())
    if not values:
        return default
    return values[0].decode("utf-8", "replace")


#: the body of every /notfound page and of /gone pages once gone
NOT_FOUND_BODY = b"<html><body><h1>Sorry, this page was not found</h1></body></html>\n"
#: the body of every /parked page
PARKED_BODY = b"<html><body><h1>This domain is for sale</h1></body></html>\n"


def _base(request: Request) -> str:
    """``http://host:port`` as the client addressed it."""
    return f"http://{(request.getHeader(b'host') or b'').decode('latin-1')}"


def _split_links(raw: str | None) -> list[str]:
    return [link for link in (raw or "").split(",") if link]


def page_html(path: str, links: Sequence[str] = (), size: int = 0, extra: str = "") -> bytes:
    """The deterministic HTML body served for a page (exposed for assertions)."""
    esc = html.escape
    items = "".join(f'<li><a href="{esc(link)}">{esc(link)}</a></li>\n' for link in links)
    pad = f'<p class="pad">{"x" * max(size, 0)}</p>\n' if size > 0 else ""
    extra_html = f'<p class="extra">{esc(extra)}</p>\n' if extra else ""
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8">'
        f"<title>{esc(path)}</title></head>\n<body>\n"
        f'<h1 class="path">{esc(path)}</h1>\n{extra_html}<ul>\n{items}</ul>\n{pad}'
        "</body></html>\n"
    ).encode()


#: the quotes site's pages (``/quotes/``), and the one that changes at every visit
QUOTES_PAGES = 3
CHANGING_QUOTES_PAGE = 2
#: (text, author, tags) of each page's quotes; page 2's second is rewritten at each visit
_QUOTES: dict[int, list[tuple[str, str, tuple[str, ...]]]] = {
    1: [
        ("A crawler that never sleeps still has to wait its turn.", "Ada Polite", ("patience", "crawling")),
        ("Every page changes; the question is only how often.", "Basil Rate", ("change",)),
        ("Fetch less, learn more.", "Cora Budget", ("thrift", "crawling")),
    ],
    2: [
        ("The same bytes twice are news to no one.", "Dev Digest", ("change",)),
        ("{headline}", "Eda Version", ("news",)),
        ("A 304 is a visit too.", "Finn Validator", ("http",)),
    ],
    3: [
        ("Robots.txt is a promise, not a suggestion.", "Gus Rules", ("politeness",)),
        ("Back off when nothing moves.", "Hana Wait", ("patience",)),
        ("The last page has no Next.", "Ivo End", ("crawling",)),
    ],
}


#: the changing page's headlines, one per edition (words only: an edit, not a counter)
_HEADLINES = (
    "The river is calm this morning.",
    "Rain is coming over the hills.",
    "The old bridge opens again.",
    "A new library opens on the square.",
    "Snow is expected in the valley.",
    "The market is quiet before the fair.",
    "Swallows are back under the roofs.",
    "The ferry runs late in the fog.",
)


def quotes_edition(hits: int) -> int:
    """The edition of the changing page served for the *hits*-th time (a new
    one at every second hit, from the second on)."""
    return hits // 2


def quotes_on(page: int, edition: int = 0) -> list[dict[str, Any]]:
    """The quotes page *page* shows in *edition*, as the tutorial's spider
    yields them (``text``, ``author``, ``tags``)."""
    headline = _HEADLINES[edition % len(_HEADLINES)]
    return [
        {"text": f"\u201c{text.format(headline=headline)}\u201d", "author": author, "tags": list(tags)}
        for text, author, tags in _QUOTES[page]
    ]


def quotes_html(page: int, edition: int) -> bytes:
    """The HTML of quotes page *page* in *edition*."""
    esc = html.escape
    quotes = "".join(
        '<div class="quote">\n'
        f'  <span class="text">{esc(quote["text"])}</span>\n'
        f'  <span>by <small class="author">{esc(quote["author"])}</small></span>\n'
        '  <div class="tags">'
        + "".join(f'<a class="tag" href="/quotes/tag/{esc(tag)}/">{esc(tag)}</a>' for tag in quote["tags"])
        + "</div>\n</div>\n"
        for quote in quotes_on(page, edition)
    )
    pager = (
        f'<li class="next"><a href="/quotes/page/{page + 1}/">Next <span>&rarr;</span></a></li>'
        if page < QUOTES_PAGES
        else ""
    )
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>Quotes</title></head>\n<body>\n'
        f'<h1>Quotes, page {page}</h1>\n{quotes}<nav><ul class="pager">{pager}</ul></nav>\n</body></html>\n'
    ).encode()


def _build_resource(state: _State) -> Any:
    """Build the single leaf resource dispatching on the request path."""
    from twisted.web import resource, server

    NOT_DONE_YET = server.NOT_DONE_YET

    class Root(resource.Resource):
        isLeaf = True

        def render(self, request: Request) -> bytes | int:
            path = request.path.decode("utf-8", "replace")
            if path in _CONTROL_PATHS or path.startswith(tuple(p + "/" for p in _CONTROL_PATHS)):
                return self.control(request, path)
            host = request.getHost()
            client = request.getClientAddress()
            entry: LogEntry = {
                "host": host.host,
                "port": host.port,
                "client_port": getattr(client, "port", None),
                "method": request.method.decode("ascii", "replace"),
                "path": path,
                "uri": request.uri.decode("utf-8", "replace"),
                "status": None,
                "dropped": False,
                "start": time.time(),
                "end": None,
                "headers": {
                    k.decode("latin-1").lower(): v[0].decode("latin-1")
                    for k, v in request.requestHeaders.getAllRawHeaders()
                    if v
                },
            }
            state.log.append(entry)

            def finished(_: object) -> None:
                if entry["end"] is None:
                    entry["end"] = time.time()
                if not entry["dropped"]:
                    entry["status"] = request.code

            def lost(_: object) -> None:
                if entry["end"] is None:
                    entry["end"] = time.time()
                entry["dropped"] = True

            request.notifyFinish().addCallbacks(finished, lost)
            return self.dispatch(request, path, entry)

        # -- control endpoints -------------------------------------------
        def control(self, request: Request, path: str) -> bytes:
            if path == "/_log":
                return json_response(request, state.log)
            if path == "/_log/clear":
                state.log.clear()
            elif path == "/_bump":
                key = _arg(request, "key") or ""
                state.editions[key] = state.editions.get(key, 1) + 1
                return json_response(request, {"ok": True, "edition": state.editions[key]})
            elif path == "/_reset":
                state.reset()
            elif path == "/_robots":
                raw_delay = _arg(request, "crawl_delay")
                delay = float(raw_delay) if raw_delay else None
                raw_disallow = _arg(request, "disallow")
                disallow = DEFAULT_DISALLOW if raw_disallow is None else tuple(_split_links(raw_disallow))
                state.robots_override = (delay, disallow)
                state.robots_sitemaps = tuple(p for p in (_arg(request, "sitemaps") or "").split("|") if p)
            else:
                request.setResponseCode(404)
                return json_response(request, {"error": "unknown control endpoint"})
            return json_response(request, {"ok": True})

        # -- test resources ----------------------------------------------
        def dispatch(self, request: Request, path: str, entry: LogEntry) -> bytes | int:
            parts = path.strip("/").split("/")
            head = parts[0]
            if path == "/robots.txt":
                request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
                return state.robots_txt(_base(request))
            if head in ("page", "private") and len(parts) >= 1:
                return self.page(request, path)
            if head == "mirror" and len(parts) >= 2:
                return self.page(request, "/" + "/".join(parts[1:]))
            if head == "delay":
                return self.delay(request, path, parts)
            if head == "status" and len(parts) >= 2:
                return self.status(request, parts[1])
            if head == "redirect":
                return self.redirect(request, parts)
            if head == "drop":
                return self.drop(request, entry)
            if head == "flaky" and len(parts) >= 3:
                return self.flaky(request, path, parts, entry)
            if head == "ring" and len(parts) >= 3:
                return self.ring(request, path, parts)
            if head == "changes" and len(parts) >= 3:
                return self.changes(request, path, parts)
            if head == "noisy" and len(parts) >= 3:
                return self.noisy(request, path, parts)
            if head == "shape" and len(parts) >= 4:
                return self.shape(request, parts)
            if head == "validators" and len(parts) >= 2:
                return self.validators(request, path)
            if head == "sitemap" and len(parts) >= 2:
                return self.sitemap(request, parts)
            if head == "sitemapindex" and len(parts) >= 2:
                return self.sitemap_index(request)
            if head == "feed" and len(parts) >= 2:
                return self.feed(request, parts)
            if head == "composite" and len(parts) == 3:
                return self.composite(request, parts[1], parts[2])
            if head == "notfound":
                request.setResponseCode(404)
                return self.fixed(request, NOT_FOUND_BODY)
            if head == "gone" and len(parts) >= 3:
                return self.gone(request, path, parts)
            if head == "parked":
                return self.fixed(request, PARKED_BODY)
            if head == "hostile" and len(parts) >= 2:
                return self.hostile(request, parts[1])
            if head == "quotes" and (len(parts) == 1 or (len(parts) == 3 and parts[1] == "page")):
                return self.quotes(request, int(parts[2]) if len(parts) == 3 and parts[2].isdigit() else 1)
            request.setResponseCode(404)
            request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
            return f"no such resource: {path}\n".encode()

        def quotes(self, request: Request, page: int) -> bytes:
            if not 1 <= page <= QUOTES_PAGES:
                request.setResponseCode(404)
                return self.fixed(request, NOT_FOUND_BODY)
            edition = quotes_edition(state.hit(f"quotes/{page}")) if page == CHANGING_QUOTES_PAGE else 0
            return self.fixed(request, quotes_html(page, edition))

        @staticmethod
        def fixed(request: Request, body: bytes) -> bytes:
            request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
            return body

        def gone(self, request: Request, path: str, parts: list[str]) -> bytes:
            real = max(0, int(parts[1])) if parts[1].isdigit() else 1
            if state.hit("gone:" + "/".join(parts[2:])) <= real:
                return self.page(request, path, extra="real content")
            return self.fixed(request, NOT_FOUND_BODY)  # a soft 404: "not found", status 200

        def page(self, request: Request, path: str, extra: str = "") -> bytes:
            request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
            links = _split_links(_arg(request, "links"))
            size = int(_arg(request, "size", "0") or 0)
            return page_html(path, links, size, extra)

        def delay(self, request: Request, path: str, parts: list[str]) -> int | bytes:
            raw = _arg(request, "s") if len(parts) < 2 else parts[1]
            try:
                seconds = max(0.0, float(raw or "0"))
            except ValueError:
                request.setResponseCode(400)
                return b"bad delay\n"
            return respond_later(request, seconds, self.page(request, path, extra=f"delayed {seconds:g}s"))

        def ring(self, request: Request, path: str, parts: list[str]) -> int | bytes:
            try:
                n = max(1, int(parts[1]))
                i = int(parts[2]) % n
                fanout = max(0, int(_arg(request, "fanout", "1") or 1))
                seconds = max(0.0, float(_arg(request, "delay", "0") or 0))
            except ValueError:
                request.setResponseCode(400)
                return b"bad ring\n"
            query = request.uri.decode("utf-8", "replace").partition("?")[2]
            suffix = f"?{query}" if query else ""
            targets = dict.fromkeys(f"/ring/{n}/{(i + j) % n}{suffix}" for j in range(1, fanout + 1))
            request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
            size = int(_arg(request, "size", "0") or 0)
            body = page_html(path, list(targets), size)
            return respond_later(request, seconds, body) if seconds > 0 else body

        def status(self, request: Request, raw_code: str) -> bytes:
            try:
                code = int(raw_code)
            except ValueError:
                code = 400
            request.setResponseCode(code)
            request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
            retry_after = _arg(request, "retry_after")
            if retry_after:
                request.setHeader(b"Retry-After", retry_after.encode())
            return f"status {code}\n".encode()

        def redirect(self, request: Request, parts: list[str]) -> bytes:
            code = int(parts[1]) if len(parts) >= 2 and parts[1].isdigit() else 302
            target = _arg(request, "to", "/page/redirected") or "/page/redirected"
            request.setResponseCode(code)
            request.setHeader(b"Location", target.encode())
            request.setHeader(b"Content-Type", b"text/plain; charset=utf-8")
            return f"redirect {code} to {target}\n".encode()

        def drop(self, request: Request, entry: LogEntry) -> int:
            entry["dropped"] = True
            entry["end"] = time.time()
            transport: Any = request.channel.transport
            transport.loseConnection()
            return NOT_DONE_YET

        def flaky(self, request: Request, path: str, parts: list[str], entry: LogEntry) -> bytes | int:
            try:
                failures = int(parts[1])
            except ValueError:
                request.setResponseCode(400)
                return b"bad count\n"
            key = "flaky:" + "/".join(parts[2:])
            if state.hit(key) <= failures:
                fail_status = _arg(request, "status")
                if fail_status:
                    return self.status(request, fail_status)
                return self.drop(request, entry)
            return self.page(request, path)

        def changes(self, request: Request, path: str, parts: list[str]) -> bytes | int:
            try:
                every = max(1, int(parts[1]))
            except ValueError:
                request.setResponseCode(400)
                return b"bad period\n"
            key = "/".join(parts[2:])
            # the page's clock is its hit count: hits 1..every are version 0
            version = Periodic(every).at(state.hit("changes:" + key) - 1).version
            etag = f'"{key}-v{version}"'
            request.setHeader(b"ETag", etag.encode())
            if not_modified(request, etag, None):
                return answer_not_modified(request)
            return self.page(request, path, extra=f"version {version}")

        def composite(self, request: Request, key: str, part: str) -> bytes | int:
            edition = state.editions.get(key, 1)
            if part == "page.html":
                kind, body = (
                    b"text/html; charset=utf-8",
                    (f'<html><body><h1>page edition {edition}</h1><img src="fig.png"></body></html>'.encode()),
                )
            elif part == "fig.png":
                kind, body = b"image/png", b"\x89PNG\r\n\x1a\n" + f"figure edition {edition}".encode()
            else:
                request.setResponseCode(404)
                return self.fixed(request, NOT_FOUND_BODY)
            etag = f'"{key}-{part}-e{edition}"'
            request.setHeader(b"ETag", etag.encode())
            if not_modified(request, etag, None):
                return answer_not_modified(request)
            request.setHeader(b"Content-Type", kind)
            return body

        def noisy(self, request: Request, path: str, parts: list[str]) -> bytes:
            every = max(1, int(parts[1])) if parts[1].isdigit() else 1
            version = Periodic(every).at(state.hit("noisy:" + "/".join(parts[2:])) - 1).version
            clock = datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")
            noise = f'<p class="clock">Server time {clock} UTC</p>\n<p class="token">{secrets.token_hex(8)}</p>\n'
            return self.page(request, path, extra=f"version {version}").replace(b"</body>", noise.encode() + b"</body>")

        def shape(self, request: Request, parts: list[str]) -> bytes:
            kind = parts[1]
            every = max(1, int(parts[2])) if parts[2].isdigit() else 1
            hit = state.hit("shape:" + "/".join(parts[1:]))
            n = Periodic(every).at(hit - 1).version
            now = datetime.now(UTC)
            token = secrets.token_hex(12)
            head = {
                "jsonld": f'<script type="application/ld+json">{{"offers": {{"price": "{19 + n}.99"}}}}</script>',
                "meta": f'<meta name="description" content="Fridge, model {n}">',
            }.get(kind, "")
            title = f"Fridge mk {n}" if kind == "title" else "Fridge"
            body = {
                "href": f'<a href="/page/item-{n}">the item</a>',
                "img": f'<img src="/img/photo-{n}.jpg">',
                "label": f"<table><tr><td>Value</td><td>{token[:8]}</td></tr><tr><td>Value</td><td>{17 + n}</td></tr></table>",
                "counter": f"<p>Visitors: {1000 + hit} · Availability: {'in stock' if n % 2 == 0 else 'sold out'}</p>",
                "coarse": f"<p>Stock: {40 - n}</p><p>Updated {now:%H:%M}</p>",
                "list": f"<p>Stock: {40 - n}</p><ul class=related>"
                + "".join(f"<li>item {secrets.randbelow(100)}</li>" for _ in range(1 + secrets.randbelow(5)))
                + "</ul>",
            }.get(kind, "")
            clock = "" if kind == "coarse" else f"<p>Server time {now:%H:%M:%S} UTC</p>"
            request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
            if kind == "etag":  # an honest ETag that follows the data, a clock in the body
                body = f"<p>Stock: {40 - n}</p>"
                etag = f'"stock-v{n}"'
                request.setHeader(b"ETag", etag.encode())
                if not_modified(request, etag, None):
                    return answer_not_modified(request)
            return (
                f"<!DOCTYPE html><html><head><title>{title}</title>{head}</head><body><h1>Shop</h1>{body}"
                f'<form><input type="hidden" name="csrf" value="{token}"></form>{clock}</body></html>'
            ).encode()

        def lastmod(self, request: Request, key: str) -> str:
            """The date a sitemap or feed gives its entries at this hit."""
            hit = state.hit(key)
            now_us = int(time.time() * 1e6)
            fresh_from = int(_arg(request, "fresh_from", "0") or 0)
            if _arg(request, "lie") == "1":
                stamp = now_us
            elif fresh_from and hit >= fresh_from:
                if hit == fresh_from:
                    state.counters["lastmod:" + key] = now_us
                stamp = state.counters["lastmod:" + key]
            else:
                stamp = 1_000_000_000 * 1_000_000
            return datetime.fromtimestamp(stamp / 1e6, UTC).isoformat()

        def sitemap(self, request: Request, parts: list[str]) -> bytes:
            key = "/".join(parts[1:])
            lastmod = self.lastmod(request, "sitemap:" + key)
            base = _base(request)
            entries = [(link, lastmod) for link in _split_links(_arg(request, "urls"))]
            entries += [(link, "garbage") for link in _split_links(_arg(request, "bad"))]
            body = "".join(
                f"<url><loc>{html.escape(base + link)}</loc><lastmod>{mod}</lastmod></url>\n" for link, mod in entries
            )
            xml = (
                '<?xml version="1.0" encoding="UTF-8"?>\n'
                f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{body}</urlset>\n'
            ).encode()
            if key.endswith(".gz"):  # a gzip file, not a gzip transfer
                request.setHeader(b"Content-Type", b"application/gzip")
                return gzip.compress(xml, mtime=0)
            request.setHeader(b"Content-Type", b"application/xml; charset=utf-8")
            return xml

        def sitemap_index(self, request: Request) -> bytes:
            base = _base(request)
            maps = [m for m in (_arg(request, "maps") or "").split("|") if m]
            body = "".join(f"<sitemap><loc>{html.escape(base + m)}</loc></sitemap>\n" for m in maps)
            request.setHeader(b"Content-Type", b"application/xml; charset=utf-8")
            return (
                '<?xml version="1.0" encoding="UTF-8"?>\n'
                f'<sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{body}</sitemapindex>\n'
            ).encode()

        def feed(self, request: Request, parts: list[str]) -> bytes:
            key = "/".join(parts[1:])
            updated = self.lastmod(request, "feed:" + key)
            base = _base(request)
            entries = "".join(
                f"<entry><title>{html.escape(link)}</title><id>{html.escape(base + link)}</id>"
                f'<link href="{html.escape(base + link)}"/><updated>{updated}</updated></entry>\n'
                for link in _split_links(_arg(request, "urls"))
            )
            request.setHeader(b"Content-Type", b"application/atom+xml; charset=utf-8")
            return (
                '<?xml version="1.0" encoding="utf-8"?>\n<feed xmlns="http://www.w3.org/2005/Atom">\n'
                f"<title>{html.escape(key)}</title><id>{html.escape(base)}/feed/{html.escape(key)}</id>"
                f"<updated>{updated}</updated>\n{entries}</feed>\n"
            ).encode()

        def validators(self, request: Request, path: str) -> bytes | int:
            raw_etag = _arg(request, "etag")
            etag = quote_etag(raw_etag) if raw_etag else None
            raw_lm = _arg(request, "lm")
            lm_epoch: float | None = None
            lm_header: str | None = None
            if raw_lm:
                try:
                    lm_epoch = float(raw_lm)
                    lm_header = http_date(lm_epoch)
                except ValueError:
                    lm_epoch = parse_http_date(raw_lm)
                    lm_header = raw_lm
            if etag:
                request.setHeader(b"ETag", etag.encode())
            if lm_header:
                request.setHeader(b"Last-Modified", lm_header.encode())
            for name, arg in ((b"Cache-Control", "cc"), (b"Expires", "expires")):
                value = _arg(request, arg)
                if value is not None:
                    request.setHeader(name, value.encode("latin-1"))
            if not_modified(request, etag, lm_epoch):
                return answer_not_modified(request)
            return self.page(request, path, extra=f"etag={etag} lm={lm_header}")

        def hostile(self, request: Request, case: str) -> bytes | int:
            if case == "huge-headers":
                request.setHeader(b"X-Huge", b"h" * 1_048_576)
                return self.page(request, "/hostile/huge-headers")
            if case == "endless":
                return _paced(request, b"<p>" + b"e" * 65_530 + b"</p>", 0.01)
            if case == "drip":
                return _paced(request, b"d", max(float(_arg(request, "every", "0.2") or 0.2), 0.01))
            if case == "bad-gzip":
                request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
                request.setHeader(b"Content-Encoding", b"gzip")
                return b"this is not gzip at all " * 40
            if case == "gzip-bomb":
                mb = min(int(_arg(request, "mb", "20") or 20), 1024)
                request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
                request.setHeader(b"Content-Encoding", b"gzip")
                return _gzip_bomb(mb)
            if case == "never":
                return NOT_DONE_YET  # the connection stays open, silent, until the client gives up
            if case == "binary":
                request.setHeader(b"Content-Type", b"text/html")
                return bytes((i * 131 + 7) % 256 for i in range(65_536))
            if case == "links":
                n = min(int(_arg(request, "n", "10") or 10), 100_000)
                request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
                return page_html("/hostile/links", [f"/page/many-{i}" for i in range(n)])
            if case == "long-link":
                kb = min(int(_arg(request, "kb", "1") or 1), 1024)
                request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
                return page_html("/hostile/long-link", [f"/page/long?q={'x' * (kb * 1024)}"])
            request.setResponseCode(404)
            return b"no such hostile case\n"

    return Root()


@functools.cache
def _gzip_bomb(mb: int) -> bytes:
    """*mb* MB of HTML gzipped to a few KB per MB (a decompression bomb)."""
    stream = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b" " * 1_048_576
    parts = [stream.compress(b"<html><body>")]
    parts += [stream.compress(chunk) for _ in range(mb)]
    parts.append(stream.compress(b"</body></html>") + stream.flush())
    return b"".join(parts)


def _paced(request: Request, chunk: bytes, every: float) -> int:
    """A chunked body of *chunk* every *every* seconds that never ends (until
    the client hangs up)."""
    from twisted.internet import reactor as _reactor
    from twisted.web import server

    reactor: Any = _reactor
    request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
    gone: list[bool] = []
    request.notifyFinish().addBoth(lambda _: gone.append(True))

    def more() -> None:
        if not gone:
            request.write(chunk)
            reactor.callLater(every, more)

    more()
    return server.NOT_DONE_YET


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point (``python -m tests.mockserver``)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--hosts",
        default=",".join(DEFAULT_HOSTS),
        help="comma-separated loopback IPv4 addresses to listen on",
    )
    parser.add_argument(
        "--crawl-delay",
        type=float,
        default=None,
        help="add 'Crawl-delay: N' to /robots.txt",
    )
    add_serving_arguments(parser, max_seconds=DEFAULT_MAX_SECONDS)
    opts = parser.parse_args(argv)
    hosts = [h.strip() for h in opts.hosts.split(",") if h.strip()]
    if not hosts:
        parser.error("no hosts given")
    try:
        for host in hosts:
            check_loopback(host)
    except ValueError as exc:
        parser.error(str(exc))
    from twisted.web import server

    site = server.Site(_build_resource(_State(opts.crawl_delay)))
    site.noisy = False
    return serve(site, hosts, max_seconds=opts.max_seconds, exit_on_stdin_eof=opts.exit_on_stdin_eof)


# --------------------------------------------------------------------------
# Client side: the MockServer context manager used by tests
# --------------------------------------------------------------------------


class MockServer(SiteProcess):
    """Run ``python -m tests.mockserver`` as a subprocess for the duration of a ``with``.

    Example::

        with MockServer() as ms:
            urllib.request.urlopen(ms.url("/page/a?links=/page/b", host="127.0.0.2"))
            assert ms.log()[0]["host"] == "127.0.0.2"
    """

    def __init__(
        self,
        hosts: Iterable[str] = DEFAULT_HOSTS,
        *,
        crawl_delay: float | None = None,
        startup_timeout: float = 20.0,
        stop_timeout: float = 5.0,
    ) -> None:
        self.hosts: tuple[str, ...] = tuple(check_loopback(h) for h in hosts)
        if not self.hosts:
            raise ValueError("at least one host is required")
        self.crawl_delay = crawl_delay
        args = ["--hosts", ",".join(self.hosts)]
        if crawl_delay is not None:
            args += ["--crawl-delay", repr(float(crawl_delay))]
        super().__init__("tests.mockserver", args, startup_timeout=startup_timeout, stop_timeout=stop_timeout)
        # Never send our own control requests through an environment proxy.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    # -- URLs --------------------------------------------------------------
    def port(self, host: str = "127.0.0.1") -> int:
        """The port the server listens on at ``host``."""
        try:
            return self.ports[host]
        except KeyError:
            raise KeyError(f"mock server is not listening on {host!r} (hosts: {self.hosts})") from None

    def netloc(self, host: str = "127.0.0.1") -> str:
        """``host:port`` (note: Scrapy's default download slot is the hostname alone)."""
        return f"{host}:{self.port(host)}"

    def base_url(self, host: str = "127.0.0.1") -> str:
        """``http://host:port`` without a trailing slash."""
        return f"http://{self.netloc(host)}"

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        """Absolute URL for ``path`` (query string allowed) on ``host``."""
        if not path.startswith("/"):
            path = "/" + path
        return self.base_url(host) + path

    # -- control endpoints -------------------------------------------------
    def page_url(
        self,
        path: str,
        links: Sequence[str] = (),
        host: str = "127.0.0.1",
        *,
        size: int = 0,
    ) -> str:
        """URL of ``/page/...``-style ``path`` linking to ``links`` (encoded safely).

        Links may be absolute URLs to other hosts; they are percent-encoded so
        their commas/colons survive inside the ``links`` parameter (and inside
        the follow spider's comma-separated ``start_urls``).
        """
        query = {}
        if links:
            query["links"] = ",".join(links)
        if size:
            query["size"] = str(size)
        qs = urllib.parse.urlencode(query, quote_via=urllib.parse.quote, safe="/")
        return self.url(path + (f"?{qs}" if qs else ""), host)

    def get_json(self, path: str, host: str = "127.0.0.1", timeout: float = 10.0) -> Any:
        """GET ``path`` and decode the JSON body (for control endpoints)."""
        with self._opener.open(self.url(path, host), timeout=timeout) as resp:
            return json.loads(resp.read())

    def log(self, *, host: str | None = None, path_prefix: str | None = None) -> list[LogEntry]:
        """Requests served so far (see module docstring), optionally filtered.

        The log is shared by all hosts (one process), so any host returns it.
        """
        entries: list[LogEntry] = self.get_json("/_log", self.hosts[0])
        if host is not None:
            entries = [e for e in entries if e["host"] == host]
        if path_prefix is not None:
            entries = [e for e in entries if e["path"].startswith(path_prefix)]
        return entries

    def clear_log(self) -> None:
        """Empty the request log (counters and robots override are kept)."""
        self.get_json("/_log/clear", self.hosts[0])

    def reset(self) -> None:
        """Empty the log, reset flaky/changes counters and the robots.txt override."""
        self.get_json("/_reset", self.hosts[0])

    def set_robots(
        self,
        *,
        crawl_delay: float | None = None,
        disallow: Sequence[str] = DEFAULT_DISALLOW,
        sitemaps: Sequence[str] = (),
    ) -> None:
        """Override /robots.txt on all hosts until the next :meth:`reset`
        (*sitemaps*: paths listed as ``Sitemap:`` lines on each host)."""
        query = {"disallow": ",".join(disallow), "sitemaps": "|".join(sitemaps)}
        if crawl_delay is not None:
            query["crawl_delay"] = repr(float(crawl_delay))
        self.get_json("/_robots?" + urllib.parse.urlencode(query), self.hosts[0])


# --------------------------------------------------------------------------
# Measuring helpers (pure functions over log entries)
# --------------------------------------------------------------------------


def _end(entry: LogEntry) -> float:
    """End time of an entry; an in-flight request counts as never ending."""
    return float("inf") if entry.get("end") is None else float(entry["end"])


def max_concurrency(entries: Iterable[LogEntry], host: str | None = None) -> int:
    """Maximum number of simultaneously open [start, end] intervals.

    This is the *valence* actually exercised on ``host`` (all hosts if None).
    An interval ending exactly when another starts does not overlap it.
    """
    events: list[tuple[float, int]] = []
    for e in entries:
        if host is None or e["host"] == host:
            events.append((float(e["start"]), 1))
            events.append((_end(e), -1))
    events.sort(key=lambda ev: (ev[0], ev[1]))  # ends (-1) before starts at a tie
    best = current = 0
    for _, delta in events:
        current += delta
        best = max(best, current)
    return best


def gaps(entries: Iterable[LogEntry], host: str, *, since: Literal["end", "start"] = "end") -> list[float]:
    """Seconds between consecutive requests to ``host``, in start order.

    With ``since="end"`` each value is ``next.start - max(end of all earlier
    requests)`` — the idle time politeness should guarantee (negative means
    overlap). With ``since="start"`` it is ``next.start - previous.start``
    (what Scrapy's DOWNLOAD_DELAY spaces out).
    """
    mine = sorted((e for e in entries if e["host"] == host), key=lambda e: float(e["start"]))
    result: list[float] = []
    latest_end = float("-inf")
    for prev, nxt in itertools.pairwise(mine):
        latest_end = max(latest_end, _end(prev))
        ref = latest_end if since == "end" else float(prev["start"])
        result.append(float(nxt["start"]) - ref)
    return result


if __name__ == "__main__":
    sys.exit(main())
