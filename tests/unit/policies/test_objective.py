"""What the budget is spent for: the versions and freshness objectives' plans."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy.settings import Settings

from scrapy_adaptive.config.settings import AdaptiveConfig
from scrapy_adaptive.policies.allocator import RateAllocator
from scrapy_adaptive.policies.hint_decisions import marginal_value
from scrapy_adaptive.policies.objective import FRESHNESS, VERSIONS, marginal_inverse, objective_named
from scrapy_adaptive.policies.stack import PolicyStack

DAY = 86_400.0


def freshness(rate: float, f: float) -> float:
    """The time-averaged chance that a copy visited at *f* of a page changing at *rate* is current."""
    x = rate / f
    return -math.expm1(-x) / x


def captured(rate: float, f: float) -> float:
    """Versions a page changing at *rate* and visited at *f* gets captured per second."""
    return f * -math.expm1(-rate / f)


@given(st.floats(min_value=1e-9, max_value=1 - 1e-9))
def test_the_marginal_is_inverted(y: float) -> None:
    x = marginal_inverse(y)
    assert math.isfinite(x) and x >= 0
    assert marginal_value(x) == pytest.approx(y, rel=1e-7, abs=1e-12)


def test_the_marginal_inverse_at_its_edges() -> None:
    assert marginal_inverse(0.0) == 0.0
    assert math.isinf(marginal_inverse(1.0)) and math.isinf(marginal_inverse(2.0))


def plan(objective_name: str, rates: list[float], budget: float) -> list[float]:
    alloc = RateAllocator(
        budget, min_wait=1.0, max_wait=1e9, epoch="t", bins_per_octave=64, objective=objective_named(objective_name)
    )
    for rate in rates:
        alloc.register({}, "h", rate)
    alloc.solve()
    return [1 / alloc.wait("h", r) for r in rates]


def test_each_objective_beats_the_other_at_its_own_measure_on_the_same_budget() -> None:
    """Cho and Garcia-Molina: at one budget the freshness plan keeps the copy
    fresher, the proportional (versions) plan captures more versions."""
    rng = random.Random(3)
    rates = [math.exp(rng.gauss(math.log(1 / 3600), 1.5)) for _ in range(400)]
    budget = sum(rates) / 2  # half a fetch per change: the budget binds
    by_versions, by_freshness = plan("versions", rates, budget), plan("freshness", rates, budget)
    assert sum(by_versions) == pytest.approx(budget, rel=0.03)
    assert sum(by_freshness) == pytest.approx(budget, rel=0.03)
    fresh_v = sum(freshness(r, f) for r, f in zip(rates, by_versions)) / len(rates)
    fresh_f = sum(freshness(r, f) for r, f in zip(rates, by_freshness)) / len(rates)
    versions_v = sum(captured(r, f) for r, f in zip(rates, by_versions))
    versions_f = sum(captured(r, f) for r, f in zip(rates, by_freshness))
    assert fresh_f > fresh_v * 1.02, (fresh_f, fresh_v)
    assert versions_v > versions_f * 1.02, (versions_v, versions_f)


def test_under_freshness_every_page_has_the_same_marginal_freshness_and_the_fastest_get_least() -> None:
    rates = [1 / 60, 1 / 600, 1 / 3600, 1 / 36_000, 1 / 360_000]
    budget = 0.002
    alloc = RateAllocator(budget, min_wait=1.0, max_wait=1e9, epoch="t", bins_per_octave=256, objective=FRESHNESS)
    for rate in rates:
        alloc.register({}, "h", rate)
    alloc.solve()
    waits = [alloc.wait("h", r) for r in rates]
    mu = alloc.ratio_for("h")
    for rate, wait in zip(rates, waits):
        x = rate * wait
        if wait < 1e9:  # visited: ∂F/∂f = g(x)/λ is μ for every visited page
            assert marginal_value(x) / rate == pytest.approx(mu, rel=0.02)
        else:  # too fast to keep fresh: μλ ≥ 1
            assert mu * rate >= 1
    # the page changing every minute is left at the slowest rate; an hourly one is visited most often
    assert waits[0] == 1e9 and min(waits) in (waits[1], waits[2])
    # the versions objective would visit the fastest most often
    versions = RateAllocator(budget, min_wait=1.0, max_wait=1e9, epoch="t", bins_per_octave=256)
    for rate in rates:
        versions.register({}, "h", rate)
    versions.solve()
    assert versions.wait("h", rates[0]) == min(versions.wait("h", r) for r in rates)
    # the noise guard is told each page's own expected changes per visit (capped)
    assert alloc.planning_ratio("h", rates[0]) == 20.0
    assert alloc.planning_ratio("h", rates[3]) == pytest.approx(rates[3] * waits[3], rel=0.01)
    assert alloc.planning_ratio("h") is None
    assert versions.planning_ratio("h", rates[3]) == pytest.approx(versions.ratio)


def test_without_a_budget_the_objective_plans_as_the_target_ratio_says() -> None:
    for objective in (VERSIONS, FRESHNESS):
        alloc = RateAllocator(None, min_wait=1.0, max_wait=1e9, epoch="t", objective=objective)
        alloc.register({}, "h", 1 / 100)
        alloc.solve()
        assert alloc.wait("h", 1 / 100) == pytest.approx(100 * alloc.target_ratio)


def test_a_ceiling_budget_under_freshness_keeps_its_floor() -> None:
    """A budget from politeness capacity is a ceiling: a plentiful one is not
    spent on pages that do not change, under either objective."""
    for objective in (VERSIONS, FRESHNESS):
        alloc = RateAllocator(1000.0, min_wait=0.1, max_wait=1e9, epoch="t", objective=objective)
        alloc.set_budget(1000.0, ceiling=True)
        for _ in range(100):
            alloc.register({}, "h", 1 / 3600)
        alloc.solve()
        assert alloc.floor_binds(), objective
        assert sum(1 / alloc.wait("h", 1 / 3600) for _ in range(100)) < 1.0


def test_the_setting_reaches_the_crawls_allocator() -> None:
    for name, expected in (("versions", VERSIONS), ("freshness", FRESHNESS)):
        config = AdaptiveConfig.from_settings(Settings({"ADAPTIVE_OBJECTIVE": name, "ADAPTIVE_BUDGET": 1000}))
        stack = PolicyStack.from_config(config)
        allocator = stack.params.crawl.allocator
        assert allocator is not None and allocator.objective == expected


def test_under_freshness_the_default_policy_takes_the_rate_part_alone() -> None:
    """The snap-back part's quick return after a change catches a burst's
    follow-ups: versions, not freshness."""
    from scrapy_adaptive.model import ChangeState, Outcome, Visit
    from scrapy_adaptive.policies.union import UnionWaitPolicy

    waits = {}
    for name in ("versions", "freshness"):
        config = AdaptiveConfig.from_settings(Settings({"ADAPTIVE_OBJECTIVE": name, "ADAPTIVE_BUDGET": 100_000}))
        policy = PolicyStack.from_config(config)
        history: dict[str, object] = {"url": "https://a.example/p", "queue": "a.example"}
        sources = []
        for n in range(12):  # a page quiet for a long spell, then changing
            change = ChangeState.CHANGED if n in (0, 10, 11) else ChangeState.UNCHANGED
            visit = Visit(Outcome.VISITED, status=200, change=change, url="https://a.example/p", queue="a.example")
            chosen = policy.select(visit)
            assert isinstance(chosen, UnionWaitPolicy)
            plan, source = chosen.decide(history, visit)
            history = {**history, "visits": n + 1, "wait": plan.wait, "policy": plan.memory or {}}
            sources.append(source)
        waits[name] = sources
    assert "snap" in waits["versions"], waits
    assert set(waits["freshness"]) == {"burst"}
