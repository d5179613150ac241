"""The validators benchmark's site: pages with ETag/Last-Modified, changing
on a known schedule, served honestly, ignored, or lied about.

``python -m bench.validators_site --pages 200 --size 16000`` listens on
127.0.0.1 (honest pages ``/honest/<i>``, pages whose server ignores
conditional requests ``/ignore/<i>``) and 127.0.0.2 (``/liar/<i>``: after
``--liar-honest`` requests per page, the content keeps changing while ETag
and Last-Modified stay put, and conditional requests get 304).

Full responses send their headers at once and the body 50 ms later in 4 KB
chunks, as a real origin does, so a client that stops after the headers
really saves the body; the server counts the body bytes it actually wrote.
A page changes on every ``--period``-th request for one page in five and
never for the others, so every request knows whether it is an unchanged
revisit.  ``/_stats`` reports, per kind of page: requests, body bytes sent,
body bytes sent on unchanged revisits, changes missed (a 304 or a stopped
download while the content had changed since the last full response), and
for the liar when the first lie was seen by the crawler.
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import reactor as _reactor
from twisted.web import resource, server

from testsite.httputil import http_date, not_modified
from testsite.schedule import Periodic
from testsite.serving import add_serving_arguments, answer_not_modified, json_response, serve

reactor: Any = _reactor  # the global reactor; its zope interfaces confuse type checkers

START = 1_700_000_000
#: honest and ignoring pages on the first, the liar on the second
HOSTS = ("127.0.0.1", "127.0.0.2")


@dataclass
class PageState:
    requests: int = 0
    delivered_version: int | None = None  # last version sent with a full body
    lying_since: int | None = None


@dataclass
class Totals:
    requests: int = 0
    full_responses: int = 0
    body_bytes: int = 0
    unchanged_revisits: int = 0
    unchanged_revisit_bytes: int = 0
    not_modified: int = 0
    missed_changes: int = 0
    first_lie_seen_after: int | None = None  # liar-host requests after lying began
    lie_requests: int = 0
    extra: dict[str, int] = field(default_factory=dict)


class Site(resource.Resource):
    isLeaf = True

    def __init__(self, pages: int, size: int, period: int, liar_honest: int) -> None:
        super().__init__()
        self.pages, self.size, self.period, self.liar_honest = pages, size, period, liar_honest
        self.state: dict[str, PageState] = {}
        self.totals: dict[str, Totals] = {k: Totals() for k in ("honest", "ignore", "liar")}

    def version(self, kind: str, index: int, st: PageState) -> int:
        changing = index % 5 == 0 or kind == "liar"
        if not changing:
            return 0
        if kind == "liar":
            if st.requests <= self.liar_honest:
                return 0
            return (st.requests - self.liar_honest + 1) // 2  # changes every 2nd request once lying
        return Periodic(self.period).at(st.requests).version  # the page's clock is its request count

    def render_GET(self, request: server.Request) -> bytes | int:  # noqa: N802 - Twisted's name
        path = request.path.decode()
        if path == "/_stats":
            return json_response(request, {k: v.__dict__ for k, v in self.totals.items()})
        parts = path.strip("/").split("/")
        if len(parts) != 2 or parts[0] not in self.totals or not parts[1].isdigit():
            request.setResponseCode(404)
            return b"not found"
        kind, index = parts[0], int(parts[1])
        st = self.state.setdefault(path, PageState())
        st.requests += 1
        totals = self.totals[kind]
        totals.requests += 1
        version = self.version(kind, index, st)
        lying = kind == "liar" and st.requests > self.liar_honest
        if lying:
            totals.lie_requests += 1
        shown_version = 0 if lying else version  # a liar's validators never move
        etag = f'"{kind}-{index}-v{shown_version}"'
        modified = START + 3600 * shown_version
        request.setHeader(b"ETag", etag.encode())
        request.setHeader(b"Last-Modified", http_date(modified).encode())
        request.setHeader(b"Content-Type", b"text/html; charset=utf-8")
        changed_since_delivery = st.delivered_version is not None and st.delivered_version != version
        if kind != "ignore" and not_modified(request, etag, modified):
            totals.not_modified += 1
            if changed_since_delivery:
                totals.missed_changes += 1
            return answer_not_modified(request)
        body = self.body(kind, index, version)
        unchanged_revisit = st.delivered_version is not None and not changed_since_delivery
        if unchanged_revisit:
            totals.unchanged_revisits += 1
        request.setHeader(b"Content-Length", str(len(body)).encode())
        request.write(b"")  # the headers go out now; the body follows, as from a real origin
        state = {"lost": False}
        request.notifyFinish().addErrback(lambda _: state.update(lost=True))

        def send(offset: int = 0) -> None:
            if state["lost"]:
                if changed_since_delivery and kind != "liar":
                    totals.missed_changes += 1  # a changed page's download was stopped
                return
            chunk = body[offset : offset + 4096]
            request.write(chunk)
            totals.body_bytes += len(chunk)
            if unchanged_revisit:
                totals.unchanged_revisit_bytes += len(chunk)
            if offset + len(chunk) < len(body):
                reactor.callLater(0.001, send, offset + len(chunk))
                return
            totals.full_responses += 1
            if lying and changed_since_delivery and totals.first_lie_seen_after is None:
                totals.first_lie_seen_after = totals.lie_requests
            st.delivered_version = version
            request.finish()

        reactor.callLater(0.05, send)
        return server.NOT_DONE_YET

    def body(self, kind: str, index: int, version: int) -> bytes:
        head = f"<html><body><h1>{kind} {index}</h1><p>version {version}</p><p>".encode()
        filler = (f"{kind}-{index}-{version} " * (self.size // 10 + 1)).encode()[: self.size]
        return head + filler + b"</p></body></html>"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--size", type=int, default=16_000)
    parser.add_argument("--period", type=int, default=3)
    parser.add_argument("--liar-honest", type=int, default=2)
    add_serving_arguments(parser, max_seconds=600.0)
    args = parser.parse_args(argv)
    site = server.Site(Site(args.pages, args.size, args.period, args.liar_honest))
    site.noisy = False
    sys.exit(serve(site, HOSTS, max_seconds=args.max_seconds, exit_on_stdin_eof=args.exit_on_stdin_eof))


if __name__ == "__main__":
    time.tzset()
    main()
