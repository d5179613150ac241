"""The union policy: the sooner of the burst policy's and the snap-back rule's waits."""

from __future__ import annotations

import heapq
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
        plan = self.policy.plan(dict(self.record), verdict)
        if plan.memory is not None:
            self.record["policy"] = plan.memory
        self.record.update(visits=self.record["visits"] + 1, fetched=now, wait=plan.wait)
        return plan.wait


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


@pytest.mark.parametrize("seed", [1, 2])
def test_decide_names_the_family_whose_wait_was_taken(seed: int) -> None:
    """A replay reads whose plan each revisit followed (as the floor diagnosis did): the
    family named is the one with the sooner wait, and the wait is the union's."""
    policy = UnionWaitPolicy.from_params(params())
    burst = Page(BurstWaitPolicy.from_params(params()))
    alone = SnapBackWaitPolicy.from_params(params())
    alone.noise = None
    snap = Page(alone)
    record: dict[str, Any] = {"visits": 0, "fetched": None, "wait": None, "policy": {}, "history": []}
    families = set()
    for now, change in timeline(seed):
        w_burst, w_snap = burst.visit(now, change), snap.visit(now, change)
        url, queue = "https://a.example/p", "a.example"
        verdict = Visit(Outcome.VISITED, status=200, change=change, url=url, queue=queue, fetched=now)
        plan, family = policy.decide(dict(record), verdict)
        record.update(visits=record["visits"] + 1, fetched=now, wait=plan.wait, policy=plan.memory)
        assert plan.wait == pytest.approx(min(w_burst, w_snap))
        assert family == ("snap" if w_snap < w_burst else "burst")
        families.add(family)
    assert families == {"burst", "snap"}


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


def drive(
    policy: UnionWaitPolicy, gaps: list[float], end: float, *, seed: int, spacing: float, bursts: bool
) -> tuple[list[Page], list[float]]:
    """Crawl one page per mean gap between changes (inf: never changes) until
    *end*, first visits *spacing* apart; with *bursts*, a change makes the
    next one soon likelier.  The pages, and the times of every revisit."""
    rnd = random.Random(seed)
    pages = [Page(policy) for _ in gaps]
    next_change = [rnd.expovariate(1 / g) if g < float("inf") else float("inf") for g in gaps]
    due = [(i * spacing, i) for i in range(len(gaps))]
    heapq.heapify(due)
    revisits: list[float] = []
    while due:
        now, i = heapq.heappop(due)
        if now > end:
            break
        page = pages[i]
        first = page.record["visits"] == 0
        changed = first or next_change[i] <= now
        while next_change[i] <= now:
            step = rnd.expovariate(1 / gaps[i])
            if bursts:
                step *= 0.1 if rnd.random() < 0.5 else 1.5
            next_change[i] += step
        page.visit(now, CHANGED if changed else UNCHANGED)
        if not first:
            revisits.append(now)
        heapq.heappush(due, (now + max(page.record["wait"], 1.0), i))
    return pages, revisits


def union_crawl(policy: UnionWaitPolicy, urls: int, days: float, seed: int = 5) -> list[float]:
    """Revisits per second in each quarter of the second half of a crawl of
    *urls* pages: half change every few hours in bursts, half every few weeks."""
    end = days * DAY
    gaps = [(0.3 if i % 2 else 20.0) * DAY for i in range(urls)]
    _, revisits = drive(policy, gaps, end, seed=seed, spacing=60.0, bursts=True)
    quarter = end / 8
    starts = [end / 2 + k * quarter for k in range(4)]
    return [sum(1 for t in revisits if s <= t < s + quarter) / quarter for s in starts]


def test_one_loop_holds_the_budget_for_both_families() -> None:
    """Both families are sized to the budget and their plans overlap; one
    loop (the allocator's) absorbs the overlap for both: the pace keeps no
    correction of its own and divides its scale by the allocator's."""
    budget = 200.0 / DAY
    policy = UnionWaitPolicy.from_params(params(budget=budget * DAY))
    quarters = union_crawl(policy, 60, 40)
    assert sum(quarters) / 4 == pytest.approx(budget, rel=0.06)
    assert [q / budget for q in quarters] == pytest.approx([1.0] * 4, abs=0.15)
    assert policy.pace.correction == 1.0  # no loop of its own
    assert policy.pace.correcting == pytest.approx(1 / policy.allocator.correction)
    assert policy.allocator.correction != 1.0  # the loop acted


def capacity_crawl(policy: UnionWaitPolicy, hours: float, seed: int = 3) -> tuple[list[int], list[float]]:
    """Visits to each of 50 pages over *hours*: the first 10 change about
    once a minute, the other 40 never; and the static pages' last waits."""
    gaps = [60.0] * 10 + [float("inf")] * 40
    pages, _ = drive(policy, gaps, hours * HOUR, seed=seed, spacing=1.0, bursts=False)
    return [p.record["visits"] for p in pages], [p.record["wait"] for p in pages[10:]]


def test_a_capacity_ceiling_is_not_spent_on_pages_that_do_not_change() -> None:
    """Without ``ADAPTIVE_BUDGET`` the crawl's budget is its politeness
    capacity, a ceiling: new pages are checked after the minimum wait, the
    changing ones stay near it, and the static ones back off as the rule
    says instead of taking up the capacity the changing ones leave."""
    policy = UnionWaitPolicy.from_params(params(minimum=10.0))
    policy.set_budget(0.9, ceiling=True)  # 0.9 fetches a second: 50 pages could be visited every minute
    visits, static_waits = capacity_crawl(policy, 6)
    changing, static = visits[:10], visits[10:]
    assert min(static_waits) > HOUR  # backed off geometrically from the minimum wait
    assert max(static) < 30  # about 20 quiet visits take the wait from 10 s to hours
    assert min(changing) > 10 * max(static)
    assert sum(visits) < 0.5 * 0.9 * 6 * HOUR  # the rest of the capacity stays unspent
    # the pace would scale the waits down to spend the capacity; the least scale holds them
    assert policy.pace.scale() < policy.snap.least_scale() == policy.snap.scale() == pytest.approx(10.0 / DAY)


def test_a_capacity_ceiling_slows_the_rule_where_it_binds() -> None:
    """The same crawl on a fiftieth of the capacity: the ceiling binds, the
    pace's scale is above the least one and the crawl spends about what it may."""
    policy = UnionWaitPolicy.from_params(params(minimum=10.0))
    policy.set_budget(0.02, ceiling=True)
    visits, _ = capacity_crawl(policy, 24)
    assert policy.snap.scale() == policy.pace.scale() > policy.snap.least_scale()
    assert sum(visits) < 1.5 * 0.02 * 24 * HOUR
