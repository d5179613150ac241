"""The snap-back policy: StormCrawler's rule in normalised time, scaled to a budget."""

from __future__ import annotations

import heapq
import json
import math
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.peers.stormcrawler import StormCrawlerWaitPolicy
from scrapy_adaptive.frontier import ChangeState, Outcome, Visit
from scrapy_adaptive.policies.base import WaitParams
from scrapy_adaptive.policies.budget_pace import BudgetPace
from scrapy_adaptive.policies.snapback import WAIT, SnapBackWaitPolicy
from tests.hypo import examples

CHANGED, UNCHANGED, UNKNOWN = ChangeState.CHANGED, ChangeState.UNCHANGED, ChangeState.UNKNOWN
HOUR, DAY = 3_600.0, 86_400.0


class Page:
    """Drives one URL through a policy as the frontier does (record in, wait out)."""

    def __init__(self, policy: Any, url: str = "https://a.example/p", start: float = 0.0) -> None:
        self.policy = policy
        self.url = url
        self.now = start
        self.record: dict[str, Any] = {"visits": 0, "fetched": None, "wait": None, "policy": {}, "history": []}

    def visit(self, change: ChangeState) -> float:
        verdict = Visit(Outcome.VISITED, status=200, change=change, url=self.url, queue="a.example", fetched=self.now)
        plan = self.policy.plan(dict(self.record), verdict)
        if plan.memory is not None:
            self.record["policy"] = plan.memory
        self.record.update(visits=self.record["visits"] + 1, fetched=self.now, wait=plan.wait)
        self.now += plan.wait
        return plan.wait


def rule(**kw: Any) -> SnapBackWaitPolicy:
    kw.setdefault("minimum", HOUR)
    kw.setdefault("maximum", 365 * DAY)
    kw.setdefault("initial", DAY)
    return SnapBackWaitPolicy(None, **kw)


def test_without_a_budget_it_is_stormcrawlers_rule() -> None:
    mine, theirs = Page(rule()), Page(StormCrawlerWaitPolicy(initial=DAY, minimum=HOUR, maximum=365 * DAY))
    rnd = random.Random(3)
    for _ in range(200):
        change = CHANGED if rnd.random() < 0.4 else UNCHANGED
        assert mine.visit(change) == pytest.approx(theirs.visit(change))


def test_a_change_snaps_halfway_to_the_floor_and_quiet_visits_back_off() -> None:
    page = Page(rule())
    assert page.visit(CHANGED) == pytest.approx(DAY)  # first visit: initial
    assert page.visit(UNCHANGED) == pytest.approx(1.5 * DAY)
    assert page.visit(CHANGED) == pytest.approx((1.5 * DAY + HOUR) / 2)


def test_long_quiet_runs_grow_geometrically_up_to_the_maximum() -> None:
    page = Page(rule(maximum=30 * DAY))
    page.visit(CHANGED)
    waits = [page.visit(UNCHANGED) for _ in range(20)]
    assert waits[:5] == pytest.approx([DAY * 1.5**k for k in range(1, 6)])
    assert waits[-1] == 30 * DAY


def test_unknown_verdict_keeps_the_wait() -> None:
    page = Page(rule())
    page.visit(CHANGED)
    page.visit(UNCHANGED)
    before = page.record["policy"][WAIT]
    page.visit(UNKNOWN)
    assert page.record["policy"][WAIT] == before


def test_memory_is_small_and_json_safe() -> None:
    page = Page(SnapBackWaitPolicy.from_params(WaitParams(initial=DAY, minimum=HOUR, maximum=90 * DAY)))
    for change in [CHANGED, UNCHANGED, CHANGED, CHANGED, UNCHANGED] * 5:
        page.visit(change)
    memory = page.record["policy"]
    assert json.loads(json.dumps(memory)) == memory
    assert len(json.dumps(memory)) < 200


def test_from_params_shares_one_pace_and_reads_the_numbers() -> None:
    params = WaitParams(initial=2 * DAY, minimum=HOUR, maximum=30 * DAY, budget=500.0)
    a, b = SnapBackWaitPolicy.from_params(params), SnapBackWaitPolicy.from_params(params)
    assert a.pace is b.pace and params.crawl.pace is a.pace and params.crawl.persisted()["snapback_pace"] is a.pace
    assert a.pace.budget == pytest.approx(500.0 / DAY)
    assert (a.minimum, a.maximum, a.initial, a.floor) == (HOUR, 30 * DAY, 2 * DAY, HOUR)
    free = SnapBackWaitPolicy.from_params(WaitParams())
    assert free.pace.budget is None and free.pace.scale() == 1.0


def crawl(policy: SnapBackWaitPolicy, urls: int, days: float, rate: float, seed: int = 1) -> tuple[float, float]:
    """Revisits per second over the second half of a crawl of *urls* Poisson
    pages (changes per second *rate*, bursty: half of them ten times faster)."""
    pages = [Page(policy, url=f"https://a.example/{i}", start=i * 30.0) for i in range(urls)]
    rates = [rate * (10 if i % 2 else 0.1) for i in range(urls)]
    due = [(p.now, i) for i, p in enumerate(pages)]
    heapq.heapify(due)
    rnd = random.Random(seed)
    count, half = 0, None
    now = 0.0
    while due:
        now, i = heapq.heappop(due)
        if now > days * DAY:
            break
        if half is None and now > days * DAY / 2:
            half = (count, now)
        page = pages[i]
        first = page.record["visits"] == 0
        changed = first or rnd.random() < -math.expm1(-rates[i] * (now - page.record["fetched"]))
        page.visit(CHANGED if changed else UNCHANGED)
        count += not first
        heapq.heappush(due, (page.now, i))
    assert half is not None
    return (count - half[0]) / (now - half[1]), policy.pace.scale()


@pytest.mark.parametrize("per_day", [10.0, 1000.0])
def test_the_budget_is_spent(per_day: float) -> None:
    """100 URLs; whether the rule alone would spend more or less than the
    budget, the pace scales every wait until the crawl spends it."""
    budget = per_day / DAY
    policy = SnapBackWaitPolicy(BudgetPace(budget, horizon=20 * DAY), minimum=HOUR, maximum=365 * DAY, initial=DAY)
    realised, scale = crawl(policy, 100, 160, 1 / (3 * DAY))
    assert realised == pytest.approx(budget, rel=0.15)
    free, _ = crawl(rule(), 100, 160, 1 / (3 * DAY))
    assert (scale > 1) == (free > budget)  # waits grew only if the rule alone overspends


def test_pace_state_round_trips() -> None:
    pace = BudgetPace(1.0 / 60)
    for i in range(500):
        pace.observe(None if i < 50 else 600.0, 600.0 + i, float(i * 30), revisit=i >= 50)
    state = json.loads(json.dumps(pace.state()))
    other = BudgetPace(1.0 / 60)
    other.restore(state)
    assert other.state() == pace.state()
    assert other.scale() == pytest.approx(pace.scale())


@settings(max_examples=examples(80), deadline=None)
@given(
    verdicts=st.lists(st.sampled_from([CHANGED, UNCHANGED, UNKNOWN]), min_size=1, max_size=60),
    minimum=st.floats(1.0, 10_000.0),
    span=st.floats(1.0, 1e6),
    budget=st.one_of(st.none(), st.floats(1e-6, 10.0)),
)
def test_wait_is_always_within_bounds(
    verdicts: list[ChangeState], minimum: float, span: float, budget: float | None
) -> None:
    maximum = minimum * span
    policy = SnapBackWaitPolicy(BudgetPace(budget), minimum=minimum, maximum=maximum, initial=minimum * 2)
    page = Page(policy)
    for verdict in verdicts:
        wait = page.visit(verdict)
        assert minimum <= wait <= maximum
        assert math.isfinite(wait)


def test_the_module_is_pure() -> None:
    """No Scrapy or Twisted behind the policy (the simulator runs it as is)."""
    import subprocess
    import sys

    code = (
        "import sys, scrapy_adaptive.policies.snapback\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('scrapy', 'twisted')]\n"
        "sys.exit(1 if bad else 0)\n"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False, timeout=60).returncode == 0


def test_a_ceiling_is_neither_a_target_nor_a_wind_up() -> None:
    """The politeness capacity as a ceiling (no ``ADAPTIVE_BUDGET``): far
    more than 100 pages need, it is left unspent; the scale stays at the
    least one (a new page's first wait is the minimum) and the pace's own
    loop does not wind up toward spending it."""
    budget = 100_000 / DAY
    policy = SnapBackWaitPolicy(BudgetPace(budget, horizon=20 * DAY), minimum=HOUR, maximum=365 * DAY, initial=DAY)
    policy.pace.set_budget(budget, ceiling=True)
    realised, _ = crawl(policy, 100, 60, 1 / (3 * DAY))
    assert realised < 0.05 * budget
    assert policy.scale() == policy.least_scale() == pytest.approx(HOUR / DAY)
    assert policy.pace.correction >= 1.0
    # the same budget as a target: every page at the minimum wait, quiet or not
    target = SnapBackWaitPolicy(BudgetPace(budget, horizon=20 * DAY), minimum=HOUR, maximum=365 * DAY, initial=DAY)
    spent, _ = crawl(target, 100, 60, 1 / (3 * DAY))
    assert spent == pytest.approx(100 / HOUR, rel=0.05)
    assert realised < 0.2 * spent
