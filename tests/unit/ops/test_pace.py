"""The summary and the report say where the budget comes from and which setting decides the next revisit."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import pytest
from scrapy.crawler import Crawler
from scrapy.utils.test import get_crawler

from scrapy_adaptive.frontier import Frontier, MemoryStore, Outcome, Politeness, Visit
from scrapy_adaptive.model import Plan
from scrapy_adaptive.ops.console.run import report_lines
from scrapy_adaptive.ops.console.schedule_command import ScheduleConsole
from scrapy_adaptive.ops.pace import CAPACITY, CONFIGURED, PRECISION, Pace, next_due, wait_setting
from scrapy_adaptive.ops.reporting import Reporter
from scrapy_adaptive.policies.allocator import RateAllocator
from scrapy_adaptive.policies.schedules import Schedules
from tests.unit.frontier.test_frontier import Clock, add, make, visited

#: a capacity budget of 43,200 revisits a day, the bounds of a crawl with ADAPTIVE_WAIT_MIN = 100
CAPACITY_PACE = Pace(43_200.0, CAPACITY, capacity_per_day=86_400.0, share=0.5, wait_min=100.0, wait_max=86_400.0)


@pytest.mark.parametrize(
    ("wait", "outcome", "pace", "setting"),
    [
        (100.0, "visited", CAPACITY_PACE, "ADAPTIVE_WAIT_MIN"),
        (86_400.0, "visited", CAPACITY_PACE, "ADAPTIVE_WAIT_MAX"),
        (900.0, "retry", CAPACITY_PACE, "ADAPTIVE_RETRY_DELAY"),
        (500.0, "visited", CAPACITY_PACE, "ADAPTIVE_CAPACITY_SHARE"),
        (500.0, "visited", Pace(43_200.0, CAPACITY, precision_binds=True, wait_min=100.0), "ADAPTIVE_TARGET_PRECISION"),
        (500.0, "visited", Pace(240.0, CONFIGURED, wait_min=100.0), "ADAPTIVE_BUDGET"),
        (500.0, "visited", Pace(None, PRECISION, wait_min=100.0), "ADAPTIVE_TARGET_PRECISION"),
    ],
)
def test_the_setting_that_decided_a_wait_is_named(wait: float, outcome: str, pace: Pace, setting: str) -> None:
    assert wait_setting(wait, outcome, pace) == setting


def test_nothing_scheduled_while_urls_are_being_fetched_says_so() -> None:
    """Every crawl's first summary said "next URL due (none scheduled)" while
    its start URL was being fetched: it read as a crawl with nothing to do."""
    clock = Clock()
    f = make(MemoryStore(), clock)
    assert next_due(f, clock.t, CAPACITY_PACE) == "(none scheduled)"
    add(f, "http://h/a.html")
    assert f.next() is not None
    assert next_due(f, clock.t, CAPACITY_PACE) == "(none scheduled; 1 URL being fetched)"


def test_a_first_visit_put_off_by_a_failed_fetch_names_the_retry_delay() -> None:
    """A site that refused the first fetch: "due in 15m (a first visit)"
    alone reads as a crawl waiting for nothing; the line says it is a retry."""
    clock = Clock()
    f = make(MemoryStore(), clock, retry_delay=900)
    add(f, "http://h/a.html")
    issued = f.next()
    assert issued is not None
    f.update(issued.fp, Visit(Outcome.RETRY, reason="refused"), None)
    assert (
        next_due(f, clock.t, CAPACITY_PACE)
        == "in 15m (a first visit, retried after a failed fetch: ADAPTIVE_RETRY_DELAY)"
    )
    clock.t += 900  # then visited; a retry of a page visited before is a revisit
    issued = f.next()
    assert issued is not None
    f.update(issued.fp, visited(), Plan(100.0))
    clock.t += 100
    issued = f.next()
    assert issued is not None
    f.update(issued.fp, Visit(Outcome.RETRY, reason="refused"), None)
    assert next_due(f, clock.t, CAPACITY_PACE) == "in 15m (revisit, ADAPTIVE_RETRY_DELAY)"


def summarised(
    f: Frontier, clock: Clock, tmp_path: Path, caplog: pytest.LogCaptureFixture, allocator: Any = None
) -> Crawler:
    """One summary of *f* under a capacity budget, logged into *caplog*; the crawler holding its stats."""
    crawler = get_crawler()
    crawler.stats.open_spider()
    reporter = Reporter(
        f, crawler.stats, allocator=allocator, state_path=str(tmp_path), interval=60.0, clock=clock,
        pace=lambda: CAPACITY_PACE,
    )  # fmt: skip
    with caplog.at_level(logging.INFO, logger="scrapy_adaptive.ops.reporting"):
        reporter.summary()
    return crawler


def test_the_summary_names_the_capacity_budget_and_the_setting_of_the_next_revisit(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    clock = Clock()
    f = make(MemoryStore(), clock)
    add(f, "http://h/a.html")
    assert next_due(f, clock.t, CAPACITY_PACE) == "now (a first visit)"
    issued = f.next()
    assert issued is not None
    f.update(issued.fp, visited(), Plan(100.0))  # the policy cut it to ADAPTIVE_WAIT_MIN
    crawler = summarised(f, clock, tmp_path, caplog)
    # the frontier line counts the URLs never visited again in the report's words
    assert "Frontier: 1 URL (0 never again) in 1 queue: " in caplog.text
    assert (
        "Budget: 43200 revisits/day from politeness capacity (ADAPTIVE_CAPACITY_SHARE 0.5 of 86400 fetches/day; "
        "ADAPTIVE_BUDGET overrides it)" in caplog.text
    )
    assert re.search(r"next URL due in 1\.\dm \(revisit, ADAPTIVE_WAIT_MIN\)", caplog.text), caplog.text
    assert crawler.stats.get_value("adaptive/budget/per_day") == 43_200.0
    assert crawler.stats.get_value("adaptive/budget/capacity_per_day") == 86_400.0
    # `scrapy frontier report` prints the same two facts
    lines = report_lines(ScheduleConsole(f, schedules=Schedules(), pace=lambda: CAPACITY_PACE).report())
    budget = next(line for line in lines if line.startswith("budget: "))
    assert "from politeness capacity" in budget and "(revisit, ADAPTIVE_WAIT_MIN)" in budget, budget


def test_the_summary_says_how_long_revisits_run_before_the_spending_is_measured(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Until the allocator's control window has passed, the budget line says
    when the spending will be known, not a bare "not measured yet"."""
    clock = Clock()
    # the default ADAPTIVE_BUDGET_WINDOW: the time the budget takes to buy 720 revisits, 24 minutes here
    allocator = RateAllocator(43_200 / 86_400, control_window=None, epoch="t")
    summarised(make(MemoryStore(), clock), clock, tmp_path, caplog, allocator=allocator)
    words = "; spending not measured yet (needs at least 24m of revisits: ADAPTIVE_BUDGET_WINDOW); 0 hosts"
    assert words in caplog.text


def test_the_budget_line_says_how_many_queues_wait_for_a_revisit_token(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``ADAPTIVE_BUDGET`` is a ceiling: the queues parked for a token are said and counted."""
    clock = Clock()
    politeness = Politeness(delay_factor=0, min_delay=0, max_delay=0, valence=1, lease=60.0)
    f = Frontier(MemoryStore(), politeness, clock=clock, revisit_ceiling=0.01)  # one token, then one per 100 s
    for host in ("a", "b", "c"):
        add(f, f"http://{host}/p")
    for _ in range(3):
        issued = f.next()
        assert issued is not None
        f.update(issued.fp, visited(), Plan(5.0))
    clock.t += 5
    assert f.next() is not None and f.next() is None  # one revisit went, two queues wait
    crawler = summarised(f, clock, tmp_path, caplog)
    assert "2 queues waiting for the budget's next revisit" in caplog.text
    assert crawler.stats.get_value("adaptive/budget/waiting_queues") == 2
