"""Versions captured but not yet delivered: the frontier's half of
at-least-once delivery (:mod:`scrapy_adaptive.runtime.delivery` is the crawl's).

A changed visit committed with ``deliver=True`` leaves a ``p/<fp>`` mark
(the digest last delivered, the versions waiting) in the same atomic write
as the visit; :meth:`PendingVersions.confirm` counts the versions once
their items are durable and clears the marks; a restart takes every URL
still marked back to what was delivered (:meth:`PendingVersions._redeliver`).

:class:`PendingVersions` is the one holder of the marks in memory; the
frontier writes a new mark with a verdict (:meth:`PendingVersions.staged`,
:meth:`PendingVersions.settle`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..model import RecordError, UrlRecord
from ..store.base import Batch, read_mark
from ..store.keys import time_to_ms
from .book import QueueBook
from .leases import Leases

if TYPE_CHECKING:
    from .sharing import Sharing

logger = logging.getLogger(__name__)


def pending_mark(queue: str, delivered: str | None, waiting: int, sharing: Sharing | None = None) -> bytes:
    """A ``p/<fp>`` value: the URL's queue (where its record is), the digest
    last delivered and the versions waiting; in a shared frontier, the
    worker whose delivery they wait for (see :meth:`.Sharing.owns`)."""
    mark: dict[str, object] = {"q": queue, "d": delivered, "n": waiting}
    if sharing is not None:
        mark["w"] = sharing.worker
    return json.dumps(mark, separators=(",", ":")).encode()


class PendingVersions:
    """The pending-delivery marks of a frontier."""

    def __init__(self, book: QueueBook, leases: Leases, clock: Callable[[], float]) -> None:
        self.book = book
        self.store = book.store
        self.sharing: Sharing | None = book.sharing
        self.leases = leases
        self.clock = clock
        #: fp -> (its queue, digest last delivered, versions awaiting confirmation)
        self._pending: dict[bytes, tuple[str, str | None, int]] = {}

    def staged(self, fp: bytes, queue: str, digest: str | None) -> tuple[str, str | None, int]:
        """The mark *fp* gets when one more changed visit awaits delivery."""
        _, delivered, waiting = self._pending.get(fp, (queue, digest, 0))
        return (queue, delivered, waiting + 1)

    def settle(self, fp: bytes, mark: tuple[str, str | None, int]) -> None:
        """Hold *mark* for *fp*: its write has reached the store."""
        self._pending[fp] = mark

    def waiting(self, fp: bytes) -> int:
        """Versions of *fp* captured and not yet confirmed delivered."""
        mark = self._pending.get(fp)
        return mark[2] if mark is not None else 0

    def drop(self, fp: bytes) -> None:
        self._pending.pop(fp, None)

    def redeliver(self, queues: list[str] | None = None) -> tuple[int, set[str]]:
        """Make every version captured but never confirmed delivered due again.

        The record goes back to the digest last delivered and forgets its
        validators (a conditional GET would answer 304, a mid-fetch abort
        would stop the body): the next fetch is judged changed unless the
        page is back to what was delivered, and its items are produced
        again.  Visit and version counts are untouched (versions count
        delivered ones only).  One atomic write for all of them.

        In a shared frontier, only in *queues* (held here: their records are
        this worker's to write) and only the marks of stopped workers
        (:meth:`~.sharing.Sharing.owns`); a URL out here is left for a later
        look.  Returns how many URLs came back and the queues with a mark
        left for that reason.
        """
        batch = Batch()
        now_ms = time_to_ms(self.clock())
        later: set[str] = set()
        for fp, mark in self.store.pending(queues):
            fields = read_mark(mark)
            if fields is None:
                fields = {}
                logger.error(
                    "The pending-delivery mark of fingerprint %s is garbled (%r); its URL is fetched again as if "
                    "its last version had never been delivered (at least once), and the mark is removed.",
                    fp.hex(),
                    mark[:64],
                )
            # marks written before they named their queue exist only in
            # LevelDB states, and LevelDB finds a record by fingerprint alone
            queue = fields.get("q") or ""
            if self.sharing is not None and not self.sharing.owns(fields):
                continue
            if fp in self.leases:
                later.add(queue)
                continue
            raw = self.store.get_record(queue, fp)
            try:
                record = UrlRecord.from_bytes(raw) if raw is not None else None
            except RecordError:
                continue  # left as it is: next() quarantines the record, its mark stays as evidence
            batch.pending[queue, fp] = None
            if record is None:
                continue
            record.digest = fields.get("d")
            record.payload_digest = record.etag = record.last_modified = None
            old = (record.queue, record.directive, record.next_ms, fp)
            if not record.never:
                record.next_ms = min(record.next_ms, now_ms)
            batch.move_entry(old, (record.queue, record.directive, record.next_ms, fp))
            batch.records[record.queue, fp] = record.to_bytes()
        if batch.pending:
            self.book.write(batch)
        return len(batch.records), later

    def confirm(self, delivered: list[tuple[bytes, str | None]]) -> int:
        """Count versions whose items are durable: ``(fp, digest)`` pairs,
        one per version, from :meth:`update` with ``deliver=True``.

        One atomic write for all of them (group commit): the records'
        version counts, their queues' counters and the pending marks.
        Returns how many versions were counted.
        """
        pending = dict(self._pending)
        records: dict[bytes, UrlRecord] = {}
        counts: dict[bytes, int] = {}
        for fp, digest in delivered:
            mark = pending.get(fp)
            if mark is None:
                continue  # not pending (delivery off when it was captured)
            record = records.get(fp)
            if record is None:
                out = self.leases.get(fp)
                raw = None if out is not None else self.store.get_record(mark[0], fp)
                if out is not None:
                    record = out.record
                elif raw is not None:
                    record = UrlRecord.from_bytes(raw)
                else:
                    continue
                records[fp] = record
            waiting = mark[2] - 1
            if waiting > 0:
                pending[fp] = (mark[0], digest, waiting)  # delivered up to this one
            else:
                del pending[fp]
            counts[fp] = counts.get(fp, 0) + 1
        if not counts:
            return 0
        queues: dict[str, int] = {}
        for fp, n in counts.items():
            records[fp].versions += n
            queues[records[fp].queue] = queues.get(records[fp].queue, 0) + n
        for name, n in queues.items():
            self.book.get(name).versions += n
        batch = Batch(records={(record.queue, fp): record.to_bytes() for fp, record in records.items()})
        for fp in counts:
            batch.pending[records[fp].queue, fp] = pending_mark(*pending[fp], self.sharing) if fp in pending else None
        for name in queues:
            batch.hosts[name] = self.book.counters(self.book.get(name))
        try:
            self.store.write(batch)
        except Exception:
            for fp, n in counts.items():
                records[fp].versions -= n
            for name, n in queues.items():
                self.book.get(name).versions -= n
            raise
        self._pending = pending
        counted = sum(counts.values())
        self.book.totals.versions += counted
        return counted

    @property
    def pending_count(self) -> int:
        """URLs with versions captured but not yet confirmed delivered."""
        return len(self._pending)
