"""The embedded LevelDB implementation of :class:`~.store.Store` (plyvel).

Layout inside the database (see :mod:`.keys`): ``u/<fp>`` records,
``q/<queue>\\0<directive><time><fp>`` queue entries (empty values),
``h/<queue>`` per-queue counters, ``m/<name>`` state-wide facts, ``p/<fp>``
versions captured but not yet delivered.

Durability: every :meth:`LevelDBStore.write` is one ``WriteBatch`` applied
atomically (``transaction=True``).  LevelDB appends it to its log before
returning, so a ``kill -9`` loses nothing; ``sync=True`` (the
``ADAPTIVE_STATE_SYNC`` setting) also survives power loss, at a cost.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator

import plyvel

from . import keys
from .base import Batch, Conflict, Store, StoreCorrupt, StoreError, in_queues


def _reason(exc: BaseException) -> str:
    """plyvel's messages are bytes; show them as text."""
    arg = exc.args[0] if exc.args else exc
    return arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)


def _open_error(path: str, exc: BaseException) -> StoreError:
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
        return StoreError(
            f"The state folder {path} is not writable by this user ({reason}). Fix its owner or "
            "permissions, or give this crawl another ADAPTIVE_STATE_DIR / JOBDIR."
        )
    if "no space left" in low:
        return StoreError(f"The disk holding the state folder {path} is full ({reason}). Free space and restart.")
    if "already held" in low or "temporarily unavailable" in low:
        return StoreError(
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


class LevelDBStore(Store):
    """A :class:`Store` in one LevelDB database folder.

    *create* says whether a new database may be created.  The state folder
    passes False once its marker says a database exists there: with
    ``create_if_missing`` LevelDB would answer a lost ``CURRENT`` file by
    starting an empty database and deleting the old tables.

    ``paranoid_checks`` makes a damaged log or manifest fail the open
    instead of being skipped, and every read verifies block checksums, so a
    garbled table is reported at its first read instead of returning
    garbage.  Neither can see a log cut at a record boundary (LevelDB reads
    that as a crash while writing): the state folder's checkpoint does
    (see :mod:`scrapy_adaptive.store.statedir`).
    """

    def __init__(self, path: str, *, sync: bool = False, cache_mb: int = 64, create: bool = True) -> None:
        self.path = path
        self._sync = sync
        try:
            self._db = plyvel.DB(
                path,
                create_if_missing=create,
                paranoid_checks=True,
                lru_cache_size=cache_mb * 2**20,
                bloom_filter_bits=10,
            )
        except plyvel.CorruptionError as exc:
            raise StoreError(
                f"The state database in {path} is corrupt ({_reason(exc)}). Nothing was changed; restore it from a "
                "backup, or try plyvel.repair_db() on a copy."
            ) from exc
        except plyvel.Error as exc:
            raise _open_error(path, exc) from exc
        self._records = self._db.prefixed_db(keys.RECORD_PREFIX)
        self._hosts = self._db.prefixed_db(keys.HOST_PREFIX)
        self._meta = self._db.prefixed_db(keys.META_PREFIX)
        self._quarantine = self._db.prefixed_db(keys.QUARANTINE_PREFIX)
        self._pending = self._db.prefixed_db(keys.PENDING_PREFIX)

    def _corrupt(self, exc: BaseException) -> StoreCorrupt:
        return StoreCorrupt(
            f"The state database in {self.path} is corrupt ({_reason(exc)}). Nothing more is read or written; "
            "restore the folder from a backup, or try plyvel.repair_db() on a copy"
        )

    def get_record(self, queue: str, fp: bytes) -> bytes | None:
        # one machine, one keyspace: the fingerprint alone addresses a record
        try:
            return self._records.get(fp, verify_checksums=True)
        except plyvel.CorruptionError as exc:
            raise self._corrupt(exc) from exc

    def queue_entries(
        self, queue: str, *, limit: int, start: tuple[int, int, bytes] | None = None
    ) -> Iterator[tuple[int, int, bytes]]:
        prefix = keys.queue_prefix(queue)
        first = prefix if start is None else keys.queue_entry_key(queue, *start)
        # the prefix ends with NUL: the next byte value bounds this queue
        try:
            with self._db.iterator(
                start=first, stop=prefix[:-1] + b"\x01", include_value=False, verify_checksums=True
            ) as it:
                for n, key in enumerate(it):
                    if n >= limit:
                        break
                    yield keys.decode_queue_entry(key, queue)
        except plyvel.CorruptionError as exc:
            raise self._corrupt(exc) from exc

    def count_due(self, queue: str, now_ms: int, *, limit: int) -> int:
        # Entries sort by directive, then time: count the due head of each
        # directive level and seek past the rest of that level.
        prefix = keys.queue_prefix(queue)
        count = 0
        it = self._db.iterator(prefix=prefix, include_value=False)
        try:
            for key in it:
                directive, next_ms, _ = keys.decode_queue_entry(key, queue)
                if next_ms <= now_ms:
                    count += 1
                    if count >= limit:
                        break
                elif directive == 0:
                    break
                else:
                    it.seek(prefix + bytes((keys.MAX_DIRECTIVE - directive + 1,)))
        finally:
            it.close()
        return count

    def hosts(self) -> Iterator[tuple[str, bytes]]:
        try:
            for key, value in self._hosts.iterator(verify_checksums=True):
                yield key.decode("utf-8"), value
        except plyvel.CorruptionError as exc:
            raise self._corrupt(exc) from exc

    def get_host(self, queue: str) -> bytes | None:
        try:
            return self._hosts.get(queue.encode("utf-8"), verify_checksums=True)
        except plyvel.CorruptionError as exc:
            raise self._corrupt(exc) from exc

    def get_meta(self, name: str) -> bytes | None:
        try:
            return self._meta.get(name.encode("utf-8"), verify_checksums=True)
        except plyvel.CorruptionError as exc:
            raise self._corrupt(exc) from exc

    def pending(self, queues: Collection[str] | None = None) -> Iterator[tuple[bytes, bytes]]:
        yield from ((fp, mark) for fp, mark in self._pending if in_queues(mark, queues))

    def write(self, batch: Batch) -> None:
        # one process owns the database: a check before the batch is enough
        if any(self.get_record(queue, fp) is not None for queue, fp in batch.absent):
            raise Conflict(f"a record that must be new exists in {self.path}")
        try:
            with self._db.write_batch(transaction=True, sync=self._sync) as wb:
                for queue, directive, next_ms, fp in batch.entries_deleted:
                    wb.delete(keys.queue_entry_key(queue, directive, next_ms, fp))
                for queue, directive, next_ms, fp in batch.entries_put:
                    wb.put(keys.queue_entry_key(queue, directive, next_ms, fp), b"")
                for (_, fp), raw in batch.quarantined.items():
                    wb.put(keys.quarantine_key(fp), raw)
                    wb.delete(keys.record_key(fp))
                for _, fp in batch.records_deleted:
                    wb.delete(keys.record_key(fp))
                for (_, fp), raw in batch.records.items():
                    wb.put(keys.record_key(fp), raw)
                for queue, raw in batch.hosts.items():
                    wb.put(keys.host_key(queue), raw)
                for name, raw in batch.meta.items():
                    wb.put(keys.meta_key(name), raw)
                for (_, fp), mark in batch.pending.items():
                    if mark is None:
                        wb.delete(keys.pending_key(fp))
                    else:
                        wb.put(keys.pending_key(fp), mark)
        except plyvel.Error as exc:
            reason = _reason(exc)
            if "no space left" in reason.lower():
                raise StoreError(
                    f"The disk holding the state folder {self.path} is full ({reason}). Free space, then run the "
                    "crawl again: it resumes from the last write that succeeded"
                ) from exc
            raise StoreError(f"Writing to the state database in {self.path} failed: {reason}") from exc

    def records(self) -> Iterator[tuple[bytes, bytes]]:
        yield from self._records

    def quarantined(self) -> Iterator[tuple[bytes, bytes]]:
        yield from self._quarantine

    def close(self) -> None:
        if not self._db.closed:
            self._db.close()
