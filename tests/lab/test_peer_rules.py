"""The rule-based wait policies on hand-made histories."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.peers.nutch import NutchWaitPolicy
from bench.peers.stormcrawler import StormCrawlerWaitPolicy
from bench.peers.umbrich import (
    MONTH,
    DynWaitPolicy,
    FixWaitPolicy,
    State1WaitPolicy,
    State2WaitPolicy,
    WindowWaitPolicy,
    interval_bucket,
    ratio_factor,
)
from scrapy_adaptive.model import ChangeState, Outcome, Visit
from scrapy_adaptive.policies.fixed import FixedWaitPolicy

DAY = 86_400.0
C, U, X = ChangeState.CHANGED, ChangeState.UNCHANGED, ChangeState.UNKNOWN


def history(wait: float | None = None, visits: int = 1, policy: dict[str, Any] | None = None) -> dict[str, Any]:
    if wait is None:
        return {"visits": 0, "wait": None, "fetched": None, "discovered": 0.0, "history": [], "policy": {}}
    return {"visits": visits, "wait": wait, "fetched": 1000.0, "discovered": 0.0, "history": [], "policy": policy or {}}


def visit(change: ChangeState, url: str = "https://a.example/x") -> Visit:
    return Visit(Outcome.VISITED, status=200, change=change, url=url, overdue=0.0)


def run(policy: Any, changes: list[ChangeState], first_wait: float | None = None) -> list[float]:
    """Feed a sequence of change states; return the waits (memory carried over)."""
    waits: list[float] = []
    wait = first_wait
    memory: dict[str, Any] = {}
    for n, change in enumerate(changes):
        v = visit(change)
        wait = policy.next_wait(history(wait, n, memory) if wait is not None else history(), v)
        if v.policy_state is not None:
            json.dumps(v.policy_state)  # must stay JSON-safe
            memory = v.policy_state
        waits.append(wait)
    return waits


def test_fixed_interval_and_jitter() -> None:
    assert FixedWaitPolicy(3600).next_wait(history(), visit(C)) == 3600
    jittered = [FixedWaitPolicy(3600, jitter=0.2).next_wait(history(), visit(C, f"https://h/{i}")) for i in range(200)]
    assert all(2880 <= w <= 4320 for w in jittered)
    assert len(set(jittered)) > 100
    assert FixedWaitPolicy(3600, jitter=0.2).next_wait(history(), visit(C, "https://h/1")) == jittered[1]


def test_nutch_rates_and_bounds() -> None:
    p = NutchWaitPolicy(initial=DAY, minimum=60, maximum=10 * DAY)
    assert p.next_wait(history(), visit(C)) == DAY
    assert p.next_wait(history(DAY), visit(U)) == pytest.approx(1.4 * DAY)
    assert p.next_wait(history(DAY), visit(C)) == pytest.approx(0.8 * DAY)
    assert p.next_wait(history(9 * DAY), visit(U)) == 10 * DAY
    assert p.next_wait(history(70), visit(C)) == 60
    assert p.next_wait(history(DAY), visit(X)) == DAY


def test_stormcrawler_approaches_the_minimum_smoothly() -> None:
    p = StormCrawlerWaitPolicy(initial=DAY, minimum=3600, maximum=14 * DAY)
    assert p.next_wait(history(DAY), visit(C)) == pytest.approx(0.5 * DAY + 0.5 * 3600)
    assert p.next_wait(history(DAY), visit(U)) == pytest.approx(1.5 * DAY)
    assert p.next_wait(history(3600), visit(C)) == 3600


def test_ratio_factor_table() -> None:
    assert ratio_factor(0.95) == pytest.approx(1 / 3)
    assert ratio_factor(0.8) == pytest.approx(1 / 2)
    assert ratio_factor(0.65) == pytest.approx(1 / 1.5)
    assert ratio_factor(0.5) == 1.0
    assert ratio_factor(0.3) == 1.5
    assert ratio_factor(0.2) == 2.0
    assert ratio_factor(0.0) == 3.0


def test_fix_needs_two_agreeing_snapshots_then_restarts_counting() -> None:
    p = FixWaitPolicy(initial=4 * DAY, minimum=DAY, maximum=180 * DAY)
    waits = run(p, [C, C, C, C, C], first_wait=None)
    # first visit: initial; one changed snapshot: no change yet; two: ÷2 (interval below a month)
    assert waits[:3] == [4 * DAY, 4 * DAY, 2 * DAY]
    assert waits[3] == 2 * DAY  # counting restarted at the new interval
    assert waits[4] == DAY
    slow = run(FixWaitPolicy(initial=40 * DAY, minimum=DAY, maximum=180 * DAY), [C, U, U])
    assert slow[-1] == 80 * DAY  # above a month: slowed down by 2


def test_fix_factors_depend_on_the_month_boundary() -> None:
    p = FixWaitPolicy(initial=2 * MONTH, minimum=DAY, maximum=365 * DAY)
    assert run(p, [C, C, C])[-1] == pytest.approx(2 * MONTH / 1.5)
    p = FixWaitPolicy(initial=10 * DAY, minimum=DAY, maximum=365 * DAY)
    assert run(p, [C, U, U])[-1] == pytest.approx(15 * DAY)


def test_dyn_uses_more_snapshots_at_short_intervals() -> None:
    p = DynWaitPolicy(initial=2 * DAY, minimum=DAY / 24, maximum=365 * DAY)
    waits = run(p, [C, C, C, C, C])  # interval ≤ 1 week: 4 snapshots needed
    assert waits[:4] == [2 * DAY] * 4
    assert waits[4] == DAY
    p = DynWaitPolicy(initial=70 * DAY, minimum=DAY, maximum=365 * DAY)
    assert run(p, [C, U])[-1] == 140 * DAY  # above 2 months: a single snapshot decides


def test_window_uses_half_the_history_until_ten() -> None:
    p = WindowWaitPolicy(initial=8 * DAY, minimum=DAY / 24, maximum=180 * DAY)
    waits = run(p, [C, C, C])
    assert waits[1] == pytest.approx(8 * DAY / 3)  # 1 snapshot, ratio 1
    assert waits[2] == pytest.approx(8 * DAY / 9)
    waits = run(WindowWaitPolicy(initial=DAY, minimum=DAY / 24, maximum=180 * DAY), [C] + [U] * 3)
    assert waits[-1] == pytest.approx(27 * DAY)


def test_state1_markov_probability_sets_the_factor() -> None:
    p = State1WaitPolicy(initial=DAY, minimum=DAY, maximum=DAY)  # interval pinned: one count table
    memory: dict[str, Any] = {}
    wait: float | None = None
    for change in [C, U, C, U, C, U, C]:
        v = visit(change)
        wait = p.next_wait(history(wait, 1, memory) if wait is not None else history(), v)
        memory = v.policy_state or memory
    # last state 1 (changed); after a change the page was always unchanged: P(1|1) = 0
    table = next(iter(memory["t"].values()))
    assert table["1"] == [2, 0]
    assert table["0"] == [0, 3]
    free = State1WaitPolicy(initial=DAY, minimum=DAY / 24, maximum=180 * DAY)
    m = {"p": "0", "t": {interval_bucket(DAY): {"1": [3, 0]}}}
    v = visit(C)  # now in state 1, which was never followed by a change: × 3
    assert free.next_wait(history(DAY, 5, m), v) == pytest.approx(3 * DAY)
    assert v.policy_state is not None and v.policy_state["t"][interval_bucket(DAY)]["0"] == [0, 1]


def test_state2_conditions_on_two_states() -> None:
    p = State2WaitPolicy(initial=DAY, minimum=DAY / 24, maximum=180 * DAY)
    key = interval_bucket(DAY)
    m = {"p": "1", "t": {key: {"10": [0, 4]}}}
    v = visit(C)  # state becomes "10"... then "01": no data yet → unchanged interval
    assert p.next_wait(history(DAY, 5, m), v) == DAY
    m = {"p": "0", "t": {key: {"01": [0, 5]}}}
    v = visit(C)  # state "01" → P(change) = 1 → ÷3
    assert p.next_wait(history(DAY, 5, m), v) == pytest.approx(DAY / 3)


@pytest.mark.parametrize(
    "policy",
    [
        NutchWaitPolicy(),
        StormCrawlerWaitPolicy(),
        FixWaitPolicy(),
        DynWaitPolicy(),
        WindowWaitPolicy(),
        State1WaitPolicy(),
        State2WaitPolicy(),
    ],
)
def test_rules_stay_within_bounds_and_state_is_small(policy: Any) -> None:
    import random

    rng = random.Random(7)
    changes = [C if rng.random() < 0.4 else U for _ in range(300)]
    memory_sizes = []
    wait: float | None = None
    memory: dict[str, Any] = {}
    for n, change in enumerate(changes):
        v = visit(change)
        wait = policy.next_wait(history(wait, n, memory) if wait is not None else history(), v)
        assert policy.minimum <= wait <= policy.maximum
        if v.policy_state is not None:
            memory = v.policy_state
            memory_sizes.append(len(json.dumps(memory)))
    assert max(memory_sizes or [0]) < 1000


def test_every_policy_builds_from_wait_params() -> None:
    from scrapy_adaptive.policies.base import WaitParams
    from scrapy_adaptive.policies.rate import PrecisionWaitPolicy, ProportionalWaitPolicy

    params = WaitParams(initial=2 * DAY, default=3 * DAY, minimum=600.0, maximum=20 * DAY)
    for cls in (
        FixedWaitPolicy,
        NutchWaitPolicy,
        StormCrawlerWaitPolicy,
        FixWaitPolicy,
        DynWaitPolicy,
        WindowWaitPolicy,
        State1WaitPolicy,
        State2WaitPolicy,
        PrecisionWaitPolicy,
        ProportionalWaitPolicy,
    ):
        policy = cls.from_params(params)
        wait = policy.next_wait(history(), visit(C))
        assert 0 < wait <= 20 * DAY, cls
