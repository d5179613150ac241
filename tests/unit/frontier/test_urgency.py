"""Which due URL a queue issues first (frontier/urgency.py), on every store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from scrapy_adaptive.frontier import Frontier, Store
from scrapy_adaptive.frontier.urgency import WINDOW, _wait, pick
from scrapy_adaptive.model import Plan, UrlRecord
from scrapy_adaptive.store.leveldb import LevelDBStore
from tests.unit.frontier.test_frontier import Clock, add, make, visited


def visit_all(f: Frontier, clock: Clock, waits: dict[str, float]) -> None:
    """First-visit every URL of *waits* (a single host) and give each its wait."""
    for _ in waits:
        issued = f.next()
        assert issued is not None
        f.downloads.fetch_ended(issued.fp, 0.0)
        f.update(issued.fp, visited(), Plan(waits[issued.record.url]))
        clock.t += 0.001


def crawled(store: Store, waits: dict[str, float]) -> tuple[Frontier, Clock]:
    """A frontier without politeness waits whose URLs (*waits*) were first
    visited one after the other, each given its wait."""
    clock = Clock()
    f = make(store, clock, min_delay=0, max_delay=0, delay_factor=0)
    for url in waits:
        add(f, url)
    visit_all(f, clock, waits)
    return f, clock


def test_a_fast_page_kept_waiting_goes_ahead_of_a_slow_page_due_earlier(store: Store) -> None:
    f, clock = crawled(store, {"http://a/slow": 300.0, "http://a/fast": 10.0})
    # 304 s later both are due: the slow page 4 s late (1 % of its wait), the
    # fast page 294 s late; in due-time order the slow page would go first
    clock.t += 304
    first = f.next()
    assert first is not None and first.record.url == "http://a/fast"
    assert first.overdue > 290


def test_relative_lateness_decides_not_absolute_lateness(store: Store) -> None:
    f, clock = crawled(store, {"http://a/slow": 100.0, "http://a/fast": 20.0})
    clock.t += 130  # slow: 30 s late of 100 (0.3); fast: 110 s late of 20 (5.5)
    first = f.next()
    assert first is not None and first.record.url == "http://a/fast"


def test_the_head_late_by_a_whole_wait_goes_first_whatever_else_is_due(store: Store) -> None:
    f, clock = crawled(store, {"http://a/slow": 20.0})
    clock.t += 19
    add(f, "http://a/fast")
    visit_all(f, clock, {"http://a/fast": 2.0})
    clock.t += 22  # slow 21 s late of 20: it has waited a whole wait; fast 20 s late of 2
    first = f.next()
    assert first is not None and first.record.url == "http://a/slow"


def test_a_first_visit_keeps_its_place_against_the_fastest_page(store: Store) -> None:
    f, clock = crawled(store, {"http://a/fast": 10.0})
    clock.t += 5
    add(f, "http://a/new")  # due 5 s before the fast page
    clock.t += 9
    first = f.next()
    # new: 9 s late, ranked as if its wait were the fastest's (0.9);
    # fast: 4 s late of 10 (0.4) -> the older of the two goes first
    assert first is not None and first.record.url == "http://a/new"


def test_a_url_not_yet_due_never_goes_ahead(store: Store) -> None:
    f, clock = crawled(store, {"http://a/slow": 100.0, "http://a/fast": 150.0})
    clock.t += 101  # slow due 1 s ago; fast due in 49 s
    first = f.next()
    assert first is not None and first.record.url == "http://a/slow"
    f.downloads.fetch_ended(first.fp, 0.0)
    f.update(first.fp, visited(), Plan(1000.0))
    assert f.next() is None


def test_only_the_first_due_urls_are_weighed(store: Store) -> None:
    slow = {f"http://a/{i}": 100.0 for i in range(WINDOW)}
    f, clock = crawled(store, slow)
    clock.t += 96
    add(f, "http://a/fast")
    visit_all(f, clock, {"http://a/fast": 5.0})
    # 13 s on, every slow page is ~10 s late of 100 and the fast page ~8 s
    # late of 5, but WINDOW slow pages are due before it: it is not weighed
    clock.t += 13
    first = f.next()
    assert first is not None and first.record.url in slow


def counted_reads(store: Store) -> list[bytes]:
    """The fingerprints of the records *store* is asked for from now on."""
    reads: list[bytes] = []
    get_record = store.get_record

    def counting(queue: str, fp: bytes) -> bytes | None:
        reads.append(fp)
        return get_record(queue, fp)

    store.get_record = counting  # type: ignore[method-assign]
    return reads


def counted_seeks(store: LevelDBStore) -> list[str]:
    """The queues of the store's entry scans from now on (each a seek), as they happen."""
    seeks: list[str] = []
    queue_entries = store.queue_entries

    def counting(queue: str, **kwargs: Any) -> Any:
        seeks.append(queue)
        return queue_entries(queue, **kwargs)

    store.queue_entries = counting  # type: ignore[method-assign]
    return seeks


def test_the_weighing_reads_the_due_urls_only(store: Store) -> None:
    later = {f"http://a/later{i}": 500.0 for i in range(30)}
    f, clock = crawled(store, {"http://a/slow": 100.0, "http://a/fast": 10.0, **later})
    clock.t += 104  # slow 4 s late, fast ~94 s late; the 30 others not due
    reads = counted_reads(store)
    first = f.next()
    assert first is not None and first.record.url == "http://a/fast"
    assert len(reads) <= 3, "the head, the fast page weighed, the fast page issued"


@st.composite
def due_candidates(draw: st.DrawFn) -> tuple[list[tuple[tuple[int, int, bytes], UrlRecord]], int]:
    now_ms = 10_000_000
    lates = sorted(draw(st.lists(st.integers(0, 2_000_000), min_size=1, max_size=WINDOW)), reverse=True)
    candidates = []
    for i, late in enumerate(lates):
        visits = draw(st.sampled_from([0, 1, 5]))
        wait = draw(st.sampled_from([0.0, 0.5, 3.0, 10.0, 300.0, 1200.0]))
        record = UrlRecord(url=f"http://a/{i}", queue="a", request={}, next_ms=now_ms - late, visits=visits, wait=wait)
        candidates.append(((0, now_ms - late, bytes([i])), record))
    return candidates, now_ms


@given(due_candidates())
def test_the_pick_is_the_latest_for_its_wait_and_never_passes_a_head_late_by_a_wait(
    case: tuple[list[tuple[tuple[int, int, bytes], UrlRecord]], int],
) -> None:
    candidates, now_ms = case
    waits = [max(r.wait, 1.0) if r.visits and r.wait else None for _, r in candidates]
    shortest = min((w for w in waits if w is not None), default=1.0)
    relative = [(now_ms - e[1]) / 1000 / (w or shortest) for (e, _), w in zip(candidates, waits, strict=True)]
    chosen = pick([_wait(r.visits, r.wait) for _, r in candidates], [e[1] for e, _ in candidates], now_ms)
    assert 0 <= chosen < len(candidates)
    if relative[0] >= 1.0:
        assert chosen == 0
    else:
        assert relative[chosen] == max(relative)
        assert chosen == relative.index(max(relative))  # ties: the one due the longest


def test_a_head_never_visited_is_issued_without_reading_the_other_candidates(store: Store) -> None:
    f, clock = crawled(store, {"http://a/fast": 10.0})
    clock.t += 5
    add(f, "http://a/new")  # never visited, due before the fast page
    clock.t += 9
    reads = counted_reads(store)
    first = f.next()
    assert first is not None and first.record.url == "http://a/new"
    assert len(reads) == 1, "only the head's own record is read"


def test_the_weighing_reads_the_queue_s_window_without_a_seek_and_picks_as_the_store_would(tmp_path: Path) -> None:
    """A frontier that is its store's one writer keeps a window of each
    queue's next entries (readahead.py): the due URLs weighed are read there,
    and the pick is the one a read of the store gives."""

    def first_issue(path: Path, *, window: bool) -> tuple[str, int]:
        store = LevelDBStore(str(path))
        try:
            f, clock = crawled(store, {"http://a/slow": 300.0, "http://a/later": 900.0})
            clock.t += 295
            add(f, "http://a/fast")
            visit_all(f, clock, {"http://a/fast": 10.0})
            # 14 s on: the head (slow) is 9 s late of 300, fast 4 s late of
            # 10 (weighed: it goes first), "later" not due
            clock.t += 14
            if not window:
                for q in f.queues():
                    q.window = []  # as a shared store's frontier has none
            seeks = counted_seeks(store)
            first = f.next()
            assert first is not None
            return first.record.url, len(seeks)
        finally:
            store.close()

    assert first_issue(tmp_path / "windowed", window=True) == ("http://a/fast", 0)
    assert first_issue(tmp_path / "seeking", window=False)[0] == "http://a/fast"


def test_a_revisit_pass_over_many_due_urls_seeks_the_store_once_per_window(tmp_path: Path) -> None:
    """Every issue of a queue with many URLs due at once weighs its first
    due URLs.  A seek reads as many as are weighed, past the URLs out, and
    becomes the queue's window, so the next issues weigh them there: one
    seek per several issues, not about one per issue, with eight fetches of
    the host at a time (a LevelDB frontier, its store's one writer)."""
    store = LevelDBStore(str(tmp_path / "db"))
    try:
        waits = {f"http://a/{i}": 100.0 + i / 2 for i in range(80)}
        clock = Clock()
        f = make(store, clock, min_delay=0, max_delay=0, delay_factor=0, valence=8)
        for url in waits:
            add(f, url)
        visit_all(f, clock, waits)
        clock.t += 125  # half the URLs due, each late by less than its wait: every issue weighs
        seeks = counted_seeks(store)
        out: list[tuple[bytes, str]] = []
        issued = []
        while len(issued) < 40:
            if len(out) < 8:  # the host's eight slots busy, as a crawl keeps them
                got = f.next()
                assert got is not None
                issued.append(got.record.url)
                out.append((got.fp, got.record.url))
                continue
            done, url = out.pop(0)
            f.downloads.fetch_ended(done, 0.0)
            f.update(done, visited(), Plan(waits[url]))
            clock.t += 0.001
        assert len(set(issued)) == 40, "each due URL once"
        # (before the weighing's seek became the window: 35 seeks)
        assert len(seeks) <= 40 // 4, f"{len(seeks)} seeks for 40 issues"
    finally:
        store.close()


def test_the_weighing_s_seek_stays_within_a_window_s_bound() -> None:
    """The weighing's own seek becomes the queue's window: it reads no more
    than a window may hold past the URLs out (memory grows with hosts only)."""
    from scrapy_adaptive.frontier.readahead import AHEAD, GROWTH

    assert AHEAD <= WINDOW <= AHEAD + GROWTH
