"""Serve identical copies of the changing web (:mod:`bench.changing_web_world`), one per crawler.

Run (the benchmark starts it for you)::

    python -m bench.changing_web_site --copies 3 --hosts 10 --pages 60 --images 30 --delay 3

It prints ``READY {"hosts": {address: port, ...}, "origin": T, "copies":
[[address, ...], ...]}`` once listening, and stops when its stdin closes or
after ``--max-seconds`` (:func:`testsite.serving.serve`).

Why it is built this way:

* **One process, one timeline, several copies.**  Copy *c*'s host *h* listens
  on 127.0.*30+c*.*h+1* (loopback only), so each crawler has hosts of its
  own (politeness is per host) and all of them see the same version of a URL
  at the same instant: the timeline is a function of the time since
  ``origin``, shared by every copy.
* **Each class's HTTP as** ``docs/changing-web.md`` **says** (honest
  validators and 304s, liars, no validators on noise pages, no Cache-Control).
* **Per-host latency** (20–200 ms at a 3 s delay, scaled with it; seeded), answered from a reactor timer, so
  a request's [arrival, finish] interval is real and two requests to one
  host at once would show in the log.
* **The access log is the ground truth of what was asked and sent**:
  ``/_log`` returns one row per request: ``[arrived, finished, copy, host,
  url index (-1: not a URL of the world), status, body bytes, version,
  conditional (1: If-None-Match or If-Modified-Since sent), why]``, *why*
  the crawler's own tag of the fetch (:data:`FETCH_TAGS`, from the spider's
  ``X-Bench-Fetch`` header; 0: none).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from bench.changing_web_world import World
from testsite.httputil import http_date, not_modified
from testsite.serving import add_serving_arguments, answer_not_modified, json_response, serve

#: ``X-Bench-Fetch`` values (:mod:`bench.changing_web_spider`) -> the log's *why* column
FETCH_TAGS = {b"verify": 1, b"check": 2}
#: the third octet of copy 0's addresses (127.0.30.x, 127.0.31.x, ...)
FIRST_OCTET = 30


def copy_addresses(copies: int, hosts: int) -> list[list[str]]:
    """``[[copy 0's host addresses], ...]``: loopback only, one address per host."""
    if not (1 <= copies <= 200 and 1 <= hosts <= 254):
        raise ValueError("copies must be within 1..200 and hosts within 1..254")
    return [[f"127.0.{FIRST_OCTET + c}.{h + 1}" for h in range(hosts)] for c in range(copies)]


def build_site(world: World, copies: int) -> tuple[Any, Callable[[dict[str, int]], dict[str, object]]]:
    """The Twisted site and its ``ready`` hook (the origin is set when the ports are known)."""
    from twisted.internet import reactor as _reactor
    from twisted.web import resource, server

    reactor: Any = _reactor
    where = {a: (c, h) for c, row in enumerate(copy_addresses(copies, world.hosts)) for h, a in enumerate(row)}
    log: list[list[float]] = []
    state = {"origin": 0.0}

    class Root(resource.Resource):
        isLeaf = True

        def render_GET(self, request: Any) -> Any:  # noqa: N802 (Twisted's name)
            path = request.path.decode("latin-1")
            if path == "/_log":
                return json_response(request, {"origin": state["origin"], "log": log})
            arrived = time.time()
            copy, host = where.get(request.getHost().host, (-1, -1))
            url = world.by_path.get((host, path))
            conditional = bool(request.getHeader(b"if-none-match") or request.getHeader(b"if-modified-since"))
            why = FETCH_TAGS.get(request.getHeader(b"x-bench-fetch") or b"", 0)
            row = [arrived, 0.0, copy, host, -1 if url is None else url.index, 404, 0, -1, int(conditional), why]

            def finished(_: object) -> None:
                row[1] = time.time()
                log.append(row)

            request.notifyFinish().addBoth(finished)
            if url is None:
                request.setResponseCode(404)
                return b"not found"

            def answer() -> None:
                now = time.time()
                version = url.version(now - state["origin"])
                etag = world.etag(url, version)
                modified = world.last_modified(url, version, state["origin"])
                if etag is not None:
                    request.setHeader(b"ETag", etag.encode())
                if modified is not None:
                    request.setHeader(b"Last-Modified", http_date(modified).encode())
                row[7] = version
                if (etag is not None or modified is not None) and not_modified(request, etag, modified):
                    row[5] = 304
                    answer_not_modified(request)
                    return
                body = world.body(url, version, now)
                row[5], row[6] = 200, len(body)
                ctype = b"image/jpeg" if url.kind == "image" else b"text/html; charset=utf-8"
                request.setHeader(b"Content-Type", ctype)
                request.write(body)
                request.finish()

            call = reactor.callLater(url.latency, answer)
            request.notifyFinish().addErrback(lambda _: call.cancel() if call.active() else None)
            return server.NOT_DONE_YET

    def ready(ports: dict[str, int]) -> dict[str, object]:
        state["origin"] = time.time()
        return {"origin": state["origin"], "copies": copy_addresses(copies, world.hosts)}

    site = server.Site(Root())
    site.noisy = False
    return site, ready


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.changing_web_site", description=__doc__.split("\n\n")[0])
    p.add_argument("--copies", type=int, default=3)
    p.add_argument("--hosts", type=int, default=10)
    p.add_argument("--pages", type=int, default=60)
    p.add_argument("--images", type=int, default=30)
    p.add_argument("--delay", type=float, default=3.0)
    p.add_argument("--horizon", type=float, default=3600.0, help="seconds of timeline to build")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--grouped", type=float, default=0.0, help="share of pages replaying one service together")
    add_serving_arguments(p, max_seconds=7200.0)
    args = p.parse_args(argv)
    world = World(args.hosts, args.pages, args.images, args.delay, args.horizon, args.seed, args.grouped)
    site, ready = build_site(world, args.copies)
    addresses = [a for row in copy_addresses(args.copies, args.hosts) for a in row]
    sys.exit(
        serve(site, addresses, max_seconds=args.max_seconds, exit_on_stdin_eof=args.exit_on_stdin_eof, ready=ready)
    )


if __name__ == "__main__":
    main(sys.argv[1:])
