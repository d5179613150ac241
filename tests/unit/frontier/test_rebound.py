"""A crawl resumed with a lower ADAPTIVE_WAIT_MIN or ADAPTIVE_WAIT_MAX brings
the visits planned under the old bound within the new one."""

from __future__ import annotations

from typing import Any

from scrapy_adaptive.frontier import Store
from scrapy_adaptive.frontier.bring_forward import BOUNDS_KEY, rebound
from scrapy_adaptive.store.base import Batch
from tests.unit.frontier.test_frontier import Clock, make
from tests.unit.runtime.test_open_schedules import DAY, crawled, planned


def test_a_lower_minimum_brings_forward_the_urls_it_held_and_only_those(store: Store) -> None:
    clock = Clock()
    f = make(store, clock, min_delay=0.0, max_delay=0.0, valence=4)
    assert rebound(f, 3600.0, 365 * DAY) == (0, None)  # the first run records its bounds
    held = ["http://a/1", "http://a/2"]
    crawled(f, clock, held, wait=3600.0)  # at the old minimum
    crawled(f, clock, ["http://a/slow"], wait=2 * DAY)  # the policy's own plan
    fetched = clock.t
    assert rebound(f, 20.0, 365 * DAY) == (2, (3600.0, 365 * DAY))
    assert all(planned(f, u) <= fetched + 20.0 for u in held)
    assert planned(f, "http://a/slow") > clock.t + DAY
    assert rebound(f, 20.0, 365 * DAY) == (0, None)  # recorded: the next start moves nothing


def test_a_lower_maximum_caps_every_plan_and_raised_bounds_move_nothing(store: Store) -> None:
    clock = Clock()
    f = make(store, clock, min_delay=0.0, max_delay=0.0, valence=4)
    rebound(f, 60.0, 365 * DAY)
    crawled(f, clock, ["http://a/quiet"], wait=200 * DAY)
    crawled(f, clock, ["http://a/busy"], wait=600.0)
    assert rebound(f, 60.0, 7 * DAY) == (1, (60.0, 365 * DAY))
    assert clock.t < planned(f, "http://a/quiet") <= clock.t + 7 * DAY
    before = planned(f, "http://a/busy")
    assert rebound(f, 3600.0, 30 * DAY) == (0, (60.0, 7 * DAY))  # raised: from each URL's next visit
    assert planned(f, "http://a/busy") == before


def test_unreadable_bounds_are_replaced_without_moving_anything(store: Store, caplog: Any) -> None:
    clock = Clock()
    f = make(store, clock)
    store.write(Batch(meta={BOUNDS_KEY: b"not json"}))
    caplog.set_level("WARNING", logger="scrapy_adaptive")
    assert rebound(f, 60.0, DAY) == (0, None)
    [said] = [r.getMessage() for r in caplog.records]
    assert "m/wait-bounds" in said and "ADAPTIVE_WAIT_MIN" in said  # not silent
    assert store.get_meta(BOUNDS_KEY) == b"[60.0, 86400.0]"
