"""The budget a crawl without ADAPTIVE_BUDGET takes from its politeness capacity.

Built directly on a real frontier (in-memory store) and the policy stack the
settings make, no crawl: the caps and the budget must follow the hosts met,
their Crawl-delays and their measured fetch times, and the allocator must
plan a small crawl at the minimum wait and a large one by change rate.
"""

from __future__ import annotations

import math

import pytest
from scrapy.settings import Settings

from scrapy_adaptive.config.settings import AdaptiveConfig
from scrapy_adaptive.frontier import Frontier, MemoryStore, Politeness
from scrapy_adaptive.frontier.capacity import HostCapacity, capacity_budget
from scrapy_adaptive.policies import load_wait_policy
from scrapy_adaptive.policies.allocator import RateAllocator
from scrapy_adaptive.policies.crawl_state import CrawlWide
from tests.unit.frontier.test_frontier import Clock, fp


def config(**values: object) -> AdaptiveConfig:
    return AdaptiveConfig.from_settings(Settings({f"ADAPTIVE_{k.upper()}": v for k, v in values.items()}))


def crawl_with(hosts: int, urls: int, *, min_delay: float = 2.0, **settings: object) -> tuple[Frontier, HostCapacity]:
    """A frontier with *urls* URLs on each of *hosts* hosts, capacity told to the default policy stack."""
    cfg = config(min_delay=min_delay, **settings)
    stack = load_wait_policy(cfg)
    frontier = Frontier(MemoryStore(), Politeness(min_delay=min_delay), clock=Clock())  # type: ignore[arg-type]
    share = None if cfg.budget is not None else cfg.capacity_share
    capacity = HostCapacity(frontier, stack.params.crawl, share=share)
    for h in range(hosts):
        for i in range(urls):
            url = f"http://h{h}/{i}"
            frontier.add(fp(url), url, f"h{h}", {"url": url})
            capacity.met(f"h{h}")
    return frontier, capacity


def test_the_budget_is_the_share_of_the_sum_of_the_hosts_caps() -> None:
    assert capacity_budget({}, 0.5) is None
    assert capacity_budget({"a": 0.5, "b": 0.25}, 0.5) == pytest.approx(0.375)


def test_without_a_budget_the_default_policy_gets_a_share_of_what_politeness_allows() -> None:
    _, capacity = crawl_with(hosts=4, urls=3, min_delay=2.0)
    allocator = capacity.crawl.allocator
    # 4 hosts × 1 fetch per 2 s, 0.9 of it for revisits
    assert capacity.total() == pytest.approx(2.0)
    assert capacity.budget == pytest.approx(1.8) and allocator.budget == pytest.approx(1.8) and allocator.ceiling
    _, half = crawl_with(hosts=4, urls=3, min_delay=2.0, capacity_share=0.5)
    assert half.budget == pytest.approx(1.0)


def test_a_crawl_delay_and_a_slow_host_lower_the_budget_as_they_are_learned() -> None:
    frontier, capacity = crawl_with(hosts=2, urls=3, min_delay=2.0, capacity_share=0.5)
    assert capacity.budget == pytest.approx(0.5)
    capacity.nominal("h0", 10.0)  # robots.txt: Crawl-delay 10
    assert capacity.budget == pytest.approx(0.5 * (0.1 + 0.5))
    for _ in range(5):  # h1 takes 2 s per fetch: a fetch starts every 2 + 2 s at best
        frontier.fetch_times.add("h1", 2.0)
    capacity.measured()
    assert capacity.caps["h1"] < 0.5
    assert capacity.budget == pytest.approx(0.5 * capacity.total())


def test_a_configured_budget_is_left_alone() -> None:
    _, capacity = crawl_with(hosts=3, urls=2, budget=240)
    assert not capacity.derived and capacity.budget is None
    assert capacity.crawl.allocator.budget == pytest.approx(240 / 86_400)
    assert not capacity.crawl.allocator.ceiling


def test_a_policy_without_a_budget_is_given_none() -> None:
    _, capacity = crawl_with(hosts=2, urls=2, wait_policy="scrapy_adaptive.policies.HeritrixWaitPolicy")
    assert not capacity.derived and capacity.budget is None


def test_the_snapback_pace_takes_the_capacity_budget_too() -> None:
    _, capacity = crawl_with(hosts=2, urls=2, wait_policy="scrapy_adaptive.policies.SnapBackWaitPolicy")
    assert capacity.crawl.pace.budget == pytest.approx(0.9)


def plan(urls: int, rates: list[float], budget: float) -> RateAllocator:
    """A capacity-budgeted allocator with *urls* URLs of one host per rate (changes per second)."""
    allocator = RateAllocator(None, min_wait=10.0, max_wait=10 * 86_400.0)
    CrawlWide(allocator=allocator).set_budget(budget, ceiling=True)
    for rate in rates:
        for _ in range(urls):
            allocator.register({}, "h", rate)
    allocator.solve()
    return allocator


def test_a_small_crawl_revisits_at_the_minimum_wait_a_large_one_by_change_rate() -> None:
    # 20 pages: the capacity (5 revisits/s) could visit each every 4 s; the
    # minimum wait (10 s) and the target precision (a change 50 % likely) decide
    small = plan(10, [1 / 5, 1 / 600], budget=5.0)
    assert small.wait("h", 1 / 5) == pytest.approx(10.0)
    assert small.wait("h", 1 / 600) == pytest.approx(-math.log(0.5) * 600)
    # 100,000 pages: the same capacity is shared by change rate (proportional: wait ∝ 1/λ)
    large = plan(50_000, [1 / 600, 1 / 6000], budget=1.0)
    fast, slow = large.wait("h", 1 / 600), large.wait("h", 1 / 6000)
    assert fast > 10.0 and slow == pytest.approx(10 * fast)
    assert large.planned_rate() == pytest.approx(1.0, rel=0.02)
    assert not large.floor_binds()


def test_pages_that_never_change_are_not_fetched_to_spend_the_capacity() -> None:
    # a capacity far beyond what the changes need: the target precision is a floor on every wait
    allocator = plan(10, [1 / 86_400], budget=100.0)
    assert allocator.floor_binds()
    wait = allocator.wait("h", 1 / 86_400)
    assert wait == pytest.approx(-math.log(0.5) * 86_400)  # a change is expected with p = 0.5, not sooner
    assert allocator.planned_rate() < 1e-3
