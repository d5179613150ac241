"""Taking URLs out of a frontier: forget deletes every key of a URL in one
write, quarantine moves an unreadable record aside with its bytes, and both
keep the counts a checkpoint compares (urls + quarantined + forgotten) from
ever going down."""

from __future__ import annotations

import logging
from pathlib import Path

import plyvel
import pytest

from scrapy_adaptive.frontier import Frontier, Outcome, Store, Visit
from scrapy_adaptive.frontier.removal import forget, quarantine
from scrapy_adaptive.model import Plan, RecordError
from scrapy_adaptive.store.base import Batch
from scrapy_adaptive.store.keys import EVENT_PREFIX, event_key
from scrapy_adaptive.store.leveldb import LevelDBStore
from tests.unit.frontier.test_frontier import Clock, add, fp, make, visit_once, visited
from tests.unit.frontier.test_pending import out_again


def kept(f: Frontier) -> int:
    """What the state folder's checkpoint compares: it never goes down."""
    return f.counts().urls + f.counts().quarantined + f.counts().forgotten


def test_forget_deletes_the_record_entry_mark_and_lease(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    key = out_again(f, clock)
    add(f, "http://a/2")
    before = kept(f)
    gone = f.forget([("a", key)])
    assert [r.url for r in gone] == ["http://a/1"]
    assert store.get_record("a", key) is None
    assert key not in [e[2] for e in store.queue_entries("a", limit=10)]
    assert key not in dict(store.pending())
    assert not f._leases.is_out(key) and f._pending.pending_count == 0
    assert (f.counts().urls, f.counts().forgotten, kept(f)) == (1, 1, before)
    q = f.book.get("a")
    assert (q.urls, q.forgotten) == (1, 1)
    # its verdict, when it comes, finds no record and is ignored
    assert f.update(key, visited(), Plan(100.0)) is None
    # the stored counters say the same after a restart
    again = make(store, clock)
    again.load()
    assert (again.counts().urls, again.counts().forgotten, again.counts().visits) == (1, 1, 1)


def test_a_forgotten_out_url_rests_its_slot_the_longest_wait(store: Store) -> None:
    clock = Clock()
    f = make(store, clock, max_delay=5.0)
    key = out_again(f, clock)
    f.forget([("a", key)])
    assert f.book.get("a").slots == [clock.t + 5.0]


def test_a_forgotten_url_found_again_starts_a_new_record(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    key = visit_once(f, "http://a/1")
    f.forget([("a", key)])
    assert add(f, "http://a/1").value == "new"
    record = f.get_record("a", key)
    assert record is not None and record.visits == 0 and record.history == []


def test_forgetting_a_never_url_keeps_the_schedulable_count(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    key = visit_once(f, "http://a/1", Visit(Outcome.FAILED, reason="gone"))
    add(f, "http://a/2")
    assert f.counts().never == 1
    f.forget([("a", key)])
    assert (f.counts().never, f.book.totals.schedulable, f.book.get("a").never) == (0, 1, 0)
    assert f.has_pending()


def test_forgetting_nothing_writes_nothing(tmp_path: Path) -> None:
    store = LevelDBStore(str(tmp_path / "db"))
    try:
        f = make(store, Clock())
        add(f, "http://a/1")
        writes = store.writes
        assert f.forget([("a", fp("http://a/unknown"))]) == []
        assert forget([], f.book, f._pending, f._leases, rest=1.0, now=0.0) == []
        assert store.writes == writes
    finally:
        store.close()


def test_forget_leaves_no_key_of_the_url_in_leveldb(tmp_path: Path) -> None:
    path = str(tmp_path / "db")
    store = LevelDBStore(path)
    clock = Clock()
    f = make(store, clock)
    key = out_again(f, clock)
    f.forget([("a", key)])
    store.close()
    db = plyvel.DB(path)
    try:
        # its undelivered change events excepted: they were promised (see the next test)
        left = [k for k, _ in db.iterator() if key in k and not k.startswith(EVENT_PREFIX)]
    finally:
        db.close()
    assert left == []


def test_forget_leaves_the_urls_undelivered_change_events(store: Store) -> None:
    """An event reports a verdict that was recorded and is promised at least once: forget keeps it for the drain."""
    clock = Clock()
    f = make(store, clock)
    key = visit_once(f, "http://a/1")
    add(f, "http://a/2")
    other = fp("http://a/2")
    # as a verdict writes them: with the URL's record, in its queue
    store.write(Batch(events={("a", event_key(1_000, key)): b"gone", ("a", event_key(2_000, other)): b"changed"}))
    f.forget([("a", key)])
    assert store.get_record("a", key) is None
    assert store.events() == [("a", event_key(1_000, key), b"gone"), ("a", event_key(2_000, other), b"changed")]


def test_quarantine_moves_the_bytes_aside_and_the_queue_goes_on(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    f = make(store, clock)
    add(f, "http://a/1")
    add(f, "http://a/2")
    q = f.book.get("a")
    entry = q.head
    assert entry is not None
    raw = store.get_record("a", entry[2])
    assert raw is not None
    before = kept(f)
    with caplog.at_level(logging.ERROR, logger="scrapy_adaptive.frontier.removal"):
        quarantine(f.book, q, entry, raw, RecordError("garbled"))
    assert dict(store.quarantined()) == {entry[2]: raw}
    assert store.get_record("a", entry[2]) is None
    assert entry[2] not in [e[2] for e in store.queue_entries("a", limit=10)]
    assert (f.counts().urls, f.counts().quarantined, kept(f)) == (1, 1, before)
    assert (q.urls, q.quarantined) == (1, 1)
    assert f.book.totals.schedulable == 1
    assert any(entry[2].hex() in r.getMessage() and "quarantined" in r.getMessage() for r in caplog.records)
    f.book.refresh_head(q)
    (other,) = {fp("http://a/1"), fp("http://a/2")} - {entry[2]}
    issued = f.next()
    assert issued is not None and issued.fp == other
