"""The adaptive revisiting frontier: per-queue priority queues of URLs.

This is the storage-agnostic logic of thesis chapter 6.2, with no Scrapy
import: :meth:`Frontier.add`, :meth:`Frontier.next` and
:meth:`Frontier.update` over a :class:`~.store.Store`.

* URLs are never dequeued.  ``add`` leaves a known URL alone unless asked
  to pull it forward (``force``) or its scheduling directive rises; ``next``
  issues a due URL of the queue that has been ready the longest (the one
  latest relative to its own wait, :mod:`.urgency`) and holds it as *out*;
  ``update`` folds a visit's verdict into the record and moves the URL to
  its next time, in one atomic write.
* The frontier is the duplicate filter: a fingerprint has one record.
* ``hint`` takes a site's announcement that a known URL changed (a sitemap
  ``lastmod``, a feed entry): the wait policy decides whether to move the
  visit earlier, the visit that follows settles the hint, and each host
  keeps a per-source track record (:mod:`.hints`).
* Politeness is enforced here, once: a queue issues at most ``valence``
  URLs at a time, and after each fetch its slot rests for
  ``clamp(delay_factor × duration, min_delay, max_delay)`` (or the host's
  robots.txt ``Crawl-delay`` if longer).
* Delivery (:mod:`scrapy_adaptive.integration.delivery`): with ``deliver=True`` a
  changed visit is recorded as *pending delivery* in the same atomic write
  (a ``p/<fp>`` mark holding the digest last delivered); :meth:`confirm`
  counts the version once its items are durable, and :meth:`load` makes
  every URL still pending due again, judged against the last delivered
  digest and without validators, so its items are produced again.
* What is out is held in memory only.  If the process dies, the URL's queue
  entry still says when it was due, so a restart simply issues it again.
  A URL that never comes back (lost by a middleware) returns to its queue
  when its lease runs out, so a queue is never blocked for good.
* A record that cannot be read is *quarantined*: its raw bytes move to
  ``x/<fp>`` (never deleted), its queue entry goes, the queue's
  ``quarantined`` counter counts it, one ERROR line names it, and the queue
  goes on with its next URL.  Rediscovered, the URL starts a new record.
* Each queue's politeness wait is stored with its counters (the time every
  slot has rested, wall clock), so a restart keeps it.
"""

from __future__ import annotations

import json
import logging
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..change.trust import TrustParams
from ..hosts import hints
from ..hosts.crawltime import FetchTimes
from ..hosts.facts import HostFacts
from ..model import ChangeState, Outcome, RecordError, UrlRecord, Visit
from ..store.base import Batch, Conflict, Store
from ..store.keys import NEVER_MS, PROBE_DIRECTIVE, time_to_ms
from . import urgency
from .hostqueue import Entry, HostQueue, Politeness, QueueHeap, QueueState
from .leases import Lease, Leases
from .pending import PendingVersions, pending_mark
from .shape import frontier_shape
from .sharing import SharedHosts, Sharing

logger = logging.getLogger(__name__)

#: a marker: the URL held no entry in its queue's out table
_NOT_OUT: Any = object()


def _order(entry: Entry) -> tuple[int, int, bytes]:
    """Sort key matching the store's order: higher directive, earlier time."""
    return (-entry[0], entry[1], entry[2])


class AddResult(StrEnum):
    NEW = "new"  #: first time this fingerprint is seen
    DUPLICATE = "duplicate"  #: known; nothing changed
    RESCHEDULED = "rescheduled"  #: known; pulled forward or directive raised


@dataclass
class Issued:
    """A URL handed out by :meth:`Frontier.next`."""

    fp: bytes
    record: UrlRecord
    overdue: float


class Frontier(HostFacts, PendingVersions, Leases, SharedHosts):
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
    ) -> None:
        self.store = store
        #: with a shared store: this worker's host leases (:mod:`.sharing`)
        self.sharing = sharing
        #: URLs of one host sharing a page before it is "parked" (0: never)
        self.soft404_urls = soft404_urls
        self.politeness = politeness or Politeness()
        self.history_size = history_size
        self.trust_params = trust or TrustParams()
        self.clock = clock
        #: mean fetch duration per queue, for host capacities and crawl times
        self.fetch_times = FetchTimes()
        self._queues: dict[str, HostQueue] = {}
        self._heap = QueueHeap(self._queues)
        self._out: dict[bytes, Lease] = {}
        self._schedulable = 0  # URLs whose next time is not "never"
        self._urls = 0
        self._visits = 0
        self._versions = 0
        self._quarantined = 0
        self._forgotten = 0
        #: hint source -> [confirmed, refuted, Σq] over every queue
        self._hint_pooled: dict[str, list[float]] = {}
        self._unchecked: dict[tuple[str, str], dict[bytes, None]] = {}
        self._unchecked_lies: dict[tuple[str, str], int] = {}
        #: recent overdue times (seconds) of issued URLs, for percentiles
        self.overdue_samples: deque[float] = deque(maxlen=2000)
        #: fp -> (digest last delivered, versions awaiting confirmation)
        self._pending: dict[bytes, tuple[str, str | None, int]] = {}
        #: URLs whose undelivered versions load() made due again
        self.redelivered = 0

    # -- opening -----------------------------------------------------------

    def load(self, *, redeliver: bool = True) -> None:
        """Rebuild the in-memory queues from the store's per-queue counters.

        *redeliver* False leaves pending-delivery marks alone (a tool looking
        at a stopped crawl's state: the next crawl re-delivers them).

        Reads one small row per queue plus one seek for its head: restart
        time grows with hosts, not URLs.  Nothing is out after a restart,
        and no host is fetched before its shortest politeness wait has
        passed since the restart.  URLs left pending delivery are made due
        first (:meth:`_redeliver`).
        """
        # a worker of a shared frontier takes versions back only in queues
        # it holds, as it takes them (SharedHosts.rebalance)
        self.redelivered = self._redeliver()[0] if redeliver and self.sharing is None else 0
        now = self.clock()
        for name, raw in self.store.hosts():
            q = self._new_queue(name)
            q.restore_counters(json.loads(raw))
            # A fetch in flight when the last crawl died left no end time, so
            # its wait was never stored: every host rests its shortest
            # politeness wait from now, as if a fetch had just ended.
            q.snooze_all(now + self._rest_after(q, 0.0))
            for source, counts in q.hint_trust.items():
                hints.pool(self._hint_pooled.setdefault(source, [0.0, 0.0, 0.0]), counts)
            self._urls += q.urls
            self._schedulable += q.urls - q.never
            self._visits += q.visits
            self._versions += q.versions
            self._quarantined += q.quarantined
            self._forgotten += q.forgotten
            self._refresh_head(q)
            self._schedule(q)

    def _rest_after(self, q: HostQueue, duration: float) -> float:
        """How long *q*'s slot rests after a fetch that took *duration*."""
        p = self.politeness
        return q.politeness_wait(duration, p.delay_factor, p.min_delay, p.max_delay)

    def _new_queue(self, name: str) -> HostQueue:
        q = HostQueue(name=name, valence=self.politeness.valence)
        self._queues[name] = q
        return q

    def _schedule(self, q: HostQueue) -> None:
        if self.sharing is None or self.sharing.issues(q.name):
            self._heap.place(q)

    def _refresh_head(self, q: HostQueue, *candidates: Entry | None) -> None:
        """Find the first entry of *q* that is not out (one store seek).

        The search starts at the lowest of *candidates* (None among them, or
        none given: the queue's start).  Callers pass the old head and any
        entry they just wrote or released: every other live entry sorts
        after the old head, so nothing is skipped.
        """
        start: Entry | None = None
        if candidates and all(c is not None for c in candidates):
            start = min(candidates, key=_order)  # type: ignore[arg-type]
        q.head = None
        for entry in self.store.queue_entries(q.name, limit=len(q.out) + 1, start=start):
            if entry[2] not in q.out:
                q.head = entry
                break

    def _moved(self, q: HostQueue, old: Entry, new: Entry) -> None:
        """Keep the head right after one entry moved from *old* to *new*.

        Every other live entry still sorts after the head, so unless the
        head itself moved, the new head is the lower of the two: no seek.
        """
        fp = new[2]
        if q.head is not None and q.head[2] == fp:
            self._refresh_head(q, old, new)
        elif fp in q.out:
            return
        elif q.head is None or _order(new) < _order(q.head):
            q.head = new

    def next_ready_time(self) -> float | None:
        """When the next queue becomes ready (None: none will by itself)."""
        top = self._heap.peek()
        return top[0] if top is not None else None

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
    ) -> AddResult:
        """Make a URL known.

        A new URL is due now.  A known URL keeps its record; its time moves
        earlier only if *force* (``dont_filter``) or if *directive* is
        higher than its own (a preferred URL is wanted now).  *request* may
        be a callable, called only for a new URL: most adds in a crawl are
        duplicates, and serialising them would be wasted work.
        """
        now = self.clock()
        now_ms = time_to_ms(now)
        raw = self.store.get_record(queue, fp)
        if raw is None:
            if callable(request):
                request = request()
            q = self._queue(queue)
            record = UrlRecord(
                url=url, queue=queue, request=request, next_ms=now_ms, directive=directive, discovered=now
            )
            q.urls += 1
            self._urls += 1
            self._schedulable += 1
            batch = Batch(
                records={(queue, fp): record.to_bytes()}, hosts={queue: self._counters(q)}, absent=[(queue, fp)]
            )
            batch.entries_put.append((queue, directive, now_ms, fp))
            try:
                self._write(batch, q, undo=lambda: self._undo_new(q))
            except Conflict:
                return AddResult.DUPLICATE  # another worker added it a moment ago
            entry = (directive, now_ms, fp)
            if q.head is None or _order(entry) < _order(q.head):
                q.head = entry
                self._schedule(q)
            return AddResult.NEW
        if not force and directive == 0:
            return AddResult.DUPLICATE
        try:
            record = UrlRecord.from_bytes(raw)
        except RecordError:
            # Left for next() to quarantine when its entry comes up: only
            # the entry says which queue position to remove.
            return AddResult.DUPLICATE
        new_directive = max(record.directive, directive)
        new_ms = record.next_ms
        if force or new_directive > record.directive:
            new_ms = min(record.next_ms, now_ms)
        if (new_directive, new_ms) == (record.directive, record.next_ms):
            return AddResult.DUPLICATE
        q = self._queue(record.queue)
        old_entry = (record.directive, record.next_ms, fp)
        batch = Batch()
        batch.move_entry(
            (record.queue, record.directive, record.next_ms, fp), (record.queue, new_directive, new_ms, fp)
        )
        if record.never:
            q.never -= 1
            self._schedulable += 1
            record.failures = 0
            batch.hosts[record.queue] = self._counters(q)
        record.directive, record.next_ms = new_directive, new_ms
        batch.records[record.queue, fp] = record.to_bytes()
        self._write(batch, q)
        out = self._out.get(fp)
        if out is not None:
            out.record = record
        self._moved(q, old_entry, (new_directive, new_ms, fp))
        self._schedule(q)
        return AddResult.RESCHEDULED

    def next(self) -> Issued | None:
        """Issue a due URL of the queue that has been ready the longest: its
        head, or a due URL later than the head relative to its own wait
        (:mod:`.urgency`)."""
        now = self.clock()
        while (top := self._heap.peek()) is not None:
            ready, q = top
            name = q.name
            if ready > now:
                return None
            self._heap.pop()
            if q.state(now) is not QueueState.READY or q.head is None:
                self._schedule(q)
                continue
            directive, next_ms, fp = q.head
            raw = self.store.get_record(name, fp)
            if raw is None:
                # An index entry without its record cannot be crawled; drop
                # the entry rather than block the queue on it.
                self.store.write(Batch(entries_deleted=[(name, directive, next_ms, fp)]))
                self._refresh_head(q, q.head)
                self._schedule(q)
                continue
            try:
                record = UrlRecord.from_bytes(raw)
            except RecordError as exc:
                self._quarantine(q, q.head, raw, exc)
                self._refresh_head(q, q.head)
                self._schedule(q)
                continue
            next_ms, fp, record = urgency.most_urgent(self.store, q, record, time_to_ms(now))
            overdue = max(0.0, now - next_ms / 1000)
            q.take_slot(fp, now)
            self._out[fp] = Lease(name, now, now + self.politeness.lease, overdue, record)
            self.overdue_samples.append(overdue)
            self._refresh_head(q, q.head)
            self._schedule(q)
            return Issued(fp, record, overdue)
        return None

    def update(self, fp: bytes, visit: Visit, *, deliver: bool = False) -> UrlRecord | None:
        """Fold *visit* into the URL's record and move it to its next time.

        A URL not out (a verdict after a restart) is found in
        ``visit.queue``, its queue: the store keys records under it.

        With *deliver*, a changed visit is a version pending delivery: it is
        counted by :meth:`confirm`, not here, and re-delivered after a
        restart until then.  Returns the updated record, or None for an
        unknown fingerprint.
        """
        now = self.clock()
        out = self._out.pop(fp, None)
        if out is not None:
            record = out.record
        else:
            record = self.get_record(visit.queue, fp) if visit.queue is not None else None
            if record is None:
                return None
        q = self._queue(record.queue)
        old = (record.queue, record.directive, record.next_ms, fp)
        was_never = record.never
        politeness = self.politeness
        if visit.duration is None and out is not None:
            if out.duration is not None:
                visit.duration = out.duration
            elif out.fetch_started is not None:
                visit.duration = max(0.0, now - out.fetch_started)
        slot_free_at = now + self._rest_after(q, visit.duration or 0.0)

        # what the write changes in memory, put back if it fails: the store
        # keeps the previous state, and so must the counters and the lease
        counts = (q.visits, q.versions, q.never, self._visits, self._versions, self._schedulable)
        slots, held = list(q.slots), q.out.get(fp, _NOT_OUT)

        def undo() -> None:
            q.visits, q.versions, q.never, self._visits, self._versions, self._schedulable = counts
            q.slots = slots
            if held is not _NOT_OUT:
                q.out[fp] = held
            if out is not None:
                # the record object was changed in place: take the stored one
                raw = self.store.get_record(record.queue, fp)
                if raw is not None:
                    out.record = UrlRecord.from_bytes(raw)
                self._out[fp] = out

        outcome = visit.outcome
        if outcome is Outcome.RETRY and record.failures + 1 > politeness.max_retries:
            outcome = Outcome.FAILED
            visit.reason = f"{visit.reason or 'error'} (gave up after {politeness.max_retries} retries)"
        record.outcome = outcome.value
        record.reason = visit.reason
        record.directive = 0  # a preference holds for one issue, not for ever
        if out is not None:
            record.overdue = round(out.overdue, 3)
        now_pending: tuple[str, str | None, int] | None = None
        if outcome is Outcome.VISITED:
            record.visits += 1
            record.failures = 0
            q.visits += 1
            self._visits += 1
            if visit.change is ChangeState.CHANGED and deliver:
                _, delivered, waiting = self._pending.get(fp, (record.queue, record.digest, 0))
                now_pending = (record.queue, delivered, waiting + 1)
            elif visit.change is ChangeState.CHANGED:
                record.versions += 1
                q.versions += 1
                self._versions += 1
            record.status = visit.status
            record.fetched = now
            record.duration = visit.duration
            # A digested body describes the page completely (a validator it
            # no longer sends is gone); without one (304, abort, no body)
            # only what was seen replaces what is known.
            body_seen = visit.digest is not None
            for name in ("content_type", "size", "digest", "payload_digest", "etag", "last_modified"):
                value = getattr(visit, name)
                if value is not None or body_seen:
                    setattr(record, name, value)
            if visit.policy_state is not None:
                record.policy = visit.policy_state
            if visit.noise is not None:
                record.noise = visit.noise or None
            wait = visit.wait if visit.wait is not None else 0.0
            record.wait = wait  # a probe does not change the policy's wait
            if visit.probe is None:
                record.next_ms = time_to_ms(now + wait)
            else:
                # a probe must come within seconds: ahead of its queue's overdue URLs
                record.next_ms = time_to_ms(now + min(wait, visit.probe))
                record.directive = PROBE_DIRECTIVE
            record.history.append([round(now, 3), visit.change.value, visit.status])
            del record.history[: -self.history_size]
        elif outcome is Outcome.RETRY:
            record.failures += 1
            record.next_ms = time_to_ms(now + politeness.retry_delay)
        else:
            record.next_ms = NEVER_MS

        if outcome is Outcome.VISITED:
            self._observe_validation(q, visit, record)
        self._settle_hint(q, record, visit)
        self._track_unchecked(fp, record)
        batch = Batch(records={(record.queue, fp): record.to_bytes()})
        if now_pending is not None:
            batch.pending[record.queue, fp] = pending_mark(*now_pending, self.sharing)
        batch.move_entry(old, (record.queue, record.directive, record.next_ms, fp))
        if record.never != was_never:
            q.never += 1 if record.never else -1
            self._schedulable += -1 if record.never else 1
        # the slot's wait is settled before the counters are built: they
        # carry it (next_fetch_ms), so a restart keeps it
        if q.out.get(fp) is not None:
            q.release_slot(fp, slot_free_at)
        q.out.pop(fp, None)
        if outcome is Outcome.RETRY and visit.host_level:
            # the host itself is unreachable: every slot rests the retry delay
            q.snooze_all(now + politeness.retry_delay)
        batch.hosts[record.queue] = self._counters(q)
        self._write(batch, q, undo)
        if now_pending is not None:
            self._pending[fp] = now_pending
        self._moved(q, old[1:], (record.directive, record.next_ms, fp))
        self._schedule(q)
        return record

    @staticmethod
    def _counters(q: HostQueue) -> bytes:
        return json.dumps(q.counters(), separators=(",", ":")).encode()

    def _write(self, batch: Batch, q: HostQueue, undo: Callable[[], None] | None = None) -> None:
        try:
            self.store.write(batch)
        except Exception:
            if undo is not None:
                undo()
            raise

    def _quarantine(self, q: HostQueue, entry: Entry, raw: bytes, exc: RecordError) -> None:
        """Move the unreadable record of queue entry *entry* aside, keeping its bytes.

        Only the head of a queue is quarantined (by :meth:`next`): the entry
        is what says where the URL sat, so it can be removed and the queue
        go on.  Counters stay consistent: ``urls`` drops by one,
        ``quarantined`` rises by one, their sum never moves.
        """
        directive, next_ms, fp = entry
        q.urls -= 1
        q.quarantined += 1
        self._urls -= 1
        self._quarantined += 1
        if next_ms < NEVER_MS:
            self._schedulable -= 1
        batch = Batch(quarantined={(q.name, fp): raw}, entries_deleted=[(q.name, directive, next_ms, fp)])
        batch.hosts[q.name] = self._counters(q)
        self._write(batch, q)
        logger.error(
            "The record of fingerprint %s in queue %s is unreadable (%s); it is quarantined under key x/%s "
            "with its bytes kept, and the queue goes on.",
            fp.hex(),
            q.name,
            exc,
            fp.hex(),
        )

    def forget(self, urls: list[tuple[str, bytes]]) -> list[UrlRecord]:
        """Delete these URLs for good: record, queue entry, pending-delivery
        mark and lease, with their queues' counters, in one atomic write.

        A forgotten URL rediscovered later starts a new record.  Each queue's
        ``forgotten`` counter rises as ``urls`` falls, so the sum the state
        folder's checkpoint compares never goes down (a forget is not a
        rollback); visits and versions keep counting what happened.  A URL
        out for download is dropped from its lease: its verdict, when it
        comes, finds no record and is ignored.  *urls* are ``(queue, fp)``
        pairs.  Returns the records deleted.
        """
        now = self.clock()
        batch = Batch()
        gone: list[UrlRecord] = []
        touched: dict[str, HostQueue] = {}
        for queue, fp in dict.fromkeys(urls):
            record = self.get_record(queue, fp)
            q = self._queue(record.queue) if record is not None else None
            if record is None or q is None:
                continue
            batch.records_deleted.append((record.queue, fp))
            batch.entries_deleted.append((record.queue, record.directive, record.next_ms, fp))
            batch.pending[record.queue, fp] = None
            q.urls -= 1
            q.forgotten += 1
            if record.never:
                q.never -= 1
            touched[q.name] = q
            gone.append(record)
        if not gone:
            return []
        for name, q in touched.items():
            batch.hosts[name] = self._counters(q)
        self.store.write(batch)
        for record, (_, fp) in zip(gone, batch.records_deleted, strict=True):
            q = self._queue(record.queue)
            self._urls -= 1
            self._forgotten += 1
            if not record.never:
                self._schedulable -= 1
            self._pending.pop(fp, None)
            if self._out.pop(fp, None) is not None:
                # its download may still run: the slot rests the longest wait
                q.release_slot(fp, now + self.politeness.max_delay)
            q.out.pop(fp, None)
        for q in touched.values():
            self._refresh_head(q)
            self._schedule(q)
        return gone

    def _undo_new(self, q: HostQueue) -> None:
        q.urls -= 1
        self._urls -= 1
        self._schedulable -= 1

    # -- questions ---------------------------------------------------------------

    def has_pending(self) -> bool:
        """True while any URL will be due some day, or is out.  A worker of
        a shared frontier always has: other workers may add URLs any time."""
        return self._schedulable > 0 or bool(self._out) or self.sharing is not None

    def queues(self) -> Iterator[HostQueue]:
        return iter(self._queues.values())

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

    @property
    def url_count(self) -> int:
        return self._urls

    @property
    def never_count(self) -> int:
        """URLs that will not be visited again (failed, disregarded)."""
        return self._urls - self._schedulable

    @property
    def out_count(self) -> int:
        return len(self._out)

    @property
    def visit_count(self) -> int:
        return self._visits

    @property
    def version_count(self) -> int:
        return self._versions

    @property
    def quarantined_count(self) -> int:
        """Unreadable records moved aside (``x/`` keys), over the crawl's life."""
        return self._quarantined

    @property
    def forgotten_count(self) -> int:
        """URLs deleted on request (:meth:`forget`), over the crawl's life."""
        return self._forgotten

    def shape(self, *, due_limit: int = 200_000) -> dict[str, Any]:
        """The frontier at a glance, for the periodic log line and stats."""
        return frontier_shape(self, due_limit=due_limit)
