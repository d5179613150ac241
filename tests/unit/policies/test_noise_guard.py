"""The noise guard: a probe-based likelihood-ratio test against pages that differ at every fetch."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Callable
from typing import Any

import pytest

from bench.sim.world import World
from scrapy_adaptive.model import ChangeState, Outcome, Plan, Visit
from scrapy_adaptive.policies.allocator import RateAllocator
from scrapy_adaptive.policies.base import WaitParams, WaitPolicy
from scrapy_adaptive.policies.heritrix import HeritrixWaitPolicy
from scrapy_adaptive.policies.noise_guard import KEY, PROBE_WAIT, NoiseDetector, NoiseVerdict
from scrapy_adaptive.policies.rate import PrecisionWaitPolicy, ProportionalWaitPolicy

DAY = 86_400.0
HOUR = 3_600.0
MAX_WAIT = 28 * DAY


def proportional(budget_per_day: float = 50.0) -> ProportionalWaitPolicy:
    return ProportionalWaitPolicy(RateAllocator(budget_per_day / DAY, min_wait=HOUR, max_wait=MAX_WAIT, epoch="t"))


Page = Callable[[float, random.Random], ChangeState]  # seconds since the last visit -> verdict


def noise_page(gap: float, rng: random.Random) -> ChangeState:
    return ChangeState.CHANGED


def poisson_page(rate: float) -> Page:
    def page(gap: float, rng: random.Random) -> ChangeState:
        return ChangeState.CHANGED if rng.random() < -math.expm1(-rate * gap) else ChangeState.UNCHANGED

    return page


def crawl(policy: WaitPolicy, pages: list[tuple[int, Page]], seed: int = 0) -> list[tuple[float, dict[str, Any]]]:
    """Visit one URL, *pages* giving its behaviour for so many visits each; (wait, memory) per visit."""
    rng = random.Random(seed)
    record: dict[str, Any] = {"visits": 0, "wait": None, "fetched": None, "discovered": 0.0, "policy": {}}
    now, out = 0.0, []
    for visits, page in pages:
        for _ in range(visits):
            first = record["fetched"] is None
            change = ChangeState.CHANGED if first else page(now - record["fetched"], rng)
            visit = Visit(Outcome.VISITED, status=200, change=change, url="https://h.example/p")
            plan = policy.plan(record, visit)
            wait = plan.wait
            memory = plan.memory if plan.memory is not None else record["policy"]
            out.append((wait, memory))
            record = {"visits": record["visits"] + 1, "wait": wait, "fetched": now, "discovered": 0.0, "policy": memory}
            now += wait
    return out


def held(memory: dict[str, Any]) -> bool:
    return NoiseDetector().flagged(memory)


def test_the_test_numbers() -> None:
    guard = NoiseDetector(HOUR)
    # a probe an hour after the last visit of a page changing every 2 hours finds a change with p = 0.39
    assert guard.evidence(HOUR) == pytest.approx(-math.log(1 - math.exp(-0.5)))
    assert guard.probes_needed() == 5  # 0.39^5 = 0.9 % <= alpha = 1 %
    assert (1 - math.exp(-0.5)) ** guard.probes_needed() <= guard.alpha
    assert NoiseDetector(HOUR, alpha=0.05).probes_needed() == 4
    # a probe delayed to 10 hours says almost nothing
    assert guard.evidence(10 * HOUR) < 0.01


def test_a_noise_page_is_flagged_within_a_bounded_number_of_visits_and_held() -> None:
    policy = proportional()
    steps = crawl(policy, [(40, noise_page)])
    flagged_at = next(i for i, (_, memory) in enumerate(steps) if held(memory))
    # first visit, 8 changed visits, then 5 probes a minute apart
    assert flagged_at == 1 + 8 + 5 - 1
    assert [w for w, _ in steps[flagged_at - 5 : flagged_at]] == [PROBE_WAIT] * 5
    waits = [w for w, _ in steps[flagged_at:]]
    assert set(waits) <= {MAX_WAIT, PROBE_WAIT}  # holds, and a re-test probe after every two
    assert waits.count(MAX_WAIT) >= 2 * waits.count(PROBE_WAIT)
    memory = steps[-1][1]
    assert memory["al"][2] == 0.0  # no rate registered with the allocator while held


def hourly_page(gap: float, rng: random.Random) -> ChangeState:
    """A page that really changes every hour (a live feed): a visit finds a
    change iff it comes in a later hour than the last one."""
    hourly_page.clock += gap  # type: ignore[attr-defined]
    now = hourly_page.clock  # type: ignore[attr-defined]
    return ChangeState.CHANGED if now // HOUR != (now - gap) // HOUR else ChangeState.UNCHANGED


@pytest.mark.parametrize("make", [proportional, lambda: HeritrixWaitPolicy.from_params(WaitParams(minimum=HOUR))])
def test_a_page_that_really_changes_every_hour_is_never_held(make: Callable[[], WaitPolicy]) -> None:
    """Probes a minute after a visit find a real hourly page unchanged, so the
    guard's tests fail and the page keeps the policy's own waits (probes an
    hour apart, the policy's minimum wait, could not tell it from noise)."""
    hourly_page.clock = 0.5 * HOUR  # type: ignore[attr-defined]
    steps = crawl(make(), [(300, hourly_page)])
    assert not any(held(memory) for _, memory in steps)
    assert max(w for w, _ in steps[-100:]) < 4 * HOUR


def test_the_flag_clears_when_the_page_stops_being_noisy() -> None:
    policy = proportional()
    steps = crawl(policy, [(20, noise_page), (4, poisson_page(1 / (14 * DAY)))], seed=1)
    assert held(steps[19][1])
    # two holds, then a re-test probe an hour later finds it unchanged
    assert not held(steps[-1][1])
    # a page that no longer changes at all clears at the first visit
    steps = crawl(policy, [(20, noise_page), (1, lambda gap, rng: ChangeState.UNCHANGED)])
    assert held(steps[19][1]) and not held(steps[-1][1])


def test_a_failed_test_resumes_the_wait_and_backs_off() -> None:
    guard = NoiseDetector(HOUR, suspect_run=2, max_suspect_run=8)
    memory: dict[str, Any] = {}
    verdicts = [guard.observe(memory, ChangeState.CHANGED, 5 * DAY) for _ in range(2)]
    assert verdicts == [NoiseVerdict.NONE, NoiseVerdict.PROBE]
    assert guard.wait(memory, verdicts[-1], 3 * DAY, MAX_WAIT) == HOUR
    verdict = guard.observe(memory, ChangeState.UNCHANGED, HOUR)
    assert verdict is NoiseVerdict.RESUME
    assert guard.wait(memory, verdict, 7 * DAY, MAX_WAIT) == 3 * DAY  # the wait from before the probe
    assert memory[KEY][2] == 4  # the next test needs a run of 4
    assert guard.observe(memory, ChangeState.UNKNOWN, None) is NoiseVerdict.NONE


def test_memory_stays_bounded() -> None:
    policy = proportional()
    pattern: list[tuple[int, Page]] = [(30, noise_page), (30, poisson_page(1 / DAY))] * 8
    sizes = [len(json.dumps(memory.get(KEY))) for _, memory in crawl(policy, pattern, seed=2)]
    assert max(sizes) <= 40
    quiet = crawl(proportional(), [(30, poisson_page(1 / (30 * DAY)))], seed=3)
    assert KEY not in quiet[-1][1]  # a page with nothing to report stores nothing


def test_precision_policy_and_heritrix_use_the_guard() -> None:
    steps = crawl(PrecisionWaitPolicy(0.5, max_wait=MAX_WAIT), [(20, noise_page)])
    assert held(steps[-1][1]) and steps[-1][0] in (MAX_WAIT, HOUR)
    params = WaitParams(minimum=HOUR, maximum=MAX_WAIT)
    steps = crawl(HeritrixWaitPolicy.from_params(params), [(20, noise_page)])
    assert held(steps[-1][1])
    plain = crawl(HeritrixWaitPolicy(params), [(20, noise_page)])
    assert plain[-1][0] == HOUR and not held(plain[-1][1])  # the thesis's rule, as the lab runs it


# -- the simulator ---------------------------------------------------------------------------------


class _Late(WaitPolicy):
    """Counts the visits to noise pages in the second half of a run."""

    def __init__(self, inner: WaitPolicy, world: World) -> None:
        self.inner = inner
        self.noise = {p.url for p in world.pages if p.kind == "noise"}
        self.half = world.start + world.duration / 2
        self.late = 0

    def plan(self, history: Any, visit: Visit) -> Plan:
        if history.get("fetched") is not None and visit.url in self.noise:
            self.late += history["fetched"] + history["wait"] + (visit.overdue or 0.0) >= self.half
        return self.inner.plan(history, visit)
