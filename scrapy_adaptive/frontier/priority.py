"""``Request.priority`` among a queue's due URLs.

Scrapy users order their crawl with priorities (``DEPTH_PRIORITY``, a login
page first, detail pages before listings), and Heritrix's frontier likewise
orders by precedence within what is due.  Here a priority orders URLs that
are *due*; it never makes one due sooner, and a host's politeness and the
budget are untouched: they decide *when* a queue may issue, the priority
*which* of its due URLs goes.

A queue's entries sort by directive (higher first), then time.  An entry
not yet due cannot carry a priority's directive: it would sort ahead of
URLs already due and hold its queue back until its own time.  So:

* a revisit waits in the time-ordered band (:data:`.keys.SCHEDULED`),
  whatever its priority;
* a URL that is due takes its priority's directive
  (:func:`directive_of`): a new URL at once, since it is due when added; a
  revisit when it falls due, moved by :func:`promote_due` before its queue
  issues;
* within one directive, the earlier time first: equal priorities go first
  in, first out (a new URL's time is the moment it was added, made unique
  per frontier so that two added in the same millisecond keep their order).

A queue where no request ever carried a priority other than 0 keeps the
time order alone (no promotion, no extra read): the common crawl pays
nothing.  Priorities beyond ``±PRIORITY_SPAN`` share the outermost bands.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..model import RecordError, UrlRecord
from ..store.base import Batch
from ..store.keys import PRIORITY_SPAN, PRIORITY_ZERO, SCHEDULED

if TYPE_CHECKING:
    from ..store.base import Store
    from .hostqueue import HostQueue
    from .queues import QueueBook

#: due revisits moved to their priority's band per issue of their queue (the
#: rest on the next issues: a backlog moves over, the issue stays short)
PROMOTE = 256


def directive_of(priority: int) -> int:
    """The directive of a due URL of *priority* (0 in the middle)."""
    return PRIORITY_ZERO + max(-PRIORITY_SPAN, min(PRIORITY_SPAN, priority))


def stored_priority(request: dict[str, Any]) -> int:
    """The priority of a stored request (0 if it has none, or not an int)."""
    priority = request.get("priority", 0)
    return priority if type(priority) is int else 0


def promote_due(book: QueueBook, store: Store, q: HostQueue, now_ms: int) -> bool:
    """Move up to :data:`PROMOTE` of *q*'s due time-ordered entries to their
    priority's band, so that they sort among the queue's other due URLs by
    priority.  Only for a queue where priorities are in use.  Returns
    whether any moved (the caller refreshes the head).

    Unreadable or missing records are left where they are: the frontier
    quarantines or drops them when their entry comes up.
    """
    moves: list[tuple[tuple[int, int, bytes], UrlRecord]] = []
    for entry in store.queue_entries(q.name, limit=len(q.out) + PROMOTE, start=(SCHEDULED, 0, b"")):
        directive, next_ms, fp = entry
        if directive != SCHEDULED or next_ms > now_ms or len(moves) >= PROMOTE:
            break
        if fp in q.out:
            continue
        raw = store.get_record(q.name, fp)
        if raw is None:
            continue
        try:
            record = UrlRecord.from_bytes(raw)
        except RecordError:
            continue
        if record.next_ms != next_ms or record.directive != SCHEDULED:
            continue  # the entry and its record disagree: left for the issue to sort out
        moves.append((entry, record))
    if not moves:
        return False
    batch = Batch()  # records and entries only: nothing in memory to put back if it fails
    for (_, next_ms, fp), record in moves:
        record.directive = directive_of(stored_priority(record.request))
        batch.move_entry((q.name, SCHEDULED, next_ms, fp), (q.name, record.directive, next_ms, fp))
        batch.records[q.name, fp] = record.to_bytes()
    book.write(batch, q)
    return True
