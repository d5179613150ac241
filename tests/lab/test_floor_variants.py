"""The lab's tests of the union's eagerness and of regular documents' timing (``bench/floor_variants.py``)."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest

from bench.floor_variants import (
    GatedUnion,
    LaterUnion,
    MatchedLater,
    RegularUnion,
    eager_fraction,
    gaps_cv,
    regular_cv,
    regular_gaps,
)
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


def test_the_regularity_test_passes_a_poisson_process_one_time_in_twenty() -> None:
    """``regular_gaps`` flags a URL whose gaps are too even for a memoryless
    process: exponential gaps pass it in about 5 % of histories (its stated
    confidence), a weekly cadence with a day's jitter always."""
    rng = random.Random(2026)
    trials = 2_000
    flagged = 0
    for _ in range(trials):
        times = [0.0]
        for _ in range(6):
            times.append(times[-1] + rng.expovariate(1 / (7 * DAY)))
        flagged += regular_gaps(times) is not None
    assert 0.03 < flagged / trials < 0.075
    weekly = [7 * DAY * k + rng.uniform(-DAY / 2, DAY / 2) for k in range(7)]
    assert regular_gaps(weekly) is not None
    assert gaps_cv([b - a for a, b in zip(weekly, weekly[1:], strict=False)]) < regular_cv(6)
    assert regular_gaps(weekly[:3]) is None  # two gaps: no test


def replay_cadence(policy: Any, period: float, horizon: float) -> list[tuple[float, float, float | None]]:
    """Visit one URL that changes every *period* exactly, each revisit when *policy* asked,
    until *horizon* (bounded: 400 visits): (visit time, wait, last detected change)."""
    record: dict[str, Any] = {"visits": 0, "fetched": None, "wait": None, "policy": {}, "history": []}
    now, seen, detected, out = 0.0, 0, None, []
    for _ in range(400):
        if now > horizon:
            break
        version = int(now // period)
        change = ChangeState.CHANGED if version > seen or record["visits"] == 0 else ChangeState.UNCHANGED
        seen = version
        detected = now if change is ChangeState.CHANGED else detected
        visit = Visit(
            Outcome.VISITED, status=200, change=change, url="https://a.example/r", queue="a.example", fetched=now
        )
        wait, _ = policy.decide(dict(record), visit)
        record.update(visits=record["visits"] + 1, fetched=now, wait=wait, policy=visit.policy_state)
        record["history"] = [*record["history"], [now, change.value, 200]][-16:]
        out.append((now, wait, detected))
        now += wait
    return out


def test_on_a_regular_url_no_revisit_comes_before_its_shortest_gap_after_a_change() -> None:
    """``union-regular``: once a URL's detected changes pass the regularity test,
    no revisit is planned sooner than the last change plus its shortest observed
    gap; the union alone (same parameters) revisits sooner than that."""
    period, horizon = 5 * DAY, 200 * DAY
    visits = replay_cadence(build(RegularUnion), period, horizon)
    detections = sorted({d for _, _, d in visits if d is not None})
    assert len(detections) >= 8
    held = 0
    for now, wait, last in visits:
        known = [d for d in detections if d <= now][-9:]
        gaps = regular_gaps(known)
        if gaps is None or last is None:
            continue
        assert now + wait >= last + min(gaps) - 1e-6
        held += 1
    assert held >= 10
    union_visits = replay_cadence(build(UnionWaitPolicy), period, horizon)
    union_detections = sorted({d for _, _, d in union_visits if d is not None})
    sooner = 0
    for now, wait, last in union_visits:
        gaps = regular_gaps([d for d in union_detections if d <= now][-9:])
        sooner += gaps is not None and last is not None and now + wait < last + min(gaps) - 1e-6
    assert sooner  # the rule bites: the union's after-change return comes before the cadence's next change


def test_on_an_irregular_url_the_regular_union_is_the_union() -> None:
    """A quiet spell then a burst is not regular: every wait is the union's."""
    ours, theirs = run(build(RegularUnion)), run(build(UnionWaitPolicy))
    assert [w for w, *_ in ours] == pytest.approx([w for w, *_ in theirs])
    assert len(ours[-1][3]["rg"]) == 8  # its detections were kept and tested
