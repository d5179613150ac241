"""Versions captured but not yet delivered: each is confirmed exactly once, the
marks follow in the store, and a restart makes every unconfirmed one due again
judged against what was delivered."""

from __future__ import annotations

import json
import logging

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_adaptive.frontier import ChangeState, Frontier, MemoryStore, Outcome, Store, Visit
from scrapy_adaptive.frontier.pending import PendingVersions, delivered_versions, pending_mark
from scrapy_adaptive.frontier.sharing import Sharing
from scrapy_adaptive.model import Plan, UrlRecord
from scrapy_adaptive.store.base import Batch
from scrapy_adaptive.store.keys import NEVER_MS
from tests.hypo import examples
from tests.unit.frontier.test_frontier import Clock, add, fp, make

URL = "http://a/1"


def changed(digest: str, etag: str | None = None) -> Visit:
    return Visit(Outcome.VISITED, status=200, change=ChangeState.CHANGED, digest=digest, etag=etag)


def capture(f: Frontier, clock: Clock, digest: str, url: str = URL, etag: str | None = None) -> bytes:
    """Issue *url* (due at once) and commit a changed visit pending delivery."""
    add(f, url, force=True)
    clock.t += 10
    issued = f.next()
    assert issued is not None and issued.fp == fp(url)
    f.update(issued.fp, changed(digest, etag), Plan(10_000.0), deliver=True)
    return issued.fp


def out_again(f: Frontier, clock: Clock) -> bytes:
    """:data:`URL` with a version pending delivery, issued again (out)."""
    key = capture(f, clock, "sha1:v1")
    add(f, URL, force=True)
    clock.t += 200
    assert f.next() is not None
    return key


def marks(store: Store) -> dict[bytes, dict[str, object]]:
    return {key: json.loads(mark) for key, mark in store.pending()}


def test_a_mark_names_the_queue_what_was_delivered_and_the_versions_waiting() -> None:
    assert json.loads(pending_mark("a", "sha1:x", 2, 5)) == {"q": "a", "d": "sha1:x", "n": 2, "v": 5}
    sharing = Sharing(board=None, worker="w1", ttl=5.0)  # type: ignore[arg-type]
    assert json.loads(pending_mark("a", None, 1, 0, sharing)) == {"q": "a", "d": None, "n": 1, "v": 0, "w": "w1"}


def test_staged_counts_one_more_version_keeping_what_was_delivered(store: Store) -> None:
    f = make(store, Clock())
    pending = f._pending
    old = UrlRecord(url=URL, queue="a", request={}, next_ms=0, discovered=0.0, digest="sha1:old", versions=3)
    assert pending.staged(b"k", old) == ("a", "sha1:old", 1, 3)
    pending.written(b"k", ("a", "sha1:old", 1, 3))
    newer = UrlRecord(url=URL, queue="a", request={}, next_ms=0, discovered=0.0, digest="sha1:newer", versions=4)
    assert pending.staged(b"k", newer) == ("a", "sha1:old", 2, 3)
    assert pending.pending_count == 1
    pending.drop(b"k")
    assert pending.pending_count == 0


def test_a_version_is_confirmed_exactly_once(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    key = capture(f, clock, "sha1:v1")
    assert f.counts().versions == 0 and f._pending.pending_count == 1
    assert marks(store) == {key: {"q": "a", "d": None, "n": 1, "v": 0, "s": [0, 0, 0]}}
    assert f.outbox.confirm([(key, "sha1:v1")]) == 1
    assert f.outbox.confirm([(key, "sha1:v1")]) == 0  # already counted
    assert f.counts().versions == 1 and f._pending.pending_count == 0
    assert marks(store) == {}
    record = f.get_record("a", key)
    assert record is not None and record.versions == 1
    again = make(store, clock)
    again.load()
    assert again.counts().versions == 1 and again.redelivered == 0


def test_two_pending_versions_keep_the_last_confirmed_as_delivered(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    key = capture(f, clock, "sha1:v1")
    capture(f, clock, "sha1:v2")
    assert marks(store)[key]["n"] == 2
    assert f.outbox.confirm([(key, "sha1:v1")]) == 1
    assert marks(store)[key] == {"q": "a", "d": "sha1:v1", "n": 1, "v": 1}
    assert f.outbox.confirm([(key, "sha1:v2")]) == 1
    assert marks(store) == {} and f.counts().versions == 2


def test_a_pair_never_pending_counts_nothing(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    add(f, URL)
    assert f.outbox.confirm([(fp(URL), "sha1:x"), (b"unknown", None)]) == 0
    assert f.counts().versions == 0


def test_a_restart_makes_an_unconfirmed_version_due_again_against_the_delivered_one(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    key = capture(f, clock, "sha1:v1", etag='"1"')
    assert f.outbox.confirm([(key, "sha1:v1")]) == 1
    capture(f, clock, "sha1:v2", etag='"2"')
    clock.t += 5
    before = f.get_record("a", key)
    assert before is not None and before.next_ms > clock.t * 1000
    pending = PendingVersions(f.book, f._leases, clock)  # a restart's: nothing in memory
    assert pending.redeliver() == (1, set())
    record = f.get_record("a", key)
    assert record is not None
    assert record.digest == "sha1:v1"  # judged against what was delivered
    assert (record.etag, record.last_modified, record.payload_digest) == (None, None, None)
    assert record.next_ms <= clock.t * 1000  # due now
    assert (record.visits, record.versions) == (before.visits, 1)  # back to the versions delivered
    assert marks(store) == {}
    assert [e[2] for e in store.queue_entries("a", limit=5)] == [key]  # its entry moved, not doubled


def test_a_url_out_keeps_its_mark_for_a_later_look(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    key = out_again(f, clock)
    assert f._pending.redeliver() == (0, {"a"})
    assert key in marks(store)


def test_a_never_url_is_not_made_due_by_a_redelivery(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    key = out_again(f, clock)
    f.update(key, Visit(Outcome.DISREGARDED, reason="robots.txt"), None)
    assert f._pending.redeliver()[0] == 1
    record = f.get_record("a", key)
    assert record is not None and record.next_ms == NEVER_MS and record.digest is None


def test_a_garbled_mark_is_redelivered_said_once_and_removed(store: Store, caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    f = make(store, clock)
    add(f, URL)
    key = fp(URL)
    store.write(Batch(pending={("a", key): b"\x00garbled"}))
    with caplog.at_level(logging.ERROR, logger="scrapy_adaptive.frontier.pending"):
        assert f._pending.redeliver() == (1, set())
    assert [r.getMessage() for r in caplog.records if key.hex() in r.getMessage()]
    assert marks(store) == {}


@settings(max_examples=examples(60))
@given(
    visits=st.lists(st.integers(0, 2), min_size=1, max_size=12),
    chunk=st.integers(1, 5),
    data=st.data(),
)
def test_every_pending_version_is_counted_once_however_the_confirmations_are_grouped(
    visits: list[int], chunk: int, data: st.DataObject
) -> None:
    clock = Clock()
    store = MemoryStore()
    f = make(store, clock)
    delivered: list[tuple[bytes, str | None]] = []
    for i, n in enumerate(visits):
        digest = f"sha1:{i}"
        delivered.append((capture(f, clock, digest, url=f"http://a/{n}"), digest))
    # a URL's versions are delivered in order; URLs interleave freely
    order = data.draw(st.permutations(range(len(delivered))))
    by_url: dict[bytes, list[tuple[bytes, str | None]]] = {}
    for pair in delivered:
        by_url.setdefault(pair[0], []).append(pair)
    sequence = [by_url[delivered[i][0]].pop(0) for i in order]
    counted = sum(f.outbox.confirm(sequence[i : i + chunk]) for i in range(0, len(sequence), chunk))
    assert counted == len(visits) == f.counts().versions
    assert f.outbox.confirm(sequence) == 0
    assert f._pending.pending_count == 0 and marks(store) == {}
    assert f.book.get("a").versions == len(visits)
    stored = {key: f.get_record("a", key) for key in by_url}
    assert sum(r.versions for r in stored.values() if r is not None) == len(visits)


class Writes(MemoryStore):
    """A real memory store that keeps each batch it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[Batch] = []

    def write(self, batch: Batch) -> None:
        super().write(batch)
        self.batches.append(batch)


def test_a_confirmation_writes_marks_and_counters_but_no_record() -> None:
    """The version is counted in the record by the verdict's own write; the
    confirmation only moves the mark (a second record write per changed
    page was most of the delivery's cost)."""
    clock = Clock()
    store = Writes()
    f = make(store, clock)
    key = capture(f, clock, "sha1:v1")
    record = f.get_record("a", key)
    assert record is not None and record.versions == 1  # counted with the verdict...
    assert f.counts().versions == 0 and f.book.get("a").versions == 0  # ...delivered: not yet
    store.batches.clear()
    assert f.outbox.confirm([(key, "sha1:v1")]) == 1
    assert len(store.batches) == 1 and store.batches[0].records == {}
    assert f.counts().versions == f.book.get("a").versions == 1


def one_confirmed_then_pending(f: Frontier, clock: Clock, *digests: str) -> bytes:
    """:data:`URL` with version ``sha1:v1`` confirmed, then *digests* captured and waiting."""
    key = capture(f, clock, "sha1:v1")
    assert f.outbox.confirm([(key, "sha1:v1")]) == 1
    for digest in digests:
        capture(f, clock, digest)
    return key


def test_a_restart_takes_back_the_unconfirmed_versions_of_the_record() -> None:
    """Killed between the verdict and the confirmation: the record's count
    goes back to the versions delivered, so the version captured again is
    not counted twice; confirmed ones are never taken back."""
    clock = Clock()
    store = MemoryStore()
    f = make(store, clock)
    key = one_confirmed_then_pending(f, clock, "sha1:v2", "sha1:v3")
    record = f.get_record("a", key)
    assert (
        record is not None and record.versions == 3 and delivered_versions(record, dict(store.pending()).get(key)) == 1
    )
    again = make(store, clock)
    again.load()
    record = again.get_record("a", key)
    assert record is not None and record.versions == 1 and again.counts().versions == 1
    # captured again (changed against v1): one more version, counted once
    capture(again, clock, "sha1:v3")
    assert again.outbox.confirm([(key, "sha1:v3")]) == 1
    record = again.get_record("a", key)
    assert record is not None and record.versions == 2 == again.counts().versions


def test_a_mark_written_before_versions_were_counted_at_the_verdict_keeps_the_record_count() -> None:
    """A state from before: its record counts delivered versions only and
    its mark carries no count; a restart must not take any back."""
    clock = Clock()
    store = MemoryStore()
    f = make(store, clock)
    key = one_confirmed_then_pending(f, clock, "sha1:v2")
    record = f.get_record("a", key)
    assert record is not None
    record.versions = 1  # the old shape: the unconfirmed version not in the record
    store.write(Batch(records={("a", key): record.to_bytes()}, pending={("a", key): b'{"q":"a","d":"sha1:v1","n":1}'}))
    assert delivered_versions(record, dict(store.pending()).get(key)) == 1
    again = make(store, clock)
    again.load()
    record = again.get_record("a", key)
    assert record is not None and record.versions == 1 and record.digest == "sha1:v1"


def published(store: Store) -> list[dict[str, object]]:
    """The change events the outbox holds now, oldest first, taken out as a drain does."""
    rows = store.events(None, 100)
    if rows:
        store.write(Batch(events=dict.fromkeys((queue, key) for queue, key, _ in rows)))
    return [json.loads(raw) for _, _, raw in rows]


def capture_with_event(f: Frontier, clock: Clock, digest: str, kind: str) -> bytes:
    add(f, URL, force=True)
    clock.t += 10
    issued = f.next()
    assert issued is not None
    f.update(issued.fp, changed(digest), Plan(10_000.0), deliver=True, presence=[1, 0, 0], event=kind)
    return issued.fp


def test_a_version_number_is_published_only_once_confirmed_and_names_one_digest_for_ever(store: Store) -> None:
    """``kill -9`` between the event's delivery and the version's
    confirmation: the restart took the version back and the page, captured
    again with another digest, was said under the same version number (13
    cases in 34 kills), and the first event had no item.  An event of a
    version pending delivery waits for its confirmation, and goes to the
    outbox in the confirmation's write."""
    clock = Clock()
    f = make(store, clock)
    said = []
    key = capture_with_event(f, clock, "sha1:v1", "new")
    said += published(store)
    assert said == []  # not confirmed: not said
    again = make(store, clock)  # killed: v1 was never confirmed
    again.load()
    record = again.get_record("a", key)
    assert record is not None and record.presence == [0, 0, 0]  # no content delivered: its next capture is new
    capture_with_event(again, clock, "sha1:v2", "new")
    said += published(store)
    assert again.outbox.confirm([(key, "sha1:v2")]) == 1
    said += published(store)
    capture_with_event(again, clock, "sha1:v3", "changed")
    capture_with_event(again, clock, "sha1:v4", "changed")
    assert again.outbox.confirm([(key, "sha1:v3")]) == 1
    said += published(store)  # v3 only: v4 waits for its own confirmation
    assert [(e["version"], e["digest"]) for e in said] == [(1, "sha1:v2"), (2, "sha1:v3")]
    third = make(store, clock)  # killed: v4 never confirmed, captured again as v5
    third.load()
    capture_with_event(third, clock, "sha1:v5", "changed")
    assert third.outbox.confirm([(key, "sha1:v5")]) == 1
    said += published(store)
    assert [(e["kind"], e["version"], e["digest"], e["previous_digest"]) for e in said] == [
        ("new", 1, "sha1:v2", None),
        ("changed", 2, "sha1:v3", "sha1:v2"),
        ("changed", 3, "sha1:v5", "sha1:v3"),
    ]


def test_a_forgotten_url_drops_the_events_of_its_unconfirmed_versions(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    key = capture_with_event(f, clock, "sha1:v1", "new")
    f.forget([("a", key)])
    assert f.outbox.confirm([(key, "sha1:v1")]) == 0 and published(store) == []
