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

from collections.abc import Iterator

import plyvel

from . import keys
from .store import Batch, Store, StoreError


def _reason(exc: BaseException) -> str:
    """plyvel's messages are bytes; show them as text."""
    arg = exc.args[0] if exc.args else exc
    return arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)


class LevelDBStore(Store):
    """A :class:`Store` in one LevelDB database folder."""

    def __init__(self, path: str, *, sync: bool = False, cache_mb: int = 64) -> None:
        self.path = path
        self._sync = sync
        try:
            self._db = plyvel.DB(
                path,
                create_if_missing=True,
                lru_cache_size=cache_mb * 2**20,
                bloom_filter_bits=10,
            )
        except plyvel.IOError as exc:
            if "lock" in _reason(exc).lower():
                raise StoreError(
                    f"The state folder {path} is in use by another crawl (its LevelDB lock is held). "
                    "Stop the other crawl, or give this one its own ADAPTIVE_STATE_DIR / JOBDIR."
                ) from exc
            raise StoreError(f"Cannot open the state database in {path}: {_reason(exc)}") from exc
        except plyvel.CorruptionError as exc:
            raise StoreError(
                f"The state database in {path} is corrupt ({_reason(exc)}). Nothing was changed; restore it from a "
                "backup, or try plyvel.repair_db() on a copy."
            ) from exc
        self._records = self._db.prefixed_db(keys.RECORD_PREFIX)
        self._hosts = self._db.prefixed_db(keys.HOST_PREFIX)
        self._meta = self._db.prefixed_db(keys.META_PREFIX)
        self._pending = self._db.prefixed_db(keys.PENDING_PREFIX)

    def get_record(self, fp: bytes) -> bytes | None:
        return self._records.get(fp)

    def queue_entries(
        self, queue: str, *, limit: int, start: tuple[int, int, bytes] | None = None
    ) -> Iterator[tuple[int, int, bytes]]:
        prefix = keys.queue_prefix(queue)
        first = prefix if start is None else keys.queue_entry_key(queue, *start)
        # the prefix ends with NUL: the next byte value bounds this queue
        with self._db.iterator(start=first, stop=prefix[:-1] + b"\x01", include_value=False) as it:
            for n, key in enumerate(it):
                if n >= limit:
                    break
                yield keys.decode_queue_entry(key, queue)

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
        for key, value in self._hosts:
            yield key.decode("utf-8"), value

    def get_meta(self, name: str) -> bytes | None:
        return self._meta.get(name.encode("utf-8"))

    def pending(self) -> Iterator[tuple[bytes, bytes]]:
        yield from self._pending

    def write(self, batch: Batch) -> None:
        try:
            with self._db.write_batch(transaction=True, sync=self._sync) as wb:
                for queue, directive, next_ms, fp in batch.entries_deleted:
                    wb.delete(keys.queue_entry_key(queue, directive, next_ms, fp))
                for queue, directive, next_ms, fp in batch.entries_put:
                    wb.put(keys.queue_entry_key(queue, directive, next_ms, fp), b"")
                for fp, raw in batch.records.items():
                    wb.put(keys.record_key(fp), raw)
                for queue, raw in batch.hosts.items():
                    wb.put(keys.host_key(queue), raw)
                for name, raw in batch.meta.items():
                    wb.put(keys.meta_key(name), raw)
                for fp, mark in batch.pending.items():
                    if mark is None:
                        wb.delete(keys.pending_key(fp))
                    else:
                        wb.put(keys.pending_key(fp), mark)
        except plyvel.Error as exc:
            raise StoreError(f"Writing to the state database in {self.path} failed: {_reason(exc)}") from exc

    def records(self) -> Iterator[tuple[bytes, bytes]]:
        yield from self._records

    def close(self) -> None:
        if not self._db.closed:
            self._db.close()
