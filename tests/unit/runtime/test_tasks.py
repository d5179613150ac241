"""The scheduler's once-a-second tick: its tasks in order, each run alone over
a real scheduler's runtime (real LevelDB state folder, no crawl)."""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import SimpleNamespace

import pytest
from scrapy import Request

from scrapy_adaptive.frontier import Frontier, Outcome
from scrapy_adaptive.frontier.sharing import Sharing
from scrapy_adaptive.integration.scheduler import AdaptiveScheduler
from scrapy_adaptive.policies.allocator import RateAllocator
from scrapy_adaptive.policies.budget_pace import BudgetPace
from scrapy_adaptive.policies.crawl_state import CrawlWide
from scrapy_adaptive.policies.history import DAY
from scrapy_adaptive.runtime.stop_grace import StopGrace
from scrapy_adaptive.runtime.tasks import AbandonOnStop, LapsedLeases, ShareBudget, Tick
from scrapy_adaptive.store.base import StoreError
from tests.unit.frontier.test_frontier import Clock
from tests.unit.frontier.test_sharedhosts import BoardStore
from tests.unit.integration.test_scheduler import Pages, build, drain, in_loop

LEASE = 0.05


class Step:
    """A task that notes its run and may fail."""

    def __init__(self, name: str, ran: list[str], error: Exception | None = None) -> None:
        self.name, self.ran, self.error = name, ran, error

    def run(self) -> None:
        self.ran.append(self.name)
        if self.error is not None:
            raise self.error


def test_the_tick_runs_its_tasks_in_order_every_time() -> None:
    ran: list[str] = []
    tick = Tick([Step("a", ran), Step("b", ran)], on_store_error=lambda exc: pytest.fail(str(exc)))
    tick()
    tick()
    assert ran == ["a", "b", "a", "b"]


def test_a_store_failure_stops_the_tick_and_is_handed_on() -> None:
    ran: list[str] = []
    failures: list[StoreError] = []
    error = StoreError("No space left on device")
    tick = Tick([Step("a", ran, error), Step("b", ran)], on_store_error=failures.append)
    tick()
    assert ran == ["a"] and failures == [error]


def test_any_other_failure_is_logged_and_the_next_tick_runs_again(caplog: pytest.LogCaptureFixture) -> None:
    ran: list[str] = []
    failures: list[StoreError] = []
    tick = Tick([Step("a", ran, ValueError("boom")), Step("b", ran)], on_store_error=failures.append)
    with caplog.at_level(logging.ERROR, logger="scrapy_adaptive.runtime.tasks"):
        tick()
        tick()
    assert ran == ["a", "a"] and failures == []
    assert [r.getMessage() for r in caplog.records] == ["scrapy-adaptive periodic task failed"] * 2


def lapse_task(scheduler: AdaptiveScheduler, wake: list[bool], grace: StopGrace | None = None) -> LapsedLeases:
    assert scheduler.runtime is not None
    grace = grace or StopGrace(1.0, None)
    scheduler.runtime.verdicts.on_change = lambda: wake.append(True)  # the engine is woken after each verdict
    return LapsedLeases(scheduler.runtime, scheduler.issued, grace, scheduler.stats, LEASE)


@contextmanager
def one_url_out(tmp_path: Path, **settings: object) -> Iterator[tuple[AdaptiveScheduler, Request]]:
    """A real scheduler on a state folder in *tmp_path*, one URL issued."""
    scheduler = build(tmp_path, ADAPTIVE_LEASE=LEASE, **settings)
    scheduler.open(Pages())
    try:
        scheduler.enqueue_request(Request("http://a.example/x"))
        (request,) = drain(scheduler)
        yield scheduler, request
    finally:
        scheduler.close("finished")


@in_loop
def test_a_lapsed_lease_is_a_retry_counted_and_due_again(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with one_url_out(tmp_path, ADAPTIVE_RETRY_DELAY=0) as (scheduler, request):
        frontier = scheduler.frontier
        assert frontier is not None
        wake: list[bool] = []
        task = lapse_task(scheduler, wake)
        task.run()
        assert frontier.counts().out == 1  # not lapsed yet
        time.sleep(LEASE * 2)
        with caplog.at_level(logging.WARNING, logger="scrapy_adaptive.runtime.tasks"):
            task.run()
        assert frontier.counts().out == 0
        assert scheduler.stats.get_value("adaptive/leases_expired") == 1
        assert any(
            "http://a.example/x" in r.getMessage() and "ADAPTIVE_LEASE" in r.getMessage() for r in caplog.records
        )
        record = frontier.get_record(*scheduler._where(request.url))
        assert record is not None and record.outcome == Outcome.RETRY.value and record.failures == 1
        task.run()  # once only
        assert scheduler.stats.get_value("adaptive/leases_expired") == 1
        assert [r.url for r in drain(scheduler)] == [request.url]  # due again after the retry delay


@in_loop
def test_a_lapsed_lease_whose_request_is_gone_is_settled_by_the_verdict_path(tmp_path: Path) -> None:
    with one_url_out(tmp_path) as (scheduler, request):
        fp = scheduler.issued.fp_of(request)
        assert fp is not None
        scheduler.issued.pop(fp)  # the request object is gone
        wake: list[bool] = []
        lapse_task(scheduler, wake).lapsed(fp)
        assert wake == [True]
        record = scheduler.frontier.get_record(*scheduler._where(request.url))  # type: ignore[union-attr]
        assert record is not None and record.failures == 1


@in_loop
def test_once_the_engine_stops_nothing_lapses(tmp_path: Path) -> None:
    with one_url_out(tmp_path) as (scheduler, _):
        grace = StopGrace(60.0, None)
        grace.stop_seen = time.monotonic()
        time.sleep(LEASE * 2)
        lapse_task(scheduler, [], grace).run()
        assert scheduler.frontier is not None and scheduler.frontier.counts().out == 1
        assert scheduler.stats.get_value("adaptive/leases_expired") is None
        AbandonOnStop(grace, scheduler.stats).run()  # no engine: nothing abandoned, nothing counted
        assert scheduler.stats.get_value("adaptive/abandoned") is None


def test_each_worker_of_a_fleet_spends_its_share_of_the_budget() -> None:
    clock = Clock()
    store = BoardStore(clock)
    frontier = Frontier(store, clock=clock, sharing=Sharing(store, "A", 5.0))
    crawl = CrawlWide(allocator=RateAllocator(budget=1.0), pace=BudgetPace(1.0))
    budget_per_day = 8_640.0
    task = ShareBudget(SimpleNamespace(frontier=frontier), crawl, budget_per_day)  # type: ignore[arg-type]
    task.run()
    # alone: the whole budget, to every part that spends it (the tick's task once left the pace out)
    assert crawl.allocator is not None and crawl.pace is not None
    assert crawl.allocator.budget == pytest.approx(budget_per_day / DAY)
    assert crawl.pace.budget == pytest.approx(budget_per_day / DAY)
    store.heartbeat("B", 5.0)
    assert frontier.sharing is not None and frontier.sharing.beat() is False
    task.run()
    assert crawl.allocator.budget == pytest.approx(budget_per_day / DAY / 2)
    assert crawl.pace.budget == pytest.approx(budget_per_day / DAY / 2)


def test_without_a_fleet_the_budget_is_left_alone() -> None:
    frontier = Frontier(BoardStore(Clock()))
    crawl = CrawlWide(allocator=RateAllocator(budget=1.0), pace=BudgetPace(1.0))
    ShareBudget(SimpleNamespace(frontier=frontier), crawl, 8_640.0).run()  # type: ignore[arg-type]
    assert crawl.allocator is not None and crawl.allocator.budget == 1.0
    assert crawl.pace is not None and crawl.pace.budget == 1.0
