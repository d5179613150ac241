"""The rule-based wait policies on hand-made histories (the peers' rules of bench/peers)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench.peers.nutch import NutchWaitPolicy
from bench.peers.stormcrawler import StormCrawlerWaitPolicy
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


@pytest.mark.parametrize(
    "policy",
    [
        NutchWaitPolicy(),
        StormCrawlerWaitPolicy(),
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
        plan = policy.plan(history(wait, n, memory) if wait is not None else history(), v)
        wait = plan.wait
        assert policy.minimum <= wait <= policy.maximum
        if plan.memory is not None:
            memory = plan.memory
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
        PrecisionWaitPolicy,
        ProportionalWaitPolicy,
    ):
        policy = cls.from_params(params)
        wait = policy.next_wait(history(), visit(C))
        assert 0 < wait <= 20 * DAY, cls
