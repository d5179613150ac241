"""Command line for ``python -m scrapy_adaptive.demo``.

The demo site is meant for a developer's own machine and for tests, never for
a network: it serves deliberately misbehaving pages (lying validators, a
"private" area) and has no hardening, so the CLI refuses to bind anything but
a loopback address.
"""

from __future__ import annotations

import argparse
import ipaddress
import logging
import math
import sys
import time
from collections.abc import Sequence
from typing import Any, cast

from .clock import Clock, FileClock
from .site import DemoSite, make_site

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "build_parser", "loopback_host", "main"]

logger = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8731

#: The exact prefix of the line printed once the site listens; tools parse it.
READY_PREFIX = "Demo site on "


def loopback_host(value: str) -> str:
    """Argparse type: accept only 127.0.0.0/8, ``::1`` or ``localhost``."""
    host = value.strip().removeprefix("[").removesuffix("]")
    if host.lower() == "localhost":
        return DEFAULT_HOST
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        address = None
    if address is None or not address.is_loopback:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a loopback address; the demo site only listens on 127.0.0.0/8, ::1 or localhost"
        )
    return str(address)


def _positive_float(value: str) -> float:
    number = float(value)
    if not number > 0 or math.isinf(number):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {value!r}")
    return number


def _non_negative_float(value: str) -> float:
    number = float(value)
    if not number >= 0 or math.isinf(number):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {value!r}")
    return number


def _port(value: str) -> int:
    number = int(value)
    if not 0 <= number <= 65535:
        raise argparse.ArgumentTypeError(f"port must be in 0..65535, got {value!r}")
    return number


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m scrapy_adaptive.demo",
        description="Serve a local website whose pages change on a known schedule (truth at /_demo/schedule).",
    )
    parser.add_argument(
        "--host",
        type=loopback_host,
        default=DEFAULT_HOST,
        help="loopback address to bind (default %(default)s)",
    )
    parser.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_PORT,
        help="TCP port; 0 picks a free one (default %(default)s)",
    )
    parser.add_argument(
        "--speed",
        type=_positive_float,
        default=1.0,
        help="multiply the rate of change, e.g. 10 (default %(default)s)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed for phases, random change times and text (default %(default)s)",
    )
    parser.add_argument(
        "--crawl-delay",
        type=_non_negative_float,
        default=None,
        help="add 'Crawl-delay: N' to robots.txt (default: absent)",
    )
    parser.add_argument(
        "--clock-file",
        default=None,
        metavar="PATH",
        help="read the current Unix time from PATH on every request instead of the system clock (for tests)",
    )
    parser.add_argument(
        "--start-time",
        type=float,
        default=None,
        metavar="UNIX_SECONDS",
        help="wall-clock instant of demo time 0 (default: now)",
    )
    parser.add_argument("--verbose", action="store_true", help="log every request")
    return parser


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def _serve(site: DemoSite, host: str, port: int) -> int:
    """Listen, announce the real URL (``--port 0``), run until SIGINT/SIGTERM."""
    from twisted.internet import reactor as default_reactor
    from twisted.internet.error import CannotListenError

    reactor = cast(Any, default_reactor)
    try:
        listening = reactor.listenTCP(port, site, interface=host)
    except CannotListenError as exc:
        print(
            f"demo site: cannot listen on {host}:{port}: {exc.socketError}",
            file=sys.stderr,
        )
        return 1
    url = _url(host, listening.getHost().port)
    model = site.model
    print(
        f"{READY_PREFIX}{url} (speed {model.speed:g}x, seed {model.seed}; "
        f"schedule at {url}_demo/schedule) - Ctrl-C to stop",
        flush=True,
    )
    reactor.run()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.verbose:
        logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    clock: Clock = FileClock(args.clock_file) if args.clock_file else time.time
    try:
        site = make_site(
            clock,
            args.speed,
            args.seed,
            start=args.start_time,
            crawl_delay=args.crawl_delay,
            verbose=args.verbose,
        )
    except ValueError as exc:
        parser.error(str(exc))
    return _serve(site, args.host, args.port)
