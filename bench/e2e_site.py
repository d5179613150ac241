"""A generated site of N linked pages on several loopback hosts, for the e2e benchmark.

Run (the benchmark starts it for you)::

    python -m bench.e2e_site --pages 300 --hosts 3

It prints one line ``READY {"hosts": {"127.0.0.1": port, ...}, ...}`` on
stdout once listening, and stops when its stdin closes (the parent died or
let go) or after ``--max-seconds`` (:func:`testsite.serving.serve`).

Why it is built this way:

* **Twisted, one process**: one reactor with keep-alive serves a few
  thousand small pages a second on one core, so the crawler (the thing
  measured) gets the other core.
* **Several hosts on loopback**: 127.0.0.1, .2, .3 are distinct hosts for
  Scrapy's slots and the frontier's queues, with no DNS and no network.
* **Deterministic pages**: page *i* lives on host ``i % hosts`` and links to
  page ``i + 1`` and to ``links - 1`` seeded random pages; no delay.
* ``/_stats`` counts requests per path (each page fetched once?).

Only when asked, the site changes, validates and is slow:

* ``--change-median S --change-sigma Σ``: every page changes as a Poisson
  process (:class:`testsite.schedule.Poisson`), mean interval log-normal
  across pages (median S wall seconds), seeded per page; the body names the
  version.  ``/_visits`` lists every page request as ``[time, page,
  version]``, ``/_versions?at=T`` every page's version at time T.
* ``/_bump?every=K``: page *i* with ``i % K == 0`` moves to its next version
  now (:mod:`bench.e2e_bench`'s ``--revisit``).
* ``--validators etag`` (or ``both``): an ETag (and a Last-Modified) per
  version, and a 304 to a conditional GET that matches it.
* ``--latency`` / ``--crawl-delay``: per host (comma-separated), seconds
  before a page's body is sent (from a timer), and a robots.txt ``Crawl-delay``.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from testsite.httputil import http_date, not_modified, robots_txt
from testsite.schedule import Poisson
from testsite.serving import add_serving_arguments, answer_not_modified, json_response, respond_later, serve


def host_addresses(hosts: int) -> list[str]:
    """``127.0.0.1`` … ``127.0.0.<hosts>`` (at most 254): loopback only, nothing leaves the machine."""
    if not 1 <= hosts <= 254:
        raise ValueError("--hosts must be between 1 and 254")
    return [f"127.0.0.{k}" for k in range(1, hosts + 1)]


@dataclass(frozen=True)
class Churn:
    """How pages change: Poisson processes, mean interval log-normal across pages.

    ``median_interval`` is in wall seconds (the site's clock is compressed
    by choosing it in seconds where real pages take days); ``sigma`` is the
    standard deviation of ln λ.  Each page's rate and change instants are
    seeded by the page number, so a run can be repeated exactly.
    """

    median_interval: float
    sigma: float = 1.0
    seed: int = 7

    def schedule(self, page: int) -> Poisson:
        z = random.Random(f"{self.seed}|{page}|rate").gauss(0.0, 1.0)
        return Poisson(self.median_interval * math.exp(self.sigma * z), f"{self.seed}|{page}|changes")


class SiteModel:
    """Which page lives where and what it links to (pure, testable)."""

    def __init__(
        self,
        pages: int,
        hosts: dict[str, int],
        links: int = 5,
        seed: int = 7,
        churn: Churn | None = None,
        origin: float = 0.0,
    ) -> None:
        self.pages = pages
        self.hosts = list(hosts)
        self.ports = hosts
        self.links = links
        self.seed = seed
        self.churn = churn
        #: wall-clock instant of the changing pages' time 0
        self.origin = origin
        self._schedules: dict[int, Poisson] = {}
        #: page -> [wall time of each ``/_bump``]: versions added on request
        self.bumps: dict[int, list[float]] = {}

    def bump(self, every: int, now: float) -> int:
        """Every *every*-th page gets a new version at *now*; how many did."""
        changed = range(0, self.pages, max(1, every))
        for page in changed:
            self.bumps.setdefault(page, []).append(now)
        return len(changed)

    def version(self, page: int, now: float) -> int:
        """The page's version at wall time *now* (0 for ever without churn or bumps)."""
        bumped = sum(1 for t in self.bumps.get(page, ()) if t <= now)
        if self.churn is None:
            return bumped
        schedule = self._schedules.get(page)
        if schedule is None:
            schedule = self._schedules[page] = self.churn.schedule(page)
        return schedule.at(now - self.origin).version + bumped

    def modified(self, page: int, now: float) -> float:
        """When the page's version at *now* began (bumps only; the origin otherwise)."""
        return max([self.origin, *(t for t in self.bumps.get(page, ()) if t <= now)])

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

    def body(self, page: int, version: int = 0) -> bytes:
        anchors = "\n".join(f'<li><a href="{self.url(j)}">page {j}</a></li>' for j in self.links_of(page))
        filler = ("Lorem ipsum dolor sit amet, consectetur adipiscing elit. " * 16).strip()
        revision = f"<p>Version {version}</p>\n" if self.churn is not None or version else ""
        return (
            f"<!DOCTYPE html>\n<html><head><title>Page {page}</title></head>\n<body>\n"
            f"<h1>Page {page}</h1>\n{revision}<p>{filler}</p>\n<ul>\n{anchors}\n</ul>\n</body></html>\n"
        ).encode()


def per_host(values: str, hosts: int, name: str) -> list[float]:
    """``"0,0.05,0.3"`` -> one number per host (the last one repeats; empty: zeros)."""
    numbers = [float(v) for v in values.split(",") if v.strip()] or [0.0]
    if any(not (math.isfinite(v) and v >= 0) for v in numbers):
        raise ValueError(f"{name}: every value must be a finite number >= 0")
    return (numbers + numbers[-1:] * hosts)[:hosts]


def build_site(
    pages: int,
    links: int,
    seed: int,
    churn: Churn | None = None,
    latency: dict[str, float] | None = None,
    crawl_delay: dict[str, float] | None = None,
    validators: str = "none",
) -> tuple[Any, Callable[[dict[str, int]], dict[str, object]]]:
    """The Twisted site, and the ``ready`` hook that builds its model once the ports are known."""
    from twisted.web import resource, server

    latency_of = latency or {}
    crawl_delay_of = crawl_delay or {}
    hits: Counter[str] = Counter()
    #: [time, page, version] of every page served (with churn only)
    visits: list[list[float]] = []
    model_box: dict[str, SiteModel] = {}

    def page_body(page: int) -> bytes:
        model = model_box["model"]
        if model.churn is None and not model.bumps:
            return model.body(page)
        now = time.time()
        version = model.version(page, now)
        if model.churn is not None:
            visits.append([now, page, version])
        return model.body(page, version)

    class Root(resource.Resource):
        isLeaf = True

        def render_GET(self, request: Any) -> Any:  # noqa: N802 (Twisted's name)
            path = request.path.decode("latin-1")
            if path == "/_visits":
                return json_response(request, {"origin": model_box["model"].origin, "visits": visits})
            if path == "/_versions":
                at = float(request.args.get(b"at", [b"0"])[0])
                model = model_box["model"]
                return json_response(request, [model.version(p, at) for p in range(pages)])
            if path == "/_stats":
                total = sum(v for k, v in hits.items())
                body = {
                    "requests": total,
                    "unique": len(hits),
                    "max_hits": max(hits.values(), default=0),
                    "repeated": sum(1 for v in hits.values() if v > 1),
                }
                return json_response(request, body)
            if path == "/_bump":
                every = int(request.args.get(b"every", [b"10"])[0])
                return json_response(request, {"changed": model_box["model"].bump(every, time.time())})
            if path == "/_reset":
                hits.clear()
                visits.clear()
                return b"ok"
            hits[path] += 1
            host = request.getHost().host
            if path == "/robots.txt":
                request.setHeader(b"Content-Type", b"text/plain")
                return robots_txt((), crawl_delay_of.get(host) or None)
            if path.startswith("/page/"):
                try:
                    page = int(path[len("/page/") :])
                except ValueError:
                    page = -1
                if 0 <= page < pages:
                    request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
                    delay = latency_of.get(host) or 0.0
                    if validators != "none":
                        model, now = model_box["model"], time.time()
                        etag = f'"p{page}v{model.version(page, now)}"'
                        modified = model.modified(page, now) if validators == "both" else None
                        request.setHeader(b"ETag", etag.encode())
                        if modified is not None:
                            request.setHeader(b"Last-Modified", http_date(modified).encode())
                        if not_modified(request, etag, modified):
                            return answer_not_modified(request)
                    return respond_later(request, delay, lambda: page_body(page)) if delay > 0 else page_body(page)
            request.setResponseCode(404)
            return b"not found"

    def ready(ports: dict[str, int]) -> dict[str, object]:
        model = model_box["model"] = SiteModel(pages, ports, links, seed, churn=churn, origin=time.time())
        return {"start_urls": model.start_urls(), "origin": model.origin}

    site = server.Site(Root())
    site.noisy = False
    return site, ready


def add_site_arguments(p: argparse.ArgumentParser, *, pages: int = 300, hosts: int = 3) -> None:
    """The generated site's shape: here, and in the benchmarks that start the site."""
    p.add_argument("--pages", type=int, default=pages)
    p.add_argument("--hosts", type=int, default=hosts)
    p.add_argument("--links", type=int, default=5, help="links per page")
    p.add_argument("--seed", type=int, default=7)


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.e2e_site", description=__doc__.split("\n\n")[0])
    add_site_arguments(p)
    p.add_argument("--change-median", type=float, default=0.0, help="pages change: median mean interval, seconds")
    p.add_argument("--change-sigma", type=float, default=1.0, help="σ of the log change rate across pages")
    p.add_argument("--validators", choices=("none", "etag", "both"), default="none", help="ETag (Last-Modified), 304s")
    p.add_argument("--latency", default="", help="per host: seconds before a page's body, e.g. 0,0.05,0.3")
    p.add_argument("--crawl-delay", default="", help="per host: robots.txt Crawl-delay (0: none)")
    add_serving_arguments(p, max_seconds=1800.0)
    args = p.parse_args(argv)
    churn = Churn(args.change_median, args.change_sigma, args.seed) if args.change_median > 0 else None
    addresses = host_addresses(args.hosts)
    latency = dict(zip(addresses, per_host(args.latency, args.hosts, "--latency"), strict=True))
    crawl_delay = dict(zip(addresses, per_host(args.crawl_delay, args.hosts, "--crawl-delay"), strict=True))
    site, ready = build_site(args.pages, args.links, args.seed, churn, latency, crawl_delay, args.validators)
    sys.exit(
        serve(site, addresses, max_seconds=args.max_seconds, exit_on_stdin_eof=args.exit_on_stdin_eof, ready=ready)
    )


if __name__ == "__main__":
    main(sys.argv[1:])
