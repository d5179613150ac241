"""What a response's caching headers say about how long its content stays.

A URL's first answer is rate evidence before any revisit: a server that
allows a copy to be reused for a day (``Cache-Control: max-age=86400``, or an
``Expires`` a day after its ``Date``) is saying that the content is not
expected to change within a day.  The wait policies take that lifetime as a
prior observation that the URL's own visits then update
(:meth:`~scrapy_adaptive.policies.estimator.RateEstimator.observe_age`); this
module only reads the headers, as RFC 9111 (section 4.2.1) defines the
lifetime:

* ``max-age`` of ``Cache-Control``, if present, wins over ``Expires``;
  ``s-maxage`` is for shared caches and a crawler is a private one;
* otherwise ``Expires`` minus ``Date`` (the server's clock, so a skewed
  local clock does not matter; the fetch time when ``Date`` is missing);
* ``no-store`` and ``no-cache`` grant no lifetime: they say nothing about
  change (many dynamic sites send them on pages that change monthly), so
  they are no evidence either way, not evidence of a fast page.

The web's headers are often wrong.  Nothing here raises: a value that cannot
be read (``max-age=soon``, two different ``max-age``, an ``Expires`` that is
not a date) is ignored and named in :attr:`Freshness.problems`, which the
visit's verdict carries to the crawl log and the stats
(``adaptive/headers/<problem>``).  ``Expires: 0`` and ``-1`` are the
common way of saying "already expired" (RFC 9111 asks caches to read any
invalid date so): no lifetime, and not counted as a problem.  A
``Last-Modified`` later than the response's ``Date`` (the server's clock)
is a generation time or a broken clock: it is counted, and the policies
never read an age from it (:func:`last_modified_problem`).

The first verdict of any answer, before its content is judged, is made
here too (:func:`base_visit`): what its headers say is all it tells yet.

Pure: no I/O, no Scrapy; the clock only when no arrival time is given.
"""

from __future__ import annotations

import math
import re
import time
from dataclasses import dataclass, field

from ..model import Outcome, Visit
from .answer import Answer

#: a problem word of each header (annotations of the visit, stats
#: ``adaptive/headers/<word>``)
BAD_CACHE_CONTROL = "badCacheControl"
BAD_EXPIRES = "badExpires"
FUTURE_LAST_MODIFIED = "futureLastModified"
BAD_LAST_MODIFIED = "badLastModified"
PROBLEMS = (BAD_CACHE_CONTROL, BAD_EXPIRES, FUTURE_LAST_MODIFIED, BAD_LAST_MODIFIED)

#: a Last-Modified up to this many seconds after the Date is a rounding of
#: the two clocks, not a future date
CLOCK_SLACK = 60.0
#: the longest lifetime read (RFC 9111 caps delta-seconds at 2^31 for
#: caches; a larger one is "for ever", which no crawl needs more of)
MAX_LIFETIME = 2.0**31
#: ``Expires`` values that mean "already expired" by convention
_EXPIRED = frozenset({"0", "-1"})
_DIRECTIVE = re.compile(r"^\s*([!#$%&'*+.^_`|~0-9A-Za-z-]+)\s*(?:=\s*(\"[^\"]*\"|[^,\s\"]*))?\s*$")


@dataclass(frozen=True)
class Freshness:
    """The lifetime a response grants (seconds; None: none granted) and the
    header problems met while reading it."""

    lifetime: float | None = None
    problems: tuple[str, ...] = field(default_factory=tuple)


def cache_control_max_age(value: str | None) -> tuple[float | None, bool, bool]:
    """``(max-age seconds or None, no lifetime granted, malformed)`` of a
    ``Cache-Control`` value (several header lines joined by commas).

    >>> cache_control_max_age("public, max-age=3600")
    (3600.0, False, False)
    >>> cache_control_max_age('max-age="60"')  # quoted: tolerated, as caches do
    (60.0, False, False)
    >>> cache_control_max_age("no-cache, max-age=3600")
    (None, True, False)
    >>> cache_control_max_age("max-age=soon")
    (None, False, True)
    """
    if not value:
        return None, False, False
    ages: set[float] = set()
    bad = refused = False
    for part in value.split(","):
        if not part.strip():
            continue
        found = _DIRECTIVE.match(part)
        if found is None:
            bad = True
            continue
        name, argument = found.group(1).lower(), found.group(2)
        if name in ("no-store", "no-cache"):
            refused = True
        elif name == "max-age":
            digits = (argument or "").strip('"')
            if not digits.isascii() or not digits.isdigit():
                bad = True
                continue
            ages.add(min(float(int(digits)), MAX_LIFETIME))
    if len(ages) > 1:  # two different max-age: RFC 9111 says treat as stale
        return None, True, True
    if refused:
        return None, True, bad
    return (next(iter(ages)) if ages else None), False, bad


def freshness(answer: Answer, now: float) -> Freshness:
    """The lifetime *answer* grants, read as RFC 9111 section 4.2.1 does.

    *now* is when the response was received, standing in for a missing or
    unreadable ``Date``.

    >>> freshness(Answer("u", 200, cache_control="max-age=600"), 0.0).lifetime
    600.0
    >>> hour = Answer("u", 200, expires="Thu, 01 Jan 1970 01:00:00 GMT", expires_at=3600.0, served_at=0.0)
    >>> freshness(hour, 0.0).lifetime
    3600.0
    >>> freshness(Answer("u", 200, expires="tomorrow"), 0.0)
    Freshness(lifetime=None, problems=('badExpires',))
    """
    problems: list[str] = []
    max_age, refused, bad = cache_control_max_age(answer.cache_control)
    if bad:
        problems.append(BAD_CACHE_CONTROL)
    lifetime: float | None = None
    if refused:
        lifetime = None
    elif max_age is not None:
        lifetime = max_age
    elif answer.expires is not None:
        until = answer.expires_at
        if until is None or not math.isfinite(until):
            if answer.expires.strip() not in _EXPIRED:
                problems.append(BAD_EXPIRES)
        else:
            lifetime = min(until - _served(answer, now), MAX_LIFETIME)
    if lifetime is not None and not lifetime > 0:
        lifetime = None
    return Freshness(lifetime, tuple(problems))


def _served(answer: Answer, now: float) -> float:
    """When *answer* was served, by the server's clock (*now* without a readable ``Date``)."""
    served = answer.served_at
    return served if served is not None and math.isfinite(served) else now


def last_modified_problem(answer: Answer, now: float) -> str | None:
    """What is wrong with *answer*'s ``Last-Modified`` as rate evidence:
    :data:`BAD_LAST_MODIFIED` when it is not a date (it gives no age, as if
    absent, but a site that sends one deserves the same word as a bad
    ``Expires``), :data:`FUTURE_LAST_MODIFIED` later than the ``Date``
    (*now* without one) by more than :data:`CLOCK_SLACK`, else None.

    >>> last_modified_problem(Answer("u", 200, last_modified="yesterday-ish", modified_at=None), 0.0)
    'badLastModified'
    >>> last_modified_problem(Answer("u", 200), 0.0) is None
    True
    """
    if not (answer.last_modified or "").strip():
        return None
    modified = answer.modified_at
    if modified is None:
        return BAD_LAST_MODIFIED
    return FUTURE_LAST_MODIFIED if modified > _served(answer, now) + CLOCK_SLACK else None


def base_visit(answer: Answer, now: float | None = None) -> Visit:
    """What any answer tells before its content is judged: its status, type
    and validators, the lifetime its caching headers grant and the problems
    met reading them (as annotations), and the site's own date of the
    content from the request that found it (a sitemap ``<lastmod>``), both
    rate evidence for a first visit's wait.  *now*: when the response
    arrived (default: the clock), standing in for a missing ``Date``.
    """
    fetch = answer.fetch
    validation = fetch.validation if fetch is not None else None
    arrived = time.time() if now is None else now
    fresh = freshness(answer, arrived)
    problems = fresh.problems
    if lm_problem := last_modified_problem(answer, arrived):
        problems = (*problems, lm_problem)
    return Visit(
        Outcome.VISITED,
        status=answer.status,
        content_type=answer.content_type,
        size=len(answer.body),
        etag=answer.etag,
        last_modified=answer.last_modified,
        url=answer.url,
        depth=answer.depth,
        annotations=(*((answer.note,) if answer.note is not None else ()), *problems),
        validation=validation,
        prediction=fetch.prediction if fetch is not None and validation is not None else None,
        freshness=fresh.lifetime,
        claimed_modified=answer.claimed_at,
    )
