"""Dates as the web writes them, read in one place.

* HTTP dates (RFC 7231, 7.1.1.1: the IMF-fixdate ``Sun, 06 Nov 1994
  08:49:37 GMT`` and the obsolete RFC 850 and asctime forms), as in
  ``Last-Modified``: :func:`parse_http_date`;
* W3C datetimes (the ISO 8601 profile of sitemaps' ``<lastmod>`` and feeds,
  https://www.w3.org/TR/NOTE-datetime, at every precision from a year to
  fractions of a second): :func:`parse_w3c_datetime`;
* what a spider may give as a change hint's time (either of those, seconds
  since the epoch, a ``datetime``): :func:`parse_time`.

All return seconds since the epoch.  A date without a zone is UTC (HTTP
dates are UTC by definition; a W3C date without a zone names a day or an
instant somewhere, and UTC is the reading that errs least).  Pure: no clock,
no I/O, no Scrapy.
"""

from __future__ import annotations

import math
from datetime import UTC, date, datetime
from email.utils import parsedate_to_datetime
from functools import lru_cache
from typing import Any

from dateutil.parser import isoparse

#: digits and nothing else read as a date first, as seconds only if they are
#: none: a W3C year (``"2005"``) and an ISO 8601 basic date (``"20270101"``,
#: which as seconds would be a day of 1970)
_DATE_DIGITS = (4, 8)


def _seconds(moment: datetime) -> float:
    """Seconds since the epoch; a moment without a zone is taken as UTC."""
    return (moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)).timestamp()


def parse_http_date(text: str | None) -> float | None:
    """Seconds since the epoch of an HTTP date, or None when *text* is not one.

    >>> parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT")  # IMF-fixdate
    784111777.0
    >>> parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT")  # RFC 850
    784111777.0
    >>> parse_http_date("Sun Nov  6 08:49:37 1994")  # asctime
    784111777.0
    >>> parse_http_date("yesterday") is None
    True
    """
    if not text:
        return None
    return _parse_http_date(text)


@lru_cache(maxsize=4096)
def _parse_http_date(text: str) -> float | None:
    # a response's Date repeats within a second and a page's Last-Modified
    # at each of its visits: both are read at every visit
    try:
        parsed = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if parsed is None:  # pragma: no cover - Python < 3.10 returned None
        return None
    try:
        return _seconds(parsed)
    except (OverflowError, OSError, ValueError):
        return None


def parse_w3c_datetime(text: str) -> float:
    """Seconds since the epoch of a W3C (ISO 8601) datetime; raise ValueError.

    A bare year or month means its first instant, a date its midnight, UTC
    when no zone is given.  The wider ISO 8601 forms ``dateutil`` reads
    (``2005-07-16 19:20``, ``20050716``, week dates) are accepted too.

    >>> parse_w3c_datetime("2005"), parse_w3c_datetime("2005-07"), parse_w3c_datetime("2005-07-16")
    (1104537600.0, 1120176000.0, 1121472000.0)
    >>> parse_w3c_datetime("2005-07-16T19:20+01:00"), parse_w3c_datetime("2005-07-16T19:20:30.45Z")
    (1121538000.0, 1121541630.45)
    """
    try:
        return _seconds(isoparse(text.strip()))
    except (ValueError, OverflowError, OSError, IndexError, TypeError) as exc:
        raise ValueError(f"not a W3C datetime: {text!r} ({exc})") from None


def parse_claimed(value: Any) -> float | None:
    """The instant a change hint claims (a sitemap's ``<lastmod>``, a feed
    entry's date: :func:`parse_time`'s forms), or None: no date, or one that
    cannot be read (the scheduler warns about those when the request comes in).

    >>> parse_claimed("2005-07-01"), parse_claimed("soon"), parse_claimed(None)
    (1120176000.0, None, None)
    """
    try:
        claimed = parse_time(value)
    except (ValueError, OverflowError, OSError, TypeError):
        return None
    return claimed if claimed is not None and math.isfinite(claimed) else None


def parse_time(value: Any) -> float | None:
    """Seconds since the epoch from the forms a change hint may take; raise ValueError.

    A number (``int``, ``float``, or a numeric string other than four digits)
    is seconds since the epoch; a ``datetime`` or ``date`` (UTC without a
    zone); text: a W3C datetime (a four-digit string is a year, an
    eight-digit one an ISO 8601 basic date) or an HTTP date; None is None.
    Times before 1970 are refused.

    >>> parse_time("Sun, 06 Nov 1994 08:49:37 GMT")
    784111777.0
    >>> parse_time("1994-11-06T08:49:37Z"), parse_time("1994-11-06")
    (784111777.0, 784080000.0)
    >>> parse_time("2005"), parse_time("2005-07"), parse_time(2005)
    (1104537600.0, 1120176000.0, 2005.0)
    >>> parse_time(784111777), parse_time("784111777.5"), parse_time(None)
    (784111777.0, 784111777.5, None)
    >>> parse_time("19941106") == parse_time("1994-11-06")
    True
    """
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError("a boolean is not a time")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, datetime):
        seconds = _seconds(value)
    elif isinstance(value, date):
        seconds = datetime(value.year, value.month, value.day, tzinfo=UTC).timestamp()
    elif isinstance(value, str):
        seconds = _parse_text(value.strip())
    else:
        raise ValueError(f"a {type(value).__name__} is not a time")
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError("not a finite time after 1970")
    return seconds


def _parse_text(text: str) -> float:
    if not text:
        raise ValueError("empty")
    digits = len(text) in _DATE_DIGITS and text.isascii() and text.isdigit()
    if not digits:
        try:
            return float(text)
        except ValueError:
            pass
    try:
        return parse_w3c_datetime(text)
    except ValueError:
        if digits:  # eight digits that are no date ("94694400"): seconds after all
            return float(text)
    seconds = parse_http_date(text)
    if seconds is None:
        raise ValueError(f"unreadable time {text!r}")
    return seconds
