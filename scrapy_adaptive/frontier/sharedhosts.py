"""The frontier's part that works a fleet's host leases (:mod:`.sharing`).

Once a second it renews, takes and gives back the leases of this worker's
share of the hosts, re-reads the heads of the queues it holds (another
worker may have added URLs), and makes due again the versions a stopped
worker left undelivered.  A no-op without a shared store.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from ..config.spec import counted

if TYPE_CHECKING:
    from .pending import PendingVersions
    from .queues import QueueBook
    from .sharing import Sharing

logger = logging.getLogger(__name__)

#: queues tried per rebalance beyond those needed (some are held by others)
_SPARE_TRIES = 64
#: pipelines of lease attempts per rebalance at most (a bound when most queues are held)
_MAX_CHUNKS = 8


class Fleet(Protocol):
    """A worker's part in a fleet sharing one frontier (``Frontier.fleet``);
    :class:`SharedHosts` holds it."""

    def rebalance(self) -> list[str]:
        """Renew, take and give back host leases; the queues taken now."""

    def leave(self) -> None:
        """A clean stop: give every host lease back at once."""

    def issues(self, queue: str) -> bool:
        """True if this worker issues *queue*'s URLs now (alone: every queue)."""


class SharedHosts:
    """The sharing part of a frontier: host leases and the fleet's undelivered
    versions (a no-op without a shared store; :class:`Fleet` to the crawl)."""

    def __init__(self, book: QueueBook, pending: PendingVersions, clock: Callable[[], float]) -> None:
        self.book = book
        self.store = book.store
        self.sharing: Sharing | None = book.sharing
        self.pending = pending
        self.clock = clock
        #: URLs whose versions stopped workers left undelivered, made due again here
        self.redelivered = 0

    def issues(self, queue: str) -> bool:
        return self.book.holds(queue)

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
