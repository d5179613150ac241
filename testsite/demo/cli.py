"""Command line for ``python -m testsite.demo``.

The demo site is meant for a developer's own machine and for tests, never for
a network: it serves deliberately misbehaving pages (lying validators, a
"private" area) and has no hardening, so the CLI refuses to bind anything but
a loopback address (:func:`testsite.serving.check_loopback`).
"""

from __future__ import annotations

import argparse
import logging
import math
import time
from collections.abc import Mapping, Sequence

from ..serving import add_serving_arguments, check_loopback, positive_float, serve
from .clock import Clock, FileClock
from .site import DemoSite, make_site

__all__ = ["DEFAULT_HOST", "DEFAULT_PORT", "build_parser", "loopback_host", "main"]

logger = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8731
#: Run by hand or by scripts/demo.sh the site serves until Ctrl-C (or until
#: its parent is gone); this bound only stops one that was forgotten.
DEFAULT_MAX_SECONDS = 7 * 86400.0

#: The exact prefix of the line printed once the site listens; tools parse it.
ANNOUNCE_PREFIX = "Demo site on "


def loopback_host(value: str) -> str:
    """Argparse type: accept only 127.0.0.0/8, ``::1`` (brackets allowed) or ``localhost``."""
    host = value.strip().removeprefix("[").removesuffix("]")
    try:
        return check_loopback(DEFAULT_HOST if host.lower() == "localhost" else host, ipv6=True)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


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
        prog="python -m testsite.demo",
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
        type=positive_float,
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
    add_serving_arguments(parser, max_seconds=DEFAULT_MAX_SECONDS)
    return parser


def _url(host: str, port: int) -> str:
    return f"http://[{host}]:{port}/" if ":" in host else f"http://{host}:{port}/"


def _announce(site: DemoSite, host: str, ports: Mapping[str, int]) -> dict[str, object]:
    """Print the line people (and scripts/demo.sh) read; the URL joins the ready line."""
    url = _url(host, ports[host])
    model = site.model
    print(
        f"{ANNOUNCE_PREFIX}{url} (speed {model.speed:g}x, seed {model.seed}; "
        f"schedule at {url}_demo/schedule) - Ctrl-C to stop",
        flush=True,
    )
    return {"url": url}


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
    return serve(
        site,
        [args.host],
        port=args.port,
        max_seconds=args.max_seconds,
        exit_on_stdin_eof=args.exit_on_stdin_eof,
        ready=lambda ports: _announce(site, args.host, ports),
    )
