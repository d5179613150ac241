"""The storage contract the frontier logic is written against.

The frontier never imports a database.  It needs exactly this: records by
fingerprint, per-queue ordered entries, per-queue counters, a few state-wide
facts, and *atomic* batches mixing all of them.  LevelDB
(:mod:`.leveldb_store`) implements it for one machine; Redis
(:mod:`.redis_store`: sorted sets read with ``ZRANGEBYLEX``, ``MULTI``) for a
frontier shared by many workers (:mod:`.sharing`).

:class:`MemoryStore` is the reference implementation: the contract tests run
against both, and the policy simulator uses it for speed.
"""

from __future__ import annotations

import bisect
import json
import os
import pwd
from abc import ABC, abstractmethod
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field

from . import keys


def read_mark(mark: bytes) -> dict | None:
    """A pending-delivery mark's fields; None if it is not one (garbled)."""
    try:
        fields = json.loads(mark)
    except ValueError:
        return None
    return fields if isinstance(fields, dict) else None


def in_queues(mark: bytes, queues: Collection[str] | None) -> bool:
    """Is a pending-delivery mark one of *queues*' (None: of any queue)?

    A garbled mark names no queue: only a reader of every queue sees it
    (and re-delivers its URL, :mod:`~scrapy_adaptive.frontier.pending`).
    """
    if queues is None:
        return True
    fields = read_mark(mark)
    return fields is not None and fields.get("q") in queues


def wanted(queue: str, queues: Collection[str] | None) -> bool:
    """Is *queue* one of *queues* (None: every queue)?"""
    return queues is None or queue in queues


@dataclass
class Batch:
    """Writes that must happen together or not at all.

    Deletes are applied before puts, so moving a queue entry (delete the old
    key, put the new one) is safe even if both keys are equal.
    """

    #: (queue, fp) -> record.  Every URL-keyed item names its queue: a
    #: clustered store keeps a URL's keys in its queue's hash slot
    records: dict[tuple[str, bytes], bytes] = field(default_factory=dict)
    #: queue -> its counters, a JSON object (a shared store merges them key by key)
    hosts: dict[str, bytes] = field(default_factory=dict)
    meta: dict[str, bytes] = field(default_factory=dict)
    entries_put: list[tuple[str, int, int, bytes]] = field(default_factory=list)
    entries_deleted: list[tuple[str, int, int, bytes]] = field(default_factory=list)
    #: unreadable records moved aside: (queue, fp) -> their raw bytes (the
    #: record itself is deleted, the bytes are kept under the quarantine prefix)
    quarantined: dict[tuple[str, bytes], bytes] = field(default_factory=dict)
    #: (queue, fp) -> pending-delivery mark (None deletes it)
    pending: dict[tuple[str, bytes], bytes | None] = field(default_factory=dict)
    #: fingerprints whose records must not exist yet (a new URL): if one
    #: does, nothing is written and :class:`Conflict` is raised (on a shared
    #: store, another worker added the same URL a moment before)
    absent: list[tuple[str, bytes]] = field(default_factory=list)
    #: records deleted for good (``scrapy frontier forget``): (queue, fp)
    records_deleted: list[tuple[str, bytes]] = field(default_factory=list)
    #: the outbox: (queue, :func:`~.keys.event_key`) -> a change event's bytes
    #: (None deletes it, once delivered).  Written in the batch that updates
    #: the URL's record, under the record's queue: the event exists if and
    #: only if the verdict it reports was recorded
    events: dict[tuple[str, bytes], bytes | None] = field(default_factory=dict)
    #: (queue, fp) -> the URL's captured text, compressed (None deletes it):
    #: written with the record whose digest it belongs to, so a crash never
    #: leaves one without the other.  A record deleted or quarantined takes
    #: its text with it, in the same write, without being named here
    texts: dict[tuple[str, bytes], bytes | None] = field(default_factory=dict)

    def move_entry(self, old: tuple[str, int, int, bytes] | None, new: tuple[str, int, int, bytes]) -> None:
        """Re-key a URL in its queue: ``(queue, directive, next_ms, fp)``."""
        if old == new:
            return
        if old is not None:
            self.entries_deleted.append(old)
        self.entries_put.append(new)


def split_by_queue(batch: Batch) -> list[Batch]:
    """*batch* as one batch per queue it touches, plus one for its facts:
    each part is about one queue (a Redis Cluster runs each as one
    transaction in its queue's hash slot: :mod:`.redis`)."""
    parts: dict[str | None, Batch] = {}

    def part(queue: str | None) -> Batch:
        return parts.setdefault(queue, Batch())

    for entry in batch.entries_deleted:
        part(entry[0]).entries_deleted.append(entry)
    for entry in batch.entries_put:
        part(entry[0]).entries_put.append(entry)
    for where, raw in batch.records.items():
        part(where[0]).records[where] = raw
    for where, raw in batch.quarantined.items():
        part(where[0]).quarantined[where] = raw
    for where, mark in batch.pending.items():
        part(where[0]).pending[where] = mark
    for where in batch.absent:
        part(where[0]).absent.append(where)
    for where in batch.records_deleted:
        part(where[0]).records_deleted.append(where)
    for where, event in batch.events.items():
        part(where[0]).events[where] = event
    for where, text in batch.texts.items():
        part(where[0]).texts[where] = text
    for queue, raw in batch.hosts.items():
        part(queue).hosts[queue] = raw
    if batch.meta:
        part(None).meta.update(batch.meta)
    return list(parts.values())


class StoreError(RuntimeError):
    """The store could not be opened or written; the message says why."""


def access_denied(what: str, path: str, access: str, reason: object) -> str:
    """The one message for state this process may not read or write
    (``Permission denied``): *what* is not *access* by this user, the OS's
    *reason*, who owns *path*, and the fix: its owner and permissions.  It
    is not damage: a repair run by such a user would drop what it cannot read.
    """
    user = _user_name(os.geteuid())
    try:
        owner = f"; {path} belongs to {_user_name(os.stat(path).st_uid)}"
    except OSError:
        owner = ""
    return (
        f"{what} is not {access} by this user ({user}{owner}): {reason}. Nothing was changed and nothing is "
        f"damaged: let the user who runs the crawl own it and read and write it (chown -R {user} {path} && "
        f"chmod -R u+rwX {path}), or run the crawl as its owner."
    )


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


class Conflict(StoreError):
    """A batch's :attr:`Batch.absent` record exists: nothing was written."""


class StoreInUse(StoreError):
    """Another process holds the store (LevelDB's lock)."""


class StoreCorrupt(StoreError):
    """What the store holds is damaged: resuming needs a repair or a backup."""


class Store(ABC):
    """Bytes in, bytes out; no knowledge of Scrapy or of scheduling rules."""

    @abstractmethod
    def get_record(self, queue: str, fp: bytes) -> bytes | None:
        """The record of *fp*, a URL of *queue* (a store keyed by fingerprint
        alone may ignore *queue*; a clustered one finds the slot by it)."""

    @abstractmethod
    def get_text(self, queue: str, fp: bytes) -> bytes | None:
        """The captured text of *fp* (``Batch.texts``; None: none kept)."""

    @abstractmethod
    def queue_entries(
        self, queue: str, *, limit: int, start: tuple[int, int, bytes] | None = None
    ) -> Iterator[tuple[int, int, bytes]]:
        """The first *limit* ``(directive, next_ms, fp)`` of a queue, in order,
        from *start* (an entry, included) if given.

        The frontier passes the lowest position a live entry can have: moved
        entries leave deletion markers at the front of a queue, which a scan
        from the very start would have to step over.
        """

    @abstractmethod
    def count_due(self, queue: str, now_ms: int, *, limit: int) -> int:
        """How many entries of *queue* have ``next_ms <= now_ms`` (up to *limit*)."""

    @abstractmethod
    def due_times(self, queue: str, now_ms: int, *, limit: int) -> list[int]:
        """The ``next_ms`` of the first *limit* entries of *queue* that are
        due at *now_ms*, in the queue's order (each directive level's most
        overdue first): how late the URLs due now are."""

    @abstractmethod
    def hosts(self) -> Iterator[tuple[str, bytes]]:
        """Every queue's counters: what a restart reads (grows with hosts)."""

    @abstractmethod
    def get_host(self, queue: str) -> bytes | None:
        """One queue's counters (None: unknown queue)."""

    @abstractmethod
    def get_meta(self, name: str) -> bytes | None: ...

    @abstractmethod
    def pending(self, queues: Collection[str] | None = None) -> Iterator[tuple[bytes, bytes]]:
        """Every pending-delivery mark, ``(fp, mark)`` (what a restart
        re-delivers; grows with the versions in flight at a stop, not with
        URLs), or those of *queues* only.  The mark names its URL's queue
        (:func:`~.pending.pending_mark`); marks are those of queues whose
        counters were written (the frontier writes them with a queue's first
        URL), as are quarantined records."""

    @abstractmethod
    def events(self, queues: Collection[str] | None = None, limit: int = 1000) -> list[tuple[str, bytes, bytes]]:
        """The oldest *limit* change events of the outbox, ``(queue, key,
        event)``, oldest key first over every queue read (keys begin with the
        event's time: :func:`~.keys.event_key`), or those of *queues* only.

        What a drain reads, delivers, then deletes (``Batch.events[queue,
        key] = None``): an event stays until deleted, so a drain stopped at
        any point reads it again (at least once).  LevelDB reads its outbox
        from the oldest key on; Redis asks every queue read for its oldest
        *limit* (one pipelined round trip per 500 queues: the queues of
        :meth:`hosts` when *queues* is None, so a shared frontier's worker
        passes the queues it holds).  As for :meth:`pending`, events are
        those of queues whose counters were written."""

    @abstractmethod
    def event_count(self, queues: Collection[str] | None = None) -> int:
        """How many events the outbox holds (of *queues* only, if given).

        Counted when asked, not kept with the batches: a kept count would be
        one more fact to keep in step with the events (a delete repeated
        after a crash must not count twice, and on a Redis Cluster the count
        would sit in another slot than the events).  LevelDB steps over the
        outbox's keys (it grows with the events not yet delivered, not with
        URLs); Redis asks each queue (``ZCARD``, pipelined as :meth:`events`)."""

    @abstractmethod
    def write(self, batch: Batch) -> None:
        """Apply *batch* atomically; raise :class:`StoreError` on failure,
        :class:`Conflict` (nothing written) if a record of ``batch.absent`` exists."""

    @abstractmethod
    def close(self) -> None: ...

    @property
    def writes(self) -> int | None:
        """How many batches the store has applied, counted inside it with each
        batch: the state folder's checkpoint records it, and a database that
        later holds fewer has lost writes (:mod:`.statedir`).  None where it
        is not counted (a shared store, which many workers write)."""
        return None

    def records(self) -> Iterator[tuple[bytes, bytes]]:
        """Every record (for tools and tests; the crawl never scans)."""
        raise NotImplementedError

    def quarantined(self) -> Iterator[tuple[bytes, bytes]]:
        """Every quarantined record's raw bytes (for tools and tests)."""
        raise NotImplementedError


class MemoryStore(Store):
    """A process-local store with the exact semantics of the LevelDB one."""

    def __init__(self) -> None:
        self._records: dict[bytes, bytes] = {}
        self._queues: dict[str, list[tuple[int, int, bytes]]] = {}
        self._hosts: dict[str, bytes] = {}
        self._meta: dict[str, bytes] = {}
        self._quarantined: dict[bytes, bytes] = {}
        self._pending: dict[bytes, bytes] = {}
        #: event key -> (its queue, the event); keyed like LevelDB's, by the key alone
        self._events: dict[bytes, tuple[str, bytes]] = {}
        self._texts: dict[bytes, bytes] = {}

    @staticmethod
    def _sort_key(directive: int, next_ms: int, fp: bytes) -> tuple[int, int, bytes]:
        return (keys.MAX_DIRECTIVE - directive, next_ms, fp)

    def get_record(self, queue: str, fp: bytes) -> bytes | None:
        return self._records.get(fp)

    def get_text(self, queue: str, fp: bytes) -> bytes | None:
        return self._texts.get(fp)

    def queue_entries(
        self, queue: str, *, limit: int, start: tuple[int, int, bytes] | None = None
    ) -> Iterator[tuple[int, int, bytes]]:
        entries = self._queues.get(queue, [])
        first = 0 if start is None else bisect.bisect_left(entries, self._sort_key(*start))
        for inv_directive, next_ms, fp in entries[first : first + limit]:
            yield keys.MAX_DIRECTIVE - inv_directive, next_ms, fp

    def count_due(self, queue: str, now_ms: int, *, limit: int) -> int:
        return min(limit, sum(1 for _, next_ms, _ in self._queues.get(queue, []) if next_ms <= now_ms))

    def due_times(self, queue: str, now_ms: int, *, limit: int) -> list[int]:
        return [next_ms for _, next_ms, _ in self._queues.get(queue, []) if next_ms <= now_ms][:limit]

    def hosts(self) -> Iterator[tuple[str, bytes]]:
        yield from list(self._hosts.items())

    def get_host(self, queue: str) -> bytes | None:
        return self._hosts.get(queue)

    def get_meta(self, name: str) -> bytes | None:
        return self._meta.get(name)

    def pending(self, queues: Collection[str] | None = None) -> Iterator[tuple[bytes, bytes]]:
        yield from [(fp, mark) for fp, mark in self._pending.items() if in_queues(mark, queues)]

    def events(self, queues: Collection[str] | None = None, limit: int = 1000) -> list[tuple[str, bytes, bytes]]:
        found = sorted((key, queue, event) for key, (queue, event) in self._events.items() if wanted(queue, queues))
        return [(queue, key, event) for key, queue, event in found[: max(0, limit)]]

    def event_count(self, queues: Collection[str] | None = None) -> int:
        return sum(1 for queue, _ in self._events.values() if wanted(queue, queues))

    def write(self, batch: Batch) -> None:
        if any(fp in self._records for _, fp in batch.absent):
            raise Conflict("a record that must be new exists")
        for queue, directive, next_ms, fp in batch.entries_deleted:
            entries = self._queues.get(queue, [])
            item = self._sort_key(directive, next_ms, fp)
            i = bisect.bisect_left(entries, item)
            if i < len(entries) and entries[i] == item:
                del entries[i]
        for queue, directive, next_ms, fp in batch.entries_put:
            entries = self._queues.setdefault(queue, [])
            item = self._sort_key(directive, next_ms, fp)
            i = bisect.bisect_left(entries, item)
            if i >= len(entries) or entries[i] != item:
                entries.insert(i, item)
        for (_, fp), raw in batch.quarantined.items():
            self._quarantined[fp] = raw
            self._records.pop(fp, None)
            self._texts.pop(fp, None)
        for _, fp in batch.records_deleted:
            self._records.pop(fp, None)
            self._texts.pop(fp, None)
        self._records.update((fp, raw) for (_, fp), raw in batch.records.items())
        for (_, fp), text in batch.texts.items():
            if text is None:
                self._texts.pop(fp, None)
            else:
                self._texts[fp] = text
        self._hosts.update(batch.hosts)
        self._meta.update(batch.meta)
        for (_, fp), mark in batch.pending.items():
            if mark is None:
                self._pending.pop(fp, None)
            else:
                self._pending[fp] = mark
        for (queue, key), event in batch.events.items():
            if event is None:
                self._events.pop(key, None)
            else:
                self._events[key] = (queue, event)

    def close(self) -> None:
        pass

    def records(self) -> Iterator[tuple[bytes, bytes]]:
        yield from list(self._records.items())

    def quarantined(self) -> Iterator[tuple[bytes, bytes]]:
        yield from list(self._quarantined.items())
