"""A generated site of N linked pages on several loopback hosts, for the e2e benchmark.

Run (the benchmark starts it for you)::

    python -m bench.e2e_site --pages 300 --hosts 3

It prints one line ``READY {"hosts": {"127.0.0.1": port, ...}}`` on stdout once
listening, and stops when its stdin closes (the parent died or let go) or
after ``--max-seconds``.

Why it is built this way:

* **Twisted, one process.**  A threaded ``http.server`` spends its time on
  thread switches under the GIL; one Twisted reactor with keep-alive serves
  a few thousand small pages a second on one core, so on a 2-core machine
  the crawler (the thing measured) gets the other core and the server is
  not the bottleneck.
* **Several hosts on loopback.**  Linux routes all of 127.0.0.0/8 to
  ``lo``, so 127.0.0.1, .2, .3 are distinct hosts for Scrapy's per-domain
  slots and for the frontier's per-host queues, with no DNS and no network.
* **Deterministic pages.**  Page *i* lives on host ``i % hosts`` and links to
  page ``i + 1`` (so every page is reachable from page 0) and to
  ``links - 1`` seeded random pages, on whichever host each of them lives.
* **No artificial delay**: the benchmark measures scheduler overhead, not
  waiting.
* ``/_stats`` counts requests per path, so the benchmark can check that each
  page was fetched exactly once.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any

#: Loopback addresses only: nothing here ever leaves the machine.
LOOPBACK_PREFIX = "127."


def host_addresses(hosts: int) -> list[str]:
    """``127.0.0.1`` … ``127.0.0.<hosts>`` (at most 254)."""
    if not 1 <= hosts <= 254:
        raise ValueError("--hosts must be between 1 and 254")
    return [f"127.0.0.{k}" for k in range(1, hosts + 1)]


class SiteModel:
    """Which page lives where and what it links to (pure, testable)."""

    def __init__(self, pages: int, hosts: dict[str, int], links: int = 5, seed: int = 7) -> None:
        self.pages = pages
        self.hosts = list(hosts)
        self.ports = hosts
        self.links = links
        self.seed = seed

    def url(self, page: int) -> str:
        host = self.hosts[page % len(self.hosts)]
        return f"http://{host}:{self.ports[host]}/page/{page}"

    def start_urls(self) -> list[str]:
        """Page 0 (and the first page of every other host)."""
        return [self.url(k) for k in range(min(len(self.hosts), self.pages))]

    def links_of(self, page: int) -> list[int]:
        rng = random.Random(self.seed * 1_000_003 + page)
        out = [(page + 1) % self.pages]
        out += [rng.randrange(self.pages) for _ in range(max(0, self.links - 1))]
        return out

    def body(self, page: int) -> bytes:
        anchors = "\n".join(f'<li><a href="{self.url(j)}">page {j}</a></li>' for j in self.links_of(page))
        filler = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 16).strip()
        return (
            f"<!DOCTYPE html>\n<html><head><title>Page {page}</title></head>\n<body>\n"
            f"<h1>Page {page}</h1>\n<p>{filler}</p>\n<ul>\n{anchors}\n</ul>\n</body></html>\n"
        ).encode()


def serve(pages: int, hosts: int, links: int, seed: int, max_seconds: float) -> None:
    """Listen on every host, announce the ports, serve until stdin closes."""
    from twisted.internet import reactor as _reactor
    from twisted.internet import stdio
    from twisted.internet.protocol import Protocol
    from twisted.web import resource, server

    reactor: Any = _reactor  # the global reactor; its interfaces confuse type checkers
    addresses = host_addresses(hosts)
    hits: Counter[str] = Counter()
    model_box: dict[str, SiteModel] = {}

    class Root(resource.Resource):
        isLeaf = True

        def render_GET(self, request: Any) -> bytes:
            path = request.path.decode("latin-1")
            if path == "/_stats":
                request.setHeader(b"Content-Type", b"application/json")
                total = sum(v for k, v in hits.items())
                body = {
                    "requests": total,
                    "unique": len(hits),
                    "max_hits": max(hits.values(), default=0),
                    "repeated": sum(1 for v in hits.values() if v > 1),
                }
                return json.dumps(body).encode()
            if path == "/_reset":
                hits.clear()
                return b"ok"
            hits[path] += 1
            if path.startswith("/page/"):
                try:
                    page = int(path[len("/page/") :])
                except ValueError:
                    page = -1
                if 0 <= page < pages:
                    request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
                    return model_box["model"].body(page)
            request.setResponseCode(404)
            return b"not found"

    site = server.Site(Root())
    site.noisy = False
    ports: dict[str, int] = {}
    for address in addresses:
        assert address.startswith(LOOPBACK_PREFIX)
        port = reactor.listenTCP(0, site, interface=address)
        ports[address] = port.getHost().port
    model_box["model"] = SiteModel(pages, ports, links, seed)

    class StdinWatcher(Protocol):
        def connectionLost(self, reason: object = None) -> None:  # noqa: N802 (Twisted API)
            if reactor.running:
                reactor.stop()

    stdio.StandardIO(StdinWatcher())
    reactor.callLater(max_seconds, reactor.stop)
    print("READY " + json.dumps({"hosts": ports, "start_urls": model_box["model"].start_urls()}), flush=True)
    reactor.run()


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.e2e_site", description=__doc__.split("\n\n")[0])
    p.add_argument("--pages", type=int, default=300)
    p.add_argument("--hosts", type=int, default=3)
    p.add_argument("--links", type=int, default=5)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--max-seconds", type=float, default=1800.0, help="stop serving after this long regardless")
    args = p.parse_args(argv)
    serve(args.pages, args.hosts, args.links, args.seed, args.max_seconds)


if __name__ == "__main__":
    main(sys.argv[1:])
