"""The per-host crawl-time estimate (Umbrich et al., section 5) against the real frontier."""

from __future__ import annotations

import heapq

import pytest

from scrapy_adaptive.frontier import Frontier, HostQueue, MemoryStore, Outcome, Politeness, Visit
from scrapy_adaptive.frontier.crawltime import (
    DEFAULT_FETCH_TIME,
    FetchTimes,
    crawl_time,
    estimate,
    estimate_hosts,
    start_spacing,
)
from scrapy_adaptive.model import Plan
from tests.unit.frontier.test_frontier import Clock, fp


def frontier(clock: Clock, **politeness: float) -> Frontier:
    return Frontier(MemoryStore(), Politeness(**politeness), clock=clock)  # type: ignore[arg-type]


def add(f: Frontier, url: str) -> None:
    f.add(fp(url), url, url.split("/")[2], {"url": url})


def one_host(clock: Clock, urls: int, valence: int, politeness: dict[str, float]) -> tuple[Frontier, HostQueue]:
    """A frontier with *urls* due URLs on host ``a``, and that host's queue."""
    f = frontier(clock, valence=valence, **politeness)
    for i in range(urls):
        add(f, f"http://a/{i}")
    return f, next(iter(f.queues()))


def drain(f: Frontier, clock: Clock, docs: int, fetch_time: float) -> float:
    """Fetch every due URL, each taking *fetch_time*, as the scheduler would
    (fetches overlap up to the valence); seconds from now to the last fetch's end."""
    start = clock.t
    in_flight: list[tuple[float, bytes]] = []
    done = 0
    for _ in range(10 * docs + 10):  # bounded: every round ends a fetch or reaches a ready time
        while (issued := f.next()) is not None:
            heapq.heappush(in_flight, (clock.t + fetch_time, issued.fp))
        if done == docs:
            break
        ready = f.next_ready_time()
        if ready is not None and ready > clock.t and (not in_flight or ready < in_flight[0][0]):
            clock.t = ready  # a slot's politeness wait is over
            continue
        end, key = in_flight[0]
        heapq.heappop(in_flight)
        clock.t = end
        f.downloads.fetch_ended(key, fetch_time)
        f.update(key, Visit(Outcome.VISITED, status=200, duration=fetch_time), Plan(10**6))
        done += 1
    assert done == docs
    return clock.t - start


def test_the_papers_figure_and_the_valence_cap() -> None:
    # 6 documents, fetches 3x the delay: 3 threads, crawl time 6·3/3 + 1·2
    assert crawl_time(6, 3.0, 1.0, valence=8) == 8.0
    assert crawl_time(6, 3.0, 1.0, valence=2) == 10.0  # only 2 may overlap
    # fetches shorter than the delay: one start per delay, the last one ends t later
    assert crawl_time(6, 0.5, 2.0, valence=4) == pytest.approx(5 * 2.0 + 0.5)
    assert crawl_time(0, 3.0, 1.0, valence=1) == 0.0
    assert crawl_time(4, 0.0, 1.0, valence=1) == 3.0  # instant fetches: the delays alone
    assert crawl_time(4, 1.0, 0.0, valence=2) == pytest.approx(2.0)  # no politeness: valence side by side


@pytest.mark.parametrize(
    ("fetch_time", "politeness"),
    [
        (0.1, {"delay_factor": 5.0, "min_delay": 2.0, "max_delay": 5.0}),  # the thesis defaults: min delay binds
        (0.6, {"delay_factor": 5.0, "min_delay": 2.0, "max_delay": 5.0}),  # factor × fetch time binds
        (2.0, {"delay_factor": 5.0, "min_delay": 2.0, "max_delay": 5.0}),  # max delay binds
    ],
)
def test_with_one_slot_the_estimate_is_the_frontiers_drain_time(
    fetch_time: float, politeness: dict[str, float]
) -> None:
    clock = Clock()
    f, q = one_host(clock, 20, 1, politeness)
    predicted = estimate(q, 20, fetch_time, 60.0, **politeness).crawl_time
    assert predicted == pytest.approx(drain(f, clock, 20, fetch_time))


def test_with_several_slots_the_estimate_is_within_one_cycle() -> None:
    politeness = {"delay_factor": 2.0, "min_delay": 0.5, "max_delay": 3.0}
    clock = Clock()
    f, q = one_host(clock, 30, 3, politeness)
    est = estimate(q, 30, 0.4, 60.0, **politeness)
    measured = drain(f, clock, 30, 0.4)
    assert est.threads == pytest.approx(3 * 0.4 / (0.4 + 0.8))
    assert abs(est.crawl_time - measured) <= 0.4 + 0.8  # at most one slot cycle apart


def test_a_crawl_delay_counts_as_the_wait() -> None:
    politeness = {"delay_factor": 5.0, "min_delay": 2.0, "max_delay": 5.0}
    clock = Clock()
    f, q = one_host(clock, 10, 1, politeness)
    f.hosts.set_crawl_delay("a", 10.0)
    est = estimate(q, 10, 0.5, 60.0, **politeness)
    assert est.wait == 10.0
    assert est.crawl_time == pytest.approx(drain(f, clock, 10, 0.5))


def test_the_papers_own_delay_misjudges_our_politeness() -> None:
    # the paper spaces fetch starts by the crawl delay; our wait starts when
    # the fetch ends, so each cycle is t longer than the paper thinks
    t, w, docs = 0.5, 2.0, 10
    ours = crawl_time(docs, t, start_spacing(t, w, 1), 1)
    paper = crawl_time(docs, t, w, 1)
    assert ours - paper == pytest.approx((docs - 1) * t)
    # with two slots resting side by side the paper sees one fetch per wait: twice too long, almost
    ours2 = crawl_time(docs, t, start_spacing(t, w, 2), 2)
    paper2 = crawl_time(docs, t, w, 2)
    assert paper2 == paper and 1.5 < paper2 / ours2 < 2.0


def test_fetch_times_average_plainly_then_forget() -> None:
    times = FetchTimes(weight=0.1)
    assert times.mean("a") is None and times.count("a") == 0
    for seconds in (1.0, 2.0, 3.0):
        times.add("a", seconds)
    assert times.mean("a") == pytest.approx(2.0)  # a plain mean of the first fetches
    for _ in range(100):
        times.add("a", 0.5)
    assert times.mean("a") == pytest.approx(0.5, abs=0.01)  # the host got faster: the mean follows
    times.add("b", -1.0)  # a clock step backwards is not a negative duration
    assert times.mean("b") == 0.0
    with pytest.raises(ValueError):
        FetchTimes(weight=0)


def test_hosts_are_listed_with_their_due_urls_worst_load_first() -> None:
    politeness = {"delay_factor": 1.0, "min_delay": 1.0, "max_delay": 1.0}
    clock = Clock()
    f = frontier(clock, valence=1, **politeness)
    for i in range(40):
        add(f, f"http://slow/{i}")
    for i in range(3):
        add(f, f"http://fast/{i}")
    add(f, "http://later/0")
    # later/0 is visited and due again in 100 s: outside a 60 s horizon
    issued = f.next()
    while issued is not None and issued.record.url != "http://later/0":
        issued = f.next()
    assert issued is not None
    f.downloads.fetch_ended(issued.fp, 0.1)
    f.update(issued.fp, Visit(Outcome.VISITED, status=200), Plan(100.0))
    times = FetchTimes()
    times.add("slow", 1.0)
    times.add("fast", 0.01)
    rows = estimate_hosts(f.queues(), f.count_due, times, now=clock.t, horizon=60.0, **politeness)
    assert [r.queue for r in rows] == ["slow", "fast"]
    slow, fast = rows
    assert slow.docs == 40 and slow.overdue and slow.load == pytest.approx(slow.crawl_time / 60)
    assert slow.crawl_time == pytest.approx(40 * 2.0 - 1.0)  # each cycle: 1 s fetch + 1 s wait
    assert fast.docs == 3 and not fast.overdue
    # within a longer horizon the later URL counts too; never fetched: the paper's 2 s default
    rows = estimate_hosts(f.queues(), f.count_due, FetchTimes(), now=clock.t, horizon=200.0, **politeness)
    assert {r.queue: r.docs for r in rows} == {"slow": 40, "fast": 3, "later": 1}
    assert all(r.fetch_time == DEFAULT_FETCH_TIME for r in rows)
    # the scan is bounded: the hosts counted last are lower bounds
    rows = estimate_hosts(f.queues(), f.count_due, times, now=clock.t, horizon=60.0, limit=10, **politeness)
    assert sum(r.docs for r in rows) == 10


def test_without_politeness_the_valence_sets_the_threads() -> None:
    q = HostQueue(name="h", valence=4)
    est = estimate(q, 8, 1.0, 10.0, delay_factor=0.0, min_delay=0.0, max_delay=0.0)
    # four fetches side by side, two rounds of 1 s; the paper staggers the
    # four starts by d = 0.25 s where our slots all start at once
    assert est.threads == 4 and est.crawl_time == pytest.approx(2.0 + 3 * 0.25)
