"""The server side of every test site: loopback hosts, ports, a bounded reactor.

A site builds its :class:`twisted.web.server.Site` and hands it to
:func:`serve`, which listens on each host (a free port unless one is given),
prints one line ``READY {"hosts": {host: port, ...}, ...}`` that
:class:`testsite.process.SiteProcess` waits for, and runs the reactor until
the first of: SIGTERM/SIGINT, stdin EOF (with ``exit_on_stdin_eof``: the
parent let go or died), the parent process gone, or ``max_seconds``.

Twisted is imported inside the functions, so importing this module (or a
site module, in the test process) never installs a reactor.

Why several loopback addresses: Linux routes all of 127.0.0.0/8 to the
loopback interface, so 127.0.0.1, .2, .3 are distinct *hosts* (distinct
Scrapy download slots, distinct frontier queues) with no DNS and no network.
Anything that is not a loopback address is refused.
"""

from __future__ import annotations

import argparse
import contextlib
import ipaddress
import json
import math
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from twisted.web.server import Request, Site

__all__ = [
    "READY_PREFIX",
    "add_serving_arguments",
    "answer_not_modified",
    "check_loopback",
    "json_response",
    "positive_float",
    "respond_later",
    "serve",
]

#: The exact prefix of the line a site prints once every port listens.
READY_PREFIX = "READY "

#: How often the server checks that its parent process is still there.
_PARENT_CHECK_SECONDS = 1.0


def check_loopback(host: str, *, ipv6: bool = False) -> str:
    """``host`` as a normalised address if it is a loopback IP address, else ``ValueError``.

    Only IP literals: 127.0.0.0/8, and ``::1`` with ``ipv6``.  Test sites
    serve deliberately misbehaving pages and have no hardening, so they
    must never listen on (or be asked to contact) anything else.
    """
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is None or not address.is_loopback or (address.version == 6 and not ipv6):
        allowed = "127.0.0.0/8 or ::1" if ipv6 else "127.0.0.0/8"
        raise ValueError(f"refusing non-loopback host {host!r}: not a loopback address (only {allowed})")
    return str(address)


def positive_float(value: str) -> float:
    """Argparse type: a positive, finite number."""
    number = float(value)
    if not (number > 0 and math.isfinite(number)):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value!r}")
    return number


def add_serving_arguments(parser: argparse.ArgumentParser, *, max_seconds: float) -> None:
    """The options every site's command line shares: when to stop."""
    parser.add_argument(
        "--max-seconds",
        type=positive_float,
        default=max_seconds,
        help="stop serving after this long regardless (default %(default)g)",
    )
    parser.add_argument(
        "--exit-on-stdin-eof",
        action="store_true",
        help="stop when stdin is closed (SiteProcess passes it)",
    )


def respond_later(request: Request, seconds: float, body: bytes | Callable[[], bytes]) -> int:
    """Send ``body`` (or what it returns, then) after ``seconds``; return ``NOT_DONE_YET``.

    A reactor timer, not a sleep, so concurrent slow requests wait in
    parallel; a client that hangs up first is never written to.
    """
    from twisted.internet import reactor as _reactor
    from twisted.web import server

    reactor: Any = _reactor  # the global reactor; its zope interfaces confuse type checkers

    def respond() -> None:
        request.write(body() if callable(body) else body)
        request.finish()

    call = reactor.callLater(seconds, respond)

    def client_gone(_: object) -> None:
        if call.active():
            call.cancel()

    request.notifyFinish().addErrback(client_gone)
    return server.NOT_DONE_YET


def json_response(request: Request, doc: object, *, indent: int | None = None) -> bytes:
    """``doc`` as a JSON body never to be cached: a site's control and ground-truth endpoints."""
    request.setHeader(b"content-type", b"application/json")
    request.setHeader(b"cache-control", b"no-store")
    return json.dumps(doc, indent=indent).encode("utf-8") + b"\n"


def answer_not_modified(request: Request) -> int:
    """Send a 304 with no body; return ``NOT_DONE_YET``.

    Answered directly because Twisted would put ``Content-Length: 0`` on a
    returned empty body, and RFC 9110 forbids a length that differs from the
    full representation's.
    """
    from twisted.web import server

    request.setResponseCode(304)
    request.responseHeaders.removeHeader(b"content-type")
    request.write(b"")
    request.finish()
    return server.NOT_DONE_YET


def serve(
    site: Site,
    hosts: Sequence[str],
    *,
    max_seconds: float,
    port: int = 0,
    exit_on_stdin_eof: bool = False,
    ready: Callable[[dict[str, int]], Mapping[str, object]] | None = None,
) -> int:
    """Listen on ``port`` (0: a free one each) at every host and serve; the exit status.

    ``ready(ports)`` runs once every host listens and returns extra fields
    for the ready line (it may print a line for people first); it is where
    a site that needs its own URLs finishes building itself.  Returns 1,
    with a message on stderr, when a port cannot be bound.
    """
    from twisted.internet import reactor as _reactor
    from twisted.internet import stdio, task
    from twisted.internet.error import CannotListenError, ReactorNotRunning
    from twisted.internet.protocol import Protocol

    reactor: Any = _reactor  # see respond_later
    if not (max_seconds > 0 and math.isfinite(max_seconds)):
        raise ValueError(f"max_seconds ({max_seconds!r}) must be a positive, finite number")
    addresses = [check_loopback(host, ipv6=True) for host in hosts]
    ports: dict[str, int] = {}
    for host in addresses:
        try:
            ports[host] = reactor.listenTCP(port, site, interface=host).getHost().port
        except CannotListenError as exc:
            print(f"cannot listen on {host}:{port}: {exc.socketError}", file=sys.stderr, flush=True)
            return 1

    def stop() -> None:
        with contextlib.suppress(ReactorNotRunning):
            reactor.stop()

    if exit_on_stdin_eof:

        class StdinWatcher(Protocol):
            def connectionLost(self, reason: object = None) -> None:  # noqa: N802 (Twisted's name)
                stop()

        standard_io: Any = stdio.StandardIO  # stdout stays ours: the ready line goes there
        standard_io(StdinWatcher(), stdout=os.open(os.devnull, os.O_WRONLY))

    parent = os.getppid()
    watch = task.LoopingCall(lambda: None if os.getppid() == parent else stop())
    watch.start(_PARENT_CHECK_SECONDS, now=False)
    reactor.callLater(max_seconds, stop)

    def announce() -> None:
        extra = dict(ready(ports)) if ready is not None else {}
        print(READY_PREFIX + json.dumps({"hosts": ports, **extra}), flush=True)

    reactor.callWhenRunning(announce)
    reactor.run()
    return 0
