"""``Request.priority`` orders a queue's due URLs (issue 47), run against
both stores: a higher priority first, equal priorities first in first out,
revisits by the priority of their stored request; a priority never makes a
URL due, and a queue where nobody used one pays nothing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_adaptive.frontier import AddResult, Frontier, MemoryStore, Store
from scrapy_adaptive.frontier import priority as priority_module
from scrapy_adaptive.frontier.priority import directive_of
from scrapy_adaptive.model import Plan
from scrapy_adaptive.store.keys import EMBED_DIRECTIVE, PRIORITY_SPAN, PROBE_DIRECTIVE, SCHEDULED, time_to_ms
from tests.hypo import examples
from tests.unit.frontier.test_frontier import Clock, fp, make, visited


def add(f: Frontier, url: str, priority: int = 0, **kw: object) -> AddResult:
    request = {"url": url, "priority": priority} if priority else {"url": url}
    return f.add(fp(url), url, url.split("/")[2], request, priority=priority, **kw)  # type: ignore[arg-type]


def issue_all(f: Frontier, clock: Clock, wait: float = 1000.0, step: float = 0.0) -> list[str]:
    """Issue every due URL in turn (valence 1, no politeness delay), each
    visited and planned *wait* seconds later, *step* seconds apart; their
    URLs in issue order."""
    urls = []
    for _ in range(100):
        issued = f.next()
        if issued is None:
            break
        urls.append(issued.record.url)
        f.update(issued.fp, visited(), Plan(wait))
        clock.t += step
    return urls


def fast(store: Store, clock: Clock) -> Frontier:
    return make(store, clock, min_delay=0, max_delay=0, delay_factor=0)


def test_new_urls_go_by_priority_then_in_the_order_they_came(store: Store) -> None:
    """Scrapy's own order test: added at the same instant, a higher priority
    first, equal priorities first in first out (their fingerprints sort
    otherwise: it was [1,5,2,6,4,3] one run, [1,2,5,3,4,6] the next)."""
    clock = Clock()
    f = fast(store, clock)
    for n, priority in [(2, 1), (5, 0), (6, 0), (3, 1), (4, 1), (7, -1), (8, -1)]:
        add(f, f"http://a/{n}", priority)
    assert issue_all(f, clock) == [f"http://a/{n}" for n in (2, 3, 4, 5, 6, 7, 8)]


def test_equal_priorities_keep_their_order_whatever_their_fingerprints(store: Store) -> None:
    clock = Clock()
    f = fast(store, clock)
    urls = [f"http://a/{n}" for n in range(40)]
    for url in urls:
        add(f, url)
    assert issue_all(f, clock) == urls


def test_depth_priority_crawls_breadth_first(store: Store) -> None:
    """DEPTH_PRIORITY=1 gives a request found at depth d the priority -d:
    every page of a depth before any of the next, however they were found."""
    clock = Clock()
    f = fast(store, clock)
    add(f, "http://a/d1-x", -1)
    add(f, "http://a/d2-x", -2)
    add(f, "http://a/d1-y", -1)
    add(f, "http://a/d3-x", -3)
    add(f, "http://a/d2-y", -2)
    assert issue_all(f, clock) == [
        "http://a/d1-x",
        "http://a/d1-y",
        "http://a/d2-x",
        "http://a/d2-y",
        "http://a/d3-x",
    ]


def test_a_due_revisit_goes_by_the_priority_of_its_stored_request(store: Store) -> None:
    clock = Clock()
    f = fast(store, clock)
    add(f, "http://a/low", -5)
    add(f, "http://a/high", 5)
    add(f, "http://a/plain")
    assert issue_all(f, clock, wait=100) == ["http://a/high", "http://a/plain", "http://a/low"]
    clock.t += 200  # all three due again, and two new URLs with them
    add(f, "http://a/new-plain")
    add(f, "http://a/new-low", -1)
    order = issue_all(f, clock, wait=100)
    # the revisits were due first: among equal priorities they go first
    assert order == ["http://a/high", "http://a/plain", "http://a/new-plain", "http://a/new-low", "http://a/low"]
    for url in order:  # back in time order between visits
        record = f.get_record("a", fp(url))
        assert record is not None and record.directive == SCHEDULED


def test_a_priority_never_makes_a_url_due_nor_holds_its_queue(store: Store) -> None:
    """A high-priority revisit not yet due must not sort ahead of the queue's
    due URLs (it would hold the queue until its own time)."""
    clock = Clock()
    f = fast(store, clock)
    add(f, "http://a/high", 9)
    assert issue_all(f, clock, wait=1000) == ["http://a/high"]
    add(f, "http://a/low", -9)
    add(f, "http://a/plain")
    assert issue_all(f, clock) == ["http://a/plain", "http://a/low"]
    assert add(f, "http://a/high", 9) is AddResult.DUPLICATE  # asked again, not forced: keeps its time
    assert f.next() is None
    clock.t += 1000
    assert issue_all(f, clock)[0] == "http://a/high"


def test_a_forced_known_url_takes_its_request_priority(store: Store) -> None:
    clock = Clock()
    f = fast(store, clock)
    add(f, "http://a/1")
    add(f, "http://a/2")
    assert issue_all(f, clock, wait=1000) == ["http://a/1", "http://a/2"]
    add(f, "http://a/3")
    add(f, "http://a/2", 3, force=True)  # dont_filter, priority 3
    assert issue_all(f, clock) == ["http://a/2", "http://a/3"]


def test_probes_and_embeds_go_before_every_priority() -> None:
    assert (
        PROBE_DIRECTIVE > EMBED_DIRECTIVE > directive_of(10**9) > directive_of(0) > directive_of(-(10**9)) > SCHEDULED
    )
    assert directive_of(PRIORITY_SPAN + 1) == directive_of(PRIORITY_SPAN)


def test_a_backlog_of_due_revisits_moves_over_a_few_per_issue(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """More due revisits than one issue moves (PROMOTE, made 8 here): the
    rest move on the next issues, none is lost and the order holds."""
    monkeypatch.setattr(priority_module, "PROMOTE", 8)
    clock = Clock()
    f = fast(store, clock)
    urls = [f"http://a/{n:03d}" for n in range(8 * 3)]
    for url in urls:
        add(f, url, 1)
    assert issue_all(f, clock, wait=50, step=0.01) == urls  # due again in the same order
    clock.t += 100
    add(f, "http://a/late", 1)  # equal priority, due after all of them
    assert issue_all(f, clock, wait=50) == [*urls, "http://a/late"]


def test_a_queue_without_priorities_keeps_the_time_order_alone(store: Store) -> None:
    clock = Clock()
    f = fast(store, clock)
    add(f, "http://a/1")
    add(f, "http://b/1", 2)
    issue_all(f, clock, wait=10)
    clock.t += 20
    assert f.book.get("a").prioritized == 0 and f.book.get("b").prioritized == 1
    issued = f.next()
    assert issued is not None
    # queue a's due revisit went out from the time-ordered band, not moved
    assert {issued.record.url: issued.record.directive}.get("http://a/1", SCHEDULED) == SCHEDULED


def test_the_priority_count_survives_a_restart(store: Store) -> None:
    clock = Clock()
    f = fast(store, clock)
    add(f, "http://a/1", 4)
    again = fast(store, clock)
    again.load()
    assert again.book.get("a").prioritized == 1


@settings(max_examples=examples(60), deadline=None)
@given(
    steps=st.lists(
        st.one_of(
            st.tuples(st.just("add"), st.sampled_from(["a", "b"]), st.integers(0, 9), st.integers(-3, 3)),
            st.tuples(st.just("tick"), st.sampled_from([0.0, 0.001, 1.0, 30.0])),
            st.tuples(st.just("issue"), st.sampled_from([5.0, 60.0, 600.0])),
        ),
        max_size=80,
    )
)
def test_what_is_issued_has_the_highest_priority_of_its_queue_s_due_urls(steps: list[tuple]) -> None:
    """Whatever the order of adds, clock moves and visits: an issued URL's
    priority is the highest among its queue's due URLs not out, and of
    those, it was due no later than any URL of the same priority (first in,
    first out; no wait is late enough here for the urgency weighing).  A
    fresh store per example (the two stores answer alike: tests/contract)."""
    clock = Clock()
    f = fast(MemoryStore(), clock)
    urls: dict[bytes, tuple[str, int]] = {}  # fp -> (queue, priority of the request stored first)
    for step in steps:
        if step[0] == "add":
            _, host, n, priority = step
            url = f"http://{host}/{n}"
            if add(f, url, priority) is AddResult.NEW:
                urls[fp(url)] = (host, priority)
        elif step[0] == "tick":
            clock.t += step[1]
        else:
            now_ms = time_to_ms(clock.t)
            due = {
                key: (queue, priority, record.next_ms)
                for key, (queue, priority) in urls.items()
                if (record := f.get_record(queue, key)) is not None and record.next_ms <= now_ms
            }
            issued = f.next()
            if issued is None:
                assert not due, "a due URL was not issued"
                continue
            queue, priority, due_ms = due[issued.fp]
            rivals = [v for k, v in due.items() if v[0] == queue and k != issued.fp]
            assert all(p <= priority for _, p, _ in rivals), "a higher priority was due"
            assert all(ms >= due_ms for _, p, ms in rivals if p == priority), "an equal priority was due first"
            f.update(issued.fp, visited(), Plan(step[1]))
