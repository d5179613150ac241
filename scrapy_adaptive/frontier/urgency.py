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

So among a queue's first due URLs the frontier issues the one whose
lateness puts the most versions at risk: lateness ÷ wait, the share of its
planned interval it has been kept waiting beyond plan, times the share of
its visits that found a version, what a visit of it is worth.  It ranks by
its *wait per version*, wait ÷ that share: a page that found a version at
every visit ranks by its wait, one that found one at every tenth (a static
page, a slow one planned too soon) by ten waits, so a congested host's
lateness falls on the visits that find least.  The share is counted from
the URL's own record (its first visit's version left out, half a version
in one visit as a prior), so it needs no knowledge of the policy, only the
wait it chose and what the visits found: it holds for every wait policy.

* A URL never visited has no wait of its own: it ranks as if it had the
  shortest wait per version among the candidates, so first visits keep their place in
  time against the fastest pages and go ahead of slower ones.  A head never
  visited is therefore issued without weighing: it is due the longest and
  ranks with the shortest wait, so no candidate can be later than it.
* No URL waits for ever: the queue's head (the one due the longest) is
  issued as soon as its lateness reaches its own wait, whatever else is due.
* Only the first :data:`WINDOW` due URLs are weighed, and none at all when
  the head is due on time or already late by its own wait.  The window is
  wide enough to hold a congested host's whole backlog (on the changing web
  a URL is issued up to 70 politeness delays late): a URL planned at the
  minimum wait behind that many due URLs is weighed at once, not once the
  URLs due before it have gone.  The weighing stops at the first URL not
  due, so a queue on time weighs none of its later URLs.  A due URL stays
  due until it is issued, so consecutive issues from a queue weigh mostly
  the same URLs: the queue keeps the wait per version of each URL it weighed
  (``HostQueue.urgency_waits``, at most :data:`KEPT` of them, forgotten
  when the URL's verdict changes its wait), and a URL's record is read
  once while it waits, plus once more if it is the one issued.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from ..model import RecordError, UrlRecord
from ..store.base import Store
from .hostqueue import Entry, HostQueue
from .readahead import window_from

#: how many of a queue's due URLs are weighed against each other: a
#: congested host's backlog (8 weighed only the first of its 20–70 due URLs)
WINDOW = 64

#: ranking waits a queue keeps between issues (a float each, per queue
#: with a backlog): the window and the URLs that became due since
KEPT = 2 * WINDOW

#: the shortest wait a ranking divides by (seconds): a zero wait (a retry
#: due at once, a policy's minimum) must not make a URL infinitely urgent
_FLOOR = 1.0


def _wait(record: UrlRecord) -> float | None:
    """The wait *record* was planned at (None: never visited)."""
    if not record.visits or not record.wait:
        return None
    return max(record.wait, _FLOOR)


def _wait_per_version(record: UrlRecord) -> float | None:
    """The wait *record* ranks by: its wait ÷ the share of its visits that
    found a version (the first visit's left out, half a version in one visit
    as a prior: a URL visited once counts 0.5).

    >>> _wait_per_version(UrlRecord("u", "q", {}, 0, visits=2, versions=2, wait=15.0))
    20.0
    >>> _wait_per_version(UrlRecord("u", "q", {}, 0, visits=10, versions=1, wait=10.0))
    200.0
    """
    wait = _wait(record)
    if wait is None:
        return None
    found = min(1.0, max(record.versions - 0.5, 0.5) / record.visits)
    return wait / found


def pick(waits: Sequence[float | None], due_ms: Sequence[int], now_ms: int) -> int:
    """Index of the candidate to issue.

    The candidates are a queue's due entries in queue order (the first is
    the head: the highest directive, due the longest), all with the head's
    directive, given by their ranking waits (their waits per version; None:
    never visited) and due times.  Returns 0 (the head) unless another
    candidate is later relative to its ranking wait and the head's own
    lateness is still below its ranking wait (:func:`most_urgent` issues a
    head late by its planned wait before weighing).
    """
    if len(waits) < 2:
        return 0
    known = [w for w in waits if w is not None]
    shortest = min(known) if known else _FLOOR

    def lateness(i: int) -> float:
        late = max(0, now_ms - due_ms[i]) / 1000
        return late / (waits[i] or shortest)

    if lateness(0) >= 1.0:
        return 0
    return max(range(len(waits)), key=lambda i: (lateness(i), -i))


def _ranking_wait(store: Store, q: HostQueue, fp: bytes) -> tuple[bool, float | None]:
    """``(readable, wait)`` of a due URL, from what the queue kept or one read."""
    kept = q.urgency_waits
    if fp in kept:
        return True, kept[fp]
    raw = store.get_record(q.name, fp)
    if raw is None:
        return False, None
    try:
        wait = _wait_per_version(UrlRecord.from_bytes(raw))
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


def most_urgent(store: Store, q: HostQueue, head: UrlRecord, now_ms: int) -> tuple[int, bytes, UrlRecord]:
    """``(next_ms, fp, record)`` of the due URL of *q* to issue: its head
    (whose *head* record the caller read) unless another of its first due
    URLs is later relative to its own wait (:func:`pick`).

    Records that are missing or unreadable are left out of the weighing:
    the frontier drops or quarantines them when they become the head.
    """
    assert q.head is not None
    directive, head_ms, head_fp = q.head
    own = _wait(head)
    if own is None or head_ms >= now_ms or (now_ms - head_ms) / 1000 >= own:
        # never visited (it ranks as the shortest wait and is the latest: no
        # candidate can beat it), on time, or late by a whole wait: nothing to weigh
        return head_ms, head_fp, head
    entries: list[Entry] = [q.head]
    waits: list[float | None] = [_wait_per_version(head)]
    # the queue's readahead window holds the next entries when it reaches far
    # enough (the queue's end, or a URL not due or of another band): no seek
    held = window_from(q, q.head)
    weighed = held is not None and _weigh(store, q, held[0], directive, now_ms, entries, waits)
    if not weighed and not (held is not None and held[1]):
        del entries[1:], waits[1:]
        _weigh(store, q, store.queue_entries(q.name, limit=len(q.out) + WINDOW, start=q.head), directive, now_ms, entries, waits)
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
