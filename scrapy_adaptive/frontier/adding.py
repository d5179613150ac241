"""Adding a URL to the frontier: a new one, or a known one asked for again.

:meth:`.Frontier.add` reads the URL's record and takes one of three
roads: a new URL (:func:`add_new`: its record, its queue entry and its
queue's counters in one atomic write, due now), a known one left as it is
(most adds in a crawl: a duplicate), or a known one pulled forward or
preferred (:func:`pull_forward`).  Each keeps its queue's head right, as
:meth:`.Frontier.next` expects.
"""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Any

from ..model import ChangeState, UrlRecord
from ..store.base import Batch, Conflict
from ..store.keys import time_to_ms
from .hostqueue import order
from .priority import directive_of

if TYPE_CHECKING:
    from .leases import Leases
    from .queues import QueueBook


class AddResult(StrEnum):
    NEW = "new"  #: first time this fingerprint is seen
    DUPLICATE = "duplicate"  #: known; nothing changed
    RESCHEDULED = "rescheduled"  #: known; pulled forward or directive raised


def refetch_embed(record: UrlRecord, page_changed: float) -> bool:
    """Whether an embed of a page that changed since *page_changed* is
    fetched again now, with the page (``ADAPTIVE_REVISIT_EMBEDS_ON_CHANGE``).

    Only if it may have changed too: it was not fetched since the page's
    previous visit (a stylesheet many pages share is fetched once for a
    round of their changes, not once per page), and it is not known to stay
    the same (it has not been revisited yet, or it changed at a revisit its
    history still holds).  A resource that never changes keeps its own
    wait, which backs off; one that changes with its pages comes with them.
    """
    if record.fetched is not None and record.fetched >= page_changed:
        return False
    if record.visits < 2:
        return True
    history = record.history
    revisits = history[1:] if len(history) >= record.visits else history  # the first visit found it new
    return any(change == ChangeState.CHANGED.value for _, change, *_ in revisits)


def add_new(
    book: QueueBook,
    now: float,
    fp: bytes,
    url: str,
    queue: str,
    request: dict[str, Any],
    directive: int,
    priority: int = 0,
) -> AddResult:
    """A URL not seen before: due *now* (at a time of its own, so that URLs
    added together keep their order), first of its queue if its entry sorts
    first; in its *priority*'s band if its queue uses priorities
    (:mod:`.priority`)."""
    q = book.get(queue)
    now_ms = q.arrival_ms(time_to_ms(now))
    if priority or q.prioritized:
        directive = max(directive, directive_of(priority))
    record = UrlRecord(url=url, queue=queue, request=request, next_ms=now_ms, directive=directive, discovered=now)
    undo = book.keep(q)
    q.prioritized += bool(priority)
    q.urls += 1
    book.totals.urls += 1
    book.totals.schedulable += 1
    batch = Batch(records={(queue, fp): record.to_bytes()}, hosts={queue: book.counters(q)}, absent=[(queue, fp)])
    batch.entries_put.append((queue, directive, now_ms, fp))
    try:
        book.write(batch, q, undo)
    except Conflict:
        return AddResult.DUPLICATE  # another worker added it a moment ago
    entry = (directive, now_ms, fp)
    if q.head is None or order(entry) < order(q.head):
        q.head = entry
        book.schedule(q)
    return AddResult.NEW


def pull_forward(
    book: QueueBook, leases: Leases, now: float, fp: bytes, record: UrlRecord, directive: int, force: bool
) -> AddResult:
    """A known URL asked for again: earlier (``dont_filter``) or preferred."""
    now_ms = time_to_ms(now)
    new_directive = max(record.directive, directive)
    if not force and record.next_ms > now_ms:
        # a preference orders due URLs; it never makes a URL due (an
        # embed asked for by every page that shows it keeps its own wait)
        new_directive = record.directive
    new_ms = min(record.next_ms, now_ms) if force else record.next_ms
    if (new_directive, new_ms) == (record.directive, record.next_ms):
        return AddResult.DUPLICATE
    q = book.get(record.queue)
    old_entry = (record.directive, record.next_ms, fp)
    batch = Batch()
    batch.move_entry((record.queue, record.directive, record.next_ms, fp), (record.queue, new_directive, new_ms, fp))
    undo = book.keep(q)
    if record.never:
        q.never -= 1
        book.totals.schedulable += 1
        record.failures = 0
        batch.hosts[record.queue] = book.counters(q)
    record.directive, record.next_ms = new_directive, new_ms
    batch.records[record.queue, fp] = record.to_bytes()
    book.write(batch, q, undo)
    out = leases.get(fp)
    if out is not None:
        out.record = record
    book.moved(q, old_entry, (new_directive, new_ms, fp))
    book.schedule(q)
    return AddResult.RESCHEDULED
