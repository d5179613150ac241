"""The burst policy: population-learned state offsets on top of proportional allocation."""

from __future__ import annotations

import math

from bench.sim.engine import RunConfig, simulate
from bench.sim.lineup import POLICIES, LabContext
from bench.sim.world import build_world, preset
from scrapy_adaptive.model import ChangeState, Outcome, Visit
from scrapy_adaptive.policies import WaitParams
from scrapy_adaptive.policies.allocator import RateAllocator
from scrapy_adaptive.policies.burst import FIRST, BurstWaitPolicy
from scrapy_adaptive.policies.rate import ProportionalWaitPolicy

DAY = 86_400.0


def _run(world_name: str, policy_name: str) -> tuple[object, float]:
    world = build_world(preset(world_name, scale=0.05, days=120.0, seed=5))
    ctx = LabContext(world, world.total_rate())
    policy = POLICIES[policy_name](ctx)
    return policy, simulate(world, policy, RunConfig()).recall


def _visit(change: ChangeState, *, overdue: float = 0.0) -> Visit:
    return Visit(Outcome.VISITED, status=200, change=change, url="https://a.example/p", overdue=overdue)


def test_state_moves_with_the_verdicts_and_sets_the_wait() -> None:
    allocator = RateAllocator(100 / DAY, min_wait=60.0, max_wait=100 * DAY, epoch="t")
    policy = BurstWaitPolicy(allocator)
    for prior, offset in zip(policy.offsets, (2.0, 0.5, -1.0)):  # as learned on a bursty population
        prior.sum_modes, prior.sum_squares, prior.count = offset * 1000, (offset**2 + 0.01) * 1000, 1000
    history: dict[str, object] = {"visits": 0, "discovered": 0.0, "policy": {}}
    verdicts = [ChangeState.CHANGED, ChangeState.CHANGED, ChangeState.UNCHANGED, ChangeState.UNCHANGED]
    states, waits = [], []
    t = 0.0
    for change in verdicts:
        visit = _visit(change)
        plan = policy.plan(history, visit)
        wait = plan.wait
        memory = plan.memory or {}
        states.append(memory["s"])
        waits.append(wait)
        history = {"visits": 1, "discovered": 0.0, "fetched": t, "wait": wait, "policy": memory}
        t += wait
    assert states == [FIRST, 0, 1, 2]
    # each wait is r/λ̄·e^(−δ_s): the rate estimate moves a little between visits, the offsets much more
    assert waits[1] < waits[2] < waits[3]
    assert waits[3] / waits[1] > math.exp(2.0) * 0.5
    assert all(len(o) == 3 for o in history["policy"]["o"])  # type: ignore[index]


def test_built_from_params_policies_share_the_offsets_and_the_budget() -> None:
    params = WaitParams(budget=1_000.0)
    a, b = BurstWaitPolicy.from_params(params), BurstWaitPolicy.from_params(params)
    assert a.offsets is b.offsets and a.allocator is b.allocator
    assert ProportionalWaitPolicy.from_params(params).allocator is a.allocator
