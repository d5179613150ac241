"""Many workers, one frontier: each host worked by one worker at a time.

With a shared store (Redis), every worker runs its own :class:`Frontier`
over the same records and queues.  Politeness, valence and Crawl-delay are
enforced per queue in memory, so a queue must be issued from by one worker
only: the worker holding the queue's **lease** in the store
(:class:`LeaseBoard`: ``SET NX PX``, renewed every second by
:meth:`.sharedhosts.SharedHosts.rebalance`, given back at a clean stop, lapsing on its
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
from typing import Protocol


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
