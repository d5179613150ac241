"""What is out: a lease is given back exactly once, a lapsed lease makes its URL
due again, a download in flight never lapses, and the end of a fetch starts
its slot's politeness wait before the verdict."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_adaptive.frontier import Frontier, MemoryStore, Store
from scrapy_adaptive.frontier.crawltime import FetchTimes
from scrapy_adaptive.frontier.hostqueue import IN_USE
from scrapy_adaptive.frontier.leases import Lease, Leases
from scrapy_adaptive.model import Plan
from tests.hypo import examples
from tests.unit.frontier.test_frontier import Clock, add, make, visited


def issue_one(store: Store, clock: Clock, **politeness: float) -> tuple[Frontier, bytes]:
    f = make(store, clock, **politeness)
    add(f, "http://a/1")
    issued = f.next()
    assert issued is not None
    return f, issued.fp


def test_a_lease_is_taken_back_exactly_once(store: Store) -> None:
    clock = Clock()
    f, key = issue_one(store, clock)
    leases = f._leases
    assert key in leases and leases.is_out(key) and len(leases) == 1 and leases
    assert leases.out_queue(key) == "a"
    lease = leases.take(key)
    assert isinstance(lease, Lease) and lease.queue == "a"
    assert leases.take(key) is None
    assert not leases and leases.lent(key) is None and leases.out_queue(key) is None
    assert not leases.requeue(key)  # not out: nothing to give back


def test_the_lease_carries_the_record_as_issued(store: Store) -> None:
    clock = Clock()
    f, key = issue_one(store, clock, lease=60.0)
    lease = f._leases.lent(key)
    assert lease is not None
    assert lease.record.url == "http://a/1"
    assert (lease.issued, lease.lease_until) == (clock.t, clock.t + 60.0)


def test_a_lapsed_lease_makes_its_url_due_again(store: Store) -> None:
    clock = Clock()
    f, key = issue_one(store, clock, lease=30.0, min_delay=2.0)
    clock.t += 29
    assert f._leases.lapsed() == [] and f._leases.expire_leases() == []
    assert f.next() is None  # still out
    clock.t += 1
    assert f._leases.lapsed() == [key]
    assert f._leases.expire_leases() == [key]
    assert f._leases.expire_leases() == []  # given back once
    assert not f._leases.is_out(key)
    q = f.book.get("a")
    assert key not in q.out and q.head is not None and q.head[2] == key
    clock.t += 2  # the slot rests min_delay
    again = f.next()
    assert again is not None and again.fp == key
    # the record was not touched: no visit counted, the same time
    record = f.get_record("a", key)
    assert record is not None and record.visits == 0 and f.counts().visits == 0


def test_a_download_in_flight_never_lapses_and_its_time_does_not_count(store: Store) -> None:
    clock = Clock()
    f, key = issue_one(store, clock, lease=30.0)
    clock.t += 10
    f.downloads.fetch_started(key)
    clock.t += 500  # a long download, past the lease
    assert f._leases.lapsed() == []
    f.downloads.fetch_ended(key)
    lease = f._leases.lent(key)
    assert lease is not None and not lease.in_flight and lease.duration == 500
    # the lease counts only the time out of the downloader: 10 s used of 30
    clock.t += 19
    assert f._leases.lapsed() == []
    clock.t += 1
    assert f._leases.lapsed() == [key]


def test_the_end_of_a_fetch_starts_the_slots_wait_before_the_verdict(store: Store) -> None:
    clock = Clock()
    f, key = issue_one(store, clock, delay_factor=5.0, min_delay=2.0, max_delay=50.0)
    q = f.book.get("a")
    assert q.slots == [IN_USE]
    f.downloads.fetch_started(key)
    clock.t += 3
    f.downloads.fetch_ended(key)
    assert q.slots == [clock.t + 15.0]  # 5 × 3 s
    assert f._leases.is_out(key)  # the verdict is still to come
    assert f.fetch_times.mean("a") == 3.0


def test_a_fetch_is_timed_from_when_its_request_went_out(store: Store) -> None:
    clock = Clock()
    f, key = issue_one(store, clock)
    f.downloads.fetch_started(key)
    clock.t += 10  # held in the downloader's slot
    f.downloads.request_sent(key, latency=1.5)
    clock.t += 0.5
    f.downloads.fetch_ended(key)
    lease = f._leases.lent(key)
    assert lease is not None and lease.duration == pytest.approx(2.0)


def test_a_duration_given_wins_and_signals_for_unknown_urls_are_ignored(store: Store) -> None:
    clock = Clock()
    f, key = issue_one(store, clock)
    f.downloads.fetch_started(key)
    clock.t += 7
    f.downloads.fetch_ended(key, duration=1.0)
    lease = f._leases.lent(key)
    assert lease is not None and lease.duration == 1.0
    for signal in (f.downloads.fetch_started, f.downloads.fetch_ended):
        signal(b"unknown")
    f.downloads.request_sent(b"unknown", 1.0)
    assert len(f._leases) == 1


def test_a_verdict_after_the_fetch_ended_keeps_the_slots_wait(store: Store) -> None:
    clock = Clock()
    f, key = issue_one(store, clock, delay_factor=5.0, min_delay=2.0, max_delay=50.0)
    f.downloads.fetch_started(key)
    clock.t += 2
    f.downloads.fetch_ended(key)
    free_at = clock.t + 10.0
    clock.t += 1
    f.update(key, visited(duration=2.0), Plan(100.0))
    assert f.book.get("a").slots == [free_at]
    assert not f._leases.is_out(key)


def test_leases_built_alone_lend_and_requeue(store: Store) -> None:
    """The part works over a book without the frontier around it."""
    clock = Clock()
    f = make(store, clock)
    add(f, "http://a/1")
    issued = f.next()
    assert issued is not None
    # a second Leases over the same book: the frontier's holds the lease
    own = Leases(f.book, clock, FetchTimes())
    assert not own.is_out(issued.fp)
    lease = f._leases.take(issued.fp)
    assert lease is not None
    own.lend(issued.fp, lease)
    assert own.requeue(issued.fp)
    assert not own and issued.fp not in f.book.get("a").out


@settings(max_examples=examples(60))
@given(
    steps=st.lists(
        st.tuples(st.sampled_from(["next", "start", "end", "tick", "verdict"]), st.integers(0, 5)), max_size=40
    )
)
def test_every_issued_url_comes_back_exactly_once(steps: list[tuple[str, int]]) -> None:
    """Whatever the mix of fetch signals, clock moves, verdicts and lapses,
    each issue is followed by exactly one return (a verdict or a lapse), and
    only a URL not being downloaded lapses."""
    clock = Clock()
    f = make(MemoryStore(), clock, valence=2, min_delay=0.5, max_delay=1.0, lease=10.0)
    for n in range(6):
        add(f, f"http://a/{n}")
    issued = returned = 0
    for op, n in steps:
        out = sorted(f.book.get("a").out)
        key = out[n % len(out)] if out else None
        if op == "next":
            if f.next() is not None:
                issued += 1
        elif op == "start" and key is not None:
            f.downloads.fetch_started(key)
        elif op == "end" and key is not None:
            f.downloads.fetch_ended(key)
        elif op == "tick":
            clock.t += 3 * n
            flying = {k for k in out if (lease := f._leases.lent(k)) is not None and lease.in_flight}
            lapsed = f._leases.expire_leases()
            assert not flying & set(lapsed)
            returned += len(lapsed)
        elif op == "verdict" and key is not None:
            assert f.update(key, visited(), Plan(1.0)) is not None
            returned += 1
        assert issued - returned == len(f._leases) == len(f.book.get("a").out)
