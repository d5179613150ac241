"""The lab's tests of the probe: a new URL's early revisits priced for what they teach (``bench/probe_variants.py``)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from bench.probe_variants import ProbeUnion, best_probe, best_value, grid_posterior, probe_value
from scrapy_adaptive.frontier import ChangeState, Outcome, Visit
from scrapy_adaptive.policies.base import WaitParams
from scrapy_adaptive.policies.burst import BurstWaitPolicy
from scrapy_adaptive.policies.estimator import CHANGED, UNCHANGED
from scrapy_adaptive.policies.hint_decisions import marginal_value
from scrapy_adaptive.policies.snapback import SnapBackWaitPolicy

DAY = 86_400.0
YEAR = 365.25 * DAY
#: a population prior like endoflife's: 12 changes a year, ln λ spread 1.2
PRIOR = (math.log(12 / YEAR), 1.2)


def mean_log_rate(rates: list[float], weights: list[float]) -> float:
    return sum(w * math.log(lam) for lam, w in zip(rates, weights, strict=True))


def upper_tail(rates: list[float], weights: list[float], rate: float) -> float:
    return sum(w for lam, w in zip(rates, weights, strict=True) if lam >= rate)


def test_a_change_found_late_says_little_and_one_found_soon_says_fast() -> None:
    rates, prior = grid_posterior([], PRIOR)
    assert sum(prior) == pytest.approx(1.0) and mean_log_rate(rates, prior) == pytest.approx(PRIOR[0], abs=1e-6)
    _, late = grid_posterior([[50 * DAY, CHANGED]], PRIOR)
    _, soon = grid_posterior([[3 * DAY, CHANGED]], PRIOR)
    _, quiet = grid_posterior([[50 * DAY, UNCHANGED]], PRIOR)
    fast = 50 / YEAR
    # censored: a change within 50 days barely moves the odds of a URL changing 50 times a year
    assert upper_tail(rates, late, fast) < 1.6 * upper_tail(rates, prior, fast)
    assert upper_tail(rates, soon, fast) > 3 * upper_tail(rates, prior, fast)
    assert mean_log_rate(rates, quiet) < PRIOR[0] < mean_log_rate(rates, late) < mean_log_rate(rates, soon)


@pytest.mark.parametrize("ratio", [0.5, 1.0, 2.0])
def test_a_known_rate_is_planned_at_the_allocators_own_ratio(ratio: float) -> None:
    lam = 1 / (5 * DAY)
    value = best_value([lam], [1.0], ratio)
    # f = λ/r*: f(1 − e^(−r*)) − φ(r*)·f
    assert value == pytest.approx(lam / ratio * (-math.expm1(-ratio) - marginal_value(ratio)), rel=1e-6)
    f = lam / ratio
    for other in (0.7 * f, 1.4 * f):
        assert value > other * (-math.expm1(-lam / other) - marginal_value(ratio))


def test_a_known_rate_is_never_probed_and_a_wide_belief_is_when_the_lesson_lasts() -> None:
    ratio, wait = 1.5, 1.5 * YEAR / 12
    lam = 12 / YEAR
    # nothing to learn: splitting the planned interval alone does not earn a fetch's price
    assert best_probe([lam], [1.0], wait, ratio, 1000 * DAY, 3_600.0) is None
    rates, weights = grid_posterior([], PRIOR)
    assert best_probe(rates, weights, wait, ratio, 0.0, 3_600.0) is None  # no time to use the lesson in
    found = best_probe(rates, weights, wait, ratio, 1000 * DAY, 3_600.0)
    assert found is not None and 3_600.0 < found[0] < wait and found[1] > 0
    base = best_value(rates, weights, ratio)
    assert found[1] == pytest.approx(probe_value(rates, weights, found[0], wait, ratio, 1000 * DAY, base))
    # the lesson shrinks as the URL's own visits narrow the belief: twenty resolved gaps of five days
    narrow = grid_posterior([[5 * DAY, CHANGED], [2 * DAY, UNCHANGED]] * 20, PRIOR)
    assert best_probe(*narrow, 4 * DAY, ratio, 1000 * DAY, 3_600.0) is None


def visit(change: ChangeState, now: float) -> Visit:
    return Visit(Outcome.VISITED, status=200, change=change, url="https://a.example/p", queue="a.example", fetched=now)


def test_the_probe_union_visits_a_new_url_sooner_than_the_union_and_then_follows_its_verdicts() -> None:
    p = WaitParams(initial=DAY, minimum=3_600.0, maximum=90 * DAY)
    union = ProbeUnion(BurstWaitPolicy.from_params(p), SnapBackWaitPolicy.from_params(p), spread=True)
    union.started = 0.0
    record: dict[str, Any] = {"visits": 0, "fetched": None, "wait": None, "policy": {}, "history": []}
    plain = ProbeUnion(BurstWaitPolicy.from_params(p), SnapBackWaitPolicy.from_params(p))
    w_plain, _ = plain.waits(dict(record), visit(ChangeState.CHANGED, 0.0))[:2]
    now, families = 0.0, []
    for change in [ChangeState.CHANGED, *[ChangeState.CHANGED] * 6]:
        v = visit(change, now)
        wait, family = union.decide(dict(record), v)
        families.append(family)
        record.update(visits=record["visits"] + 1, fetched=now, wait=wait, policy=v.policy_state)
        if len(families) == 1:
            assert family == "probe" and wait < min(w_plain, 90 * DAY)  # the prior (fallback sd 2) is wide
        now += wait
    assert union.probes >= 1 and union.weighed >= union.probes
    assert record["policy"].get("pv")  # the URL's grid posterior teaches the probe's own prior
