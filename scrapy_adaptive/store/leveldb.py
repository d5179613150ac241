"""The embedded LevelDB implementation of :class:`~.store.Store` (plyvel).

Layout inside the database (see :mod:`.keys`): ``u/<fp>`` records,
``q/<queue>\\0<directive><time><fp>`` queue entries (empty values),
``h/<queue>`` per-queue counters, ``m/<name>`` state-wide facts, ``p/<fp>``
versions captured but not yet delivered, ``e/<time><fp><seq>`` change
events not yet delivered (the outbox; the value is the queue, NUL, the
event: one keyspace in time order, whatever the queue).

Durability: every :meth:`LevelDBStore.write` is one ``WriteBatch`` applied
atomically (``transaction=True``).  LevelDB appends it to its log before
returning, so a ``kill -9`` loses nothing; ``sync=True`` (the
``ADAPTIVE_STATE_SYNC`` setting) also survives power loss, at a cost.  Each
batch also carries the store's count of batches (``m/writes``): a log cut
short looks to LevelDB like a crash while writing and opens silently older,
but its count is then lower than the one the state folder's checkpoint
recorded (:mod:`.statedir`).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Collection, Iterable, Iterator
from typing import TypeVar

from ..config.table import DEFAULTS
from . import keys
from .base import Batch, Conflict, Store, StoreCorrupt, StoreError, StoreInUse, access_denied, in_queues, wanted

logger = logging.getLogger(__name__)

try:  # a declared dependency; missing (a failed build), the crawl is refused in one line
    import plyvel
except ImportError as exc:
    plyvel = None  # type: ignore[assignment]
    #: why LevelDB cannot be used, said by the start-up check and by every open
    PLYVEL_MISSING: str | None = (
        f"plyvel cannot be imported ({exc}), and scrapy-adaptive keeps its state in LevelDB through it: "
        "pip install plyvel (where no wheel exists for this platform, install libleveldb-dev first)."
    )
else:
    PLYVEL_MISSING = None

T = TypeVar("T")

#: MiB of blocks LevelDB may cache (``ADAPTIVE_STATE_CACHE_MB``): a bound on
#: memory, reached also by a small database, since a compaction's old blocks
#: stay cached until the least recently used go
CACHE_MB: int = DEFAULTS["ADAPTIVE_STATE_CACHE_MB"]


class LevelDBStore(Store):
    """A :class:`Store` in one LevelDB database folder.

    *create* says whether a new database may be created.  The state folder
    passes False once its marker says a database exists there: with
    ``create_if_missing`` LevelDB would answer a lost ``CURRENT`` file by
    starting an empty database and deleting the old tables.

    ``paranoid_checks`` makes a damaged log or manifest fail the open
    instead of being skipped, and every read verifies block checksums, so a
    garbled table is reported at its first read instead of returning
    garbage.  Neither can see a log cut short, at a record boundary or
    inside a record (LevelDB reads both as a crash while writing and drops
    the tail): the count of writes every batch carries (:attr:`writes`),
    compared with the state folder's checkpoint, does (see
    :mod:`scrapy_adaptive.store.statedir`).
    """

    _WRITES_KEY = keys.meta_key(keys.WRITES_META)

    def __init__(self, path: str, *, sync: bool = False, cache_mb: int = CACHE_MB, create: bool = True) -> None:
        self.path = path
        self._sync = sync
        self.cache_mb = cache_mb
        if PLYVEL_MISSING:
            raise StoreError(PLYVEL_MISSING)
        try:
            self._db = plyvel.DB(
                path,
                create_if_missing=create,
                paranoid_checks=True,
                lru_cache_size=cache_mb * 2**20,
                bloom_filter_bits=10,
            )
        except plyvel.CorruptionError as exc:
            raise StoreError(damaged(path, exc, "Its data was not changed", reading=False)) from exc
        except plyvel.Error as exc:
            raise open_error(path, exc) from exc
        self._records = self._db.prefixed_db(keys.RECORD_PREFIX)
        self._hosts = self._db.prefixed_db(keys.HOST_PREFIX)
        self._meta = self._db.prefixed_db(keys.META_PREFIX)
        self._quarantine = self._db.prefixed_db(keys.QUARANTINE_PREFIX)
        self._pending = self._db.prefixed_db(keys.PENDING_PREFIX)
        self._events = self._db.prefixed_db(keys.EVENT_PREFIX)
        #: a count that could not be read (a damaged block): said by the
        #: first write or check that needs it, so an export can still read
        #: the records past the damage
        self._writes_error: StoreCorrupt | None = None
        try:
            self._writes = self._stored_writes()
        except StoreCorrupt as exc:
            self._writes, self._writes_error = 0, exc
        except BaseException:
            self._db.close()
            raise

    def _stored_writes(self) -> int:
        """The count of batches the database holds (0: none written yet)."""
        raw = self.get_meta(keys.WRITES_META)
        if raw is None:
            return 0
        if not raw.isdigit():
            raise StoreCorrupt(
                f"The state database in {self.path} holds an unreadable count of writes (m/{keys.WRITES_META} is "
                f"{raw[:20]!r}): another program wrote to it. No record was changed; restore the folder from a backup."
            )
        return int(raw)

    @property
    def writes(self) -> int:
        if self._writes_error is not None:
            raise self._writes_error
        return self._writes

    def _corrupt(self, exc: BaseException) -> StoreError:
        """A failed read as the one message it stands for: a file this user
        may not read (not damage: no repair), else a damaged table."""
        return read_error(self.path, exc)

    def _reading(self, items: Iterable[T]) -> Iterator[T]:
        """*items*, a plyvel iterator, with a damaged table (a garbled block,
        a file cut short: ``CorruptionError`` or ``IOError``) raised as the
        one :class:`StoreCorrupt` that names the folder and the recovery (a
        table this user may not read: the :class:`StoreError` saying so)."""
        try:
            yield from items
        except plyvel.Error as exc:
            raise self._corrupt(exc) from exc

    def get_record(self, queue: str, fp: bytes) -> bytes | None:
        # one machine, one keyspace: the fingerprint alone addresses a record
        try:
            return self._records.get(fp, verify_checksums=True)
        except plyvel.Error as exc:
            raise self._corrupt(exc) from exc

    def get_text(self, queue: str, fp: bytes) -> bytes | None:
        try:
            return self._db.get(keys.text_key(fp), verify_checksums=True)
        except plyvel.Error as exc:
            raise self._corrupt(exc) from exc

    def _entry(self, key: bytes, offset: int) -> tuple[int, int, bytes] | None:
        """The entry a queue key stands for (its queue's prefix *offset*
        bytes long); a malformed one (a write by another program, a damaged
        table) is moved aside, once, under ``x/<its key>`` with one error
        line, and the queue goes on."""
        try:
            return keys.entry_at(key, offset)
        except keys.MalformedKey as exc:
            self.write(Batch(), aside={key: (b"", exc)})
            return None

    def queue_entries(
        self, queue: str, *, limit: int, start: tuple[int, int, bytes] | None = None
    ) -> Iterator[tuple[int, int, bytes]]:
        prefix = keys.queue_prefix(queue)
        first = prefix if start is None else keys.queue_entry_key(queue, *start)
        offset = len(prefix)
        # the prefix ends with NUL: the next byte value bounds this queue
        try:
            it = self._db.iterator(start=first, stop=prefix[:-1] + b"\x01", include_value=False, verify_checksums=True)
        except plyvel.Error as exc:
            raise self._corrupt(exc) from exc
        # read on the hot path (a queue's head after every issue): the
        # damage check of _reading is inlined
        with it:
            n = 0
            try:
                for key in it:
                    if n >= limit:
                        break
                    entry = self._entry(key, offset)
                    if entry is not None:
                        n += 1
                        yield entry
            except plyvel.Error as exc:
                raise self._corrupt(exc) from exc

    def count_due(self, queue: str, now_ms: int, *, limit: int) -> int:
        return len(self.due_times(queue, now_ms, limit=limit))

    def due_times(self, queue: str, now_ms: int, *, limit: int) -> list[int]:
        # Entries sort by directive, then time: read the due head of each
        # directive level and seek past the rest of that level.
        prefix = keys.queue_prefix(queue)
        times: list[int] = []
        if limit <= 0:
            return times
        try:
            it = self._db.iterator(prefix=prefix, include_value=False, verify_checksums=True)
        except plyvel.Error as exc:
            raise self._corrupt(exc) from exc
        try:
            offset = len(prefix)
            for key in self._reading(it):
                entry = self._entry(key, offset)
                if entry is None:
                    continue
                directive, next_ms, _ = entry
                if next_ms <= now_ms:
                    times.append(next_ms)
                    if len(times) >= limit:
                        break
                elif directive == 0:
                    break
                else:
                    it.seek(prefix + bytes((keys.MAX_DIRECTIVE - directive + 1,)))
        finally:
            it.close()
        return times

    def hosts(self) -> Iterator[tuple[str, bytes]]:
        for key, value in self._scan(self._hosts):
            yield key.decode("utf-8"), value

    def _scan(self, db: plyvel.PrefixedDB) -> Iterator[tuple[bytes, bytes]]:
        """Every key and value under a prefix, block checksums verified."""
        try:
            it = db.iterator(verify_checksums=True)
        except plyvel.Error as exc:
            raise self._corrupt(exc) from exc
        with it:
            yield from self._reading(it)

    def get_host(self, queue: str) -> bytes | None:
        try:
            return self._hosts.get(queue.encode("utf-8"), verify_checksums=True)
        except plyvel.Error as exc:
            raise self._corrupt(exc) from exc

    def get_meta(self, name: str) -> bytes | None:
        try:
            return self._meta.get(name.encode("utf-8"), verify_checksums=True)
        except plyvel.Error as exc:
            raise self._corrupt(exc) from exc

    def pending(self, queues: Collection[str] | None = None) -> Iterator[tuple[bytes, bytes]]:
        yield from ((fp, mark) for fp, mark in self._scan(self._pending) if in_queues(mark, queues))

    def events(self, queues: Collection[str] | None = None, limit: int = 1000) -> list[tuple[str, bytes, bytes]]:
        found: list[tuple[str, bytes, bytes]] = []
        if limit <= 0:
            return found
        for key, value in self._scan(self._events):
            event = self._event(key, value)
            if event is not None and wanted(event[0], queues):
                found.append(event)
                if len(found) >= limit:
                    break
        return found

    def event_count(self, queues: Collection[str] | None = None) -> int:
        events = (self._event(key, value) for key, value in self._scan(self._events))
        return sum(1 for event in events if event is not None and wanted(event[0], queues))

    def _event(self, key: bytes, value: bytes) -> tuple[str, bytes, bytes] | None:
        """``(queue, key, event)`` of an outbox row; one whose value names no
        queue (a write by another program, a damaged table) is moved aside
        with its bytes under ``x/e/<key>``, with one error line."""
        queue, sep, event = value.partition(b"\x00")
        try:
            if not sep:
                raise ValueError("its value names no queue")
            return queue.decode("utf-8"), key, event
        except ValueError as exc:
            self.write(Batch(), aside={keys.EVENT_PREFIX + key: (value, exc)})
            return None

    def write(self, batch: Batch, aside: dict[bytes, tuple[bytes, Exception]] | None = None) -> None:
        """Apply *batch*; *aside* moves malformed keys under ``x/`` in the
        same write (key -> its value, kept, and what is wrong with it)."""
        # one process owns the database: a check before the batch is enough
        if batch.absent and any(self.get_record(queue, fp) is not None for queue, fp in batch.absent):
            raise Conflict(f"a record that must be new exists in {self.path}")
        writes = self.writes + 1
        try:
            with self._db.write_batch(transaction=True, sync=self._sync) as wb:
                wb.put(self._WRITES_KEY, b"%d" % writes)
                for queue, directive, next_ms, fp in batch.entries_deleted:
                    wb.delete(keys.queue_entry_key(queue, directive, next_ms, fp))
                for queue, directive, next_ms, fp in batch.entries_put:
                    wb.put(keys.queue_entry_key(queue, directive, next_ms, fp), b"")
                for (_, fp), raw in batch.quarantined.items():
                    wb.put(keys.quarantine_key(fp), raw)
                    wb.delete(keys.record_key(fp))
                    wb.delete(keys.text_key(fp))
                for _, fp in batch.records_deleted:
                    wb.delete(keys.record_key(fp))
                    wb.delete(keys.text_key(fp))
                for (_, fp), raw in batch.records.items():
                    wb.put(keys.record_key(fp), raw)
                for (_, fp), text in batch.texts.items():
                    if text is None:
                        wb.delete(keys.text_key(fp))
                    else:
                        wb.put(keys.text_key(fp), text)
                for queue, raw in batch.hosts.items():
                    wb.put(keys.host_key(queue), raw)
                for name, raw in batch.meta.items():
                    wb.put(keys.meta_key(name), raw)
                for (_, fp), mark in batch.pending.items():
                    if mark is None:
                        wb.delete(keys.pending_key(fp))
                    else:
                        wb.put(keys.pending_key(fp), mark)
                for (queue, key), event in batch.events.items():
                    if event is None:
                        wb.delete(keys.EVENT_PREFIX + key)
                    else:
                        wb.put(keys.EVENT_PREFIX + key, queue.encode("utf-8") + b"\x00" + event)
                for key, (value, _) in (aside or {}).items():
                    wb.put(keys.QUARANTINE_PREFIX + key, value)
                    wb.delete(key)
        except plyvel.Error as exc:
            raise write_error(self.path, exc) from exc
        self._writes = writes
        for key, (_, exc) in (aside or {}).items():
            logger.error(
                "The state database in %s holds a malformed key %r (%s); it is moved aside under x/ and the crawl "
                "goes on.",
                self.path,
                key,
                exc,
            )

    def records(self, start: bytes | None = None) -> Iterator[tuple[bytes, bytes]]:
        """Every record, in fingerprint order from *start* (included) if given."""
        try:
            it = self._records.iterator(start=start, verify_checksums=True)
        except plyvel.Error as exc:
            raise self._corrupt(exc) from exc
        with it:
            yield from self._reading(it)

    def is_empty(self) -> bool:
        """Does the database hold no key at all?"""
        try:
            with self._db.iterator(include_value=False, verify_checksums=True) as it:
                return next(it, None) is None
        except plyvel.Error as exc:
            raise self._corrupt(exc) from exc

    def readable_records(self) -> Iterator[tuple[bytes, bytes]]:
        """Every record that can still be read, stepping over damaged blocks;
        then, if any were stepped over, the :class:`StoreCorrupt` of the first.

        For the tools (``scrapy frontier export``): from a damaged database
        they get what it still holds, and the one message saying what to do.
        """
        start: bytes | None = None
        damage: StoreCorrupt | None = None
        while True:
            last = start
            try:
                for fp, raw in self.records(start):
                    last = fp
                    yield fp, raw
                break
            except StoreCorrupt as exc:
                damage = damage or exc
                after = self._readable_after(last)
                if after is None:
                    break
                start = after
        if damage is not None:
            raise damage

    def _readable_after(self, last: bytes | None) -> bytes | None:
        """The lowest record key after *last* from which records read again
        (None: none): a bisection over fingerprints, since reading from a key
        fails while its block, or the next one, is damaged."""
        width = len(last) if last else 20
        lo, hi = (int.from_bytes(last, "big") if last else -1), 2 ** (8 * width)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            try:
                with self._records.iterator(start=mid.to_bytes(width, "big"), verify_checksums=True) as it:
                    next(it, None)
            except plyvel.Error:
                lo = mid
            else:
                hi = mid
        return None if hi == 2 ** (8 * width) else hi.to_bytes(width, "big")

    def quarantined(self) -> Iterator[tuple[bytes, bytes]]:
        yield from self._scan(self._quarantine)

    def close(self) -> None:
        if not self._db.closed:
            self._db.close()


# -- a LevelDB failure in one line that says what to do ---------------------------
#
# plyvel raises the same few exception types for a full disk, a read-only
# mount, a lock held by another crawl, a lost ``CURRENT`` file and a damaged
# table; the OS's and LevelDB's own words tell them apart.


def _reason(exc: BaseException) -> str:
    """plyvel's messages are bytes; show them as text."""
    arg = exc.args[0] if exc.args else exc
    return arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)


def damaged(path: str, exc: BaseException, done: str, *, reading: bool = True) -> str:
    """The one message for a damaged database: what LevelDB says, the table
    file (LevelDB names it when it is cut short; a database of one table
    names it too, for a damage found *reading* records: at open it may be
    the MANIFEST's), that *done*, and how to recover."""
    reason = _reason(exc)
    if reading and ".ldb" not in reason and ".sst" not in reason:
        tables = [name for name in _names(path) if name.endswith((".ldb", ".sst"))]
        if len(tables) == 1:
            reason += f", in {os.path.join(path, tables[0])}"
    return (
        f"The state database in {path} is damaged ({reason}). {done}. To recover, restore the folder from a "
        f'backup, or stop every crawl on it, keep a copy and repair it in place with: python -c "import plyvel; '
        f"plyvel.repair_db('{path}')\" (what the damaged part held is lost; docs/state-folder.md)"
    )


def _names(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def open_error(path: str, exc: BaseException) -> StoreError:
    """One message per way an open fails, each saying what it really is.

    The OS's words are matched, not the word "lock": a read-only disk fails
    on the ``LOCK`` file too, and is not another crawl.
    """
    reason = _reason(exc)
    low = reason.lower()
    if "read-only file system" in low:
        return StoreError(
            f"The state folder {path} is on a read-only file system ({reason}). A crawl writes its state: "
            "mount it read-write, or give this crawl another ADAPTIVE_STATE_DIR / JOBDIR."
        )
    if "permission denied" in low:
        return StoreError(access_denied(f"The state database in {path}", path, "readable and writable", reason))
    if "no space left" in low:
        return StoreError(f"The disk holding the state folder {path} is full ({reason}). Free space and restart.")
    if "already held" in low or "temporarily unavailable" in low:
        return StoreInUse(
            f"The state folder {path} is in use by another crawl (its LevelDB lock is held). "
            "Stop the other crawl, or give this one its own ADAPTIVE_STATE_DIR / JOBDIR."
        )
    if "does not exist" in low:
        return StoreError(
            f"The state database in {path} has lost its CURRENT file or its tables ({reason}). Nothing was "
            "changed and no new database was created over it: restore the folder from a backup, or try "
            "plyvel.repair_db() on a copy."
        )
    return StoreError(f"Cannot open the state database in {path}: {reason}")


def read_error(path: str, exc: BaseException) -> StoreError:
    """A failed read as the one message it stands for: a file this user
    may not read (not damage: no repair), else a damaged table."""
    reason = _reason(exc)
    if "permission denied" in reason.lower():
        return StoreError(access_denied(f"The state database in {path}", path, "readable", reason))
    return StoreCorrupt(damaged(path, exc, "No record in it was changed"))


def write_error(path: str, exc: BaseException) -> StoreError:
    """A failed write: a full disk (free space, run again: nothing the
    database acknowledged is lost), or what LevelDB says."""
    reason = _reason(exc)
    if "no space left" in reason.lower():
        return StoreError(
            f"The disk holding the state folder {path} is full ({reason}). Free space, then run the "
            "crawl again: it resumes from the last write that succeeded"
        )
    return StoreError(f"Writing to the state database in {path} failed: {reason}")
