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


#: how old an embed's copy may be and still pass for its page's moment,
#: when the embed changed at its last fetch; doubled for each fetch since
#: at which it stayed the same (:func:`composite_tolerance`)
COMPOSITE_WINDOW_S = 5.0
#: the doublings counted at most (5 s × 2^16: about four days)
COMPOSITE_DOUBLINGS = 16


def composite_tolerance(record: UrlRecord) -> float:
    """How long ago an embed may have been fetched for its copy to stand
    for a page captured now.

    An embed that changed at its last fetch (a chart redrawn with its
    page's data) must come with every capture: :data:`COMPOSITE_WINDOW_S`.
    One that stayed the same at each of its last k fetches (a logo, a
    stylesheet every page shares) is ever less likely to have changed with
    this page: 2^k times that, so a shared file that never changes is
    confirmed once for a burst of its pages' changes, then rarely, while
    the first change it shows makes it come with each capture again.
    """
    streak = 0
    for _, change, *_ in reversed(record.history):
        if change != ChangeState.UNCHANGED.value:
            break
        streak += 1
    return COMPOSITE_WINDOW_S * 2.0 ** min(streak, COMPOSITE_DOUBLINGS)


def refetch_embed(record: UrlRecord, now: float) -> bool:
    """Whether an embed of a page captured anew (first seen or changed) is
    fetched again now, with the page (``ADAPTIVE_REVISIT_EMBEDS_ON_CHANGE``):
    a composite capture.

    A change of the page is evidence for its embeds, and an archived page
    replays with the embeds stored nearest its moment: an embed stored from
    before the page's change would replay a mixed page.  So each embed
    comes unless its copy is recent enough to stand for this moment
    (:func:`composite_tolerance`).  One stored before needs only a
    conditional request (its validators, as trusted): a few hundred bytes
    when it stayed the same.
    """
    fetched = record.fetched
    return fetched is None or now - fetched > composite_tolerance(record)


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
    out = leases.lent(fp)
    if out is not None:
        out.renew(record)
    book.moved(q, old_entry, (new_directive, new_ms, fp))
    book.schedule(q)
    return AddResult.RESCHEDULED
