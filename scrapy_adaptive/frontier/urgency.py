"""Which of a queue's due URLs to fetch first.

A host's politeness lets it serve one URL at a time, so when several of
its URLs are due at once some must wait, and what the wait costs depends on
the URL.  A page planned every 10 s that comes 6 s late has lost more than
half an interval's worth of chances to catch a version before the next one
overwrites it; a page planned every 20 minutes that comes 6 s late has lost
nothing that counts.  Serving due URLs in order of due time (first come,
first served) gives both the same lateness, and under load the pages that
change fastest, which the wait policy gave the shortest waits because they
are worth the most fetches, are exactly the ones that lose.

So among a queue's first due URLs the frontier issues the one that is the
latest *relative to its own wait*: lateness ÷ wait.  That is the share of
its planned interval a URL has been kept waiting beyond plan; for a page
changing about once per wait (what the policies aim at) it is proportional
to the versions its lateness puts at risk.  It needs no knowledge of the
policy, only the wait the policy chose, so it holds for every wait policy.

* A URL never visited has no wait of its own: it ranks as if it had the
  shortest wait among the candidates, so first visits keep their place in
  time against the fastest pages and go ahead of slower ones.  A head never
  visited is therefore issued without weighing: it is due the longest and
  ranks with the shortest wait, so no candidate can be later than it.
* No URL waits for ever: the queue's head (the one due the longest) is
  issued as soon as its lateness reaches its own wait, whatever else is due.
* Only the first :data:`WINDOW` due URLs are weighed, and none at all when
  the head is due on time or already late by its own wait.  A due URL stays
  due until it is issued, so consecutive issues from a queue weigh mostly
  the same URLs: the queue keeps the ranking wait of each URL it weighed
  (``HostQueue.urgency_waits``, at most :data:`KEPT` of them, forgotten
  when the URL's verdict changes its wait), and a URL's record is read
  once while it waits, plus once more if it is the one issued.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..model import RecordError, UrlRecord
from ..model.record import ranking_fields
from ..store.base import Store
from .hostqueue import Entry, HostQueue
from .readahead import window_from

if TYPE_CHECKING:
    from .queues import QueueBook

#: how many of a queue's due URLs are weighed against each other (a seek
#: for them reads as many, and the queue keeps them as its window:
#: :data:`.readahead.AHEAD` + :data:`.readahead.GROWTH` is at least this)
WINDOW = 8

#: ranking waits a queue keeps between issues
KEPT = 4 * WINDOW

#: the shortest wait a ranking divides by (seconds): a zero wait (a retry
#: due at once, a policy's minimum) must not make a URL infinitely urgent
_FLOOR = 1.0


def _wait(visits: int, wait: float | None) -> float | None:
    """The wait a URL is ranked by: its last (at least :data:`_FLOOR`), or
    None for a URL never visited."""
    if not visits or not wait:
        return None
    return max(wait, _FLOOR)


def pick(waits: Sequence[float | None], due_ms: Sequence[int], now_ms: int) -> int:
    """Index of the candidate to issue.

    The candidates are a queue's due entries in queue order (the first is
    the head: the highest directive, due the longest), all with the head's
    directive, given by their ranking waits (None: never visited) and due
    times.  Returns 0 (the head) unless another candidate is later relative
    to its wait and the head's own lateness is still below its wait.
    """
    if len(waits) < 2:
        return 0
    known = [w for w in waits if w is not None]
    shortest = min(known) if known else _FLOOR
    # each candidate's lateness in its own waits (a URL never visited: in the shortest)
    late = [max(0, now_ms - due) / 1000 / (wait or shortest) for wait, due in zip(waits, due_ms)]
    if late[0] >= 1.0:
        return 0
    return max(range(len(late)), key=late.__getitem__)  # the first of equals: the earlier in the queue


def _ranking_wait(store: Store, q: HostQueue, fp: bytes) -> tuple[bool, float | None]:
    """``(readable, wait)`` of a due URL, from what the queue kept or one read."""
    kept = q.urgency_waits
    if fp in kept:
        return True, kept[fp]
    raw = store.get_record(q.name, fp)
    if raw is None:
        return False, None
    try:
        wait = _wait(*ranking_fields(raw))
    except RecordError:
        return False, None
    if len(kept) >= KEPT:
        del kept[next(iter(kept))]  # the longest kept
    kept[fp] = wait
    return True, wait


def _weigh(
    store: Store,
    q: HostQueue,
    candidates: Iterable[Entry],
    directive: int,
    now_ms: int,
    entries: list[Entry],
    waits: list[float | None],
) -> bool:
    """Add to *entries* and *waits* the due URLs of *candidates* (the queue's
    entries from its head on) up to :data:`WINDOW`; True if the weighing
    ended before the candidates did (a URL not due, another band, enough)."""
    head_fp = entries[0][2]
    for entry in candidates:
        if entry[0] != directive or entry[1] > now_ms or len(entries) >= WINDOW:
            return True
        if entry[2] in q.out or entry[2] == head_fp:
            continue
        readable, wait = _ranking_wait(store, q, entry[2])
        if readable:
            entries.append(entry)
            waits.append(wait)
    return False


def most_urgent(book: QueueBook, q: HostQueue, head: UrlRecord, now_ms: int) -> tuple[int, bytes, UrlRecord]:
    """``(next_ms, fp, record)`` of the due URL of *q* to issue: its head
    (whose *head* record the caller read) unless another of its first due
    URLs is later relative to its own wait (:func:`pick`).

    Records that are missing or unreadable are left out of the weighing:
    the frontier drops or quarantines them when they become the head.
    """
    assert q.head is not None
    store = book.store
    directive, head_ms, head_fp = q.head
    own = _wait(head.visits, head.wait)
    if own is None or head_ms >= now_ms or (now_ms - head_ms) / 1000 >= own:
        # never visited (it ranks as the shortest wait and is the latest: no
        # candidate can beat it), on time, or late by a whole wait: nothing to weigh
        return head_ms, head_fp, head
    entries: list[Entry] = [q.head]
    waits: list[float | None] = [own]
    # the queue's readahead window holds the next entries when it reaches far
    # enough (the queue's end, or a URL not due or of another band): no seek;
    # else one seek, which becomes the window the next issues weigh in
    held = window_from(q, q.head)
    weighed = held is not None and _weigh(store, q, held[0], directive, now_ms, entries, waits)
    if not weighed and not (held is not None and held[1]):
        del entries[1:], waits[1:]
        _weigh(store, q, book.read_ahead(q, q.head, WINDOW), directive, now_ms, entries, waits)
    chosen = pick(waits, [e[1] for e in entries], now_ms)
    if chosen:
        _, next_ms, fp = entries[chosen]
        q.urgency_waits.pop(fp, None)
        raw = store.get_record(q.name, fp)
        try:
            record = UrlRecord.from_bytes(raw) if raw is not None else None
        except RecordError:
            record = None
        if record is not None and record.next_ms == next_ms:
            return next_ms, fp, record
    q.urgency_waits.pop(head_fp, None)
    return head_ms, head_fp, head
