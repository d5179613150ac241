"""The queue book: the one holder of a frontier's queues, its heap and totals.

Built directly over a real store (MemoryStore and LevelDB), and through a
:class:`Frontier` where the invariant is about what the frontier's
operations do to the book: its totals equal the sum of its queues'
counters after any sequence of adds, issues, verdicts, confirmations and
forgets, and a new book loaded from the store finds the same totals.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_adaptive.frontier import ChangeState, Frontier, MemoryStore, Outcome, Politeness, Store, Visit
from scrapy_adaptive.frontier.hostqueue import Entry, HostQueue
from scrapy_adaptive.frontier.queues import QueueBook, Totals
from scrapy_adaptive.model import Plan
from scrapy_adaptive.store.base import Batch, StoreError
from scrapy_adaptive.store.leveldb import LevelDBStore
from tests.hypo import examples
from tests.unit.frontier.test_frontier import Clock, FullDisk, add, fp, make

POLITE = Politeness(delay_factor=2.0, min_delay=1.0, max_delay=10.0, valence=2)


def summed(book: QueueBook) -> Totals:
    """The totals recomputed from the queues' own counters."""
    total = Totals()
    for q in book:
        total.add(Totals.of(q))
    return total


def put_entries(book: QueueBook, queue: str, *entries: Entry) -> None:
    book.write(Batch(entries_put=[(queue, *e) for e in entries]))


def queue_of(store: Store, *entries: Entry) -> tuple[QueueBook, HostQueue]:
    """A book whose queue ``a`` holds *entries*, its head read."""
    book = QueueBook(store, POLITE)
    q = book.get("a")
    put_entries(book, "a", *entries)
    book.refresh_head(q)
    return book, q


def move(book: QueueBook, q: HostQueue, old: Entry, new: Entry) -> None:
    """Move one entry in the store, then tell the book."""
    book.write(Batch(entries_deleted=[(q.name, *old)], entries_put=[(q.name, *new)]))
    book.moved(q, old, new)


def test_a_queue_is_made_once_and_found_by_name(store: Store) -> None:
    book = QueueBook(store, POLITE)
    assert book.find("a") is None and "a" not in book and len(book) == 0
    q = book.get("a")
    assert book.get("a") is q and book.find("a") is q
    assert "a" in book and book.names() == ["a"] and list(book) == [q]
    assert q.valence == POLITE.valence  # the politeness's valence, not a default


def test_restore_keeps_the_totals_in_step_with_the_counters(store: Store) -> None:
    book = QueueBook(store, POLITE)
    q = book.get("a")
    stored = HostQueue("a", 1, urls=5, never=2, visits=7, versions=3, quarantined=1, forgotten=4)
    book.restore(q, stored.counters_bytes())
    assert (q.urls, q.never, q.visits, q.versions, q.quarantined, q.forgotten) == (5, 2, 7, 3, 1, 4)
    assert book.totals == Totals(urls=5, schedulable=3, visits=7, versions=3, quarantined=1, forgotten=4)
    # restored again (a fleet worker taking a queue back): replaced, not added
    stored.urls, stored.visits = 6, 9
    book.restore(q, stored.counters_bytes())
    assert book.totals == summed(book) == Totals(6, 4, 9, 3, 1, 4)
    book.restore(q, None)  # nothing stored: nothing changes
    assert book.totals == summed(book)


def test_a_failed_write_runs_the_undo_and_raises() -> None:
    store = FullDisk()
    book = QueueBook(store, POLITE)
    q = book.get("a")
    undo = book.keep(q)
    q.urls += 3
    q.visits += 1
    book.totals.urls += 3
    book.totals.visits += 1
    q.take_slot(b"x", 0.0)
    store.full = True
    with pytest.raises(StoreError):
        book.write(Batch(hosts={"a": book.counters(q)}), q, undo)
    assert (q.urls, q.visits, q.out) == (0, 0, {})
    assert q.slots == [0.0, 0.0]
    assert book.totals == Totals()
    assert store.get_host("a") is None


def test_a_successful_write_reaches_the_store(store: Store) -> None:
    book = QueueBook(store, POLITE)
    q = book.get("a")
    q.urls = 2
    undone: list[bool] = []
    book.write(Batch(hosts={"a": book.counters(q)}), q, lambda: undone.append(True))
    assert not undone
    raw = store.get_host("a")
    assert raw is not None
    read = HostQueue("a", 1)
    read.restore_counters(json.loads(raw))
    assert read.urls == 2


def test_the_head_is_the_first_entry_not_out(store: Store) -> None:
    e1, e2, e3 = (0, 1000, fp("1")), (0, 2000, fp("2")), (0, 3000, fp("3"))
    book, q = queue_of(store, e3, e1, e2)
    assert q.head == e1
    q.out[e1[2]] = None
    book.refresh_head(q, q.head)  # after an issue: from the old head
    assert q.head == e2
    q.out[e2[2]] = None
    book.refresh_head(q)
    assert q.head == e3
    q.out[e3[2]] = None
    book.refresh_head(q)
    assert q.head is None


def test_a_preferred_entry_is_the_head_before_earlier_ones(store: Store) -> None:
    _, q = queue_of(store, (0, 1000, fp("1")), preferred := (1, 5000, fp("2")))
    assert q.head == preferred


def test_moved_keeps_the_head_right_without_a_seek(store: Store) -> None:
    e1, e2 = (0, 1000, fp("1")), (0, 2000, fp("2"))
    book, q = queue_of(store, e1, e2)
    assert q.head == e1
    # e2 moves ahead of the head: it becomes the head
    moved = (0, 500, fp("2"))
    move(book, q, e2, moved)
    assert q.head == moved
    # the head moves behind the other one: the other is the head
    later = (0, 9000, fp("2"))
    move(book, q, moved, later)
    assert q.head == e1
    # an out entry that moved never becomes the head
    q.out[fp("1")] = None
    book.refresh_head(q)
    assert q.head == later
    move(book, q, e1, (0, 100, fp("1")))
    assert q.head == later


def test_the_heap_gives_the_time_the_next_queue_is_ready(store: Store) -> None:
    book = QueueBook(store, POLITE)

    def ready() -> float | None:
        top = book.heap.peek()
        return top[0] if top is not None else None

    assert ready() is None
    a, b = book.get("a"), book.get("b")
    put_entries(book, "a", (0, 5000, fp("a")))
    put_entries(book, "b", (0, 3000, fp("b")))
    for q in (a, b):
        book.refresh_head(q)
        book.schedule(q)
    assert ready() == 3.0
    assert book.heap.peek() == (3.0, b)
    book.unschedule(b)  # its heap entry is stale now
    assert ready() == 5.0
    book.schedule(b)
    assert ready() == 3.0
    assert book.holds("a")  # without sharing every queue is this worker's


def test_rest_after_a_fetch_is_clamped_and_honours_crawl_delay(store: Store) -> None:
    book = QueueBook(store, POLITE)
    q = book.get("a")
    assert book.rest_after(q, 0.0) == 1.0  # min_delay
    assert book.rest_after(q, 2.0) == 4.0  # delay_factor × duration
    assert book.rest_after(q, 60.0) == 10.0  # max_delay
    q.crawl_delay = 30.0
    assert book.rest_after(q, 2.0) == 30.0


# -- the totals after any sequence of the frontier's operations ------------------------

HOSTS = ("a", "b", "c")
VERDICTS = ("changed", "unchanged", "retry", "failed")
ops = st.lists(
    st.tuples(
        st.sampled_from(["add", "add", "visit", "visit", "hold", "confirm", "forget", "lapse"]),
        st.sampled_from(HOSTS),
        st.integers(0, 4),
        st.sampled_from(VERDICTS),
    ),
    max_size=40,
)


def verdict(kind: str, n: int) -> tuple[Visit, Plan | None]:
    """The verdict of *kind*, and its plan (a visit's only)."""
    if kind == "retry":
        return Visit(Outcome.RETRY, reason="timeout"), None
    if kind == "failed":
        return Visit(Outcome.FAILED, reason="gone"), None
    change = ChangeState.CHANGED if kind == "changed" else ChangeState.UNCHANGED
    return Visit(Outcome.VISITED, status=200, change=change, digest=f"sha1:{n}"), Plan(30.0)


def run(f: Frontier, clock: Clock, steps: list[tuple[str, str, int, str]]) -> Iterator[None]:
    """Apply *steps* to *f*, yielding after each: ``visit`` issues a URL and
    gives it a verdict (one held out before, if any), ``hold`` issues one
    and keeps it out."""
    out: list[bytes] = []
    delivered: list[tuple[bytes, str | None]] = []
    for op, host, n, kind in steps:
        url = f"http://{host}/{n}"
        if op == "add":
            add(f, url)
        elif op in ("visit", "hold"):
            clock.t += 20
            issued = f.next()
            if issued is not None:
                out.append(issued.fp)
            if op == "visit" and out:
                key = out.pop(0)
                f.update(key, *verdict(kind, n), deliver=n % 2 == 0)
                if kind == "changed":
                    delivered.append((key, f"sha1:{n}"))
        elif op == "confirm":
            f.outbox.confirm(delivered)
            delivered.clear()
        elif op == "forget":
            f.forget([(host, fp(url))])
            if fp(url) in out:
                out.remove(fp(url))
        elif op == "lapse":
            clock.t += 1000
            for key in f._leases.expire_leases():
                out.remove(key)
        yield


def check_totals(f: Frontier, store: Store, clock: Clock) -> None:
    assert f.book.totals == summed(f.book)
    urls = sum(1 for _ in store.records())
    assert f.counts().urls == urls
    # a new book loaded from the store finds the same totals
    again = make(store, clock)
    again.load(redeliver=False)
    assert again.book.totals == f.book.totals


@settings(max_examples=examples(120))
@given(steps=ops)
def test_the_totals_are_the_sum_of_the_queues_after_any_operations(steps: list[tuple[str, str, int, str]]) -> None:
    clock = Clock()
    store = MemoryStore()
    f = make(store, clock, valence=2)
    for _ in run(f, clock, steps):
        assert f.book.totals == summed(f.book)
    check_totals(f, store, clock)


@settings(max_examples=examples(30))
@given(steps=ops)
def test_the_totals_hold_on_leveldb_too(steps: list[tuple[str, str, int, str]]) -> None:
    clock = Clock()
    with tempfile.TemporaryDirectory() as tmp:
        store = LevelDBStore(tmp + "/db")
        try:
            f = make(store, clock, valence=2)
            for _ in run(f, clock, steps):
                pass
            check_totals(f, store, clock)
        finally:
            store.close()
