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
  time against the fastest pages and go ahead of slower ones.
* No URL waits for ever: the queue's head (the one due the longest) is
  issued as soon as its lateness reaches its own wait, whatever else is due.
* Only the first :data:`WINDOW` due URLs are weighed: one store read each,
  so issuing stays cheap however long the queue, and none at all when the
  head is due on time or already late by its own wait.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..model import RecordError, UrlRecord
from ..store.base import Store
from .hostqueue import Entry, HostQueue

#: how many of a queue's due URLs are weighed against each other
WINDOW = 8

#: the shortest wait a ranking divides by (seconds): a zero wait (a retry
#: due at once, a policy's minimum) must not make a URL infinitely urgent
_FLOOR = 1.0


def _wait(record: UrlRecord) -> float | None:
    if not record.visits or not record.wait:
        return None
    return max(record.wait, _FLOOR)


def pick(candidates: Sequence[tuple[Entry, UrlRecord]], now_ms: int) -> int:
    """Index of the candidate to issue.

    *candidates* are a queue's due entries with their records, in queue
    order (the first is the head: the highest directive, due the longest);
    all share the head's directive.  Returns 0 (the head) unless another
    candidate is later relative to its wait and the head's own lateness is
    still below its wait.
    """
    if len(candidates) < 2:
        return 0
    waits = [_wait(record) for _, record in candidates]
    known = [w for w in waits if w is not None]
    shortest = min(known) if known else _FLOOR

    def lateness(i: int) -> float:
        late = max(0, now_ms - candidates[i][0][1]) / 1000
        return late / (waits[i] or shortest)

    if lateness(0) >= 1.0:
        return 0
    return max(range(len(candidates)), key=lambda i: (lateness(i), -i))


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
    if head_ms >= now_ms or (own is not None and (now_ms - head_ms) / 1000 >= own):
        return head_ms, head_fp, head  # on time, or late by a whole wait: nothing to weigh
    candidates: list[tuple[Entry, UrlRecord]] = [(q.head, head)]
    for entry in store.queue_entries(q.name, limit=len(q.out) + WINDOW, start=q.head):
        if entry[0] != directive or entry[1] > now_ms or len(candidates) >= WINDOW:
            break
        if entry[2] in q.out or entry[2] == head_fp:
            continue
        raw = store.get_record(q.name, entry[2])
        if raw is None:
            continue
        try:
            candidates.append((entry, UrlRecord.from_bytes(raw)))
        except RecordError:
            continue
    (_, next_ms, fp), record = candidates[pick(candidates, now_ms)]
    return next_ms, fp, record
