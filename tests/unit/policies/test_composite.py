"""An embed's own visits planned net of the refreshes its pages' captures bring (policies/composite.py)."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from scrapy_adaptive.change.noise_learner import PROBED
from scrapy_adaptive.frontier import ChangeState, Outcome, Visit
from scrapy_adaptive.policies.base import WaitParams
from scrapy_adaptive.policies.composite import net_wait, observe_refreshes, refresh_rate
from scrapy_adaptive.policies.memory import AGE_UNCHECKED, REFRESHES
from scrapy_adaptive.policies.union import UnionWaitPolicy


def visit(at: float, change: ChangeState = ChangeState.UNCHANGED, annotations: list[str] | None = None) -> Visit:
    return Visit(Outcome.VISITED, status=200, change=change, url="https://a.example/i.png", queue="a.example",
                 fetched=at, annotations=annotations or [])  # fmt: skip


def history(fetched: float, wait: float, visits: int = 3, **more: Any) -> dict[str, Any]:
    return {"visits": visits, "fetched": fetched, "wait": wait, "policy": {}, **more}


def test_the_net_wait_keeps_the_total_revisit_rate_the_plans() -> None:
    """Own visits every W, restarted by refreshes at rate ρ: intervals min(W, Exp(ρ)), mean (1 − e^(−ρW))/ρ.
    The net wait makes that mean the planned 1/f."""
    f, rho = 1 / 100.0, 1 / 200.0
    wait = net_wait(1 / f, rho, 1e6)
    assert wait == pytest.approx(-math.log(1 - rho / f) / rho)  # 138.6 s
    assert (1 - math.exp(-rho * wait)) / rho == pytest.approx(1 / f)
    rng = random.Random(3)
    intervals = [min(wait, rng.expovariate(rho)) for _ in range(200_000)]
    assert sum(intervals) / len(intervals) == pytest.approx(100.0, rel=0.01)


def test_the_net_wait_at_its_edges() -> None:
    assert net_wait(100.0, 0.0, 1e4) == 100.0  # no refreshes: the plan's wait
    assert net_wait(100.0, 0.01, 1e4) == 1e4  # refreshes cover the whole share: no own visit needed
    assert net_wait(100.0, 0.02, 1e4) == 1e4
    assert net_wait(100.0, 0.009, 150.0) == 150.0  # within the maximum wait
    assert net_wait(2e4, 0.001, 1e4) == 2e4  # a wait already beyond the maximum (the noise guard's) is left
    assert 100.0 < net_wait(100.0, 1e-4, 1e4) < 100.6  # a rare refresh lengthens it by a hair


def test_visits_before_their_planned_wait_are_counted_as_brought() -> None:
    memory: dict[str, Any] = {}
    # on plan (at or after the wait): nothing is kept for a URL never brought forward
    assert observe_refreshes(memory, history(0.0, 100.0), visit(120.0), None) == 0.0
    assert REFRESHES not in memory
    # brought at 30 s of a 100 s wait; its two visits before came as planned (200 s exposed)
    rho = observe_refreshes(memory, history(0.0, 100.0, visits=3), visit(30.0), None)
    assert memory[REFRESHES] == [1.0, 230.0, 30.0]
    assert rho == pytest.approx(1 / (230.0 + 100.0)) == refresh_rate(memory, 100.0)
    # then an own visit: exposure grows by the planned wait, not the late interval
    observe_refreshes(memory, {**history(30.0, 100.0), "policy": dict(memory)}, visit(180.0), None)
    assert memory[REFRESHES] == [1.0, 330.0, 180.0]


def test_hinted_probed_and_header_check_visits_are_not_refreshes() -> None:
    for h, v in (
        (history(0.0, 100.0, hint={"c": [1, 0, 1]}), visit(10.0)),  # a hint: the allocator counts it apart
        (history(0.0, 100.0), visit(10.0, annotations=[PROBED])),  # a noise probe, timed by the guard
        (history(0.0, 100.0, policy={AGE_UNCHECKED: 1}), visit(10.0)),  # a header check the policy moved
        ({"visits": 0, "fetched": None, "wait": None, "policy": {}}, visit(10.0)),  # a first visit
    ):
        memory: dict[str, Any] = {}
        assert observe_refreshes(memory, h, v, None) == 0.0 and REFRESHES not in memory


def test_the_counts_are_forgotten_with_the_half_life() -> None:
    memory: dict[str, Any] = {REFRESHES: [2.0, 400.0, 0.0]}
    observe_refreshes(memory, history(900.0, 100.0), visit(1000.0), 1000.0)  # an own visit, one half-life later
    assert memory[REFRESHES] == [1.0, 300.0, 1000.0]


def test_the_union_plans_an_embed_brought_by_its_page_net_of_it() -> None:
    """The same visits and verdicts, every other one brought forward by the page a few seconds after
    the one before: the union's wait is the plan's, lengthened for the refreshes; without the rule
    (``net_refreshes`` off) the embed would be planned as if nothing else fetched it."""
    params = WaitParams(initial=100.0, minimum=10.0, maximum=10_000.0)
    netted, plain = UnionWaitPolicy.from_params(params), UnionWaitPolicy.from_params(params)
    plain.net_refreshes = False
    records = {id(p): {"visits": 0, "fetched": None, "wait": None, "policy": {}, "history": []} for p in (netted, plain)}
    waits: dict[int, float] = {}
    now = 0.0
    for k in range(16):
        change = ChangeState.CHANGED if k % 4 == 1 else ChangeState.UNCHANGED
        for policy in (netted, plain):
            record = records[id(policy)]
            verdict = visit(now, change)
            waits[id(policy)], _ = policy.decide(dict(record), verdict)
            record.update(visits=record["visits"] + 1, fetched=now, wait=waits[id(policy)], policy=verdict.policy_state)
        now += 5.0 if k % 2 == 0 else 200.0
    assert REFRESHES in records[id(netted)]["policy"] and REFRESHES not in records[id(plain)]["policy"]
    assert waits[id(netted)] > waits[id(plain)]
