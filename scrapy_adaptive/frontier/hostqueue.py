"""The in-memory face of one politeness queue (thesis 6.2.1).

The queue's URLs live in the store; in memory a queue keeps only what its
state is computed from: the head entry, its processing slots and the URLs
it has out.  Memory therefore grows with hosts, not URLs.

The state is *computed*, never set from outside:

* **empty** – nothing to issue and nothing out;
* **busy** – as many URLs out as the valence allows;
* **snoozed** – a politeness or retry wait runs, or the next URL is not due
  (``never`` URLs keep a queue snoozed for ever);
* **ready** – otherwise.

Slots follow the thesis: one number per allowed concurrent fetch, the time
it may next be used, or ``IN_USE``.  Each returned URL starts its own
politeness wait, so with valence 2 the two waits run independently.
"""

from __future__ import annotations

import heapq
import json
import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from ..change.trust import normalise as normalise_trust
from ..config.table import DEFAULTS
from ..store.keys import (
    CRAWL_DELAY_KEY,
    FORGOTTEN_KEY,
    GONE_KEY,
    HINT_TRUST_KEY,
    NEVER_KEY,
    NEVER_MS,
    NEXT_FETCH_KEY,
    PRIORITIZED_KEY,
    QUARANTINED_KEY,
    TRUST_KEY,
    URLS_KEY,
    VERSIONS_KEY,
    VISITS_KEY,
)
from .hints import counts

IN_USE = -1.0

#: field -> stored key
COUNTER_KEYS = {
    "urls": URLS_KEY,
    "never": NEVER_KEY,
    "visits": VISITS_KEY,
    "versions": VERSIONS_KEY,
    "crawl_delay": CRAWL_DELAY_KEY,
    "trust": TRUST_KEY,
    "hint_trust": HINT_TRUST_KEY,
    "quarantined": QUARANTINED_KEY,
    "forgotten": FORGOTTEN_KEY,
    "gone": GONE_KEY,
    "next_fetch_ms": NEXT_FETCH_KEY,
    "prioritized": PRIORITIZED_KEY,
}

#: the counters' compact JSON encoder (built once: json.dumps builds one per call)
_encode_counters = json.JSONEncoder(separators=(",", ":")).encode

#: how far before the clock a new URL's time may be, to keep the order URLs
#: were added in (:meth:`HostQueue.arrival_ms`): a first visit's lateness
#: reads at most this much more than it is
ARRIVAL_LEAD_MS = 50

#: a queue entry: (directive, next_ms, fp)
Entry = tuple[int, int, bytes]


def order(entry: Entry) -> tuple[int, int, bytes]:
    """Sort key matching the store's order: higher directive, earlier time."""
    return (-entry[0], entry[1], entry[2])


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


class QueueState(StrEnum):
    EMPTY = "empty"
    READY = "ready"
    BUSY = "busy"
    SNOOZED = "snoozed"


#: digests of one host remembered for the shared-page count (oldest dropped)
MAX_SHARED_DIGESTS = 64


@dataclass
class Soft404:
    """What one host's error and placeholder pages look like.

    ``not_found``: the digest of the host's last 404/410 page; ``shared``:
    digest -> the URLs (fingerprints, at most the threshold) whose page had
    it, for at most :data:`MAX_SHARED_DIGESTS` digests.  Bounded, kept in
    memory: after a restart it is learned again from the next visits.
    """

    not_found: str | None = None
    shared: dict[str, set[bytes]] = field(default_factory=dict)


@dataclass
class HostQueue:
    """State of one queue; the frontier drives it, it decides its state."""

    name: str
    valence: int
    #: (directive, next_ms, fp) of the first URL not out, or None
    head: tuple[int, int, bytes] | None = None
    #: fingerprints currently out -> index of the slot they hold (or None)
    out: dict[bytes, int | None] = field(default_factory=dict)
    slots: list[float] = field(default_factory=list)
    urls: int = 0
    never: int = 0
    visits: int = 0
    versions: int = 0
    #: records of this queue found unreadable and moved aside
    quarantined: int = 0
    #: URLs of this queue deleted on request (``Frontier.forget``)
    forgotten: int = 0
    #: URLs of this queue said ``gone`` and not back since (their record's
    #: ``presence``): counted as verdicts and forgets change it, so a report
    #: need not read every record (a gone URL whose record is found
    #: unreadable and quarantined stays counted: its presence cannot be read)
    gone: int = 0
    #: URLs of this queue added with a ``Request.priority`` other than 0:
    #: while there are any, due URLs are ordered by priority
    #: (:mod:`.priority`); never decreased
    prioritized: int = 0
    #: the time given to the last URL added (:meth:`arrival_ms`), not stored
    last_arrival_ms: int = 0
    crawl_delay: float | None = None
    #: how far this host's validators can be believed, host-wide and per
    #: sibling class (a ``TrustBook``'s data, see change/trust.py)
    trust: dict[str, dict[str, int]] = field(default_factory=dict)
    #: change-hint sources of this host -> [confirmed, refuted, Σq] (hints.py)
    hint_trust: dict[str, list[float]] = field(default_factory=dict)
    #: soft-404s and parked pages (hostfacts.py), learned anew in each process
    soft404: Soft404 = field(default_factory=lambda: Soft404())
    #: bumped whenever the queue is (re)pushed on the frontier's heap, so
    #: stale heap entries can be recognised and skipped
    heap_version: int = 0
    #: the ranking waits of due URLs weighed at the last issue (urgency.py):
    #: consecutive issues weigh mostly the same URLs, so each is read once
    urgency_waits: dict[bytes, float | None] = field(default_factory=dict)
    #: the entries read past the head, kept in step with the frontier's
    #: writes (readahead.py); with ``window_to_end`` they reach the queue's end
    window: list[Entry] = field(default_factory=list)
    #: each window entry's sort key (:func:`order`), in step with ``window``:
    #: searched without a key function (a window is searched several times per issue)
    window_keys: list[tuple[int, int, bytes]] = field(default_factory=list)
    window_to_end: bool = False

    def __post_init__(self) -> None:
        if not self.slots:
            self.slots = [0.0] * self.valence

    # -- state -------------------------------------------------------------

    def head_time(self) -> float:
        if self.head is None or self.head[1] >= NEVER_MS:
            return math.inf
        return self.head[1] / 1000

    def ready_time(self) -> float:
        """When this queue can next issue a URL (``inf``: not by itself): its
        earliest free slot and its head both ready.  Read at every place on
        the heap (several times per fetch), so in one pass (:meth:`head_time` too)."""
        head = self.head
        ready = math.inf if head is None or head[1] >= NEVER_MS else head[1] / 1000
        earliest = math.inf  # the earliest slot not in use
        for t in self.slots:
            if t != IN_USE and t < earliest:
                earliest = t
        return earliest if earliest > ready else ready

    def state(self, now: float) -> QueueState:
        if self.head is None and not self.out:
            return QueueState.EMPTY
        if self.slots.count(IN_USE) == len(self.slots):
            return QueueState.BUSY
        return QueueState.READY if self.ready_time() <= now else QueueState.SNOOZED

    # -- transitions driven by the frontier ---------------------------------

    def take_slot(self, fp: bytes, now: float) -> None:
        """Mark *fp* as out, holding the free slot that has waited longest."""
        index = -1
        for i, t in enumerate(self.slots):
            if t != IN_USE and t <= now and (index < 0 or t < self.slots[index]):
                index = i
        if index < 0:
            raise ValueError(f"queue {self.name} has no free slot at {now}")
        self.slots[index] = IN_USE
        self.out[fp] = index

    def release_slot(self, fp: bytes, free_at: float) -> bool:
        """The fetch of *fp* ended: its slot is usable again at *free_at*.

        The URL stays out (its verdict may still come); returns False if it
        held no slot.
        """
        index = self.out.get(fp)
        if index is None:
            return False
        self.slots[index] = free_at
        self.out[fp] = None
        return True

    def snooze_all(self, until: float) -> None:
        """Rest every slot not in use until *until* (host unreachable)."""
        self.slots = [t if t == IN_USE else max(t, until) for t in self.slots]

    def politeness_wait(self, duration: float, factor: float, min_delay: float, max_delay: float) -> float:
        """Wait after a fetch: clamp(factor × duration), never below Crawl-delay."""
        wait = min(max(factor * max(duration, 0.0), min_delay), max_delay)
        if self.crawl_delay is not None:
            wait = max(wait, self.crawl_delay)
        return wait

    @property
    def next_fetch_ms(self) -> int:
        """When every slot not in use has rested (wall-clock ms; 0: now).

        Persisted with the counters so a restart keeps the politeness wait
        of the last fetches; restored to every slot, which is exact for a
        valence of 1 and errs on the polite side above it.  A slot in use
        has no known end: a fetch in flight at a ``kill -9`` is not covered.
        """
        rested = 0.0
        for t in self.slots:
            if t > rested:
                rested = t
        return math.ceil(rested * 1000)  # rounded up: never a millisecond early

    def arrival_ms(self, now_ms: int) -> int:
        """The time of a URL added at *now_ms*: its place in its queue's
        line.  A new URL is due at once, so its time only orders it among
        the due, and URLs added together must keep their order (first in,
        first out) however their fingerprints sort.  So each gets the
        millisecond after the last one added, the line starting
        :data:`ARRIVAL_LEAD_MS` before now: never later than now (a new URL
        is never not yet due), and a queue keeps the order of that many
        URLs added within as many milliseconds (more tie at now)."""
        ms = min(now_ms, max(now_ms - ARRIVAL_LEAD_MS, self.last_arrival_ms + 1))
        self.last_arrival_ms = ms
        return ms

    def counters(self) -> dict[str, object]:
        """What is persisted per queue (keys: :data:`COUNTER_KEYS`): counts
        and per-host facts, not URLs.  Written with every update of one of
        the queue's URLs, so it is built directly."""
        data: dict[str, object] = {
            URLS_KEY: self.urls,
            NEVER_KEY: self.never,
            VISITS_KEY: self.visits,
            VERSIONS_KEY: self.versions,
        }
        if self.quarantined:
            data[QUARANTINED_KEY] = self.quarantined
        if self.forgotten:
            data[FORGOTTEN_KEY] = self.forgotten
        if self.gone:
            data[GONE_KEY] = self.gone
        if self.prioritized:
            data[PRIORITIZED_KEY] = self.prioritized
        rested = self.next_fetch_ms
        if rested:
            data[NEXT_FETCH_KEY] = rested
        if self.crawl_delay is not None:
            data[CRAWL_DELAY_KEY] = self.crawl_delay
        if self.trust:
            data[TRUST_KEY] = self.trust
        if self.hint_trust:
            data[HINT_TRUST_KEY] = self.hint_trust
        return data

    def counters_bytes(self) -> bytes:
        """:meth:`counters` as stored, compact JSON.  A queue with counts
        only (no Crawl-delay, no trust record) is written directly, in the
        same bytes as the JSON encoder's: it is rewritten at every verdict."""
        if self.crawl_delay is not None or self.trust or self.hint_trust:
            return _encode_counters(self.counters()).encode()
        text = (
            f'{{"{URLS_KEY}":{self.urls},"{NEVER_KEY}":{self.never},'
            f'"{VISITS_KEY}":{self.visits},"{VERSIONS_KEY}":{self.versions}'
        )
        if self.quarantined:
            text += f',"{QUARANTINED_KEY}":{self.quarantined}'
        if self.forgotten:
            text += f',"{FORGOTTEN_KEY}":{self.forgotten}'
        if self.gone:
            text += f',"{GONE_KEY}":{self.gone}'
        if self.prioritized:
            text += f',"{PRIORITIZED_KEY}":{self.prioritized}'
        rested = self.next_fetch_ms
        if rested:
            text += f',"{NEXT_FETCH_KEY}":{rested}'
        return (text + "}").encode()

    def restore_counters(self, data: dict[str, Any]) -> None:
        """Take back what :meth:`counters` stored."""
        self.urls, self.never = int(data.get(URLS_KEY, 0)), int(data.get(NEVER_KEY, 0))
        self.visits, self.versions = int(data.get(VISITS_KEY, 0)), int(data.get(VERSIONS_KEY, 0))
        self.quarantined = int(data.get(QUARANTINED_KEY, 0))
        self.forgotten = int(data.get(FORGOTTEN_KEY, 0))
        self.gone = int(data.get(GONE_KEY, 0))
        self.prioritized = int(data.get(PRIORITIZED_KEY, 0))
        rested = int(data.get(NEXT_FETCH_KEY, 0)) / 1000
        self.slots = [max(t, rested) for t in self.slots]
        self.crawl_delay = data.get(CRAWL_DELAY_KEY)
        self.trust = normalise_trust(data.get(TRUST_KEY))
        self.hint_trust = {str(k): counts(v) for k, v in (data.get(HINT_TRUST_KEY) or {}).items()}


class QueueHeap:
    """The queues ordered by the time each becomes ready (a lazy heap).

    It holds queues, not URLs, so the queue ready the longest is handed out
    first and memory grows with hosts.  Re-placing a queue leaves its older
    entry behind, recognised by the queue's ``heap_version`` and skipped.
    """

    def __init__(self, queues: dict[str, HostQueue]) -> None:
        self._queues = queues
        self._heap: list[tuple[float, int, str]] = []

    def place(self, q: HostQueue) -> None:
        """(Re)place *q* at the time it becomes ready (nowhere: never by itself)."""
        q.heap_version += 1
        ready = q.ready_time()
        if not math.isinf(ready):
            heapq.heappush(self._heap, (ready, q.heap_version, q.name))
            if len(self._heap) > 4 * len(self._queues) + 1024:
                self._compact()

    def _compact(self) -> None:
        """Drop stale entries so the heap stays proportional to the queues.

        Entries left behind by re-placing are normally skipped when they
        reach the top, but one that becomes ready days from now would linger
        that long; a crawl that never ends must not accumulate them.
        """
        self._heap = [
            (ready, version, name) for ready, version, name in self._heap if self._queues[name].heap_version == version
        ]
        heapq.heapify(self._heap)

    def peek(self) -> tuple[float, HostQueue] | None:
        """The earliest live entry: (ready time, queue), or None."""
        while self._heap:
            ready, version, name = self._heap[0]
            q = self._queues[name]
            if q.heap_version == version:
                return ready, q
            heapq.heappop(self._heap)
        return None

    def pop(self) -> None:
        """Remove the entry :meth:`peek` returned."""
        heapq.heappop(self._heap)

    def __len__(self) -> int:
        return len(self._heap)
