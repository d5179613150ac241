"""A fleet's host leases, worked by the frontier's sharing part.

The lease board here keeps Redis's semantics (``SET NX PX`` leases, renewals
that fail once another worker holds the key, a worker register whose entries
lapse after the TTL) in memory on the test's clock, so the rebalancing rules
are checked without a server; ``tests/contract`` runs the same part on Redis.
"""

from __future__ import annotations

import math

from scrapy_adaptive.frontier import ChangeState, Frontier, MemoryStore, Outcome, Politeness, Visit
from scrapy_adaptive.frontier.sharedhosts import SharedHosts
from scrapy_adaptive.frontier.sharing import Sharing
from scrapy_adaptive.model import Plan
from tests.unit.frontier.test_frontier import Clock, add, fp

TTL = 5.0
HOSTS = ["h0", "h1", "h2", "h3"]


class BoardStore(MemoryStore):
    """A MemoryStore that is also a :class:`~.sharing.LeaseBoard`, on *clock*."""

    def __init__(self, clock: Clock) -> None:
        super().__init__()
        self.clock = clock
        self.leases: dict[str, tuple[str, float]] = {}
        self.workers: dict[str, float] = {}

    def _holder(self, queue: str) -> str | None:
        held = self.leases.get(queue)
        return held[0] if held is not None and held[1] > self.clock() else None

    def acquire(self, queues: list[str], worker: str, ttl: float) -> list[str]:
        taken = [q for q in queues if self._holder(q) is None]
        for q in taken:
            self.leases[q] = (worker, self.clock() + ttl)
        return taken

    def renew(self, queues: list[str], worker: str, ttl: float) -> list[str]:
        lost = [q for q in queues if self._holder(q) != worker]
        for q in queues:
            if q not in lost:
                self.leases[q] = (worker, self.clock() + ttl)
        return lost

    def release(self, queues: list[str], worker: str) -> None:
        for q in queues:
            if self._holder(q) == worker:
                del self.leases[q]

    def heartbeat(self, worker: str, ttl: float) -> list[str]:
        now = self.clock()
        self.workers[worker] = now
        self.workers = {w: t for w, t in self.workers.items() if t > now - ttl}
        return list(self.workers)

    def leave(self, worker: str) -> None:
        self.workers.pop(worker, None)

    def host_names(self) -> list[str]:
        return [name for name, _ in self.hosts()]

    def host_count(self) -> int:
        return len(self.host_names())


def worker(store: BoardStore, clock: Clock, name: str) -> Frontier:
    polite = Politeness(min_delay=0.0, max_delay=0.0, delay_factor=0.0, valence=1)
    return Frontier(store, polite, clock=clock, sharing=Sharing(store, name, TTL))


def held(f: Frontier) -> set[str]:
    assert f.sharing is not None
    return set(f.sharing.held)


def two_workers() -> tuple[BoardStore, Clock, Frontier, Frontier]:
    """Worker A discovers every host; B joins; one second of rebalancing later
    each works half of them."""
    clock = Clock()
    store = BoardStore(clock)
    a = worker(store, clock, "A")
    for host in HOSTS:
        add(a, f"http://{host}/1")
    assert held(a) == set(HOSTS)  # the discoverer works a new host at once
    a.fleet.rebalance()
    b = worker(store, clock, "B")
    assert b.fleet.rebalance() == []  # every host is leased: B waits
    clock.t += 1
    assert a.fleet.rebalance() == []  # A sees B alive and gives back its excess
    taken = b.fleet.rebalance()
    assert sorted(taken) == sorted(held(b))
    return store, clock, a, b


def test_without_a_shared_store_the_part_does_nothing() -> None:
    clock = Clock()
    f = Frontier(MemoryStore(), clock=clock)
    part = SharedHosts(f.book, f._pending, clock)
    assert part.rebalance() == [] and f.fleet.rebalance() == []
    part.leave()
    assert part.redelivered == 0 and f.sharing is None


def test_two_workers_split_the_hosts_evenly_and_disjointly() -> None:
    store, clock, a, b = two_workers()
    assert len(held(a)) == len(held(b)) == math.ceil(len(HOSTS) / 2)
    assert held(a).isdisjoint(held(b)) and held(a) | held(b) == set(HOSTS)
    assert all(store.leases[h][0] == "A" for h in held(a))
    # each issues only from the queues it holds
    clock.t += 1
    for f in (a, b):
        issued = []
        while (i := f.next()) is not None:
            issued.append(i.record.queue)
        assert sorted(issued) == sorted(held(f))


def test_each_worker_says_which_queues_it_issues() -> None:
    """What the scheduler asks before it keeps a request object for a URL's
    first fetch: alone every queue is this worker's; in a fleet only its leased ones."""
    store, clock, a, b = two_workers()
    for host in HOSTS:
        assert a.fleet.issues(host) is (host in held(a)) and b.fleet.issues(host) is (host in held(b))
    assert sum(a.fleet.issues(h) for h in HOSTS) + sum(b.fleet.issues(h) for h in HOSTS) == len(HOSTS)
    assert Frontier(MemoryStore(), clock=clock).fleet.issues("anyhost")


def test_a_queue_with_urls_out_drains_before_it_is_given_back() -> None:
    clock = Clock()
    store = BoardStore(clock)
    a = worker(store, clock, "A")
    for host in HOSTS:
        add(a, f"http://{host}/1")
    a.fleet.rebalance()
    out = {}
    for _ in range(3):  # three hosts busy, one idle
        issued = a.next()
        assert issued is not None
        out[issued.record.queue] = issued.fp
    (idle,) = set(HOSTS) - set(out)
    b = worker(store, clock, "B")
    b.fleet.rebalance()
    clock.t += 1
    a.fleet.rebalance()
    assert a.sharing is not None
    # two to give back: the idle one at once, a busy one once its fetch is over
    assert idle not in held(a) and idle not in store.leases
    (draining,) = a.sharing.draining
    assert draining in out and store.leases[draining][0] == "A"
    a.update(out[draining], Visit(Outcome.VISITED, status=200, change=ChangeState.CHANGED), Plan(60.0))
    a.fleet.rebalance()
    assert draining not in held(a) and draining not in store.leases
    assert len(held(a)) == 2 and not a.sharing.draining


def test_a_lost_lease_stops_issuing_from_its_queue() -> None:
    store, clock, a, b = two_workers()
    lost = sorted(held(a))[0]
    del store.leases[lost]
    assert store.acquire([lost], "B", TTL) == [lost]
    a.fleet.rebalance()
    assert lost not in held(a)
    clock.t += 1
    while (issued := a.next()) is not None:
        assert issued.record.queue != lost


def test_a_clean_stop_gives_every_lease_back_at_once() -> None:
    store, clock, a, b = two_workers()
    a.fleet.leave()
    assert held(a) == set() and "A" not in store.workers
    assert all(holder == "B" for holder, _ in store.leases.values())
    b.fleet.rebalance()
    assert held(b) == set(HOSTS)  # taken without waiting for the leases to lapse


def test_versions_a_stopped_worker_left_undelivered_are_fetched_again() -> None:
    store, clock, a, b = two_workers()
    clock.t += 1
    host = sorted(held(a))[0]
    key = fp(f"http://{host}/1")
    while (issued := a.next()) is not None and issued.fp != key:
        pass
    assert issued is not None
    visit = Visit(Outcome.VISITED, status=200, change=ChangeState.CHANGED, digest="sha1:x")
    a.update(key, visit, Plan(3600.0), deliver=True)
    assert key in dict(store.pending())
    # A is killed: its leases and its heartbeat lapse; B takes the host
    clock.t += TTL + 1
    for _ in range(3):
        b.fleet.rebalance()
        clock.t += 1
    assert held(b) == set(HOSTS)
    assert b.redelivered == 1
    assert key not in dict(store.pending())
    record = b.get_record(host, key)
    assert record is not None and record.digest is None and record.next_ms <= clock.t * 1000
