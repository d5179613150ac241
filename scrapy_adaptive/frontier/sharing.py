"""Many workers, one frontier: each host worked by one worker at a time.

With a shared store (Redis), every worker runs its own :class:`Frontier`
over the same records and queues.  Politeness, valence and Crawl-delay are
enforced per queue in memory, so a queue must be issued from by one worker
only: the worker holding the queue's **lease** in the store
(:class:`LeaseBoard`: ``SET NX PX``, renewed every second by
:meth:`SharedHosts.rebalance`, given back at a clean stop, lapsing on its
own after a ``kill -9``).

What is shared and what is per worker:

* **In the store, shared**: records, queue entries, per-queue counters
  (written as increments, so every worker's counts add up: see
  :mod:`.redis_store`), per-queue facts (Crawl-delay, politeness wait,
  validator trust, hint track records: last writer wins, and only the
  holder changes them), pending-delivery marks, the policies' saved
  aggregates.
* **In memory, per worker**: the heap of the queues it holds, their slots
  and out URLs, and its own view of the counts (a queue's counts as read
  when the worker took it, plus what the worker did since): reports of one
  worker speak for that worker.

Any worker may *add* a URL to any queue: the record and entry go to the
store at once.  The holder re-reads the heads of its queues every
rebalance (once a second), so a URL discovered by another worker is issued
within about a second.  Hosts are spread evenly: each worker aims at
``ceil(queues / live workers)``, takes unleased queues up to that share
and gives back those above it, so a worker
joining or leaving moves hosts within a few seconds.  A taken queue rests
its shortest politeness wait first (its previous holder may have had a
fetch in flight).
"""

from __future__ import annotations

import hashlib
import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from ..config.spec import counted

if TYPE_CHECKING:
    from .book import QueueBook
    from .pending import PendingVersions

logger = logging.getLogger(__name__)

#: queues tried per rebalance beyond those needed (some are held by others)
_SPARE_TRIES = 64
#: pipelines of lease attempts per rebalance at most (a bound when most queues are held)
_MAX_CHUNKS = 8


class LeaseBoard(Protocol):
    """Leases on queues and a register of live workers (a shared store provides it)."""

    def acquire(self, queues: list[str], worker: str, ttl: float) -> list[str]: ...

    def renew(self, queues: list[str], worker: str, ttl: float) -> list[str]: ...

    def release(self, queues: list[str], worker: str) -> None: ...

    def heartbeat(self, worker: str, ttl: float) -> list[str]: ...

    def leave(self, worker: str) -> None: ...

    def host_names(self) -> object: ...

    def host_count(self) -> int: ...


class Sharing:
    """This worker's side of the sharing: who it is, what it holds."""

    def __init__(self, board: LeaseBoard, worker: str, ttl: float) -> None:
        self.board = board
        self.worker = worker
        self.ttl = ttl
        self.held: set[str] = set()
        #: held queues being given back: nothing more is issued from them,
        #: and the lease goes once their out URLs are back
        self.draining: set[str] = set()
        #: the live workers at the last heartbeat (this one among them)
        self.live: set[str] = {worker}
        #: held queues still to be looked at for versions stopped workers
        #: left undelivered (taken now, or held when a worker stopped)
        self.orphans: set[str] = set()

    @property
    def workers(self) -> int:
        return len(self.live)

    def beat(self) -> bool:
        """Say this worker is alive; has a worker stopped since the last beat?"""
        before = self.live
        self.live = set(self.board.heartbeat(self.worker, self.ttl)) | {self.worker}
        return bool(before - self.live)

    def owns(self, mark: dict[str, object]) -> bool:
        """Is this pending-delivery mark, in a queue held here, for this worker to take back?

        A version waits for the delivery of the worker that captured it
        until that worker confirms it; once the worker has stopped (killed,
        or stopped before the confirmation; a restarted worker is a new
        one) the version is delivered again by the queue's holder.  A mark
        naming no worker predates sharing: taken back.
        """
        owner = mark.get("w")
        return owner is None or owner not in self.live

    def issues(self, name: str) -> bool:
        return name in self.held and name not in self.draining

    def spread(self, name: str) -> bytes:
        """A per-worker order of the queues, so workers starting together try different ones first."""
        return hashlib.blake2b(f"{self.worker}\0{name}".encode(), digest_size=8).digest()


class SharedHosts:
    """The sharing part of a frontier: host leases and the fleet's undelivered
    versions (a no-op without a shared store)."""

    def __init__(self, book: QueueBook, pending: PendingVersions, clock: Callable[[], float]) -> None:
        self.book = book
        self.store = book.store
        self.sharing: Sharing | None = book.sharing
        self.pending = pending
        self.clock = clock
        #: URLs whose versions stopped workers left undelivered, made due again here
        self.redelivered = 0

    def rebalance(self) -> list[str]:
        """Renew, take and give back host leases; re-read held queues' heads.

        Called once a second by the crawl (and once at open).  Returns the
        queues taken now (the caller wakes the engine for them).
        """
        s = self.sharing
        if s is None:
            return []
        now = self.clock()
        for name in s.board.renew(sorted(s.held), s.worker, s.ttl):
            s.held.discard(name)
            s.draining.discard(name)
            self.book.unschedule(self.book.get(name))
        done = sorted(n for n in s.draining if not self.book.get(n).out)
        if done:
            s.board.release(done, s.worker)
            s.held.difference_update(done)
            s.draining.difference_update(done)
        if s.beat():  # a worker stopped: its undelivered versions in the queues held here come back
            s.orphans.update(s.held)
        if s.board.host_count() != len(self.book):
            for name in s.board.host_names():  # type: ignore[attr-defined]
                self.book.get(name)
        share = math.ceil(len(self.book) / s.workers)
        taken: list[str] = []
        working = len(s.held) - len(s.draining)
        if working < share:
            for name in sorted(s.draining)[: share - working]:  # wanted again: keep it
                s.draining.discard(name)
                self.book.schedule(self.book.get(name))
                working += 1
            wanted = share - working
            candidates = sorted((n for n in self.book.names() if n not in s.held), key=s.spread)
            step = wanted + _SPARE_TRIES
            for start in range(0, min(len(candidates), _MAX_CHUNKS * step) if wanted > 0 else 0, step):
                need = wanted - len(taken)
                got = s.board.acquire(candidates[start : start + step], s.worker, s.ttl)
                taken += got[:need]
                if got[need:]:
                    s.board.release(got[need:], s.worker)
                if len(taken) >= wanted:
                    break
            for name in taken:
                self._take(name, now)
            s.orphans.update(taken)
        elif working > share:
            # give back the excess, the least busy first; a queue with URLs
            # out drains first (its fetches end here, not beside the next holder's)
            excess = sorted((n for n in s.held if n not in s.draining), key=lambda n: (len(self.book.get(n).out), n))[
                : working - share
            ]
            for name in excess:
                self.book.unschedule(self.book.get(name))
            idle = [n for n in excess if not self.book.get(n).out]
            s.board.release(idle, s.worker)
            s.held.difference_update(idle)
            s.draining.update(n for n in excess if self.book.get(n).out)
        s.orphans &= s.held
        if s.orphans:
            self._take_back(s.orphans)
        for name in s.held - s.draining:
            q = self.book.get(name)
            head = q.head
            self.book.refresh_head(q)
            if q.head != head:
                self.book.schedule(q)
        return taken

    def _take_back(self, queues: set[str]) -> None:
        """Deliver again the versions stopped workers left pending in *queues*
        (held here); a queue with such a URL out here is looked at again later."""
        assert self.sharing is not None
        count, self.sharing.orphans = self.pending.redeliver(sorted(queues))
        if count:
            self.redelivered += count
            logger.info(
                "%s had versions captured by a stopped worker and never confirmed delivered; "
                "they are fetched again now so their items are produced again.",
                counted(count, "URL"),
            )

    def _take(self, name: str, now: float) -> None:
        """Start working a queue just leased: its counters as stored, a politeness rest first."""
        assert self.sharing is not None
        q = self.book.get(name)
        self.book.restore(q, self.store.get_host(name))
        q.snooze_all(now + self.book.rest_after(q, 0.0))
        self.sharing.held.add(name)
        self.book.refresh_head(q)
        self.book.schedule(q)

    def leave(self) -> None:
        """A clean stop: give every lease back at once (another worker takes over
        without waiting for them to lapse)."""
        s = self.sharing
        if s is None:
            return
        s.board.release(sorted(s.held), s.worker)
        s.board.leave(s.worker)
        s.held.clear()
        s.draining.clear()
