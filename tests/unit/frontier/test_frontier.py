"""Unit tests of the frontier logic, run against both stores."""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from scrapy_adaptive.frontier import (
    AddResult,
    ChangeState,
    Frontier,
    MemoryStore,
    Outcome,
    Politeness,
    QueueState,
    Store,
    Visit,
)
from scrapy_adaptive.frontier.adding import COMPOSITE_WINDOW_S
from scrapy_adaptive.frontier.hostqueue import ARRIVAL_LEAD_MS
from scrapy_adaptive.model import Plan
from scrapy_adaptive.store.base import Batch, StoreError
from scrapy_adaptive.store.keys import NEVER_MS, time_to_ms
from scrapy_adaptive.store.leveldb import LevelDBStore


class Clock:
    def __init__(self, t: float = 1_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def fp(url: str) -> bytes:
    return hashlib.sha1(url.encode()).digest()


def make(store: Store, clock: Clock, **politeness: float) -> Frontier:
    defaults = dict(
        delay_factor=5.0,
        min_delay=2.0,
        max_delay=5.0,
        valence=1,
        retry_delay=900.0,
        max_retries=3,
        lease=60.0,
    )
    defaults.update(politeness)
    return Frontier(store, Politeness(**defaults), clock=clock)  # type: ignore[arg-type]


def add(f: Frontier, url: str, queue: str | None = None, **kw: object) -> AddResult:
    queue = queue or url.split("/")[2]
    return f.add(fp(url), url, queue, {"url": url}, **kw)  # type: ignore[arg-type]


def visited(change: ChangeState = ChangeState.CHANGED, duration: float = 0.0) -> Visit:
    """A visit's verdict (its wait is the plan's: ``Plan(100.0)`` by default here)."""
    return Visit(
        Outcome.VISITED,
        status=200,
        change=change,
        duration=duration,
        digest="sha1:x",
    )


def visit_once(f: Frontier, url: str, visit: Visit | None = None, wait: float = 100.0) -> bytes:
    """Add *url*, issue it (it must be the one due) and commit *visit*
    (:func:`visited` by default; a visit is planned *wait* seconds later);
    its fingerprint."""
    add(f, url)
    issued = f.next()
    assert issued is not None and issued.fp == fp(url)
    visit = visit or visited()
    f.update(issued.fp, visit, Plan(wait) if visit.outcome is Outcome.VISITED else None)
    return issued.fp


def test_add_is_the_duplicate_filter(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    assert add(f, "http://a/1") is AddResult.NEW
    assert add(f, "http://a/1") is AddResult.DUPLICATE
    assert f.counts().urls == 1


def test_next_issues_due_urls_in_time_order_and_holds_them_out(store: Store) -> None:
    clock = Clock()
    f = make(store, clock, min_delay=0, max_delay=0, delay_factor=0)
    add(f, "http://a/1")
    clock.t += 1
    add(f, "http://a/2")
    first = f.next()
    assert first is not None and first.record.url == "http://a/1"
    assert f._leases.is_out(first.fp)
    assert f.next() is None  # valence 1: the queue is busy
    f.downloads.fetch_ended(first.fp, 0.0)
    f.update(first.fp, visited(), Plan(50))
    second = f.next()
    assert second is not None and second.record.url == "http://a/2"
    assert second.overdue == pytest.approx(0.0, abs=(ARRIVAL_LEAD_MS + 1) / 1000)


def test_politeness_wait_is_factor_times_duration_clamped(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)  # factor 5, min 2, max 5
    for i in range(4):
        add(f, f"http://a/{i}")
    for duration, expected in ((0.1, 2.0), (0.6, 3.0), (3.0, 5.0)):
        issued = f.next()
        assert issued is not None
        f.downloads.fetch_ended(issued.fp, duration)
        f.update(issued.fp, visited(), Plan(100.0))
        assert f.next() is None
        assert f.next_ready_time() == pytest.approx(clock.t + expected)
        clock.t += expected
    assert f.next() is not None


def untimed() -> Visit:
    """A verdict that leaves the fetch's timing to the downloader's signals."""
    return replace(visited(), duration=None)


def test_a_fetch_is_timed_from_when_its_request_went_out(store: Store) -> None:
    """Time a request waits in the downloader's slot (Scrapy's own delay and its
    jitter, a robots.txt fetch ahead of it) is not the host's fetch time."""
    clock = Clock()
    f = make(store, clock)  # factor 5, min 2, max 5
    for i in range(3):
        add(f, f"http://a/{i}")
    issued = f.next()
    assert issued is not None
    f.downloads.fetch_started(issued.fp)
    clock.t += 1.2  # held in the downloader's slot for 1.2 s, then sent
    clock.t += 0.2
    f.downloads.request_sent(issued.fp, 0.2)  # headers 0.2 s after it went out
    clock.t += 0.2  # the body
    f.downloads.fetch_ended(issued.fp)
    record = f.update(issued.fp, untimed(), Plan(100.0))
    assert record is not None and record.duration == pytest.approx(0.4)
    assert f.next_ready_time() == pytest.approx(clock.t + 2.0)  # 5 × 0.4 s, not 5 × 1.6 s
    clock.t += 2.0
    second = f.next()
    assert second is not None
    f.downloads.fetch_started(second.fp)
    clock.t += 0.5  # no handler said when it went out (an error, another handler)
    f.downloads.fetch_ended(second.fp)
    record = f.update(second.fp, untimed(), Plan(100.0))
    assert record is not None and record.duration == pytest.approx(0.5)


def test_crawl_delay_from_robots_wins_over_a_shorter_politeness_wait(
    store: Store,
) -> None:
    clock = Clock()
    f = make(store, clock)
    add(f, "http://a/1")
    add(f, "http://a/2")
    f.hosts.set_crawl_delay("a", 10.0)
    issued = f.next()
    assert issued is not None
    f.downloads.fetch_ended(issued.fp, 0.1)
    assert f.next_ready_time() == pytest.approx(clock.t + 10.0)


def test_valence_allows_that_many_urls_out_per_queue(store: Store) -> None:
    clock = Clock()
    f = make(store, clock, valence=2)
    for i in range(5):
        add(f, f"http://a/{i}")
    add(f, "http://b/1")
    out = [f.next(), f.next(), f.next()]
    assert all(o is not None for o in out)
    hosts = sorted(o.record.queue for o in out if o)
    assert hosts == ["a", "a", "b"]
    assert f.next() is None
    states = {q.name: q.state(clock.t) for q in f.queues()}
    assert states["a"] is QueueState.BUSY


def test_each_slot_rests_its_own_politeness_wait(store: Store) -> None:
    """Thesis 6.2.1: with valence 2, each returned URL starts its own wait."""
    clock = Clock()
    f = make(store, clock, valence=2, delay_factor=0, min_delay=1.0, max_delay=1.0)
    for i in range(4):
        add(f, f"http://a/{i}")
    a, b = f.next(), f.next()
    assert a and b
    f.downloads.fetch_ended(a.fp, 0)
    clock.t += 0.5
    f.downloads.fetch_ended(b.fp, 0)
    assert f.next() is None
    clock.t += 0.5  # a's slot is free again, b's is not
    assert f.next() is not None
    assert f.next() is None
    clock.t += 0.5
    assert f.next() is not None


def test_the_queue_ready_longest_goes_first(store: Store) -> None:
    clock = Clock()
    f = make(store, clock, min_delay=0, max_delay=0, delay_factor=0)
    add(f, "http://late/1")
    clock.t -= 100  # an earlier-due URL on another host
    add(f, "http://early/1")
    clock.t += 100
    first = f.next()
    assert first is not None and first.record.queue == "early"


def test_update_reschedules_after_the_wait_and_counts(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    add(f, "http://a/1")
    issued = f.next()
    assert issued
    record = f.update(issued.fp, visited(), Plan(3600))
    assert record is not None
    assert record.next_time == pytest.approx(clock.t + 3600)
    assert (record.visits, record.versions, record.status) == (1, 1, 200)
    clock.t += 3600
    again = f.next()
    assert again is not None and again.fp == issued.fp
    record = f.update(again.fp, visited(change=ChangeState.UNCHANGED), Plan(7200))
    assert record is not None
    assert (record.visits, record.versions) == (2, 1)
    assert [h[1] for h in record.history] == ["changed", "unchanged"]


def test_history_is_bounded(store: Store) -> None:
    clock = Clock()
    f = Frontier(store, Politeness(min_delay=0, max_delay=0), history_size=3, clock=clock)
    add(f, "http://a/1")
    for _ in range(5):
        issued = f.next()
        assert issued
        record = f.update(issued.fp, visited(), Plan(1))
        clock.t += 1
    assert record is not None and len(record.history) == 3 and record.visits == 5


def test_retry_then_fail_after_max_retries_but_stay_known(store: Store) -> None:
    clock = Clock()
    f = make(store, clock, max_retries=2, retry_delay=900)
    add(f, "http://a/1")
    for attempt in range(3):
        issued = f.next()
        assert issued is not None, attempt
        record = f.update(issued.fp, Visit(Outcome.RETRY, reason="timeout"), None)
        assert record is not None
        clock.t += 900
    assert record.outcome == "failed" and record.next_ms == NEVER_MS
    assert "gave up after 2 retries" in (record.reason or "")
    assert not f.has_pending()
    assert add(f, "http://a/1") is AddResult.DUPLICATE  # not rediscovered
    assert add(f, "http://a/1", force=True) is AddResult.RESCHEDULED  # dont_filter revives it
    assert f.has_pending()


def test_retry_waits_the_retry_delay_for_the_url_only(store: Store) -> None:
    clock = Clock()
    f = make(store, clock, min_delay=0, max_delay=0, delay_factor=0, retry_delay=900)
    add(f, "http://a/1")
    add(f, "http://a/2")
    issued = f.next()
    assert issued
    f.update(issued.fp, Visit(Outcome.RETRY, reason="timeout"), None)
    other = f.next()
    assert other is not None and other.record.url == "http://a/2"


def test_host_level_errors_snooze_the_whole_queue(store: Store) -> None:
    clock = Clock()
    f = make(store, clock, min_delay=0, max_delay=0, delay_factor=0, retry_delay=900)
    add(f, "http://a/1")
    add(f, "http://a/2")
    issued = f.next()
    assert issued
    f.update(issued.fp, Visit(Outcome.RETRY, reason="refused", host_level=True), None)
    assert f.next() is None
    assert f.next_ready_time() == pytest.approx(clock.t + 900)


def test_disregarded_urls_get_never(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    add(f, "http://a/private")
    issued = f.next()
    assert issued
    record = f.update(issued.fp, Visit(Outcome.DISREGARDED, reason="robots.txt"), None)
    assert record is not None and record.never
    assert f.shape()["never"] == 1


def test_requeue_returns_an_out_url_to_its_queue(store: Store) -> None:
    clock = Clock()
    f = make(store, clock, lease=30.0)
    add(f, "http://a/1")
    issued = f.next()
    assert issued
    assert f._leases.expire_leases() == []
    clock.t += 31
    assert f._leases.expire_leases() == [issued.fp]
    assert not f._leases.is_out(issued.fp)
    clock.t += 2  # the slot rests min_delay
    again = f.next()
    assert again is not None and again.fp == issued.fp


def test_raised_directive_goes_first_and_is_reset_after_the_visit(store: Store) -> None:
    clock = Clock()
    f = make(store, clock, min_delay=0, max_delay=0, delay_factor=0)
    add(f, "http://a/page")
    add(f, "http://a/img.png", directive=1)
    first = f.next()
    assert first is not None and first.record.url == "http://a/img.png"
    record = f.update(first.fp, visited(), Plan(10))
    assert record is not None and record.directive == 0


def test_a_raised_directive_orders_due_urls_and_never_makes_one_due(store: Store) -> None:
    """An embed asked for again by every page that shows it keeps its own wait
    (with ADAPTIVE_EMBED_HOPS it was fetched at every page visit); a preferred
    URL must never block its queue by sorting first while not due."""
    clock = Clock()
    f = make(store, clock, min_delay=0, max_delay=0, delay_factor=0)
    add(f, "http://a/img.png")
    issued = f.next()
    assert issued
    f.update(issued.fp, visited(), Plan(1000))
    add(f, "http://a/other")
    assert add(f, "http://a/img.png", directive=1) is AddResult.DUPLICATE
    nxt = f.next()
    assert nxt is not None and nxt.record.url == "http://a/other"
    f.update(nxt.fp, visited(), Plan(10))
    clock.t += 1000  # both due: the preferred one first
    add(f, "http://a/img.png", directive=1)
    clock.t += 20
    first = f.next()
    assert first is not None and first.record.url == "http://a/img.png"


def test_restart_rebuilds_queues_and_counts_and_returns_out_urls(
    tmp_path: Path,
) -> None:
    clock = Clock()
    path = str(tmp_path / "db")
    store = LevelDBStore(path)
    f = make(store, clock)
    for i in range(3):
        add(f, f"http://a/{i}")
    add(f, "http://b/1")
    issued = f.next()
    assert issued
    f.update(issued.fp, visited(), Plan(100))
    out = f.next()  # left out when the "process dies"
    assert out is not None
    store.close()

    store2 = LevelDBStore(path)
    f2 = make(store2, clock)
    f2.load()
    shape = f2.shape()
    assert (
        shape["urls"],
        shape["queues"],
        shape["visits"],
        shape["versions"],
        shape["out"],
    ) == (4, 2, 1, 1, 0)
    clock.t += 10
    urls = []
    while (n := f2.next()) is not None:
        urls.append(n.record.url)
        f2.update(n.fp, visited(), Plan(10_000))
        clock.t += 3
    # everything due comes out, including the URL that was out at the "crash"
    assert out.record.url in urls
    expected = {"http://a/0", "http://a/1", "http://a/2", "http://b/1"} - {issued.record.url}
    assert sorted(urls) == sorted(expected)
    store2.close()


def test_queue_counters_are_persisted_per_host(tmp_path: Path) -> None:
    store = LevelDBStore(str(tmp_path / "db"))
    f = make(store, Clock())
    add(f, "http://a/1")
    add(f, "http://a/2")
    counters = dict(store.hosts())
    assert json.loads(counters["a"])["u"] == 2
    store.close()


def test_shape_counts_due_urls_and_overdue(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    for i in range(5):
        add(f, f"http://a/{i}")
    clock.t += 7
    shape = f.shape()
    assert shape["due"] == 5 and shape["ready"] == 1
    issued = f.next()
    assert issued is not None and issued.overdue == pytest.approx(7.0, abs=(ARRIVAL_LEAD_MS + 1) / 1000)
    assert f.shape()["overdue_p50"] == pytest.approx(7.0, abs=(ARRIVAL_LEAD_MS + 1) / 1000)


def test_overdue_percentiles_are_those_of_the_urls_due_now(store: Store) -> None:
    """The summary said "0 due now; overdue p50 601.7s": the lateness of
    visits already made.  The percentiles are the due URLs' own, or none."""
    clock = Clock()
    f = make(store, clock)
    for host in ("a", "b", "c"):
        add(f, f"http://{host}/")
    clock.t += 600
    for _ in range(3):  # each visited 600 s late, due again in 1000 s
        issued = f.next()
        assert issued is not None and issued.overdue == pytest.approx(600.0, abs=(ARRIVAL_LEAD_MS + 1) / 1000)
        f.update(issued.fp, visited(), Plan(1000.0))
    shape = f.shape()
    assert shape["due"] == 0 and shape["overdue_p50"] is None and shape["overdue_p95"] is None
    clock.t += 1005
    shape = f.shape()
    assert shape["due"] == 3
    assert shape["overdue_p50"] == pytest.approx(5.0) and shape["overdue_p95"] == pytest.approx(5.0)


def test_an_embed_of_a_captured_page_comes_with_it_unless_its_copy_stands_for_this_moment(store: Store) -> None:
    """A page captured anew brings its embeds (a composite capture): one that
    changed at its last fetch comes with every capture, one that stayed the
    same may be older by COMPOSITE_WINDOW_S doubled per fetch it stayed the
    same, so a stylesheet that every page shares and that never changes is
    confirmed once for a burst of their changes, then ever more rarely."""
    clock = Clock()
    f = make(store, clock, min_delay=0.0, max_delay=0.0, delay_factor=0.0)
    css, photo = "http://a/site.css", "http://a/photo.png"

    def fetch_due(changes: dict[str, ChangeState]) -> None:
        for _ in changes:
            issued = f.next()
            assert issued is not None
            url = issued.record.url
            f.update(issued.fp, visited(change=changes[url]), Plan(100_000.0))

    add(f, css)
    add(f, photo)
    fetch_due({css: ChangeState.CHANGED, photo: ChangeState.CHANGED})  # first visits: new
    clock.t += COMPOSITE_WINDOW_S / 2
    # fetched a moment ago, as the page was captured: of its moment
    assert add(f, css, with_page=True) is AddResult.DUPLICATE
    assert add(f, photo, with_page=True) is AddResult.DUPLICATE
    clock.t += COMPOSITE_WINDOW_S
    # a later capture: both come (each changed at its last fetch)
    assert add(f, css, with_page=True) is AddResult.RESCHEDULED
    assert add(f, photo, with_page=True) is AddResult.RESCHEDULED
    fetch_due({css: ChangeState.UNCHANGED, photo: ChangeState.CHANGED})
    clock.t += 2 * COMPOSITE_WINDOW_S - 1
    # the stylesheet stayed the same once: a copy 2 windows old stands; the photo changed: it comes
    assert add(f, css, with_page=True) is AddResult.DUPLICATE
    assert add(f, photo, with_page=True) is AddResult.RESCHEDULED
    fetch_due({photo: ChangeState.UNCHANGED})
    clock.t += 2
    assert add(f, css, with_page=True) is AddResult.RESCHEDULED
    fetch_due({css: ChangeState.UNCHANGED})
    # twice the same: four windows
    clock.t += 4 * COMPOSITE_WINDOW_S - 1
    assert add(f, css, with_page=True) is AddResult.DUPLICATE
    clock.t += 2
    assert add(f, css, with_page=True) is AddResult.RESCHEDULED
    # without a page captured anew, nothing moves
    fetch_due({css: ChangeState.UNCHANGED})
    clock.t += 10_000
    assert add(f, css) is AddResult.DUPLICATE and add(f, photo) is AddResult.DUPLICATE
    record = f.get_record("a", fp(photo))
    assert record is not None and record.next_ms > time_to_ms(clock.t)


def test_never_is_infinite_time() -> None:
    from scrapy_adaptive.store.keys import ms_to_time

    assert time_to_ms(math.inf) == NEVER_MS
    assert ms_to_time(NEVER_MS) == math.inf


def test_the_queue_heap_stays_proportional_to_the_queues(store: Store) -> None:
    """Re-scheduling leaves stale heap entries; they must not pile up."""
    clock = Clock()
    f = make(store, clock, min_delay=0, max_delay=0, delay_factor=0)
    for i in range(3):
        add(f, f"http://h{i}/page")
    for _ in range(1500):  # more re-schedules than the 1,024 stale entries a heap may hold
        issued = f.next()
        assert issued is not None
        f.update(issued.fp, visited(), Plan(10_000.0))  # ready again far in the future
        add(f, issued.record.url, force=True)  # pulled forward: due now again
    assert len(f.book.heap) <= 4 * 3 + 1024 + 1


class FullDisk(MemoryStore):
    """A store whose writes fail once ``full`` is set, like a full disk."""

    full = False

    def write(self, batch: Batch) -> None:
        if self.full:
            raise StoreError("No space left on device")
        super().write(batch)


def test_a_failed_write_leaves_the_stored_state_as_it_was() -> None:
    clock = Clock()
    store = FullDisk()
    f = make(store, clock)
    add(f, "http://a/1")
    issued = f.next()
    assert issued
    before = dict(store.records()), list(store.queue_entries("a", limit=10))
    store.full = True
    with pytest.raises(StoreError):
        f.update(issued.fp, visited(), Plan(100))
    with pytest.raises(StoreError):
        add(f, "http://a/2")
    assert (dict(store.records()), list(store.queue_entries("a", limit=10))) == before
    assert f.counts().urls == 1  # the failed add was not counted
    # a restart from what was stored finds the URL, due as before
    store.full = False
    g = make(store, clock)
    g.load()
    clock.t += 2.0  # a restarted host rests its shortest wait first
    again = g.next()
    assert again is not None and again.fp == issued.fp


def test_a_fetch_in_flight_at_a_kill_still_gets_its_politeness_wait(store: Store) -> None:
    """A kill -9 during a download leaves no end time to keep the wait from:
    after the restart the host rests its shortest wait before its next fetch."""
    clock = Clock()
    f = make(store, clock, min_delay=8.0, max_delay=8.0)
    add(f, "http://a/1")
    add(f, "http://a/2")
    assert f.next() is not None  # in flight when the process dies: no update
    clock.t += 1.0
    g = make(store, clock, min_delay=8.0, max_delay=8.0)
    g.load()
    assert g.next() is None  # 1 s after the fetch started: too early
    clock.t += 7.9
    assert g.next() is None
    clock.t += 0.2
    assert g.next() is not None


def test_a_record_with_an_empty_request_reads_back(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    f.add(fp("http://a/empty"), "http://a/empty", "a", {})
    issued = f.next()
    assert issued is not None and issued.record.request == {}


def test_queue_counters_round_trip_with_their_stored_keys() -> None:
    """The per-queue row keeps its short keys, and a Crawl-delay of 0 is a
    Crawl-delay (not "none")."""
    from scrapy_adaptive.frontier.hostqueue import COUNTER_KEYS, HostQueue

    counts = dict(urls=3, never=1, visits=7, versions=2, quarantined=1, forgotten=2, gone=1, prioritized=2)
    q = HostQueue(name="h", valence=1, crawl_delay=0.0, **counts)  # type: ignore[arg-type]
    q.slots = [1_700_000_000.5]
    q.trust = {"": {"right": 4}, "h/img/*.jpg": {"right": 2, "streak": 2}}
    q.hint_trust = {"sitemap": [1.0, 0.0, 0.5]}
    stored = q.counters()
    assert set(stored) == set(COUNTER_KEYS.values())
    back = HostQueue(name="h", valence=1)
    back.restore_counters(stored)
    assert back.counters() == stored and back.crawl_delay == 0.0
    # a host's trust stored before class records existed is its host-wide record
    back.restore_counters({**stored, "tr": {"right": 4, "streak": 4}})
    assert back.trust == {"": {"right": 4, "streak": 4}}


def test_a_download_running_past_its_lease_is_not_taken_back(store: Store) -> None:
    clock = Clock()
    f = make(store, clock, lease=5.0)
    add(f, "http://a/slow")
    issued = f.next()
    assert issued
    f.downloads.fetch_started(issued.fp)
    clock.t += 30  # a 30 s download, six leases long
    assert f._leases.lapsed() == [] and f._leases.expire_leases() == []
    assert f._leases.is_out(issued.fp) and f.next() is None  # never issued twice to a one-at-a-time host
    f.downloads.fetch_ended(issued.fp)
    assert f._leases.lapsed() == []  # the download's 30 s do not count against the lease
    clock.t += 5
    assert f._leases.lapsed() == [issued.fp]  # ended without a verdict


def test_a_failed_write_counts_nothing_and_keeps_the_url_out() -> None:
    clock = Clock()
    store = FullDisk()
    f = make(store, clock)
    add(f, "http://a/1")
    issued = f.next()
    assert issued
    before = f.shape()
    store.full = True
    with pytest.raises(StoreError):
        f.update(issued.fp, visited(), Plan(100.0))
    after = f.shape()
    assert (f.counts().visits, f.counts().versions) == (0, 0)
    assert {k: after[k] for k in ("urls", "never", "out")} == {k: before[k] for k in ("urls", "never", "out")}
    assert f._leases.is_out(issued.fp)
    record = f.get_record(issued.record.queue, issued.fp)
    assert record is not None and record.visits == 0
    store.full = False
    updated = f.update(issued.fp, visited(), Plan(100.0))
    assert updated is not None and updated.visits == 1 and f.counts().visits == 1


def test_an_unreadable_record_is_quarantined_and_its_host_goes_on(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 10 item 4: next() took the queue off its heap, the record
    raised, and the host was never fetched again."""
    clock = Clock()
    f = make(store, clock, min_delay=0.0, max_delay=0.0)
    urls = sorted((f"http://a/{i}" for i in range(3)), key=fp)  # the order they are due in
    for url in urls:
        add(f, url)
    garbage = b"\xff{not a record"
    store.write(Batch(records={("a", fp(urls[0])): garbage}))
    with caplog.at_level("ERROR"):
        issued = f.next()
    assert issued is not None and issued.record.url == urls[1]  # the host went on
    assert f.counts().quarantined == 1 and f.counts().urls == 2
    assert list(store.quarantined()) == [(fp(urls[0]), garbage)]  # bytes kept, under x/
    assert store.get_record("a", fp(urls[0])) is None
    (line,) = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert fp(urls[0]).hex() in line and "quarantined under key x/" in line and "queue a" in line
    f.update(issued.fp, visited(), Plan(100.0))
    again = f.next()
    assert again is not None and again.record.url == urls[2]
    assert f.shape()["quarantined"] == 1
    # restored from the counters after a restart; a rediscovered URL starts anew
    reopened = make(store, clock)
    reopened.load()
    assert (reopened.counts().urls, reopened.counts().quarantined) == (2, 1)
    assert add(reopened, urls[0]) is AddResult.NEW and reopened.counts().urls == 3


def test_a_record_of_the_wrong_shape_is_unreadable_too(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    add(f, "http://a/1")
    store.write(Batch(records={("a", fp("http://a/1")): b'{"u":"http://a/1","q":"a","n":"soon"}\n{}'}))
    assert f.get_record("a", fp("http://a/1")) is None
    assert f.next() is None and f.counts().quarantined == 1
    assert not f.has_pending()


def test_the_politeness_wait_is_kept_across_a_restart(store: Store) -> None:
    """Issue 10 item 7: ADAPTIVE_MIN_DELAY=8 gave 1.05 s between two requests across a restart."""
    clock = Clock()
    f = make(store, clock, min_delay=8.0, max_delay=8.0)
    add(f, "http://a/1")
    add(f, "http://a/2")
    issued = f.next()
    assert issued is not None
    f.downloads.fetch_ended(issued.fp, duration=0.05)
    f.update(issued.fp, visited(), Plan(100.0))
    reopened = make(store, clock, min_delay=8.0, max_delay=8.0)
    reopened.load()
    clock.t += 1.05
    assert reopened.next() is None  # still resting
    clock.t += 8.0 - 1.05
    again = reopened.next()
    assert again is not None and again.record.url == "http://a/2"


def verified(change: ChangeState, prediction: str = "unchanged") -> Visit:
    return replace(visited(change=change), validation="verified", prediction=prediction)


def visit_deciding(f: Frontier, clock: Clock, url: str, outcome: Callable[[bool], Visit], tries: int = 8) -> bool:
    """Issue due URLs until *url* comes, ask whether its fetch verifies its
    validators, settle it with ``outcome(decision)`` (planned 1 s later);
    return the decision (the other URLs issued meanwhile are settled
    unchanged)."""
    for _ in range(tries):
        req = f.next()
        if req is not None and req.fp == fp(url):
            decision = f.hosts.verify_validators(fp(url))
            f.update(fp(url), outcome(decision), Plan(1.0))
            return decision
        if req is not None:
            f.update(req.fp, visited(change=ChangeState.UNCHANGED), Plan(1.0))
        clock.t += 2
    raise AssertionError(f"{url} never issued")


def test_a_url_caught_lying_is_downloaded_in_full_until_it_earns_trust_again(store: Store) -> None:
    """Per-URL validator trust: on an honest host one page's ETag never moves
    although its content does.  Once caught, that page is verified on every
    visit (warmup right predictions, doubled per further lie), its lies no
    longer reset the host, and the host's other pages keep their trust."""
    from scrapy_adaptive.change.trust import TrustParams

    clock = Clock()
    f = Frontier(store, Politeness(min_delay=0.0, max_delay=0.0, valence=1), clock=clock, trust=TrustParams(warmup=2))
    liar, honest = "http://h.example/liar", "http://h.example/ok"
    add(f, liar)
    add(f, honest)

    def visit(url: str, v: Visit | None = None) -> bool:
        return visit_deciding(f, clock, url, lambda _: v or visited(change=ChangeState.UNCHANGED), 4)

    # the host earns trust from right predictions on both pages
    for url in (honest, liar, honest):
        clock.t += 2
        visit(url, verified(ChangeState.UNCHANGED))
    # the liar is caught: that resets the host (nothing was known of the URL)
    clock.t += 2
    visit(liar, verified(ChangeState.CHANGED))
    assert f.hosts.trust_report()["h.example"].host().lies == 1
    for url in (honest, honest):
        clock.t += 2
        visit(url, verified(ChangeState.UNCHANGED))
    # the host is trusted again (its next prediction is acted on), the liar is not
    clock.t += 2
    assert visit(honest, visited(change=ChangeState.UNCHANGED)) is False
    clock.t += 2
    assert visit(liar, verified(ChangeState.CHANGED)) is True
    # a known liar's further lies do not reset its honest host
    assert f.hosts.trust_report()["h.example"].host().lies == 1
    # two lies: it must be right 2 × 2 times in a row before it is trusted again
    for _ in range(4):
        clock.t += 2
        assert visit(liar, verified(ChangeState.UNCHANGED)) is True
    # then it is back on its host's schedule (every second prediction verified at this streak)
    decisions = []
    for _ in range(2):
        clock.t += 2
        decisions.append(visit(liar, visited(change=ChangeState.UNCHANGED)))
    assert False in decisions


def test_a_lying_page_does_not_cost_its_hosts_images_their_trust(store: Store) -> None:
    """Trust per sibling class (run 7 of the changing-web benchmark: 277
    full downloads of unchanged images, their host's trust reset by each
    lying page's first lie).  The pages of /p/ and the images of /img/ are
    verified on schedules of their own; a class first seen starts from the
    host-wide record, so it is trusted at once on an honest host and not
    after a lie."""
    from scrapy_adaptive.change.trust import TrustParams

    clock = Clock()
    f = Frontier(store, Politeness(min_delay=0.0, max_delay=0.0, valence=1), clock=clock, trust=TrustParams(warmup=2))
    page, image = "http://h.example/p/1.html", "http://h.example/img/1.jpg"
    late = "http://h.example/docs/1.pdf"
    for url in (page, image, late):
        add(f, url)

    def visit(url: str, v: Visit) -> bool:
        return visit_deciding(f, clock, url, lambda _: v)

    # the pages earn trust (warmup 2), and with them the host
    for _ in range(2):
        clock.t += 2
        assert visit(page, verified(ChangeState.UNCHANGED)) is True
    # a class first seen now starts from the trusted host: acted on at once
    clock.t += 2
    assert visit(image, visited(change=ChangeState.UNCHANGED)) is False
    # the page's next prediction is acted on, the one after verified: it lies
    # (its first: news about its class and its host)
    clock.t += 2
    assert visit(page, visited(change=ChangeState.UNCHANGED)) is False
    clock.t += 2
    assert visit(page, verified(ChangeState.CHANGED)) is True
    assert f.hosts.trust_report()["h.example"].host().lies == 1
    # the images keep their class's schedule: some of their predictions are acted on
    decisions = []
    unchanged = ChangeState.UNCHANGED
    for _ in range(3):
        clock.t += 2
        # a verified fetch's verdict says so (its headers predicted it right)
        decision = visit_deciding(f, clock, image, lambda verify: verified(unchanged) if verify else visited(unchanged))
        decisions.append(decision)
    assert False in decisions
    # while the liar is downloaded in full (its own record), and so is a
    # class first seen after the lie (the host-wide record was reset)
    clock.t += 2
    assert visit(page, verified(ChangeState.UNCHANGED)) is True
    clock.t += 2
    assert visit(late, verified(ChangeState.UNCHANGED)) is True
    book = f.hosts.trust_report()["h.example"].data
    assert book["h.example/img/*.jpg"]["streak"] >= 2 and "streak" not in book["h.example/p/*.html"]


def test_a_caught_lie_brings_its_unchecked_siblings_checks_forward(store: Store) -> None:
    """Every URL of a fresh crawl is first visited before any header is
    checked, so each old Last-Modified's check is planned on even odds (twice
    the population's interval on the changing web, where a fifth of the
    lying pages were never revisited in 20 minutes).  When one is caught
    lying, the frontier asks the policy again for the siblings (same host,
    directory and extension) whose age is still unchecked, and moves earlier
    only those it now wants sooner; a URL out, another class and a URL whose
    check is over are left alone.  A class is re-planned at its 1st, 2nd,
    4th ... caught lie only."""
    clock = Clock()
    f = Frontier(store, Politeness(min_delay=0.0, max_delay=0.0, valence=1), clock=clock)
    pages = [f"http://h.example/p/{i}.html" for i in range(4)]
    image, checked = "http://h.example/img/1.jpg", "http://h.example/p/old.html"
    for url in [*pages, image, checked]:
        add(f, url)
    for _ in range(6):
        req = f.next()
        assert req is not None
        memory = {} if req.record.url == checked else {"ua": 1, "e": 0.001}
        f.update(req.fp, visited(), Plan(10.0 if req.record.url == pages[0] else 1000.0, memory))
    clock.t += 50
    asked: list[str] = []

    def decide(snapshot: dict) -> float | None:
        asked.append(snapshot["url"])
        return 400.0 if snapshot["url"] != pages[1] else 2000.0  # page 1: later than planned, not moved

    # page 0 is out when page 3's lie is caught: it is not re-planned
    first = f.next()
    assert first is not None and first.record.url == pages[0]
    assert f.hosts.replan_unchecked("h.example", pages[3], decide) == 2  # pages 2 and 3 (page 3 is not out)
    assert sorted(asked) == sorted(pages[1:])
    planned = {url: f.get_record("h.example", fp(url)).next_ms for url in [*pages, image]}  # type: ignore[union-attr]
    fetched = f.get_record("h.example", fp(pages[2])).fetched  # type: ignore[union-attr]
    assert planned[pages[2]] == round((fetched + 400.0) * 1000)
    assert planned[pages[1]] > planned[pages[2]] and planned[image] > planned[pages[2]]
    # a check that is over leaves the index
    f.update(first.fp, visited(), Plan(1000.0, {"e": 0.001}))
    asked.clear()
    f.hosts.replan_unchecked("h.example", pages[3], decide)  # the class's 2nd caught lie: re-planned again
    assert asked and pages[0] not in asked
    asked.clear()
    assert f.hosts.replan_unchecked("h.example", pages[3], decide) == 0  # the 3rd: the odds moved little, skipped
    assert not asked
    f.hosts.replan_unchecked("h.example", pages[3], decide)  # the 4th
    assert asked
    asked.clear()
    # a rise of the pace a lie would hide (the policy asks once per doubling)
    # re-plans without counting a lie
    assert f.hosts.replan_unchecked("h.example", pages[3], decide, lie=False) == 0  # nothing earlier wanted now
    assert asked
    asked.clear()
    f.hosts.replan_unchecked("h.example", pages[3], decide)  # the 5th lie: skipped, as before
    assert not asked


def test_an_honest_page_keeps_its_own_trust_beside_its_classs_liars(store: Store) -> None:
    """On a host whose CMS serves some pages with frozen validators, each
    one's first lie resets the class's record; an honest page of that class
    that has proved right on its own keeps acting on its validators
    (rationed by its own record: every 2nd, then every 4th prediction
    verified), and a page that proved nothing yet follows its class."""
    from scrapy_adaptive.change.trust import TrustParams

    clock = Clock()
    f = Frontier(store, Politeness(min_delay=0.0, max_delay=0.0, valence=1), clock=clock, trust=TrustParams(warmup=2))
    honest, fresh = "http://h.example/p/ok.html", "http://h.example/p/new.html"
    liars = [f"http://h.example/p/liar{n}.html" for n in range(7)]
    add(f, honest)

    def visit(url: str, change: ChangeState = ChangeState.UNCHANGED) -> bool:
        # acted on: a 304, whatever the content did (a liar's change is missed)
        return visit_deciding(
            f, clock, url, lambda verify: verified(change) if verify else visited(change=ChangeState.UNCHANGED), 20
        )

    for _ in range(2):  # the honest page proves right twice
        clock.t += 2
        assert visit(honest) is True
    decisions = []
    for liar in liars:
        add(f, liar)  # one found now, caught at its first verification
        for _ in range(4):
            clock.t += 2
            if visit(liar, ChangeState.CHANGED):
                break
        clock.t += 2
        decisions.append(visit(honest))
    assert f.hosts.trust_report()["h.example"].host().lies == len(liars)
    # its own schedule: acted on, verified, then acted on three times, verified ...
    assert decisions == [False, True, False, False, False, True, False], decisions
    record = f.get_record("h.example", fp(honest))
    assert record is not None and record.validator_trust is not None and record.validator_trust[:2] == [0, 4]
    # a page of the class with no record of its own follows its class: verified
    add(f, fresh)
    clock.t += 2
    assert visit(fresh) is True


def test_a_trusted_page_that_starts_lying_is_caught_and_loses_its_own_trust(store: Store) -> None:
    """Per-URL trust is kept honest by its own verifications: a page trusted
    on its own record that starts lying is caught at its next verification
    (within ceil(1 / rate) predictions) and is then downloaded in full until
    it earns trust back."""
    from scrapy_adaptive.change.trust import TrustParams, url_verify_rate

    params = TrustParams(warmup=1, min_rate=0.25)
    clock = Clock()
    f = Frontier(store, Politeness(min_delay=0.0, max_delay=0.0, valence=1), clock=clock, trust=params)
    page, other = "http://h.example/p/1.html", "http://h.example/q/1.html"
    add(f, page)
    add(f, other)

    def visit(url: str, change: ChangeState) -> bool:
        return visit_deciding(
            f, clock, url, lambda verify: verified(change) if verify else visited(change=ChangeState.UNCHANGED)
        )

    # another class lies, so the page's class record is not what trusts it
    clock.t += 2
    visit(other, ChangeState.CHANGED)
    for _ in range(6):
        clock.t += 2
        visit(page, ChangeState.UNCHANGED)
    record = f.get_record("h.example", fp(page))
    assert record is not None and url_verify_rate(record.validator_trust, params) == 0.25
    # it starts lying: acted on at most 3 times, then verified and caught
    acted = 0
    while not visit(page, ChangeState.CHANGED):
        acted += 1
        clock.t += 2
    assert acted <= 3
    record = f.get_record("h.example", fp(page))
    assert record is not None and record.validator_trust is not None and record.validator_trust[0] == 1
    clock.t += 2
    assert visit(page, ChangeState.CHANGED) is True  # earning back: in full


def test_an_unchecked_header_is_verified_while_the_wait_policy_doubts_it(store: Store) -> None:
    """The frontier asks the wait policy (``header_doubtful``) at each fetch
    whether an unchecked first-visit header still needs its fetches
    verified; without the question, the stored check state decides."""
    from scrapy_adaptive.change.trust import TrustParams

    clock = Clock()
    f = Frontier(store, Politeness(min_delay=0.0, max_delay=0.0, valence=1), clock=clock, trust=TrustParams(warmup=0))
    url = "http://h.example/p/old.html"
    add(f, url)
    issued = f.next()
    assert issued is not None
    f.update(issued.fp, visited(change=ChangeState.CHANGED), Plan(1.0, {"ua": 1}))
    clock.t += 2
    issued = f.next()
    assert issued is not None and issued.record.policy == {"ua": 1}
    asked: list[object] = []

    def doubtful(history: object) -> bool:
        asked.append(history)
        return False

    assert f.hosts.verify_validators(issued.fp) is True  # the stored state: checked, so verified
    assert f.hosts.verify_validators(issued.fp, lambda history: True) is True
    # the policy no longer doubts it: the class's schedule decides (warmup 0: acted on at once)
    assert f.hosts.verify_validators(issued.fp, doubtful) is False
    assert asked and asked[0]["url"] == url  # type: ignore[index]
