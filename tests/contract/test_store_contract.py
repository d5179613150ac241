"""The :class:`Store` contract, run against every store (memory, LevelDB, Redis).

The frontier tests (tests/unit/frontier/test_frontier.py, tests/unit/integration/test_delivery.py) run on
the same three stores through the ``store`` fixture; these pin the contract's
own promises, method by method: bytes in, bytes out, queue order, due counts
across directive levels, deletes before puts, atomic batches.
"""

from __future__ import annotations

import json
import logging
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from redis.crc import key_slot

from scrapy_adaptive.frontier import AddResult, Frontier
from scrapy_adaptive.store.base import Batch, Conflict, MemoryStore, Store, StoreError, split_by_queue
from scrapy_adaptive.store.keys import EVENT_PREFIX, NEVER_MS, event_key
from scrapy_adaptive.store.leveldb import LevelDBStore
from scrapy_adaptive.store.redis import RedisStore
from tests.hypo import examples
from testsite.redisserver import RedisClusterServers, RedisServer


def fp(n: int) -> bytes:
    return n.to_bytes(20, "big")


def test_records_meta_pending_are_bytes_in_bytes_out(store: Store) -> None:
    raw = bytes(range(256))  # every byte value, NUL and invalid UTF-8 included
    # a mark's queue is a known one (the frontier writes a queue's counters with its first URL)
    store.write(
        Batch(
            records={("h", fp(1)): raw},
            meta={"format": b"\x00\x01"},
            pending={("h", fp(1)): b"mark"},
            hosts={"h": b"{}"},
        )
    )
    assert store.get_record("h", fp(1)) == raw
    assert store.get_record("h", fp(2)) is None
    assert store.get_meta("format") == b"\x00\x01"
    assert store.get_meta("nothing") is None
    assert dict(store.pending()) == {fp(1): b"mark"}
    store.write(Batch(pending={("h", fp(1)): None}))
    assert dict(store.pending()) == {}
    assert dict(store.records()) == {fp(1): raw}


def test_queue_entries_come_in_directive_then_time_then_fp_order(store: Store) -> None:
    entries = [(0, 2_000, fp(1)), (0, 1_000, fp(2)), (1, 9_000, fp(3)), (0, NEVER_MS, fp(4)), (0, 1_000, fp(0))]
    store.write(Batch(entries_put=[("h", *e) for e in entries] + [("h2", 0, 0, fp(9))]))
    expected = [(1, 9_000, fp(3)), (0, 1_000, fp(0)), (0, 1_000, fp(2)), (0, 2_000, fp(1)), (0, NEVER_MS, fp(4))]
    assert list(store.queue_entries("h", limit=10)) == expected
    assert list(store.queue_entries("h", limit=2)) == expected[:2]
    assert list(store.queue_entries("h", limit=10, start=expected[2])) == expected[2:]
    assert list(store.queue_entries("h2", limit=10)) == [(0, 0, fp(9))]
    assert list(store.queue_entries("nothing", limit=10)) == []


def test_count_due_counts_every_directive_level(store: Store) -> None:
    entries = [
        (2, 500, fp(1)),
        (2, 5_000, fp(2)),
        (1, 900, fp(3)),
        (0, 100, fp(4)),
        (0, 1_000, fp(5)),
        (0, 1_001, fp(6)),
    ]
    store.write(Batch(entries_put=[("h", *e) for e in entries]))
    assert store.count_due("h", 1_000, limit=100) == 4
    assert store.count_due("h", 1_000, limit=2) == 2
    assert store.count_due("h", 99, limit=100) == 0
    assert store.count_due("h", NEVER_MS, limit=100) == 6
    # how late they are: each level's most overdue first
    assert store.due_times("h", 1_000, limit=100) == [500, 900, 100, 1_000]
    assert store.due_times("h", 1_000, limit=3) == [500, 900, 100]
    assert store.due_times("h", 99, limit=100) == []


def test_deletes_apply_before_puts_and_quarantine_moves_bytes(store: Store) -> None:
    e = ("h", 0, 1_000, fp(1))
    store.write(Batch(entries_put=[e], records={("h", fp(1)): b"bad"}, hosts={"h": b"{}"}))
    store.write(Batch(entries_deleted=[e], entries_put=[e]))  # a move onto itself keeps the entry
    assert list(store.queue_entries("h", limit=5)) == [e[1:]]
    store.write(Batch(entries_deleted=[e], quarantined={("h", fp(1)): b"bad"}))
    assert store.get_record("h", fp(1)) is None
    assert dict(store.quarantined()) == {fp(1): b"bad"}
    assert list(store.queue_entries("h", limit=5)) == []
    assert dict(store.hosts()) == {"h": b"{}"}


queues = st.sampled_from(["a.example", "b.example", "x{y}:z"])
entry = st.tuples(queues, st.integers(0, 3), st.integers(0, 10_000), st.binary(min_size=20, max_size=20))


@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.tuples(st.lists(entry, max_size=6), st.lists(entry, max_size=3)), max_size=6))
def test_every_store_answers_like_the_reference(store: Store, batches: list) -> None:
    """Random batches of puts and deletes: every store reads back what MemoryStore does."""
    reference = MemoryStore()
    for n, (puts, deletes) in enumerate(batches):
        batch = Batch(entries_put=puts, entries_deleted=deletes, hosts={f"n{n}": b'{"u":%d}' % n})
        reference.write(batch)
        store.write(batch)
    for queue in ("a.example", "b.example", "x{y}:z"):
        assert list(store.queue_entries(queue, limit=100)) == list(reference.queue_entries(queue, limit=100))
        for now in (0, 5_000, 10_000):
            assert store.count_due(queue, now, limit=100) == reference.count_due(queue, now, limit=100)
            assert store.due_times(queue, now, limit=7) == reference.due_times(queue, now, limit=7)
    # the store is shared across examples: clean it for the next one
    store.write(
        Batch(
            entries_deleted=[
                (q, *e) for q in ("a.example", "b.example", "x{y}:z") for e in store.queue_entries(q, limit=1000)
            ]
        )
    )


def test_redis_batch_is_atomic_when_redis_dies_mid_crawl(redis_server: RedisServer, redis_url: str) -> None:
    """Redis killed (SIGKILL) and restarted: every acknowledged batch is back
    (AOF), and a write while it is down fails with one message and leaves nothing."""
    store = RedisStore(redis_url, namespace="t")
    for n in range(50):
        row = b'{"u":%d,"cd":%d}' % (n, n)
        store.write(Batch(records={("h", fp(n)): b"r%d" % n}, entries_put=[("h", 0, n, fp(n))], hosts={"h": row}))
    redis_server.kill()
    with pytest.raises(StoreError, match=r"Writing to the Redis store at redis://127\.0\.0\.1:\d+/0 failed"):
        store.write(Batch(records={("h", fp(99)): b"lost"}, entries_put=[("h", 0, 99, fp(99))]))
    redis_server.start()
    again = RedisStore(redis_url, namespace="t")
    assert len(list(again.queue_entries("h", limit=100))) == 50
    assert again.get_record("h", fp(49)) == b"r49"
    assert again.get_record("h", fp(99)) is None
    assert {q: json.loads(raw) for q, raw in again.hosts()} == {"h": {"u": 49, "cd": 49}}
    again.close()
    store.close()


def test_redis_unreachable_or_wrong_password_is_one_message(redis_server: RedisServer, tmp_path) -> None:
    with pytest.raises(StoreError, match=r"Connecting to the Redis store at redis://127\.0\.0\.1:1/0 failed"):
        RedisStore("redis://127.0.0.1:1/0", timeout=1.0)
    with pytest.raises(StoreError, match="must start with redis:// or rediss://"):
        RedisStore("http://127.0.0.1/0")
    with RedisServer(tmp_path, password="s3cret") as guarded:
        with pytest.raises(StoreError, match=r"refused the password") as info:
            RedisStore(guarded.url.replace("s3cret", "wrong"))
        assert "wrong" not in str(info.value)  # never print a password
        RedisStore(guarded.url.replace(":s3cret@", "@"), password="s3cret").close()


def test_redis_keys_of_one_queue_share_a_cluster_hash_slot(redis_url: str) -> None:
    store = RedisStore(redis_url, namespace="ns")
    store.write(Batch(entries_put=[("www.example.org", 0, 1, fp(1))]))
    client = store._redis
    assert client.keys(b"*{www.example.org}*") == [b"ns:{www.example.org}:q"]
    store.close()


def test_a_batch_creating_an_existing_record_writes_nothing(store: Store) -> None:
    store.write(Batch(records={("h", fp(1)): b"first"}, absent=[("h", fp(1))], entries_put=[("h", 0, 1, fp(1))]))
    with pytest.raises(Conflict):
        store.write(Batch(records={("h", fp(1)): b"second"}, absent=[("h", fp(1))], entries_put=[("h", 0, 2, fp(1))]))
    assert store.get_record("h", fp(1)) == b"first"
    assert list(store.queue_entries("h", limit=5)) == [(0, 1, fp(1))]


def test_two_workers_adding_one_new_url_at_once_make_one_record_and_one_entry(redis_url: str) -> None:
    """Both looked up the URL before either wrote it: the second write conflicts, the add is a duplicate."""

    class LookedTooEarly(RedisStore):
        def get_record(self, queue: str, fp: bytes) -> bytes | None:
            return None  # what this worker saw just before the other worker's write

    first = Frontier(RedisStore(redis_url, namespace="race"))
    second = Frontier(LookedTooEarly(redis_url, namespace="race"))
    url = "http://race.example/page"
    assert first.add(fp(7), url, "race.example", {"url": url}) is AddResult.NEW
    assert second.add(fp(7), url, "race.example", {"url": url}) is AddResult.DUPLICATE
    assert second.counts().urls == 0
    assert len(list(first.store.queue_entries("race.example", limit=5))) == 1
    assert dict(first.store.counter_rows())["race.example"]["u"] == 1  # type: ignore[attr-defined]


def test_redis_over_tls_with_a_client_certificate(tmp_path: Path) -> None:
    """``rediss://`` with the CA, client certificate and key settings; without the certificate, one message."""
    with RedisServer(tmp_path, tls=True) as server:
        tls = server.tls_client_options()
        store = RedisStore(
            server.url, tls_ca=tls["ssl_ca_certs"], tls_cert=tls["ssl_certfile"], tls_key=tls["ssl_keyfile"]
        )
        store.write(Batch(records={("h", fp(1)): b"over tls"}))
        assert store.get_record("h", fp(1)) == b"over tls"
        store.close()
        with pytest.raises(StoreError, match=r"Connecting to the Redis store at rediss://127\.0\.0\.1:\d+/0 failed"):
            RedisStore(server.url, tls_ca=tls["ssl_ca_certs"], timeout=2.0)  # the server asks for a certificate


def test_a_forgotten_record_is_deleted_with_its_entry(store: Store) -> None:
    e = ("h", 0, 5, fp(3))
    store.write(Batch(records={("h", fp(3)): b"r"}, entries_put=[e], hosts={"h": b'{"u":1}'}))
    store.write(Batch(records_deleted=[("h", fp(3))], entries_deleted=[e], hosts={"h": b'{"u":0,"fg":1}'}))
    assert store.get_record("h", fp(3)) is None and list(store.queue_entries("h", limit=5)) == []
    assert json.loads(store.get_host("h") or b"{}") == {"u": 0, "fg": 1}


def test_a_urls_text_is_written_with_its_record_and_goes_with_it(store: Store) -> None:
    """``ADAPTIVE_TEXT_DIFF``: a URL's captured text is bytes in, bytes out,
    replaced and deleted by key, and deleted with its record when the record
    is forgotten or quarantined, without being named."""
    hosts = {"h": b'{"u":2}'}
    texts = {("h", fp(1)): b"\x00t1", ("h", fp(2)): b"t2"}
    store.write(Batch(records={("h", fp(1)): b"r1", ("h", fp(2)): b"r2"}, texts=texts, hosts=hosts))
    assert [store.get_text("h", fp(n)) for n in (1, 2, 3)] == [b"\x00t1", b"t2", None]
    store.write(Batch(texts={("h", fp(1)): b"t1 again"}))
    assert store.get_text("h", fp(1)) == b"t1 again"
    store.write(Batch(records_deleted=[("h", fp(1))], quarantined={("h", fp(2)): b"r2"}, hosts={"h": b'{"u":0}'}))
    assert store.get_text("h", fp(1)) is None and store.get_text("h", fp(2)) is None
    store.write(Batch(records={("h", fp(3)): b"r3"}, texts={("h", fp(3)): b"t3"}))
    store.write(Batch(texts={("h", fp(3)): None}))
    assert store.get_text("h", fp(3)) is None and store.get_record("h", fp(3)) == b"r3"


def test_a_batch_about_several_queues_and_facts_is_applied(store: Store) -> None:
    """What ``forget`` and a delivery confirmation write: URLs of two queues and a fact in one batch
    (on a Cluster, one transaction per queue's slot and one for the facts)."""
    a, b = ("a.example", 0, 1, fp(1)), ("b.example", 0, 2, fp(2))
    store.write(
        Batch(
            records={("a.example", fp(1)): b"ra", ("b.example", fp(2)): b"rb"},
            entries_put=[a, b],
            hosts={"a.example": b'{"u":1}', "b.example": b'{"u":1}'},
            pending={("a.example", fp(1)): b"ma", ("b.example", fp(2)): b"mb"},
            meta={"fact": b"1"},
            absent=[("a.example", fp(1)), ("b.example", fp(2))],
        )
    )
    assert (store.get_record("a.example", fp(1)), store.get_record("b.example", fp(2))) == (b"ra", b"rb")
    assert dict(store.pending()) == {fp(1): b"ma", fp(2): b"mb"} and store.get_meta("fact") == b"1"
    assert dict(store.records()) == {fp(1): b"ra", fp(2): b"rb"}
    store.write(
        Batch(
            records_deleted=[("a.example", fp(1)), ("b.example", fp(2))],
            entries_deleted=[a, b],
            pending={("a.example", fp(1)): None, ("b.example", fp(2)): None},
            hosts={"a.example": b'{"u":0,"fg":1}', "b.example": b'{"u":0,"fg":1}'},
        )
    )
    assert dict(store.records()) == {} and dict(store.pending()) == {}
    assert [list(store.queue_entries(q, limit=5)) for q in ("a.example", "b.example")] == [[], []]
    assert {name for name, _ in store.hosts()} == {"a.example", "b.example"}


def test_every_key_of_a_queue_is_in_its_hash_slot(redis_cluster_url: str, redis_cluster: RedisClusterServers) -> None:
    """On a Cluster a URL's record, mark, entry and events share its queue's slot: the reason a batch is one
    transaction."""
    store = RedisStore(redis_cluster_url, namespace="slots")
    store.write(
        Batch(
            records={("h.example", fp(5)): b"r"},
            entries_put=[("h.example", 0, 1, fp(5))],
            hosts={"h.example": b'{"u":1}'},
            pending={("h.example", fp(5)): b"m"},
            events={("h.example", event_key(1, fp(5))): b"e"},
        )
    )
    store.close()
    found: dict[bytes, int] = {}  # key -> the node holding it
    for n, server in enumerate(redis_cluster.servers):
        client = server.client()
        found.update(dict.fromkeys(client.keys(b"slots:{h.example}*"), n))
        client.close()
    assert len(found) == 6  # record, entries, counters, marks, events (order and bytes)
    assert len({key_slot(k) for k in found}) == 1 and len(set(found.values())) == 1


def test_pending_marks_of_some_queues_only(store: Store) -> None:
    """``pending(queues)``: the marks of those queues (a shared frontier's
    holder reads only the queues it holds); the mark names its queue."""
    marks = {q: json.dumps({"q": q, "d": None, "n": 1}).encode() for q in ("a.example", "b.example")}
    store.write(
        Batch(
            hosts={q: b'{"u":1}' for q in marks},
            pending={("a.example", fp(1)): marks["a.example"], ("b.example", fp(2)): marks["b.example"]},
        )
    )
    assert dict(store.pending(["b.example"])) == {fp(2): marks["b.example"]}
    assert dict(store.pending([])) == {}
    assert dict(store.pending()) == {fp(1): marks["a.example"], fp(2): marks["b.example"]}


def event(n: int, at: int, seq: int = 0) -> bytes:
    return event_key(at, fp(n), seq)


def test_events_are_written_with_their_record_and_read_oldest_first(store: Store) -> None:
    """The outbox: events in the record's batch, read back oldest key first over
    every queue (by time, whatever the queue), a limit, a queues filter, deletes."""
    hosts = {q: b'{"u":1}' for q in ("a.example", "b.example", "x{y}:z")}
    store.write(
        Batch(
            records={("a.example", fp(1)): b"r1", ("b.example", fp(2)): b"r2", ("x{y}:z", fp(3)): b"r3"},
            hosts=hosts,
            events={
                ("a.example", event(1, 3_000)): b"a-late",
                ("a.example", event(1, 1_000)): b"a-early",
                ("a.example", event(1, 1_000, 1)): b"a-early-second",  # two of one URL in one ms
                ("b.example", event(2, 2_000)): b"b",
                ("x{y}:z", event(3, 500)): bytes(range(256)),  # bytes in, bytes out
            },
        )
    )
    oldest = [
        ("x{y}:z", event(3, 500), bytes(range(256))),
        ("a.example", event(1, 1_000), b"a-early"),
        ("a.example", event(1, 1_000, 1), b"a-early-second"),
        ("b.example", event(2, 2_000), b"b"),
        ("a.example", event(1, 3_000), b"a-late"),
    ]
    assert store.events() == oldest
    assert store.events(limit=2) == oldest[:2]
    assert store.events(limit=0) == []
    assert store.events(["a.example", "b.example"], limit=3) == oldest[1:4]
    assert store.events(["b.example", "nothing.example"]) == [oldest[3]]
    assert store.events([]) == []
    assert (store.event_count(), store.event_count(["a.example"]), store.event_count([])) == (5, 3, 0)
    # delivered: deleted (a delete of one already gone, a repeat after a crash, is harmless)
    store.write(Batch(events={("a.example", event(1, 1_000)): None, ("x{y}:z", event(3, 500)): None}))
    store.write(Batch(events={("a.example", event(1, 1_000)): None}))
    assert store.events() == [oldest[2], oldest[3], oldest[4]]
    assert store.event_count() == 3
    assert store.get_record("a.example", fp(1)) == b"r1"  # the records are untouched


def test_a_batch_that_conflicts_writes_no_event(store: Store) -> None:
    """An event is atomic with its record: a new URL's batch refused (its record exists) leaves no event."""
    store.write(Batch(records={("h", fp(1)): b"first"}, absent=[("h", fp(1))], hosts={"h": b'{"u":1}'}))
    with pytest.raises(Conflict):
        store.write(
            Batch(
                records={("h", fp(1)): b"second"},
                absent=[("h", fp(1))],
                events={("h", event(1, 1_000)): b"new"},
            )
        )
    assert store.events() == [] and store.event_count() == 0


def test_a_batch_about_several_queues_writes_each_event_in_its_queues_part() -> None:
    """On a Cluster each queue's part is one transaction in its slot: an event travels with its record."""
    batch = Batch(
        records={("a", fp(1)): b"ra", ("b", fp(2)): b"rb"},
        events={("a", event(1, 1)): b"ea", ("b", event(2, 1)): None},
        meta={"fact": b"1"},
    )
    parts = {frozenset(q for q, _ in [*part.records, *part.events]): part for part in split_by_queue(batch)}
    assert set(parts) == {frozenset("a"), frozenset("b"), frozenset()}
    assert parts[frozenset("a")].events == {("a", event(1, 1)): b"ea"}
    assert parts[frozenset("a")].records == {("a", fp(1)): b"ra"}
    assert parts[frozenset("b")].events == {("b", event(2, 1)): None}
    assert parts[frozenset()].meta == {"fact": b"1"} and not parts[frozenset()].events


def test_events_survive_a_kill_and_a_reopen_of_leveldb(tmp_path: Path) -> None:
    """A process killed (SIGKILL) right after its write: the events are there
    when the database is opened again; so are they after a clean close."""
    path = str(tmp_path / "db")
    child = (
        "import os, signal\n"
        "from scrapy_adaptive.store.base import Batch\n"
        "from scrapy_adaptive.store.keys import event_key\n"
        "from scrapy_adaptive.store.leveldb import LevelDBStore\n"
        f"store = LevelDBStore({path!r})\n"
        "fp = (1).to_bytes(20, 'big')\n"
        "store.write(Batch(records={('h', fp): b'r'}, hosts={'h': b'{}'}, events={('h', event_key(7, fp)): b'e'}))\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, timeout=60)
    assert done.returncode == -signal.SIGKILL, done.stderr
    store = LevelDBStore(path)
    assert store.events() == [("h", event(1, 7), b"e")]
    store.write(Batch(events={("h", event(1, 9)): b"f"}))
    store.close()
    again = LevelDBStore(path)
    try:
        assert again.events() == [("h", event(1, 7), b"e"), ("h", event(1, 9), b"f")]
    finally:
        again.close()


def test_an_outbox_row_naming_no_queue_is_moved_aside_with_its_bytes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A row another program wrote under ``e/`` (no queue before its NUL) is kept
    under ``x/`` with one error line; the outbox goes on."""
    store = LevelDBStore(str(tmp_path / "db"))
    try:
        store.write(Batch(events={("h", event(1, 5)): b"good"}))
        store._db.put(EVENT_PREFIX + event(2, 1), b"no queue here")
        with caplog.at_level(logging.ERROR, logger="scrapy_adaptive.store.leveldb"):
            assert store.events() == [("h", event(1, 5), b"good")]
        assert "malformed key" in caplog.text and "names no queue" in caplog.text
        assert dict(store.quarantined()) == {EVENT_PREFIX + event(2, 1): b"no queue here"}
        assert store.event_count() == 1
    finally:
        store.close()
