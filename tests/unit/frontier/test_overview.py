"""The frontier at a glance: queue states, URLs due (capped), and how late the
URLs due now are."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_adaptive.frontier import Store
from scrapy_adaptive.frontier.hostqueue import ARRIVAL_LEAD_MS
from scrapy_adaptive.frontier.overview import frontier_shape, percentile
from scrapy_adaptive.model import Plan
from tests.hypo import examples
from tests.unit.frontier.test_frontier import Clock, add, make, visit_once, visited


def test_percentile_of_nothing_is_none() -> None:
    assert percentile([], 0.5) is None


@settings(max_examples=examples(90))
@given(st.lists(st.floats(0, 1e6), min_size=1, max_size=50), st.floats(0, 1))
def test_a_percentile_is_a_sample_with_that_share_below_it(values: list[float], q: float) -> None:
    ordered = sorted(values)
    p = percentile(ordered, q)
    assert p in ordered
    below = sum(1 for v in ordered if v < p)
    assert below <= q * len(ordered)
    assert percentile(ordered, 1.0) == ordered[-1] and percentile(ordered, 0.0) == ordered[0]


def test_the_shape_counts_queue_states_and_the_urls_due(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    for url in ("http://a/1", "http://a/2", "http://b/1", "http://c/1"):
        add(f, url)
    issued = f.next()
    assert issued is not None and issued.record.queue == "a"
    f.update(issued.fp, visited(), Plan(3600.0))
    c = f.next()
    assert c is not None
    clock.t += 30
    shape = frontier_shape(f)
    # a: one due (a/2), b: one due, c: busy with its one URL out
    assert (shape["queues"], shape["due"], shape["out"], shape["due_capped"]) == (3, 2, 1, False)
    assert (shape["ready"], shape["busy"], shape["snoozed"], shape["empty"]) == (2, 1, 0, 0)
    assert (shape["urls"], shape["visits"], shape["versions"], shape["never"]) == (4, 1, 1, 0)
    # a first visit's time is its place in line, up to ARRIVAL_LEAD_MS before it was added
    assert shape["overdue_p50"] == pytest.approx(30.0, abs=(ARRIVAL_LEAD_MS + 1) / 1000)
    assert shape["overdue_p95"] == shape["overdue_p50"]
    assert f.shape() == {**shape, "budget_waiting": 0}  # no ADAPTIVE_BUDGET: no queue waits for it


def test_due_urls_are_counted_up_to_the_limit(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    for n in range(5):
        add(f, f"http://a/{n}")
        add(f, f"http://b/{n}")
    clock.t += 1
    assert frontier_shape(f)["due"] == 10
    capped = frontier_shape(f, due_limit=3)
    assert capped["due"] == 3 and capped["due_capped"]


def test_nothing_due_means_no_overdue_figures(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    visit_once(f, "http://a/1", wait=3600.0)
    shape = frontier_shape(f)
    assert shape["due"] == 0 and shape["overdue_p50"] is None and shape["overdue_p95"] is None
    assert shape["snoozed"] == 1
