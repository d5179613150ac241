"""The adaptive revisiting frontier: per-queue priority queues of URLs.

This is the storage-agnostic logic of thesis chapter 6.2, with no Scrapy
import: :meth:`Frontier.add`, :meth:`Frontier.next` and
:meth:`Frontier.update` over a :class:`~.store.Store`.

* URLs are never dequeued.  ``add`` leaves a known URL alone unless asked
  to pull it forward (``force``) or its scheduling directive rises; ``next``
  issues the head of the queue that has been ready the longest and holds it
  as *out*; ``update`` folds a visit's verdict into the record and moves the
  URL to its next time, in one atomic write.
* The frontier is the duplicate filter: a fingerprint has one record.
* ``hint`` takes a site's announcement that a known URL changed (a sitemap
  ``lastmod``, a feed entry): the wait policy decides whether to move the
  visit earlier, the visit that follows settles the hint, and each host
  keeps a per-source track record (:mod:`.hints`).
* Politeness is enforced here, once: a queue issues at most ``valence``
  URLs at a time, and after each fetch its slot rests for
  ``clamp(delay_factor × duration, min_delay, max_delay)`` (or the host's
  robots.txt ``Crawl-delay`` if longer).
* What is out is held in memory only.  If the process dies, the URL's queue
  entry still says when it was due, so a restart simply issues it again.
  A URL that never comes back (lost by a middleware) returns to its queue
  when its lease runs out, so a queue is never blocked for good.
"""

from __future__ import annotations

import heapq
import json
import math
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from enum import StrEnum
from typing import Any

from ..settings import DEFAULTS
from . import hints
from .hints import Hint, HintResult
from .hostqueue import HostQueue, QueueState
from .keys import NEVER_MS, time_to_ms
from .record import ChangeState, Outcome, UrlRecord, Visit
from .store import Batch, Store

Entry = tuple[int, int, bytes]  # (directive, next_ms, fp)


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


@dataclass
class _Out:
    queue: str
    issued: float
    lease_until: float
    overdue: float
    #: the record as issued, kept up to date by add(): update() needs no read
    record: UrlRecord


@dataclass(frozen=True)
class Politeness:
    """The frontier's politeness and retry rules, in seconds."""

    delay_factor: float = DEFAULTS["ADAPTIVE_DELAY_FACTOR"]
    min_delay: float = DEFAULTS["ADAPTIVE_MIN_DELAY"]
    max_delay: float = DEFAULTS["ADAPTIVE_MAX_DELAY"]
    valence: int = DEFAULTS["ADAPTIVE_HOST_VALENCE"]
    retry_delay: float = DEFAULTS["ADAPTIVE_RETRY_DELAY"]
    max_retries: int = DEFAULTS["ADAPTIVE_MAX_RETRIES"]
    lease: float = DEFAULTS["ADAPTIVE_LEASE"]


class Frontier:
    """Per-queue priority queues of URL records over a :class:`Store`."""

    def __init__(
        self,
        store: Store,
        politeness: Politeness | None = None,
        *,
        history_size: int = 16,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.politeness = politeness or Politeness()
        self.history_size = history_size
        self.clock = clock
        self._queues: dict[str, HostQueue] = {}
        self._heap: list[tuple[float, int, str]] = []
        self._out: dict[bytes, _Out] = {}
        self._schedulable = 0  # URLs whose next time is not "never"
        self._urls = 0
        self._visits = 0
        self._versions = 0
        #: hint source -> [confirmed, refuted, Σq] over every queue
        self._hint_pooled: dict[str, list[float]] = {}
        #: recent overdue times (seconds) of issued URLs, for percentiles
        self.overdue_samples: deque[float] = deque(maxlen=2000)

    # -- opening -----------------------------------------------------------

    def load(self) -> None:
        """Rebuild the in-memory queues from the store's per-queue counters.

        Reads one small row per queue plus one seek for its head: restart
        time grows with hosts, not URLs.  Nothing is out after a restart.
        """
        for name, raw in self.store.hosts():
            data = json.loads(raw)
            q = self._new_queue(name)
            q.urls, q.never = int(data.get("u", 0)), int(data.get("n", 0))
            q.visits, q.versions = int(data.get("vi", 0)), int(data.get("ve", 0))
            q.crawl_delay = data.get("cd")
            q.trust = dict(data.get("tr") or {})
            q.hint_trust = {str(k): hints.counts(v) for k, v in (data.get("hn") or {}).items()}
            for source, counts in q.hint_trust.items():
                hints.pool(self._hint_pooled.setdefault(source, [0.0, 0.0, 0.0]), counts)
            self._urls += q.urls
            self._schedulable += q.urls - q.never
            self._visits += q.visits
            self._versions += q.versions
            self._refresh_head(q)
            self._schedule(q)

    def _new_queue(self, name: str) -> HostQueue:
        q = HostQueue(name=name, valence=self.politeness.valence)
        self._queues[name] = q
        return q

    # -- the heap of queues ------------------------------------------------

    def _schedule(self, q: HostQueue) -> None:
        """(Re)place *q* on the heap at the time it becomes ready.

        The heap holds queues, not URLs, ordered by the time each became (or
        becomes) ready, so the queue ready the longest is handed out first.
        Older entries of the same queue are left behind and skipped.
        """
        q.heap_version += 1
        ready = q.ready_time()
        if not math.isinf(ready):
            heapq.heappush(self._heap, (ready, q.heap_version, q.name))
            if len(self._heap) > 4 * len(self._queues) + 1024:
                self._compact_heap()

    def _compact_heap(self) -> None:
        """Drop stale entries so the heap stays proportional to the queues.

        Entries left behind by re-scheduling are normally skipped when they
        reach the top, but one that becomes ready days from now would linger
        that long; a crawl that never ends must not accumulate them.
        """
        self._heap = [
            (ready, version, name) for ready, version, name in self._heap if self._queues[name].heap_version == version
        ]
        heapq.heapify(self._heap)

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
        while self._heap:
            ready, version, name = self._heap[0]
            if self._queues[name].heap_version == version:
                return ready
            heapq.heappop(self._heap)
        return None

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
        raw = self.store.get_record(fp)
        if raw is None:
            if callable(request):
                request = request()
            q = self._queues.get(queue) or self._new_queue(queue)
            record = UrlRecord(
                url=url, queue=queue, request=request, next_ms=now_ms, directive=directive, discovered=now
            )
            q.urls += 1
            self._urls += 1
            self._schedulable += 1
            batch = Batch(records={fp: record.to_bytes()}, hosts={queue: self._counters(q)})
            batch.entries_put.append((queue, directive, now_ms, fp))
            self._write(batch, q, undo=lambda: self._undo_new(q))
            entry = (directive, now_ms, fp)
            if q.head is None or _order(entry) < _order(q.head):
                q.head = entry
                self._schedule(q)
            return AddResult.NEW
        if not force and directive == 0:
            return AddResult.DUPLICATE
        record = UrlRecord.from_bytes(raw)
        new_directive = max(record.directive, directive)
        new_ms = record.next_ms
        if force or new_directive > record.directive:
            new_ms = min(record.next_ms, now_ms)
        if (new_directive, new_ms) == (record.directive, record.next_ms):
            return AddResult.DUPLICATE
        q = self._queues[record.queue]
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
        batch.records[fp] = record.to_bytes()
        self._write(batch, q)
        out = self._out.get(fp)
        if out is not None:
            out.record = record
        self._moved(q, old_entry, (new_directive, new_ms, fp))
        self._schedule(q)
        return AddResult.RESCHEDULED

    def next(self) -> Issued | None:
        """Issue the due head of the queue that has been ready the longest."""
        now = self.clock()
        while self._heap:
            ready, version, name = self._heap[0]
            q = self._queues[name]
            if q.heap_version != version:
                heapq.heappop(self._heap)
                continue
            if ready > now:
                return None
            heapq.heappop(self._heap)
            if q.state(now) is not QueueState.READY or q.head is None:
                self._schedule(q)
                continue
            directive, next_ms, fp = q.head
            raw = self.store.get_record(fp)
            if raw is None:
                # An index entry without its record cannot be crawled; drop
                # the entry rather than block the queue on it.
                self.store.write(Batch(entries_deleted=[(name, directive, next_ms, fp)]))
                self._refresh_head(q, q.head)
                self._schedule(q)
                continue
            record = UrlRecord.from_bytes(raw)
            overdue = max(0.0, now - next_ms / 1000)
            q.take_slot(fp, now)
            self._out[fp] = _Out(name, now, now + self.politeness.lease, overdue, record)
            self.overdue_samples.append(overdue)
            self._refresh_head(q, q.head)
            self._schedule(q)
            return Issued(fp, record, overdue)
        return None

    def hint(
        self,
        fp: bytes,
        hint: Hint,
        decide: Callable[[Mapping[str, Any], Hint], float | None] | None = None,
    ) -> HintResult:
        """Take a change hint for a known URL; maybe move its visit earlier.

        What cannot be news is dropped here, for every policy alike: an
        unknown or out URL, one that will never be visited again, a claimed
        modification not later than the last visit (the visit saw it), and a
        second hint while an acted-on one still waits.  Otherwise *decide*
        (the wait policy's ``hint_wait``) gets the record's snapshot and the
        hint, completed with its receipt time and its source's track record,
        and answers the seconds from now until the visit, or None.  Only a
        visit earlier than the planned one is applied; the hint is then kept
        on the record until that visit settles it (see :meth:`update`).
        """
        raw = self.store.get_record(fp)
        if raw is None:
            return HintResult.UNKNOWN
        if fp in self._out:
            return HintResult.OUT
        record = UrlRecord.from_bytes(raw)
        if record.never:
            return HintResult.NEVER
        if hint.modified is not None and record.fetched is not None and hint.modified <= record.fetched:
            return HintResult.STALE
        if record.hint:
            return HintResult.PENDING
        now = self.clock()
        q = self._queues[record.queue]
        own = hints.counts(q.hint_trust.get(hint.source))
        pooled = hints.counts(self._hint_pooled.get(hint.source))
        hint = replace(hint, received=now, trust=(own[0], own[1], own[2]), pooled=(pooled[0], pooled[1], pooled[2]))
        wait = decide(record.snapshot(), hint) if decide is not None else None
        if wait is None or not (wait >= 0 and math.isfinite(wait)):
            return HintResult.DECLINED
        new_ms = time_to_ms(now + wait)
        if new_ms >= record.next_ms:
            return HintResult.LATER
        old_entry = (record.directive, record.next_ms, fp)
        batch = Batch()
        batch.move_entry((record.queue, *old_entry), (record.queue, record.directive, new_ms, fp))
        record.next_ms = new_ms
        record.hint = {"t": round(now, 3), "m": hint.modified, "s": hint.source, "c": own, "g": pooled}
        batch.records[fp] = record.to_bytes()
        self._write(batch, q)
        self._moved(q, old_entry, (record.directive, new_ms, fp))
        self._schedule(q)
        return HintResult.ACTED

    def _settle_hint(self, q: HostQueue, record: UrlRecord, visit: Visit) -> None:
        """Score an acted-on hint by the visit it caused, per host and source."""
        if record.hint is None or visit.outcome is Outcome.RETRY:
            return  # a retry is not the visit yet
        source = str(record.hint.get("s"))
        record.hint = None
        if visit.outcome is not Outcome.VISITED or visit.change is ChangeState.UNKNOWN:
            return
        confirmed = visit.change is ChangeState.CHANGED
        old = hints.counts(q.hint_trust.get(source))
        new = hints.observe(old, confirmed, visit.hint_base or 0.0)
        q.hint_trust[source] = new
        pooled = self._hint_pooled.setdefault(source, [0.0, 0.0, 0.0])
        hints.pool(pooled, old, -1)
        hints.pool(pooled, new)
        visit.annotations.append(hints.CONFIRMED if confirmed else hints.REFUTED)

    def hint_report(self) -> dict[str, dict[str, list[float]]]:
        """Every queue's hint track record (source -> [confirmed, refuted, Σq])."""
        return {name: {s: list(c) for s, c in q.hint_trust.items()} for name, q in self._queues.items() if q.hint_trust}

    def fetch_ended(self, fp: bytes, duration: float) -> None:
        """The download of *fp* is over: start its slot's politeness wait.

        Called as soon as the downloader lets go of the request, before the
        verdict, so the host's wait is counted from the end of the fetch.
        """
        out = self._out.get(fp)
        if out is None:
            return
        q = self._queues[out.queue]
        wait = q.politeness_wait(
            duration, self.politeness.delay_factor, self.politeness.min_delay, self.politeness.max_delay
        )
        if q.release_slot(fp, self.clock() + wait):
            self._schedule(q)

    def update(self, fp: bytes, visit: Visit) -> UrlRecord | None:
        """Fold *visit* into the URL's record and move it to its next time.

        Returns the updated record, or None for an unknown fingerprint.
        """
        now = self.clock()
        out = self._out.pop(fp, None)
        if out is not None:
            record = out.record
        else:
            raw = self.store.get_record(fp)
            if raw is None:
                return None
            record = UrlRecord.from_bytes(raw)
        q = self._queues[record.queue]
        old = (record.queue, record.directive, record.next_ms, fp)
        was_never = record.never
        p = self.politeness
        slot_free_at = now + q.politeness_wait(visit.duration or 0.0, p.delay_factor, p.min_delay, p.max_delay)

        outcome = visit.outcome
        if outcome is Outcome.RETRY and record.failures + 1 > p.max_retries:
            outcome = Outcome.FAILED
            visit.reason = f"{visit.reason or 'error'} (gave up after {p.max_retries} retries)"
        record.outcome = outcome.value
        record.reason = visit.reason
        record.directive = 0  # a preference holds for one issue, not for ever
        if out is not None:
            record.overdue = round(out.overdue, 3)
        if outcome is Outcome.VISITED:
            record.visits += 1
            record.failures = 0
            q.visits += 1
            self._visits += 1
            if visit.change is ChangeState.CHANGED:
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
            wait = visit.wait if visit.wait is not None else 0.0
            record.wait = wait
            record.next_ms = time_to_ms(now + wait)
            record.history.append([round(now, 3), visit.change.value, visit.status])
            del record.history[: -self.history_size]
        elif outcome is Outcome.RETRY:
            record.failures += 1
            record.next_ms = time_to_ms(now + p.retry_delay)
        else:
            record.next_ms = NEVER_MS

        if visit.host_trust is not None:
            q.trust = visit.host_trust
        self._settle_hint(q, record, visit)
        batch = Batch(records={fp: record.to_bytes()})
        batch.move_entry(old, (record.queue, record.directive, record.next_ms, fp))
        if record.never != was_never:
            q.never += 1 if record.never else -1
            self._schedulable += -1 if record.never else 1
        batch.hosts[record.queue] = self._counters(q)
        self._write(batch, q)
        if q.out.get(fp) is not None:
            q.release_slot(fp, slot_free_at)
        q.out.pop(fp, None)
        if outcome is Outcome.RETRY and visit.host_level:
            # the host itself is unreachable: every slot rests the retry delay
            q.snooze_all(now + p.retry_delay)
        self._moved(q, old[1:], (record.directive, record.next_ms, fp))
        self._schedule(q)
        return record

    def requeue(self, fp: bytes) -> bool:
        """Give an out URL back to its queue unchanged (lease end, re-send).

        Its queue entry never moved, so it is due again at once, after the
        slot's politeness wait.
        """
        out = self._out.pop(fp, None)
        if out is None:
            return False
        q = self._queues[out.queue]
        if q.out.get(fp) is not None:
            q.release_slot(fp, self.clock() + self.politeness.min_delay)
        q.out.pop(fp, None)
        entry = (out.record.directive, out.record.next_ms, fp)
        self._moved(q, entry, entry)
        self._schedule(q)
        return True

    def expire_leases(self) -> list[bytes]:
        """Requeue URLs out for longer than the lease; return them."""
        now = self.clock()
        expired = [fp for fp, out in self._out.items() if out.lease_until <= now]
        for fp in expired:
            self.requeue(fp)
        return expired

    # -- per-queue facts -------------------------------------------------------

    def set_crawl_delay(self, queue: str, seconds: float | None) -> None:
        """Honour a robots.txt ``Crawl-delay`` for *queue* (persisted)."""
        q = self._queues.get(queue)
        if q is None or q.crawl_delay == seconds:
            return
        q.crawl_delay = seconds
        self._write(Batch(hosts={queue: self._counters(q)}), q)

    def queue_trust(self, queue: str) -> dict[str, int]:
        """A copy of the queue's validator track record (empty if unknown)."""
        q = self._queues.get(queue)
        return dict(q.trust) if q is not None else {}

    def set_queue_trust(self, queue: str, trust: dict[str, int]) -> None:
        """Replace the queue's track record in memory; it is written with the
        queue's next counters write (every update of one of its URLs)."""
        q = self._queues.get(queue)
        if q is not None:
            q.trust = trust

    def trust_report(self) -> dict[str, dict[str, int]]:
        """Every queue's validator track record, for reports."""
        return {name: dict(q.trust) for name, q in self._queues.items() if q.trust}

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

    def _undo_new(self, q: HostQueue) -> None:
        q.urls -= 1
        self._urls -= 1
        self._schedulable -= 1

    # -- questions ---------------------------------------------------------------

    def is_out(self, fp: bytes) -> bool:
        return fp in self._out

    def out_queue(self, fp: bytes) -> str | None:
        out = self._out.get(fp)
        return out.queue if out else None

    def has_pending(self) -> bool:
        """True while any URL will be due some day, or is out."""
        return self._schedulable > 0 or bool(self._out)

    def queues(self) -> Iterator[HostQueue]:
        return iter(self._queues.values())

    def get_record(self, fp: bytes) -> UrlRecord | None:
        raw = self.store.get_record(fp)
        return UrlRecord.from_bytes(raw) if raw is not None else None

    @property
    def url_count(self) -> int:
        return self._urls

    def shape(self, *, due_limit: int = 200_000) -> dict[str, Any]:
        """The frontier at a glance, for the periodic log line and stats."""
        now = self.clock()
        states = {s: 0 for s in QueueState}
        for q in self._queues.values():
            states[q.state(now)] += 1
        due = 0
        now_ms = time_to_ms(now)
        for q in self._queues.values():
            if due >= due_limit:
                break
            if q.head_time() <= now:
                due += self.store.count_due(q.name, now_ms, limit=due_limit - due)
        samples = sorted(self.overdue_samples)
        return {
            "urls": self._urls,
            "never": self._urls - self._schedulable,
            "queues": len(self._queues),
            "ready": states[QueueState.READY],
            "snoozed": states[QueueState.SNOOZED],
            "busy": states[QueueState.BUSY],
            "empty": states[QueueState.EMPTY],
            "out": len(self._out),
            "due": due,
            "due_capped": due >= due_limit,
            "overdue_p50": _percentile(samples, 0.5),
            "overdue_p95": _percentile(samples, 0.95),
            "visits": self._visits,
            "versions": self._versions,
        }


def _percentile(ordered: list[float], q: float) -> float | None:
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
