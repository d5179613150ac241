"""The adaptive revisiting frontier: per-queue priority queues of URLs.

The storage-agnostic logic of thesis chapter 6.2, with no Scrapy import:
:meth:`Frontier.add`, :meth:`Frontier.next` and :meth:`Frontier.update`
over a :class:`~scrapy_adaptive.store.base.Store`.  URLs are never
dequeued; the frontier is the duplicate filter (one record per
fingerprint); politeness and valence are enforced here, once; an
unreadable record is quarantined, never deleted.  docs/architecture.md
gives the whole path of a URL and the delivery and recovery rules.

The frontier is composed of parts, each the one holder of its state: the
queues and totals (:class:`~.queues.QueueBook`), what is out
(:class:`~.leases.Leases`), versions awaiting delivery
(:class:`~.pending.PendingVersions`), per-host facts
(:class:`~scrapy_adaptive.frontier.hostfacts.HostFacts`) and, with a shared
store, the host leases (:class:`~.sharedhosts.SharedHosts`); a verdict is
recorded over them by :class:`~.updating.VerdictWriter`.  This class runs
the frontier's own operations over them (add, next, update, forget and the
questions).  The crawl reaches four of the parts through a narrow typed
face each: :attr:`Frontier.downloads` (:class:`~.leases.Downloads`),
:attr:`Frontier.hosts` (:class:`~.hostfacts.Hosts`),
:attr:`Frontier.outbox` (:class:`~.pending.Outbox`) and
:attr:`Frontier.fleet` (:class:`~.sharedhosts.Fleet`), and keeps its own
small state in :attr:`Frontier.notes` (:class:`~.notes.Notes`).  The rest
(the store, the book, the private parts) is this package's own, so nothing
writes behind the back of the parts that keep store and memory in step
(``tests/unit/test_frontier_face.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from ..change.trust import TrustParams
from ..model import Plan, RecordError, UrlRecord, Visit
from ..store.base import Batch, Store
from ..store.keys import time_to_ms
from . import urgency
from .adding import AddResult, add_new, pull_forward, refetch_embed
from .crawltime import FetchTimes
from .gate import RevisitGate
from .hostfacts import HostFacts, Hosts
from .hostqueue import HostQueue, Politeness, QueueState
from .leases import Downloads, Lease, Leases
from .notes import Notes
from .overview import frontier_shape
from .pending import Outbox, PendingVersions
from .priority import directive_of, promote_due
from .queues import Counts, QueueBook
from .removal import forget, quarantine
from .sharedhosts import Fleet, SharedHosts
from .sharing import Sharing
from .updating import VerdictWriter


@dataclass
class Issued:
    """A URL handed out by :meth:`Frontier.next`."""

    fp: bytes
    record: UrlRecord
    overdue: float


class Frontier:
    """Per-queue priority queues of URL records over a :class:`Store`."""

    def __init__(
        self,
        store: Store,
        politeness: Politeness | None = None,
        *,
        history_size: int = 16,
        trust: TrustParams | None = None,
        soft404_urls: int = 0,
        clock: Callable[[], float] = time.time,
        sharing: Sharing | None = None,
        text_diff: int = 0,
        revisit_ceiling: float | None = None,
    ) -> None:
        self.store = store
        self.politeness = politeness or Politeness()
        self.history_size = history_size
        self.clock = clock
        #: with a shared store: this worker's host leases (:mod:`.sharing`)
        self.sharing = sharing
        #: how far validators must prove right to be trusted (for reports: :meth:`.Trust.verify_rate`)
        self.trust_params = trust or TrustParams()
        #: mean fetch duration per queue, for host capacities and crawl times
        self.fetch_times = FetchTimes()
        self.book = QueueBook(store, self.politeness, sharing)
        self._leases = Leases(self.book, clock, self.fetch_times)
        self._pending = PendingVersions(self.book, self._leases, clock)
        self._hosts = HostFacts(self.book, self._leases, clock, self.trust_params, soft404_urls)
        self._shared = SharedHosts(self.book, self._pending, clock)
        #: the crawl's own small state, kept beside its URLs
        self.notes = Notes(store)
        # -- the parts the crawl reaches, each through its narrow face
        #: a download's life between :meth:`next` and :meth:`update`: the
        #: downloader's signals, quick retries, the leases run out
        self.downloads: Downloads = self._leases
        #: what the crawl learns of hosts (Crawl-delay, soft-404s, hints) and
        #: asks of them (validators to verify), and their reports
        self.hosts: Hosts = self._hosts
        #: the change events to deliver, and the versions delivered
        self.outbox: Outbox = self._pending
        #: this worker's part in a fleet sharing the frontier (a no-op alone)
        self.fleet: Fleet = self._shared
        #: what is out for a fingerprint (issued by :meth:`next`, awaiting its
        #: verdict): its queue, how overdue it was issued, and its record as
        #: issued (the one copy; requests carry the fingerprint)
        self.lent: Callable[[bytes], Lease | None] = self._leases.lent
        self.verdict_writer = VerdictWriter(
            self.book,
            self._leases,
            self._pending,
            self._hosts,
            history_size=history_size,
            clock=clock,
            sharing=sharing,
            find=self.get_record,
            text_diff=text_diff,
        )
        #: URLs whose undelivered versions load() made due again
        self._redelivered_at_load = 0
        #: revisits per second at most (``ADAPTIVE_BUDGET``; a fleet's worker
        #: its share, :meth:`set_revisit_ceiling`)
        self._gate = RevisitGate(revisit_ceiling, clock()) if revisit_ceiling else None

    @property
    def redelivered(self) -> int:
        """URLs whose undelivered versions were made due again (at load, and
        in a fleet each time a stopped worker's versions were taken back)."""
        return self._redelivered_at_load + self._shared.redelivered

    # -- opening -----------------------------------------------------------

    def load(self, *, redeliver: bool = True) -> None:
        """Rebuild the in-memory queues from the store's per-queue counters.

        *redeliver* False leaves pending-delivery marks alone (a tool looking
        at a stopped crawl's state: the next crawl re-delivers them).

        Reads one small row per queue plus one seek for its head: restart
        time grows with hosts, not URLs.  Nothing is out after a restart,
        and no host is fetched before its shortest politeness wait has
        passed since the restart.  URLs left pending delivery are made due
        first (:meth:`.PendingVersions.redeliver`).
        """
        # a worker of a shared frontier takes versions back only in queues
        # it holds, as it takes them (SharedHosts.rebalance)
        if redeliver and self.sharing is None:
            self._redelivered_at_load = self._pending.redeliver()[0]
        now = self.clock()
        book = self.book
        for name, raw in self.store.hosts():
            q = book.new(name)
            book.restore(q, raw)
            # A fetch in flight when the last crawl died left no end time, so
            # its wait was never stored: every host rests its shortest
            # politeness wait from now, as if a fetch had just ended.
            q.snooze_all(now + book.rest_after(q, 0.0))
            self._hosts.pool_hints(q)
            book.refresh_head(q)
            book.schedule(q)

    # -- add / next / update -------------------------------------------------

    def add(
        self,
        fp: bytes,
        url: str,
        queue: str,
        request: dict[str, Any] | Callable[[], dict[str, Any]],
        *,
        directive: int = 0,
        force: bool = False,
        with_page: bool = False,
        priority: int = 0,
    ) -> AddResult:
        """Make a URL known.

        A new URL is due now.  A known URL keeps its record; its time moves
        earlier only if *force* (``dont_filter``) or if it is an embed found
        *with_page*, a page captured anew, and its copy is too old to stand
        for the page's moment (:func:`.refetch_embed`).  A higher *directive* puts a URL that is
        already due ahead of its queue's other due URLs; it never makes one
        due (a preferred URL sorting first while not due would block its
        queue, and one pulled forward by every page that shows it would be
        fetched at every page visit).  *request* may be a
        callable, called only for a new URL: most adds in a crawl are
        duplicates, and serialising them would be wasted work.

        *priority* (``Request.priority``) orders the URL among its queue's
        due URLs (:mod:`.priority`): a new URL's, and a known URL's when
        *force* makes it due.  A known URL's revisits keep the priority of
        the request stored first.
        """
        raw = self.store.get_record(queue, fp)
        if raw is None:
            data = request() if callable(request) else request
            result = add_new(self.book, self.clock(), fp, url, queue, data, directive, priority)
            if self._gate is not None and result is AddResult.NEW:
                self._gate.found(queue)  # a parked queue looks again: a first visit needs no token
            return result
        if not force and directive == 0 and not with_page:
            return AddResult.DUPLICATE
        try:
            record = UrlRecord.from_bytes(raw)
        except RecordError:
            # Left for next() to quarantine when its entry comes up: only
            # the entry says which queue position to remove.
            return AddResult.DUPLICATE
        if force and self._gate is not None:
            self._gate.asked(fp)  # the spider asked for it again: it goes without a token
        if with_page and refetch_embed(record, self.clock()):
            force = True
        if force and (priority or ((q := self.book.find(queue)) is not None and q.prioritized)):
            directive = max(directive, directive_of(priority))
        return pull_forward(self.book, self._leases, self.clock(), fp, record, directive, force)

    def next(self) -> Issued | None:
        """Issue a due URL of the queue that has been ready the longest: its
        head, or a due URL later than the head relative to its own wait
        (:mod:`.urgency`).  With a revisit ceiling, a revisit waits for its
        token, its queue parked (:mod:`.gate`)."""
        now = self.clock()
        book = self.book
        gate = self._gate
        if gate is not None and (parked := gate.unpark(now)) is not None:
            book.schedule(parked)
        while (top := book.heap.peek()) is not None:
            ready, q = top
            name = q.name
            if ready > now:
                return None
            book.heap.pop()
            if q.state(now) is not QueueState.READY or q.head is None:
                book.schedule(q)
                continue
            if q.prioritized and promote_due(book, self.store, q, time_to_ms(now)):
                book.refresh_head(q)
            directive, next_ms, fp = q.head
            raw = self.store.get_record(name, fp)
            if raw is None:
                # An index entry without its record cannot be crawled; drop
                # the entry rather than block the queue on it.
                book.write(Batch(entries_deleted=[(name, directive, next_ms, fp)]), q)
                book.refresh_head(q, q.head)
                book.schedule(q)
                continue
            try:
                record = UrlRecord.from_bytes(raw)
            except RecordError as exc:
                quarantine(book, q, q.head, raw, exc)
                book.refresh_head(q, q.head)
                book.schedule(q)
                continue
            next_ms, fp, record = urgency.most_urgent(book, q, record, time_to_ms(now))
            if gate is not None and record.visits and not gate.admits(fp, now):
                # a revisit, and the budget spent for now: a first visit of the
                # queue goes instead, or the queue waits for a token
                found = gate.first_visit(self.store, q, time_to_ms(now))
                if found is None:
                    gate.park(q)
                    continue
                (_, next_ms, fp), record = found
            overdue = max(0.0, now - next_ms / 1000)
            q.take_slot(fp, now)
            self._leases.lend(fp, Lease(name, now, now + self.politeness.lease, overdue, record))
            book.refresh_head(q, q.head)
            book.schedule(q)
            return Issued(fp, record, overdue)
        return None

    def update(
        self,
        fp: bytes,
        visit: Visit,
        plan: Plan | None,
        *,
        deliver: bool = False,
        presence: list[int] | None = None,
        event: str | None = None,
    ) -> UrlRecord | None:
        """Fold *visit* (the verdict) and *plan* (the wait policy's decision
        on it) into the URL's record and move it to its next time.

        The one place the two meet: the judges made the verdict, the policy
        the plan, neither wrote into the other, and both are recorded here
        in one write (the plan's wait sets the next time, its memory
        replaces the record's ``policy``, its ``hint_base`` scores a hint).
        Only a visit has a plan: a retry, a failure or a disregarded URL
        passes None, its outcome sets its next time (the retry delay, never);
        anything else is refused (ValueError).

        A URL not out (a verdict after a restart) is found in
        ``visit.queue``, its queue: the store keys records under it.

        With *deliver*, a changed visit is a version pending delivery: the
        record counts it now, its queue and the totals when :meth:`.Outbox.confirm`
        does, and a restart before then takes it back and delivers it
        again.  Returns the updated record, or None for an unknown
        fingerprint.

        *presence* is the URL's presence after the visit (see
        :mod:`..change.events`; None keeps the record's), and *event* the
        change event it makes: written to the outbox in the same write,
        with the URL's version count and the capture before this visit.

        The steps are :class:`.VerdictWriter`'s: one atomic write of the
        record, its queue entry, its pending mark, its event and its
        queue's counters.
        """
        return self.verdict_writer.write(fp, visit, plan, deliver=deliver, presence=presence, event=event)

    def forget(self, urls: list[tuple[str, bytes]]) -> list[UrlRecord]:
        """Delete these URLs for good (:func:`.removal.forget`); the records deleted."""
        found = [
            (fp, record) for queue, fp in dict.fromkeys(urls) if (record := self.get_record(queue, fp)) is not None
        ]
        rest = self.politeness.max_delay
        return forget(found, self.book, self._pending, self._leases, rest=rest, now=self.clock())

    # -- questions ---------------------------------------------------------------

    def has_pending(self) -> bool:
        """True while any URL will be due some day, or is out.  A worker of
        a shared frontier always has: other workers may add URLs any time."""
        return self.book.totals.schedulable > 0 or bool(self._leases) or self.sharing is not None

    def set_revisit_ceiling(self, per_second: float) -> None:
        """Revisits per second this frontier issues at most from now on (a
        fleet's worker: its share of the budget, as workers come and go);
        without a ceiling set at construction there is none to move."""
        if self._gate is not None:
            self._gate.set_rate(per_second, self.clock())

    def next_ready_time(self) -> float | None:
        """When the next queue becomes ready (None: none will by itself): a
        queue on the heap, or one parked for the budget once its token comes."""
        top = self.book.heap.peek()  # asked after every add and issue
        ready = top[0] if top is not None else None
        token = self._gate.waiting() if self._gate is not None else None
        if token is None or (ready is not None and ready <= token):
            return ready
        return token

    def queues(self) -> Iterator[HostQueue]:
        return iter(self.book)

    def get_record(self, queue: str, fp: bytes) -> UrlRecord | None:
        """The record of URL *fp* of *queue*; None if unknown or unreadable
        (its queue quarantines an unreadable one when its turn comes)."""
        raw = self.store.get_record(queue, fp)
        if raw is None:
            return None
        try:
            return UrlRecord.from_bytes(raw)
        except RecordError:
            return None

    def records(self, on_unreadable: Callable[[bytes], None] | None = None) -> Iterator[tuple[bytes, UrlRecord]]:
        """Every readable record with its fingerprint, in key order: a
        uniform sample when cut short, as fingerprints are hashes.  For
        tools and reports (the crawl itself never scans).  Unreadable ones
        are skipped, each fingerprint told to *on_unreadable* (an export
        must say what it left out); a damaged database gives what it still
        holds, then its :class:`.StoreCorrupt`."""
        store = self.store
        for fp, raw in getattr(store, "readable_records", store.records)():
            try:
                yield fp, UrlRecord.from_bytes(raw)
            except RecordError:
                if on_unreadable is not None:
                    on_unreadable(fp)

    def count_due(self, queue: str, by: float, *, limit: int) -> int:
        """How many URLs of *queue* are due by *by* (epoch seconds), counted
        up to *limit*: a bounded scan of its index."""
        return self.store.count_due(queue, time_to_ms(by), limit=limit)

    def counts(self) -> Counts:
        """The crawl's counts now (exact, kept with every write; no scan)."""
        totals = self.book.totals
        return Counts(
            urls=totals.urls,
            never=totals.urls - totals.schedulable,
            out=len(self._leases),
            visits=totals.visits,
            versions=totals.versions,
            quarantined=totals.quarantined,
            forgotten=totals.forgotten,
        )

    def shape(self, *, due_limit: int = 200_000) -> dict[str, Any]:
        """The frontier at a glance, for the periodic log line and stats
        (``budget_waiting``: queues parked for a revisit token)."""
        shape = frontier_shape(self, due_limit=due_limit)
        shape["budget_waiting"] = len(self._gate) if self._gate is not None else 0
        return shape
