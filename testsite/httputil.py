"""HTTP details every test site answers the same way.

Dates, ``ETag`` comparison, whether a conditional request gets a 304, and
``robots.txt``.  Pure functions of header values, so they are unit-tested
without a server; :func:`not_modified` reads them off a Twisted request.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from email.utils import formatdate, parsedate_to_datetime
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from twisted.web.server import Request

__all__ = ["etag_matches", "http_date", "not_modified", "parse_http_date", "quote_etag", "robots_txt"]


def http_date(seconds: float) -> str:
    """An IMF-fixdate (``Sun, 06 Nov 1994 08:49:37 GMT``), truncated to whole seconds."""
    return formatdate(math.floor(seconds), usegmt=True)


def parse_http_date(value: str) -> float | None:
    """Unix seconds of an HTTP-date header value, or ``None`` if malformed."""
    try:
        return parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def quote_etag(value: str) -> str:
    """``abc`` -> ``"abc"``; already quoted or weak (``W/"abc"``) tags unchanged."""
    return value if value.startswith(('"', "W/")) else f'"{value}"'


def etag_matches(header: str, etag: str) -> bool:
    """``If-None-Match`` evaluation: weak comparison (RFC 9110 13.1.2) against a list or ``*``."""
    opaque = etag.removeprefix("W/")
    for candidate in header.split(","):
        candidate = candidate.strip()
        if candidate == "*" or (candidate and candidate.removeprefix("W/") == opaque):
            return True
    return False


def is_not_modified(
    if_none_match: str | None, if_modified_since: str | None, etag: str | None, modified: float | None
) -> bool:
    """Whether a conditional request may be answered with 304 (RFC 9110 13.2.2).

    ``If-None-Match`` wins over ``If-Modified-Since`` when both are present.
    ``modified`` is the instant behind ``Last-Modified``; HTTP dates have a
    resolution of one second, so it is compared truncated.
    """
    if if_none_match is not None:
        return etag is not None and etag_matches(if_none_match, etag)
    if if_modified_since is None or modified is None:
        return False
    since = parse_http_date(if_modified_since)
    return since is not None and math.floor(modified) <= since


def not_modified(request: Request, etag: str | None, modified: float | None) -> bool:
    """:func:`is_not_modified` for a Twisted request's conditional headers."""
    inm = request.getHeader(b"if-none-match")
    ims = request.getHeader(b"if-modified-since")
    return is_not_modified(
        None if inm is None else inm.decode("latin-1"),
        None if ims is None else ims.decode("latin-1"),
        etag,
        modified,
    )


def robots_txt(disallow: Sequence[str] = (), crawl_delay: float | None = None) -> bytes:
    """``robots.txt`` for every user agent.

    ``Crawl-delay`` is omitted unless given, because its presence changes a
    polite crawler's pacing and a site should opt in explicitly.
    """
    lines = ["User-agent: *"]
    lines += [f"Disallow: {path}" for path in disallow]
    if crawl_delay is not None:
        lines.append(f"Crawl-delay: {crawl_delay:g}")
    return ("\n".join(lines) + "\n").encode("ascii")
