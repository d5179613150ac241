"""ADAPTIVE_BUDGET as a ceiling on planned revisits (frontier/gate.py), on every store."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_adaptive.frontier import Frontier, Politeness, Store
from scrapy_adaptive.frontier.gate import BURST_SECONDS, RevisitGate
from scrapy_adaptive.frontier.hostqueue import HostQueue
from scrapy_adaptive.model import Plan
from scrapy_adaptive.store.keys import EMBED_DIRECTIVE
from tests.unit.frontier.test_frontier import Clock, add, fp, visited


def gated(store: Store, clock: Clock, per_second: float) -> Frontier:
    """A frontier without politeness waits (every host may be fetched at once) and a revisit ceiling."""
    politeness = Politeness(delay_factor=0, min_delay=0, max_delay=0, valence=1, lease=60.0)
    return Frontier(store, politeness, clock=clock, revisit_ceiling=per_second)


def first_visits(f: Frontier, clock: Clock, urls: list[str], wait: float) -> None:
    """Add and first-visit every URL, each planned *wait* seconds on."""
    for url in urls:
        add(f, url)
    for _ in urls:
        issued = f.next()
        assert issued is not None and issued.record.visits == 0
        f.downloads.fetch_ended(issued.fp, 0.0)
        f.update(issued.fp, visited(), Plan(wait))


def drain(f: Frontier, clock: Clock, seconds: float, step: float = 0.05) -> list[tuple[float, str, int]]:
    """Issue whatever is due every *step* seconds for *seconds*, each answered
    at once (planned far away): (time, url, visits before) of each issue."""
    out = []
    end = clock.t + seconds
    while clock.t < end:
        while (issued := f.next()) is not None:
            out.append((clock.t, issued.record.url, issued.record.visits))
            f.downloads.fetch_ended(issued.fp, 0.0)
            f.update(issued.fp, visited(), Plan(10_000.0))
        clock.t += step
    return out


def test_planned_revisits_go_no_faster_than_the_ceiling(store: Store) -> None:
    clock = Clock()
    f = gated(store, clock, per_second=2.0)
    urls = [f"http://h{i}/p" for i in range(200)]
    first_visits(f, clock, urls, wait=100.0)
    clock.t += 100 + BURST_SECONDS  # every URL due; the bucket full
    issued = drain(f, clock, 60.0)
    revisits = [t for t, _, visits in issued if visits]
    start = revisits[0]
    # the bucket's BURST_SECONDS of the budget at once, then two a second
    assert len(revisits) <= 2.0 * BURST_SECONDS + 2.0 * 60.0 + 1
    assert len(revisits) >= 2.0 * BURST_SECONDS + 2.0 * 59.0
    late = [t for t in revisits if t >= start + 1.0]
    assert len(late) <= 2.0 * (late[-1] - start) + 1


def test_first_visits_are_not_held_behind_revisits_waiting_for_the_budget(store: Store) -> None:
    clock = Clock()
    f = gated(store, clock, per_second=0.01)  # one revisit every 100 s
    first_visits(f, clock, [f"http://old{i}/p" for i in range(20)], wait=10.0)
    clock.t += 20  # every revisit due, one token in the bucket
    for i in range(20):
        add(f, f"http://new{i}/p")
    issued = drain(f, clock, 1.0)
    new = [url for _, url, visits in issued if not visits]
    old = [url for _, url, visits in issued if visits]
    assert len(new) == 20 and len(old) == 1
    # the parked queues wait for their token: the frontier says when
    ready = f.next_ready_time()
    assert ready is not None and clock.t < ready <= clock.t + 100


def test_a_parked_queue_goes_again_when_its_token_comes_the_one_parked_longest_first(store: Store) -> None:
    clock = Clock()
    f = gated(store, clock, per_second=0.5)
    urls = [f"http://h{i}/p" for i in range(int(0.5 * BURST_SECONDS) + 4)]
    first_visits(f, clock, urls, wait=5.0)
    clock.t += 5
    burst = drain(f, clock, 0.1)
    assert len(burst) == int(0.5 * BURST_SECONDS)
    ready = f.next_ready_time()
    assert ready is not None
    clock.t = ready
    nxt = f.next()
    assert nxt is not None and nxt.record.visits == 1
    assert f.next() is None  # the next token is two seconds away


def test_a_url_the_spider_asks_for_again_goes_without_a_token_an_embed_waits_for_one(store: Store) -> None:
    clock = Clock()
    f = gated(store, clock, per_second=0.01)  # a bucket of one token, the next 100 s later
    first_visits(f, clock, ["http://a/x", "http://b/y", "http://c/z", "http://d/w"], wait=10_000.0)
    clock.t += 10

    def issue() -> bytes | None:
        issued = f.next()
        if issued is None:
            return None
        f.downloads.fetch_ended(issued.fp, 0.0)
        f.update(issued.fp, visited(), Plan(10_000.0))
        return issued.fp

    add(f, "http://a/x", force=True)  # the spider asked for it again (dont_filter)
    add(f, "http://c/z", force=True, priority=5)  # asked again, prioritised
    assert {issue(), issue()} == {fp("http://a/x"), fp("http://c/z")}
    add(f, "http://b/y", directive=EMBED_DIRECTIVE, with_page=True)  # an embed of a page captured anew
    assert issue() == fp("http://b/y")  # the bucket's one token
    add(f, "http://d/w", directive=EMBED_DIRECTIVE, with_page=True)
    assert issue() is None  # a revisit the budget pays for: it waits for its token
    ready = f.next_ready_time()
    assert ready is not None and clock.t < ready <= clock.t + 100
    clock.t = ready
    assert issue() == fp("http://d/w")


def test_no_ceiling_no_gate(store: Store) -> None:
    clock = Clock()
    politeness = Politeness(delay_factor=0, min_delay=0, max_delay=0, valence=1, lease=60.0)
    f = Frontier(store, politeness, clock=clock)
    first_visits(f, clock, [f"http://h{i}/p" for i in range(50)], wait=10.0)
    clock.t += 10
    assert len(drain(f, clock, 0.06)) == 50


@settings(max_examples=50, deadline=None)
@given(
    rate=st.floats(0.01, 50.0),
    gaps=st.lists(st.floats(0.0, 20.0), min_size=1, max_size=200),
)
def test_the_bucket_never_admits_more_than_its_size_plus_the_rate(rate: float, gaps: list[float]) -> None:
    gate = RevisitGate(rate, 0.0)
    now, taken = 0.0, 0
    for gap in gaps:
        now += gap
        taken += gate.take(now)
        assert taken <= gate.size + rate * now + 1e-9
        assert gate.open_at(now) >= now


def test_parked_queues_leave_in_the_order_they_came() -> None:
    gate = RevisitGate(1.0, 0.0)
    while gate.take(0.0):
        pass
    for name in ("a", "b", "c"):
        gate.park(HostQueue(name=name, valence=1))
    assert gate.unpark(0.0) is None  # no token yet
    assert gate.waiting() == 1.0
    unparked = gate.unpark(1.0)
    assert unparked is not None and unparked.name == "a"
    assert gate.take(1.0)
    assert gate.unpark(1.5) is None
    unparked = gate.unpark(2.0)
    assert unparked is not None and unparked.name == "b" and len(gate) == 1


def test_the_shape_says_how_many_queues_wait_for_the_budget(store: Store) -> None:
    clock = Clock()
    f = gated(store, clock, per_second=0.01)  # one token, the next 100 s later
    first_visits(f, clock, [f"http://h{i}/p" for i in range(4)], wait=5.0)
    clock.t += 5
    assert len(drain(f, clock, 0.1)) == 1
    assert f.shape()["budget_waiting"] == 3


def test_a_fleet_worker_holds_the_share_it_is_given(store: Store) -> None:
    """A fleet's worker is given the budget over the live workers at every
    tick (``ShareBudget``): the ceiling moves with it."""
    clock = Clock()
    f = gated(store, clock, per_second=4.0)
    first_visits(f, clock, [f"http://h{i}/p" for i in range(300)], wait=5.0)
    clock.t += 5 + BURST_SECONDS
    f.set_revisit_ceiling(1.0)  # a second worker joined... and two more
    issued = [t for t, _, visits in drain(f, clock, 40.0) if visits]
    assert len(issued) <= 1.0 * BURST_SECONDS + 40 + 1  # the bucket cut to the new size, then one a second
    assert len(issued) >= 40 - 1


def test_a_hosts_new_urls_go_while_its_overdue_revisits_wait_for_the_budget(store: Store) -> None:
    """New URLs sort behind every revisit of their host that fell due before
    them: with the revisits held back they must not wait for the backlog."""
    clock = Clock()
    f = gated(store, clock, per_second=0.01)  # one token, the next 100 s later
    first_visits(f, clock, [f"http://a/old{i}" for i in range(100)], wait=5.0)
    clock.t += 10  # all 100 revisits due
    for i in range(5):
        add(f, f"http://a/new{i}")
    issued = drain(f, clock, 1.0)
    assert sorted(url for _, url, visits in issued if not visits) == [f"http://a/new{i}" for i in range(5)]
    assert len([url for _, url, visits in issued if visits]) == 1  # the one token
    clock.t += 1
    add(f, "http://a/new5")  # found later: the look goes on from where it stopped
    issued = drain(f, clock, 0.5)
    assert [url for _, url, _ in issued] == ["http://a/new5"]
    assert f.shape()["budget_waiting"] == 1
