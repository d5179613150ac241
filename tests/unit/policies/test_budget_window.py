"""ADAPTIVE_BUDGET_WINDOW: parsed, validated, and handed to the shared allocator."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from scrapy_adaptive.config.settings import AdaptiveConfig
from scrapy_adaptive.config.spec import ConfigError
from scrapy_adaptive.config.table import DEFAULTS
from scrapy_adaptive.policies import ProportionalWaitPolicy, load_wait_policy
from scrapy_adaptive.policies.allocator import RateAllocator
from scrapy_adaptive.policies.base import WaitParams

PROPORTIONAL = "scrapy_adaptive.policies.ProportionalWaitPolicy"


def config(**values: object) -> AdaptiveConfig:
    return AdaptiveConfig.from_settings(Settings(values))


def allocator_of(**values: object) -> RateAllocator:
    stack = load_wait_policy(config(ADAPTIVE_WAIT_POLICY=PROPORTIONAL, ADAPTIVE_WAIT_POLICIES=[], **values))
    allocator = stack.params.crawl.allocator
    assert isinstance(allocator, RateAllocator)
    return allocator


def test_the_default_window_holds_720_revisits_of_the_budget() -> None:
    """Unset, the window is on the crawl's own time scale: 3 days at 240
    revisits a day as before, about 4 minutes at 250,000 a day (where 3 days
    meant no feedback at all in a crawl of minutes)."""
    assert DEFAULTS["ADAPTIVE_BUDGET_WINDOW"] is None
    assert config().budget_window is None
    assert WaitParams().budget_window is None
    assert allocator_of(ADAPTIVE_BUDGET=240).control_window == pytest.approx(3 * 86_400.0)
    assert allocator_of(ADAPTIVE_BUDGET=250_000).control_window == pytest.approx(720 / (250_000 / 86_400))
    assert allocator_of().control_window == 3 * 86_400.0  # no budget: nothing to hold


def test_the_window_reaches_the_allocator_like_the_budget() -> None:
    # a command-line string, as from -s or Scrapyd's -d setting=
    allocator = allocator_of(ADAPTIVE_BUDGET=432_000, ADAPTIVE_BUDGET_WINDOW="30")
    assert allocator.control_window == 30.0
    assert allocator.budget == pytest.approx(5.0)  # 432,000 a day = 5 a second


def test_every_budgeted_policy_of_the_stack_shares_the_windowed_allocator() -> None:
    stack = load_wait_policy(
        config(
            ADAPTIVE_WAIT_POLICY=PROPORTIONAL,
            ADAPTIVE_BUDGET_WINDOW=600,
            ADAPTIVE_WAIT_POLICIES=[{"content_type": "image/*", "max": 10_000_000}],
        )
    )
    policies = [stack.catch_all, *(p for _, p in stack.entries)]
    assert all(isinstance(p, ProportionalWaitPolicy) for p in policies)
    assert {p.allocator.control_window for p in policies} == {600.0}  # type: ignore[attr-defined]


def test_a_short_window_lets_the_feedback_act_within_minutes() -> None:
    # 2 revisits a second against a budget of 1: after one 30-second window
    # the allocator knows its realised rate and corrects downwards; with the
    # 3-day default it would still know nothing.
    short = RateAllocator(1.0, epoch="t", control_window=30.0, solve_every=10)
    default = RateAllocator(1.0, epoch="t", solve_every=10)
    for alloc in (short, default):
        alloc.register({}, "h", 0.1)
        for k in range(240):  # two minutes
            alloc.note_fetch(1_000.0 + k / 2)
    assert short.realised_rate() == pytest.approx(2.0, rel=0.05)
    assert short.correction < 1.0
    assert default.realised_rate() is None and default.correction == 1.0


@pytest.mark.parametrize(
    ("value", "shown"),
    [(0, "0.0"), (-5, "-5.0"), ("inf", "inf"), ("nan", None), ("three days", None)],
)
def test_a_bad_window_names_the_setting(value: object, shown: str | None) -> None:
    with pytest.raises(ConfigError, match=r"^ADAPTIVE_BUDGET_WINDOW \(") as info:
        config(ADAPTIVE_BUDGET_WINDOW=value)
    if shown is not None:
        assert f"ADAPTIVE_BUDGET_WINDOW ({shown}) must be a finite number of seconds > 0" in str(info.value)


def _burst_then_steady(growing: bool) -> RateAllocator:
    """64 URLs revisited 3 times a second for a minute, then once a second for two."""
    alloc = RateAllocator(1.0, epoch="t", control_window=30.0, solve_every=1)
    if not growing:
        for _ in range(64):
            alloc.register({}, "h", 0.1)
    now = 1_000.0
    for _ in range(64):
        if growing:  # found one by one during the burst
            alloc.register({}, "h", 0.1)
        for _ in range(3):
            now += 1 / 3 * 60 / 64
            alloc.note_fetch(now)
    for _ in range(120):
        now += 1.0
        alloc.note_fetch(now)
    return alloc


def test_a_burst_while_the_population_doubles_is_not_held_against_the_budget() -> None:
    # A fresh crawl: its first URLs are planned for a population of a few,
    # get short waits and are revisited in a burst.  The measurement starts
    # again whenever the population has doubled, so the burst barely moves
    # the correction; the same burst in a settled population is overspending
    # and is corrected hard.
    growing, settled = _burst_then_steady(True), _burst_then_steady(False)
    assert growing.realised_rate() == pytest.approx(1.0, rel=0.1)
    assert growing.correction >= 0.85
    assert settled.correction <= 0.6


def test_a_plan_is_solved_again_at_most_once_a_second_of_crawl_time_short_of_solve_every_changes() -> None:
    """Dozens of fetches a second each register a rate and count a fetch: the
    plan is re-solved once per SOLVE_SPACING_S of the visits' own time, not
    every MIN_PENDING of them, and at once when ``solve_every`` changes came."""
    from scrapy_adaptive.policies.allocator import MIN_PENDING, SOLVE_SPACING_S

    alloc = RateAllocator(1.0, solve_every=200)
    solves = 0
    solve = alloc.solve

    def counting() -> None:
        nonlocal solves
        solves += 1
        solve()

    alloc.solve = counting  # type: ignore[method-assign]
    memories: list[dict[str, object]] = [{} for _ in range(20)]
    t = 1_000.0
    for i in range(100):  # 50 fetches a second for 2 s: 200 changes, far more than MIN_PENDING
        memory = memories[i % len(memories)]
        alloc.register(memory, "h.example", 0.01 * (1 + i % 7))  # type: ignore[arg-type]
        alloc.note_fetch(t)
        t += 0.02
    assert 100 * 2 > 4 * MIN_PENDING
    assert solves <= 1 + 2 / SOLVE_SPACING_S + 1, solves
    # past solve_every changes the plan is solved whatever the time
    before = solves
    for i in range(100):
        alloc.register(memories[i % len(memories)], "h.example", 0.02)  # type: ignore[arg-type]
        alloc.note_fetch(t)
    assert solves > before
