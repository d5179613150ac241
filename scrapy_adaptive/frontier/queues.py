"""The host queues in memory: their heap, heads, politeness and the crawl's totals.

:class:`QueueBook` is the one holder of every :class:`~.hostqueue.HostQueue`
of a frontier and of the crawl-wide counts (:class:`Totals`).  The parts of
the frontier (leases, pending versions, host facts, sharing) are handed the
book and ask it for a queue, to re-place a queue on the heap, to keep a
queue's head right after an entry moved, and to write a batch together
with the queue's counters; none of them holds queues of its own.

The book knows whether this worker may issue from a queue: with a shared
store (:mod:`.sharing`) only held queues are placed on the heap, and a
queue another worker created is read from the store on first use.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..store.base import Batch, Store
from .hostqueue import Entry, HostQueue, Politeness, QueueHeap, order
from .readahead import AHEAD, apply, head_from_window, keep_window

if TYPE_CHECKING:
    from .sharing import Sharing


@dataclass
class Totals:
    """The crawl's counts, kept equal to the sum of its queues' counters."""

    urls: int = 0
    #: URLs whose next time is not "never"
    schedulable: int = 0
    visits: int = 0
    versions: int = 0
    quarantined: int = 0
    forgotten: int = 0

    @staticmethod
    def of(q: HostQueue) -> Totals:
        return Totals(q.urls, q.urls - q.never, q.visits, q.versions, q.quarantined, q.forgotten)

    def add(self, other: Totals, sign: int = 1) -> None:
        self.urls += sign * other.urls
        self.schedulable += sign * other.schedulable
        self.visits += sign * other.visits
        self.versions += sign * other.versions
        self.quarantined += sign * other.quarantined
        self.forgotten += sign * other.forgotten


@dataclass(frozen=True)
class Counts:
    """The crawl's counts at one moment (:meth:`.Frontier.counts`)."""

    urls: int
    #: URLs that will not be visited again (failed, disregarded)
    never: int
    #: URLs issued and awaiting their verdict
    out: int
    visits: int
    versions: int
    #: unreadable records moved aside (``x/`` keys), over the crawl's life
    quarantined: int
    #: URLs deleted on request (:meth:`.Frontier.forget`), over the crawl's life
    forgotten: int


class QueueBook:
    """Every host queue of one frontier, the heap of ready queues, the totals."""

    def __init__(self, store: Store, politeness: Politeness, sharing: Sharing | None = None) -> None:
        self.store = store
        self.politeness = politeness
        self.sharing = sharing
        self.totals = Totals()
        self._queues: dict[str, HostQueue] = {}
        self.heap = QueueHeap(self._queues)

    # -- the queues ------------------------------------------------------------

    def __iter__(self) -> Iterator[HostQueue]:
        return iter(self._queues.values())

    def __len__(self) -> int:
        return len(self._queues)

    def __contains__(self, name: str) -> bool:
        return name in self._queues

    def find(self, name: str) -> HostQueue | None:
        """The queue *name* if this frontier has met it."""
        return self._queues.get(name)

    def names(self) -> list[str]:
        return list(self._queues)

    def new(self, name: str) -> HostQueue:
        q = HostQueue(name=name, valence=self.politeness.valence)
        self._queues[name] = q
        return q

    def get(self, name: str) -> HostQueue:
        """The queue *name*; a queue another worker created is read from the store first."""
        q = self._queues.get(name)
        if q is None:
            q = self.new(name)
            s = self.sharing
            if s is not None:
                raw = self.store.get_host(name)
                if raw is not None:
                    self.restore(q, raw)
                elif s.board.acquire([name], s.worker, s.ttl):
                    # a host new to the whole fleet: its discoverer works it
                    # at once (rebalance spreads hosts later)
                    s.held.add(name)
        return q

    def restore(self, q: HostQueue, raw: bytes | None) -> None:
        """Take *q*'s counters from the store, keeping the totals in step."""
        if raw is None:
            return
        before = Totals.of(q)
        q.restore_counters(json.loads(raw))
        self.totals.add(Totals.of(q))
        self.totals.add(before, -1)

    # -- the heap and the heads --------------------------------------------------

    def holds(self, name: str) -> bool:
        """May this worker issue from queue *name*?"""
        return self.sharing is None or self.sharing.issues(name)

    def schedule(self, q: HostQueue) -> None:
        """(Re)place *q* on the heap at the time it becomes ready, if held here
        (:meth:`holds`, read in place: a queue is placed several times a fetch)."""
        sharing = self.sharing
        if sharing is None or sharing.issues(q.name):
            self.heap.place(q)

    @staticmethod
    def unschedule(q: HostQueue) -> None:
        """Take *q* off the heap: its entries there become stale."""
        q.heap_version += 1

    def refresh_head(self, q: HostQueue, *candidates: Entry | None) -> None:
        """Find the first entry of *q* that is not out (one store seek, or
        none when the queue's window holds it: :mod:`.readahead`).

        The search starts at the lowest of *candidates* (None among them, or
        none given: the queue's start).  Callers pass the old head and any
        entry they just wrote or released: every other live entry sorts
        after the old head, so nothing is skipped.
        """
        start: Entry | None = None
        if len(candidates) == 1:
            start = candidates[0]  # after an issue: the old head
        elif candidates and all(c is not None for c in candidates):
            start = min(candidates, key=order)  # type: ignore[arg-type]
        q.head = None
        entries: Iterable[Entry]
        if start is not None and self.sharing is None:
            known, head = head_from_window(q, start)
            if known:
                q.head = head
                return
            entries = self.read_ahead(q, start)
        else:
            entries = self.store.queue_entries(q.name, limit=len(q.out) + 1, start=start)
        for entry in entries:
            if entry[2] not in q.out:
                q.head = entry
                break

    def read_ahead(self, q: HostQueue, start: Entry, ahead: int = AHEAD) -> list[Entry]:
        """*q*'s entries from *start* on, as far as its URLs out and *ahead*
        more reach: one seek, kept as the queue's window when this frontier
        is its store's one writer (the next heads, and the due URLs the
        urgency weighing compares, are then read there)."""
        limit = len(q.out) + 1 + ahead
        entries = list(self.store.queue_entries(q.name, limit=limit, start=start))
        if self.sharing is None:
            keep_window(q, entries, limit)
        return entries

    def moved(self, q: HostQueue, old: Entry, new: Entry) -> None:
        """Keep the head right after one entry moved from *old* to *new*.

        Every other live entry still sorts after the head, so unless the
        head itself moved, the new head is the lower of the two: no seek.
        """
        fp = new[2]
        if q.head is not None and q.head[2] == fp:
            self.refresh_head(q, old, new)
        elif fp in q.out:
            return
        elif q.head is None or order(new) < order(q.head):
            q.head = new

    def rest_after(self, q: HostQueue, duration: float) -> float:
        """How long *q*'s slot rests after a fetch that took *duration*."""
        p = self.politeness
        return q.politeness_wait(duration, p.delay_factor, p.min_delay, p.max_delay)

    # -- writing ---------------------------------------------------------------------

    @staticmethod
    def counters(q: HostQueue) -> bytes:
        return q.counters_bytes()

    def write(self, batch: Batch, q: HostQueue | None = None, undo: Callable[[], None] | None = None) -> None:
        """Write *batch*; on failure put memory back as the store still has it.

        Every write of queue entries comes here, so the queues' windows
        (:mod:`.readahead`) follow the store."""
        try:
            self.store.write(batch)
        except Exception:
            if undo is not None:
                undo()
            raise
        if batch.entries_put or batch.entries_deleted:
            apply(self._queues, batch)

    def keep(self, q: HostQueue) -> Callable[[], None]:
        """A function that puts *q*'s counts, its slots and the totals back as
        they are now: memory changed ahead of a write that may fail."""
        counts = (q.visits, q.versions, q.never, q.urls, q.gone, q.prioritized)
        slots, out = list(q.slots), dict(q.out)
        totals = self.totals
        kept = (totals.urls, totals.schedulable, totals.visits, totals.versions, totals.quarantined, totals.forgotten)

        def undo() -> None:
            q.visits, q.versions, q.never, q.urls, q.gone, q.prioritized = counts
            q.slots, q.out = slots, out
            (
                totals.urls,
                totals.schedulable,
                totals.visits,
                totals.versions,
                totals.quarantined,
                totals.forgotten,
            ) = kept

        return undo
