"""The lab's per-revisit tests of the union's eagerness (``bench/floor_variants.py``)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from bench.floor_variants import GatedUnion, LaterUnion, MatchedLater, eager_fraction
from scrapy_adaptive.frontier import ChangeState, Outcome, Visit
from scrapy_adaptive.policies.base import WaitParams
from scrapy_adaptive.policies.burst import BurstWaitPolicy
from scrapy_adaptive.policies.hint_decisions import marginal_value
from scrapy_adaptive.policies.snapback import SnapBackWaitPolicy
from scrapy_adaptive.policies.union import UnionWaitPolicy

DAY = 86_400.0
#: a quiet spell, a burst of changes, quiet again (bounded: 40 visits)
VERDICTS = [ChangeState.CHANGED if k == 0 or 15 <= k < 22 else ChangeState.UNCHANGED for k in range(40)]


def params() -> WaitParams:
    return WaitParams(initial=DAY, minimum=3_600.0, maximum=90 * DAY)


def build(cls: type[UnionWaitPolicy], **kw: Any) -> UnionWaitPolicy:
    """*cls* on one crawl's params, remembering the two families' waits it was given."""

    class Observed(cls):  # type: ignore[valid-type,misc]
        def waits(self, history: Any, visit: Visit) -> tuple[float, float, dict[str, Any]]:
            out = super().waits(history, visit)
            self.last = out[:2]
            return out

    p = params()
    return Observed(BurstWaitPolicy.from_params(p), SnapBackWaitPolicy.from_params(p), **kw)


def run(policy: Any) -> list[tuple[float, float, float, dict[str, Any]]]:
    """Visit one URL with *policy*, each revisit when the policy asked:
    (wait, the burst part's wait, the snap-back part's, the URL's memory)."""
    record: dict[str, Any] = {"visits": 0, "fetched": None, "wait": None, "policy": {}, "history": []}
    now, out = 0.0, []
    for change in VERDICTS:
        visit = Visit(
            Outcome.VISITED, status=200, change=change, url="https://a.example/p", queue="a.example", fetched=now
        )
        wait, _ = policy.decide(dict(record), visit)
        record.update(visits=record["visits"] + 1, fetched=now, wait=wait, policy=visit.policy_state)
        out.append((wait, *policy.last, record["policy"]))
        now += wait
    return out


@pytest.mark.parametrize("ratio", [0.1, 0.25, 0.5, 1.0, 2.0, 4.0])
def test_the_gate_is_where_the_later_plans_forecast_meets_a_fetchs_price(ratio: float) -> None:
    """At t = κ(r*)·w the later plan (λ = r*/w) gives the revisit a catch
    probability equal to the marginal value of one more scheduled fetch."""
    kappa = eager_fraction(ratio)
    assert 0.0 < kappa < 1.0
    assert -math.expm1(-ratio * kappa) == pytest.approx(marginal_value(ratio), rel=1e-9)
    assert eager_fraction(ratio) < eager_fraction(2 * ratio)  # a tighter budget gates harder


def test_the_later_union_takes_the_later_plan() -> None:
    visits = run(build(LaterUnion))
    assert all(wait == pytest.approx(max(b, s)) for wait, b, s, _ in visits)
    assert any(b < s for _, b, s, _ in visits) and any(s < b for _, b, s, _ in visits)


def test_the_gated_union_is_the_sooner_wait_held_to_the_gate() -> None:
    policy = build(GatedUnion)
    held = 0
    for wait, b, s, _ in run(policy):
        gate = eager_fraction(policy.allocator.ratio_for("a.example")) * max(b, s)
        assert wait == pytest.approx(max(min(b, s), gate))
        held += gate > min(b, s)
    assert held  # in the burst the snap-back part's return is held to the gate


def test_the_matched_union_scales_the_later_plan_by_the_urls_sooner_over_later() -> None:
    sooner = later = 0.0
    for wait, b, s, memory in run(build(MatchedLater)):
        sooner, later = sooner + min(b, s), later + max(b, s)
        assert wait == pytest.approx(max(b, s) * sooner / later)
        assert memory["ms"] == pytest.approx(sooner) and memory["ml"] == pytest.approx(later)


def test_the_match_in_time_weighs_each_plan_by_the_interval_it_was_in_force() -> None:
    """``union-matched-time``: the factor is ⟨1/later⟩ ÷ ⟨1/sooner⟩ over the URL's
    time, so a burst's many short waits count for the little time they hold."""
    rate_sooner = rate_later = 0.0
    previous: tuple[float, float, float] | None = None
    for wait, b, s, _ in run(build(MatchedLater, in_time=True)):
        if previous is not None:
            rate_sooner += previous[2] / previous[0]
            rate_later += previous[2] / previous[1]
            assert wait == pytest.approx(max(b, s) * rate_later / rate_sooner)
        else:
            assert wait == pytest.approx(min(b, s))  # the union's first wait
        previous = (min(b, s), max(b, s), wait)
