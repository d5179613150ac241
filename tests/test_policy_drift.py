"""The drift policy: a forgetting Gamma belief per URL, visited at a common hazard."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_adaptive.frontier import ChangeState, Outcome, Visit
from scrapy_adaptive.policies.base import WaitParams
from scrapy_adaptive.policies.drift import BELIEF, DriftWaitPolicy, HazardPace, hazard_wait

CHANGED, UNCHANGED, UNKNOWN = ChangeState.CHANGED, ChangeState.UNCHANGED, ChangeState.UNKNOWN
HOUR, DAY = 3_600.0, 86_400.0


class Page:
    """Drives one URL through a policy as the frontier would (record in, wait out)."""

    def __init__(self, policy: DriftWaitPolicy, url: str = "https://a.example/p", start: float = 0.0) -> None:
        self.policy = policy
        self.url = url
        self.now = start
        self.record: dict[str, Any] = {"visits": 0, "fetched": None, "wait": None, "policy": {}, "history": []}

    def visit(self, change: ChangeState) -> float:
        verdict = Visit(Outcome.VISITED, status=200, change=change, url=self.url, queue="a.example", fetched=self.now)
        wait = self.policy.next_wait(dict(self.record), verdict)
        if verdict.policy_state is not None:
            self.record["policy"] = verdict.policy_state
        self.record.update(visits=self.record["visits"] + 1, fetched=self.now, wait=wait)
        self.now += wait
        return wait


def fixed(ratio: float = math.log(2), **kw: Any) -> DriftWaitPolicy:
    kw.setdefault("minimum", HOUR)
    kw.setdefault("maximum", 365 * DAY)
    kw.setdefault("initial", DAY)
    return DriftWaitPolicy(HazardPace(None, ratio=ratio), **kw)


def test_first_wait_is_initial_before_anything_is_known() -> None:
    page = Page(fixed())
    assert page.visit(CHANGED) == pytest.approx(DAY)


def test_hazard_wait_solves_the_cumulative_hazard() -> None:
    alpha, beta, r = 1.7, 5_000.0, 0.9
    w = hazard_wait(alpha, beta, r)
    assert alpha * math.log1p(w / beta) == pytest.approx(r)


def test_a_change_shortens_the_wait_and_quiet_visits_lengthen_it() -> None:
    page = Page(fixed())
    page.visit(CHANGED)
    quiet = [page.visit(UNCHANGED) for _ in range(4)]
    assert quiet == sorted(quiet) and quiet[-1] > 2 * quiet[0]  # back-off
    before = quiet[-1]
    after = page.visit(CHANGED)
    assert after < before / 2  # snaps back after a change
    burst = [page.visit(CHANGED) for _ in range(4)]
    assert burst[-1] < after  # a run of changes keeps shortening it


def test_long_quiet_runs_are_bounded_by_the_urls_own_long_run_rate() -> None:
    """The fast belief is anchored to the slow one: a long-active URL that
    goes quiet backs off, but not straight to the maximum."""
    page = Page(fixed())
    page.visit(CHANGED)
    for _ in range(8):
        page.visit(CHANGED)
    waits = [page.visit(UNCHANGED) for _ in range(3)]
    assert waits[-1] < 365 * DAY


def test_waits_stay_within_bounds_at_extremes() -> None:
    page = Page(fixed(minimum=600.0, maximum=7 * DAY))
    page.visit(CHANGED)
    assert all(600.0 <= page.visit(CHANGED) <= 7 * DAY for _ in range(30))
    assert all(600.0 <= page.visit(UNCHANGED) <= 7 * DAY for _ in range(60))


def test_unknown_verdict_keeps_the_belief() -> None:
    page = Page(fixed())
    page.visit(CHANGED)
    page.visit(UNCHANGED)
    belief = list(page.record["policy"][BELIEF])
    page.visit(UNKNOWN)
    assert page.record["policy"][BELIEF] == belief


def test_memory_is_small_and_json_safe() -> None:
    page = Page(DriftWaitPolicy.from_params(WaitParams(initial=DAY, minimum=HOUR, maximum=90 * DAY, shared={})))
    for change in [CHANGED, UNCHANGED, CHANGED, CHANGED, UNCHANGED] * 5:
        page.visit(change)
    memory = page.record["policy"]
    assert json.loads(json.dumps(memory)) == memory
    assert len(json.dumps(memory)) < 200


def test_a_larger_threshold_means_longer_waits() -> None:
    def waits(ratio: float) -> list[float]:
        page = Page(fixed(ratio))
        return [page.visit(c) for c in [CHANGED, UNCHANGED, CHANGED, UNCHANGED, UNCHANGED]]

    assert all(a < b for a, b in zip(waits(0.3, ), waits(1.2)))


def test_the_budget_loop_holds_revisits_to_the_budget() -> None:
    """100 URLs, each changing daily; a budget of 50 revisits a day: the
    threshold rises until the realised rate is about the budget."""
    budget = 50 / DAY
    pace = HazardPace(budget)
    policy = DriftWaitPolicy(pace, minimum=HOUR, maximum=365 * DAY, initial=HOUR)
    pages = [Page(policy, url=f"https://a.example/{i}", start=i * 60.0) for i in range(100)]
    due = [(p.now, i) for i, p in enumerate(pages)]
    import heapq
    import random

    rnd = random.Random(1)
    heapq.heapify(due)
    count = 0
    start_count = None
    while due:
        now, i = heapq.heappop(due)
        if now > 120 * DAY:
            break
        if start_count is None and now > 60 * DAY:
            start_count, t_start = count, now
        page = pages[i]
        first = page.record["visits"] == 0
        changed = first or rnd.random() < 1 - math.exp(-(now - page.record["fetched"]) / DAY)
        page.visit(CHANGED if changed else UNCHANGED)
        count += not first
        heapq.heappush(due, (page.now, i))
    assert start_count is not None
    realised = (count - start_count) / (now - t_start)
    assert realised == pytest.approx(budget, rel=0.15)
    assert pace.ratio > math.log(2)  # a budget below the demand raised the threshold


def test_from_params_shares_one_pace_and_reads_the_numbers() -> None:
    shared: dict[str, Any] = {}
    params = WaitParams(initial=2 * DAY, minimum=HOUR, maximum=30 * DAY, budget=500.0, shared=shared)
    a, b = DriftWaitPolicy.from_params(params), DriftWaitPolicy.from_params(params)
    assert a.pace is b.pace
    assert a.pace.budget == pytest.approx(500.0 / DAY)
    assert (a.minimum, a.maximum, a.initial) == (HOUR, 30 * DAY, 2 * DAY)
    free = DriftWaitPolicy.from_params(WaitParams(target_precision=0.2, shared={}))
    assert free.pace.budget is None and free.pace.ratio == pytest.approx(-math.log(0.8))


def test_pace_state_round_trips() -> None:
    pace = HazardPace(1.0)
    for t in range(0, 10_000, 7):
        pace.note_fetch(float(t))
    pace.learn("q", -3.0)
    state = json.loads(json.dumps(pace.state()))
    other = HazardPace(1.0)
    other.restore(state)
    assert other.state() == pace.state()


@settings(max_examples=60, deadline=None)
@given(
    verdicts=st.lists(st.sampled_from([CHANGED, UNCHANGED, UNKNOWN]), min_size=1, max_size=40),
    ratio=st.floats(1e-4, 50.0),
    minimum=st.floats(1.0, 10_000.0),
    span=st.floats(1.0, 1e6),
)
def test_wait_is_always_within_bounds(
    verdicts: list[ChangeState], ratio: float, minimum: float, span: float
) -> None:
    maximum = minimum * span
    page = Page(fixed(ratio, minimum=minimum, maximum=maximum, initial=minimum * 2))
    for verdict in verdicts:
        wait = page.visit(verdict)
        assert minimum <= wait <= maximum
        assert math.isfinite(wait)
