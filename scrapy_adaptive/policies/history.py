"""Small helpers shared by the wait policies: reading times and the queue out of a record.

A policy has no clock (so the crawler and the simulator run the same code):
the time of the visit being judged is recovered from the record.  The URL
was due at ``fetched + wait`` and the frontier reports how late it was
issued (``visit.overdue``), so the visit happened at their sum.  A first
visit happens ``overdue`` seconds after discovery.  When the verdict carries
its own time (``visit.fetched``: the crawler and the simulator set it), that
time wins: it stays right when a change hint made the visit early.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from ..model import Visit

DAY = 86_400.0


def is_first_visit(history: Mapping[str, Any]) -> bool:
    """True when the record has never been visited (no wait to adapt)."""
    return not history.get("visits") or history.get("fetched") is None or history.get("wait") is None


def elapsed(history: Mapping[str, Any], visit: Visit) -> float | None:
    """Seconds since the previous visit, or None on a first visit.

    The interval actually observed is what an estimator must use (a late
    visit had more time to see a change): ``visit.fetched`` minus the last
    fetch when the visit carries its time, else ``wait + overdue``.  The
    fetch times win because a visit can come *early*: a change hint moves
    the URL forward (``Frontier.hosts.hint``), and ``overdue`` is then counted
    from the new, earlier time, so ``wait + overdue`` would claim the whole
    planned interval.
    """
    if is_first_visit(history):
        return None
    if visit.fetched is not None:
        return max(0.0, float(visit.fetched) - float(history["fetched"]))
    return max(0.0, float(history["wait"]) + float(visit.overdue or 0.0))


def visit_time(history: Mapping[str, Any], visit: Visit) -> float | None:
    """Absolute time of this visit (seconds since the epoch), if knowable."""
    if visit.fetched is not None:
        return float(visit.fetched)
    overdue = float(visit.overdue or 0.0)
    if not is_first_visit(history):
        return float(history["fetched"]) + float(history["wait"]) + overdue
    discovered = history.get("discovered")
    if discovered is None:
        return None
    return float(discovered) + overdue


def url_host(url: str | None) -> str:
    """The URL's host name, lower case ('' when there is none).

    >>> url_host("http://A.Example.com:8080/x"), url_host(None)
    ('a.example.com', '')
    """
    if not url:
        return ""
    return urlsplit(url).hostname or ""


def visit_queue(visit: Visit) -> str:
    """The politeness queue of the visited URL, the key budgets and caps are
    kept under: ``visit.queue``, or the URL's host when the caller did not
    say (old callers)."""
    return visit.queue if visit.queue is not None else url_host(visit.url)


def record_queue(history: Mapping[str, Any], url: str | None) -> str:
    """The politeness queue from a record snapshot (``history["queue"]``), or
    *url*'s host for a snapshot without one."""
    queue = history.get("queue")
    return str(queue) if queue is not None else url_host(url)


def clamp(value: float, low: float, high: float) -> float:
    return min(max(value, low), high)


def policy_memory(history: Mapping[str, Any]) -> dict[str, Any]:
    """A private copy of the policy's per-URL memory from the record."""
    return dict(history.get("policy") or {})
