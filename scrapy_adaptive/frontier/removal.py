"""Taking URLs out of a frontier: quarantine of unreadable records, forget.

Both keep the counts the state folder's checkpoint compares from ever going
down: a quarantined URL moves from ``urls`` to ``quarantined``, a forgotten
one to ``forgotten``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..change.events import said_gone
from ..model import RecordError, UrlRecord
from ..store.base import Batch
from ..store.keys import NEVER_MS

if TYPE_CHECKING:
    from .hostqueue import HostQueue
    from .leases import Leases
    from .pending import PendingVersions
    from .queues import QueueBook

logger = logging.getLogger(__name__)


def quarantine(book: QueueBook, q: HostQueue, entry: tuple[int, int, bytes], raw: bytes, exc: RecordError) -> None:
    """Move the unreadable record of queue entry *entry* aside, keeping its bytes.

    Only the head of a queue is quarantined (by :meth:`.Frontier.next`): the entry
    is what says where the URL sat, so it can be removed and the queue
    go on.  Counters stay consistent: ``urls`` drops by one,
    ``quarantined`` rises by one, their sum never moves.
    """
    directive, next_ms, fp = entry
    undo = book.keep(q)
    q.urls -= 1
    q.quarantined += 1
    book.totals.urls -= 1
    book.totals.quarantined += 1
    if next_ms < NEVER_MS:
        book.totals.schedulable -= 1
    batch = Batch(quarantined={(q.name, fp): raw}, entries_deleted=[(q.name, directive, next_ms, fp)])
    batch.hosts[q.name] = book.counters(q)
    book.write(batch, q, undo)
    logger.error(
        "The record of fingerprint %s in queue %s is unreadable (%s); it is quarantined under key x/%s "
        "with its bytes kept, and the queue goes on.",
        fp.hex(),
        q.name,
        exc,
        fp.hex(),
    )


def forget(
    found: list[tuple[bytes, UrlRecord]],
    book: QueueBook,
    pending: PendingVersions,
    leases: Leases,
    *,
    rest: float,
    now: float,
) -> list[UrlRecord]:
    """Delete these URLs for good: record, queue entry, pending-delivery
    mark and lease, with their queues' counters, in one atomic write.

    Their change events not yet delivered stay in the outbox
    (``Batch.events``): each reports a verdict that was recorded, and was
    promised at least once; the drain delivers and deletes them as any other.

    A forgotten URL rediscovered later starts a new record.  Each queue's
    ``forgotten`` counter rises as ``urls`` falls, so the sum the state
    folder's checkpoint compares never goes down (a forget is not a
    rollback); visits and versions keep counting what happened.  A URL
    out for download is dropped from its lease: its verdict, when it
    comes, finds no record and is ignored, and its slot rests *rest*
    seconds.  *found* are the ``(fp, record)`` pairs read by the frontier.
    Returns the records deleted.
    """
    batch = Batch()
    gone: list[UrlRecord] = []
    touched: dict[str, HostQueue] = {}
    for fp, record in found:
        q = book.get(record.queue)
        batch.records_deleted.append((record.queue, fp))
        batch.entries_deleted.append((record.queue, record.directive, record.next_ms, fp))
        batch.pending[record.queue, fp] = None
        q.urls -= 1
        q.forgotten += 1
        if record.never:
            q.never -= 1
        if said_gone(record.presence):
            q.gone -= 1
        touched[q.name] = q
        gone.append(record)
    if not gone:
        return []
    for name, q in touched.items():
        batch.hosts[name] = book.counters(q)
    book.write(batch)
    for record, (_, fp) in zip(gone, batch.records_deleted, strict=True):
        q = book.get(record.queue)
        book.totals.urls -= 1
        book.totals.forgotten += 1
        if not record.never:
            book.totals.schedulable -= 1
        pending.drop(fp)
        if leases.take(fp) is not None:
            # its download may still run: the slot rests the longest wait
            q.release_slot(fp, now + rest)
        q.out.pop(fp, None)
    for q in touched.values():
        book.refresh_head(q)
        book.schedule(q)
    return gone
