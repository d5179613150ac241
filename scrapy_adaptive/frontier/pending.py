"""Versions captured but not yet delivered: the frontier's half of
at-least-once delivery (:mod:`scrapy_adaptive.runtime.delivery` is the crawl's).

A changed visit committed with ``deliver=True`` is counted in its record at
once (the record is written by the verdict anyway) and leaves a ``p/<fp>``
mark (the digest and the version count last delivered, the versions waiting)
in the same atomic write; :meth:`PendingVersions.confirm` moves the marks and
counts the versions in their queues and the totals once their items are
durable, without touching the records; a restart takes every URL still
marked back to what was delivered, its version count included
(:meth:`PendingVersions.redeliver`), so a version captured again is counted
once.

A record's ``versions`` thus counts the versions captured, those waiting in
its mark included; the versions delivered are :func:`delivered_versions`,
and the queues' and totals' counts are of delivered versions only.

:class:`PendingVersions` is the one holder of the marks in memory; the
frontier writes a new mark with a verdict (:meth:`PendingVersions.staged`,
:meth:`PendingVersions.written`).  The crawl sees it as the :class:`Outbox`
(``Frontier.outbox``): the change events to deliver, and the versions whose
items are durable.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from ..change.events import presence_of
from ..change.noise_learner import forget_version
from ..model import RecordError, UrlRecord
from ..store.base import Batch, read_mark
from ..store.keys import time_to_ms
from .leases import Leases
from .queues import QueueBook

if TYPE_CHECKING:
    from .sharing import Sharing

logger = logging.getLogger(__name__)


#: a URL's pending mark in memory: its queue, the digest last delivered,
#: the versions waiting and the version count last delivered
Mark = tuple[str, str | None, int, int]
#: a change event waiting for its version's confirmation: the version, its
#: outbox key ``(queue, key)`` and row
HeldEvent = tuple[int, tuple[str, bytes], bytes]


def pending_mark(
    queue: str,
    delivered: str | None,
    waiting: int,
    versions: int,
    sharing: Sharing | None = None,
    *,
    presence: list[int] | None = None,
) -> bytes:
    """A ``p/<fp>`` value: the URL's queue (where its record is), the digest
    last delivered, the versions waiting and the record's version count
    last delivered (``v``; marks written before versions were counted at
    the verdict have none, and their records count delivered versions
    only); in a shared frontier, the worker whose delivery they wait for
    (see :meth:`.Sharing.owns`); ``s``, when known, the URL's presence as
    last delivered (:mod:`..change.events`), so that a version taken back
    is said again as the same kind (``new``, not ``changed``)."""
    mark: dict[str, object] = {"q": queue, "d": delivered, "n": waiting, "v": versions}
    if sharing is not None:
        mark["w"] = sharing.worker
    if presence is not None:
        mark["s"] = presence
    return json.dumps(mark, separators=(",", ":")).encode()


def _presence(value: object) -> list[int] | None:
    """A stored presence (three ints), or None."""
    if isinstance(value, list) and len(value) == 3 and all(type(x) is int for x in value):
        return list(value)
    return None


def delivered_versions(record: UrlRecord, mark: bytes | None) -> int:
    """The versions of *record* confirmed delivered, given its pending
    mark (None: it has none): the record counts the waiting ones too."""
    if mark is None:
        return record.versions
    fields = read_mark(mark) or {}
    versions = fields.get("v")
    return versions if isinstance(versions, int) and 0 <= versions <= record.versions else record.versions


class Outbox(Protocol):
    """What the crawl delivers, and tells the frontier it delivered
    (``Frontier.outbox``); :class:`PendingVersions` holds it."""

    def events(self, limit: int = 1000) -> list[tuple[str, bytes, bytes]]:
        """The oldest change events not yet delivered, ``(queue, key, row)``."""

    def events_delivered(self, delivered: list[tuple[str, bytes]]) -> None:
        """Take delivered events out of the outbox (one write): ``(queue, key)`` pairs."""

    def confirm(self, delivered: list[tuple[bytes, str | None]]) -> int:
        """Count the versions now delivered, ``(fp, digest)`` pairs: one write."""


class PendingVersions:
    """The pending-delivery marks of a frontier, and its outbox of change
    events (:class:`Outbox` to the crawl)."""

    def __init__(self, book: QueueBook, leases: Leases, clock: Callable[[], float]) -> None:
        self.book = book
        self.store = book.store
        self.sharing: Sharing | None = book.sharing
        self.leases = leases
        self.clock = clock
        #: fp -> its mark (:data:`Mark`)
        self._pending: dict[bytes, Mark] = {}
        #: fp -> its presence as last delivered, where known (``s`` of its mark)
        self._before: dict[bytes, list[int]] = {}
        #: fp -> the change events of its versions awaiting delivery, in
        #: order: ``(version, (queue, key), row)`` (:meth:`hold`)
        self._held: dict[bytes, list[HeldEvent]] = {}

    def staged(self, fp: bytes, record: UrlRecord) -> Mark:
        """The mark *fp* gets when one more changed visit awaits delivery;
        *record* as before the visit (its digest and versions are what was
        delivered, unless a mark already says so)."""
        _, delivered, waiting, versions = self._pending.get(fp, (record.queue, record.digest, 0, record.versions))
        return (record.queue, delivered, waiting + 1, versions)

    def presence_before(self, fp: bytes, record: UrlRecord) -> list[int] | None:
        """*fp*'s presence as last delivered: *record*'s (as before the
        visit) unless a version already waits."""
        if fp in self._pending:
            return self._before.get(fp)
        # the three fields it reads, not a copy of the whole record
        return presence_of({"presence": record.presence, "status": record.status, "digest": record.digest})

    def written(self, fp: bytes, mark: Mark, presence: list[int] | None = None) -> None:
        """Hold *mark* for *fp*: its write has reached the store (with
        *presence*, :meth:`presence_before`)."""
        self._pending[fp] = mark
        if presence is not None:
            self._before[fp] = presence
        else:
            self._before.pop(fp, None)

    def hold(self, fp: bytes, version: int, where: tuple[str, bytes], row: bytes) -> None:
        """Keep the change event of *fp*'s version *version*, pending
        delivery, until :meth:`confirm` counts that version: it goes to the
        outbox in the confirmation's write.

        Said before, a kill before the confirmation published a version
        the restart takes back (:meth:`redeliver`): the page captured
        again got the same number with another digest, and the first event
        had no item.  Held in memory only: a version not confirmed by the
        end of this process is taken back at the next start, and its
        capture again makes its event again.
        """
        self._held.setdefault(fp, []).append((version, where, row))

    def drop(self, fp: bytes) -> None:
        self._pending.pop(fp, None)
        self._held.pop(fp, None)
        self._before.pop(fp, None)

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
            self._held.pop(fp, None)  # its versions are taken back, their events with them
            if record is None:
                continue
            record.digest = fields.get("d")
            record.versions = delivered_versions(record, mark)
            if (before := _presence(fields.get("s"))) is not None:
                # content seen and the gone row as delivered; "gone said" as
                # the record has it (the queue's gone count follows that)
                said = record.presence[2] if _presence(record.presence) is not None else 0  # type: ignore[index]
                record.presence = [before[0], before[1], said]
            record.payload_digest = record.etag = record.last_modified = None
            # the noise learner compares with the version delivered, not the one taken back
            record.noise = forget_version(record.noise)
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

        One atomic write for all of them (group commit): the pending marks
        and their queues' counters.  The records already count the versions
        (their verdict did) and are not read or written.  Returns how many
        versions were counted.
        """
        pending = dict(self._pending)
        queues: dict[str, int] = {}
        confirmed: set[bytes] = set()
        for fp, digest in delivered:
            mark = pending.get(fp)
            if mark is None:
                continue  # not pending (delivery off when it was captured)
            queue, _, waiting, versions = mark
            if waiting > 1:
                pending[fp] = (queue, digest, waiting - 1, versions + 1)  # delivered up to this one
            else:
                del pending[fp]
            confirmed.add(fp)
            queues[queue] = queues.get(queue, 0) + 1
        if not queues:
            return 0
        batch = Batch()
        held: dict[bytes, list[HeldEvent]] = {}
        for fp in confirmed:
            mark = pending.get(fp)
            queue = self._pending[fp][0]
            # a part confirmed: the presence after it is not known, and none is restored
            batch.pending[queue, fp] = pending_mark(*mark, self.sharing) if mark is not None else None
            # the events of the versions now delivered go to the outbox; the later ones wait
            events = self._held.get(fp, [])
            said = [e for e in events if mark is None or e[0] <= mark[3]]
            for _, where, row in said:
                batch.events[where] = row
            held[fp] = [e for e in events if e not in said]
        for name, n in queues.items():
            q = self.book.get(name)
            q.versions += n
            batch.hosts[name] = self.book.counters(q)
        try:
            self.store.write(batch)
        except Exception:
            for name, n in queues.items():
                self.book.get(name).versions -= n
            raise
        self._pending = pending
        for fp in confirmed:
            self._before.pop(fp, None)
        for fp, events in held.items():
            if events:
                self._held[fp] = events
            else:
                self._held.pop(fp, None)
        counted = sum(queues.values())
        self.book.totals.versions += counted
        return counted

    def events(self, limit: int = 1000) -> list[tuple[str, bytes, bytes]]:
        """The oldest change events not yet delivered, ``(queue, key, row)``:
        in a shared frontier, those of the queues held here (a stopped
        worker's are delivered by whoever takes its queues)."""
        queues = sorted(self.sharing.held) if self.sharing is not None else None
        return self.store.events(queues, limit)

    def events_delivered(self, delivered: list[tuple[str, bytes]]) -> None:
        """Take delivered events out of the outbox (one write): ``(queue, key)`` pairs."""
        if delivered:
            self.store.write(Batch(events=dict.fromkeys(delivered)))

    @property
    def pending_count(self) -> int:
        """URLs with versions captured but not yet confirmed delivered."""
        return len(self._pending)
