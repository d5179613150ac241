"""The union policy: the sooner of the burst policy's and the snap-back rule's waits."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from scrapy_adaptive.frontier import ChangeState, Outcome, Visit
from scrapy_adaptive.policies.base import WaitParams
from scrapy_adaptive.policies.burst import BurstWaitPolicy
from scrapy_adaptive.policies.snapback import WAIT, SnapBackWaitPolicy
from scrapy_adaptive.policies.union import UnionWaitPolicy

CHANGED, UNCHANGED = ChangeState.CHANGED, ChangeState.UNCHANGED
HOUR, DAY = 3_600.0, 86_400.0


def params(**kw: Any) -> WaitParams:
    kw.setdefault("initial", DAY)
    kw.setdefault("minimum", HOUR)
    kw.setdefault("maximum", 90 * DAY)
    return WaitParams(**kw)


class Page:
    """One URL visited at given times (the record as the frontier keeps it)."""

    def __init__(self, policy: Any) -> None:
        self.policy = policy
        self.record: dict[str, Any] = {"visits": 0, "fetched": None, "wait": None, "policy": {}, "history": []}

    def visit(self, now: float, change: ChangeState) -> float:
        url, queue = "https://a.example/p", "a.example"
        verdict = Visit(Outcome.VISITED, status=200, change=change, url=url, queue=queue, fetched=now)
        wait = self.policy.next_wait(dict(self.record), verdict)
        if verdict.policy_state is not None:
            self.record["policy"] = verdict.policy_state
        self.record.update(visits=self.record["visits"] + 1, fetched=now, wait=wait)
        return wait


def timeline(seed: int, n: int = 60) -> list[tuple[float, ChangeState]]:
    """Visit times and verdicts: a quiet spell, a burst of changes, quiet again."""
    rnd = random.Random(seed)
    now, out = 0.0, []
    for k in range(n):
        out.append((now, CHANGED if k == 0 or (20 <= k < 30 and rnd.random() < 0.7) else UNCHANGED))
        now += rnd.uniform(0.2, 3.0) * DAY
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_wait_is_the_sooner_of_the_two_families(seed: int) -> None:
    union = Page(UnionWaitPolicy.from_params(params()))
    burst = Page(BurstWaitPolicy.from_params(params()))
    alone = SnapBackWaitPolicy.from_params(params())
    alone.noise = None  # in the union the burst policy's guard decides for both
    snap = Page(alone)
    snap_bound = 0
    for now, change in timeline(seed):
        w_burst, w_snap = burst.visit(now, change), snap.visit(now, change)
        assert union.visit(now, change) == pytest.approx(min(w_burst, w_snap))
        snap_bound += w_snap < w_burst
    assert snap_bound  # the snap-back rule does bind somewhere on a bursty page


def test_memory_holds_both_rules_and_is_json_safe() -> None:
    page = Page(UnionWaitPolicy.from_params(params()))
    for now, change in timeline(4, 20):
        page.visit(now, change)
    memory = page.record["policy"]
    assert WAIT in memory and len(memory) > 1
    assert json.loads(json.dumps(memory)) == memory


def test_one_budget_and_one_crawl_wide_state_for_every_instance() -> None:
    shared = params(budget=500.0)
    a, b = UnionWaitPolicy.from_params(shared), UnionWaitPolicy.from_params(shared.updated({}, "test"))
    assert a.allocator is b.allocator is shared.crawl.allocator
    assert a.pace is b.pace is shared.crawl.pace
    assert a.allocator.budget == pytest.approx(500.0 / DAY) == a.pace.budget
    a.set_budget(1.0)
    assert b.allocator.budget == 1.0 == b.pace.budget
    parts = shared.crawl.persisted()
    assert {"rate_allocator", "snapback_pace"} <= set(parts)
    json.dumps({name: part.state() for name, part in parts.items() if hasattr(part, "state")})


def test_without_a_budget_both_rules_keep_their_own_numbers() -> None:
    policy = UnionWaitPolicy.from_params(params())
    assert policy.allocator.budget is None and policy.pace.budget is None
    assert policy.pace.scale() == 1.0
    assert Page(policy).visit(0.0, CHANGED) <= DAY  # first visit: at most the initial wait


def test_a_page_the_burst_guard_calls_noise_gets_the_guarded_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    policy = UnionWaitPolicy.from_params(params())
    alone = BurstWaitPolicy.from_params(params())
    monkeypatch.setattr(policy.burst, "is_noise", lambda memory: True)
    union, burst = Page(policy), Page(alone)
    for k in range(10):
        assert union.visit(k * DAY, CHANGED) == pytest.approx(burst.visit(k * DAY, CHANGED))
