"""Bringing known URLs' next visits forward, in bulk.

A curated schedule whose window opens (or that is added to a running crawl)
finds its URLs planned by the wait policy, some of them weeks away; their
visits must come sooner without touching anything else of their records.
The frontier owns the records, so the move is made here, one atomic write
per queue, with the queues' heads kept right as
:meth:`.Frontier.add` does for one URL.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..model import RecordError, UrlRecord
from ..store.base import Batch
from ..store.keys import time_to_ms

if TYPE_CHECKING:
    from .frontier import Frontier
    from .hostqueue import Entry

#: records moved per write: one batch per queue, bounded so that a host
#: with a million matching URLs is not one huge write
BATCH = 1000


def bring_forward(frontier: Frontier, plan: Callable[[UrlRecord], float | None]) -> int:
    """Scan every record; *plan* answers when the URL's next visit should be
    at the latest (epoch seconds) or None; a URL planned later moves there.

    URLs out (their verdict plans them anew), never to be visited again, or
    unreadable (quarantined when their turn comes) are left alone, and so
    are hosts another worker of a fleet holds (it moves them itself).  A scan
    of the whole store: for rare events (a window opening), not per tick.
    Returns how many visits moved.
    """
    now_ms = time_to_ms(frontier.clock())
    staged: dict[str, list[tuple[bytes, UrlRecord, int]]] = {}
    moved = 0
    for fp, raw in frontier.store.records():
        if fp in frontier.leases:
            continue
        try:
            record = UrlRecord.from_bytes(raw)
        except RecordError:
            continue
        if record.never:
            continue
        latest = plan(record)
        if latest is None:
            continue
        new_ms = max(now_ms, time_to_ms(latest))
        if new_ms >= record.next_ms:
            continue
        group = staged.setdefault(record.queue, [])
        group.append((fp, record, new_ms))
        if len(group) >= BATCH:
            moved += _write(frontier, record.queue, staged.pop(record.queue))
    for queue, group in staged.items():
        moved += _write(frontier, queue, group)
    return moved


def _write(frontier: Frontier, queue: str, group: list[tuple[bytes, UrlRecord, int]]) -> int:
    book = frontier.book
    q = book.find(queue)
    sharing = frontier.sharing
    if q is None or (sharing is not None and not sharing.issues(queue)):
        return 0  # in a fleet, the worker holding the host moves its URLs
    batch = Batch()
    moves: list[tuple[Entry, Entry]] = []
    for fp, record, new_ms in group:
        old: Entry = (record.directive, record.next_ms, fp)
        new: Entry = (record.directive, new_ms, fp)
        batch.move_entry((queue, *old), (queue, *new))
        record.next_ms = new_ms
        batch.records[queue, fp] = record.to_bytes()
        moves.append((old, new))
    book.write(batch, q)
    for old, new in moves:
        book.moved(q, old, new)
    book.schedule(q)
    return len(moves)
