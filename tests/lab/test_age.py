"""The lab's tests of change rate by age (``bench/age_rates.py``) and of the age-class prior
(``bench/age_variants.py``)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from bench.age_rates import LABELS, Era, Life, ratios
from bench.age_variants import AgedPrior, AgedUnion
from scrapy_adaptive.frontier import ChangeState, Outcome, Visit
from scrapy_adaptive.policies.base import WaitParams
from scrapy_adaptive.policies.burst import BurstWaitPolicy
from scrapy_adaptive.policies.prior import PopulationPrior
from scrapy_adaptive.policies.snapback import SnapBackWaitPolicy

DAY = 86_400.0
END = 800 * DAY


def steady(first: float, gap: float) -> Life:
    """A document changing every *gap* seconds from *first* to :data:`END`."""
    return Life(first, END, [first + gap * k for k in range(1, int((END - first) / gap))])


def test_a_document_changing_at_a_steady_rate_is_at_its_own_average_at_every_age() -> None:
    got = ratios([steady(0.0, DAY / 2), steady(100 * DAY, DAY / 3)])
    for label, (observed, expected) in zip(LABELS, got, strict=True):
        if label == "0–1 d":  # one or two changes: no average to speak of
            continue
        assert observed / expected == pytest.approx(1.0, rel=0.03), label


def test_changes_crowded_into_a_documents_first_month_show_in_its_young_bins() -> None:
    young = Life(0.0, END, sorted([k * DAY for k in range(1, 21)] + [40 * DAY + k * 70 * DAY for k in range(10)]))
    by_bin = dict(zip(LABELS, ratios([young]), strict=True))
    observed, expected = by_bin["1–30 d"]
    assert observed == 20 and observed / expected > 5
    observed, expected = by_bin["> 1 y"]
    assert observed / expected < 0.5


def test_the_era_factor_is_one_in_an_ordinary_window_and_above_in_a_busy_one() -> None:
    old = [steady(0.0, DAY) for _ in range(3)]
    busy = Life(0.0, END, sorted({*steady(0.0, DAY).changes, *(500 * DAY + k * 3_600.0 for k in range(1, 200))}))
    era = Era([*old, busy])
    ordinary = era.factor(300 * DAY, 400 * DAY)
    assert ordinary is not None and 0.85 < ordinary < 1.0  # the busy document's rate is above its ordinary days
    hot = era.factor(500 * DAY, 510 * DAY)
    assert hot is not None and hot > 2 * ordinary
    assert era.factor(0.0, 100 * DAY) is None  # nobody is 180 days old yet


def contribute(prior: AgedPrior, age_days: float, log_rate: float, memory: dict[str, Any]) -> None:
    prior.age = age_days * DAY
    prior.update(memory, log_rate, 0.01)
    prior.age = None


def test_each_age_class_learns_from_what_urls_did_while_in_it_and_falls_back_to_the_pooled_prior() -> None:
    prior = AgedPrior(PopulationPrior(min_count=3))
    memories: list[dict[str, Any]] = [{} for _ in range(4)]
    for memory in memories:
        contribute(prior, 5, math.log(10 / DAY), memory)  # young: fast
        contribute(prior, 400, math.log(1 / DAY), memory)  # old: slow
    young, old = prior.classes[0], prior.classes[-1]
    assert young.count == old.count == 4 and prior.pooled.count == 4  # the pooled prior holds each URL once
    assert math.exp(young.get()[0]) * DAY == pytest.approx(10.0)  # kept after the URLs aged out
    prior.age = 5 * DAY
    assert math.exp(prior.get()[0]) * DAY == pytest.approx(10.0)
    prior.age = 100 * DAY  # 30–180 days: no contribution yet, so the pooled prior (their latest, old rates)
    assert prior.get() == prior.pooled.get()
    prior.age = None
    for memory in memories:
        prior.update(memory, None)  # a noisy URL withdraws from every class
    assert young.count == old.count == prior.pooled.count == 0


def test_the_aged_union_tells_the_prior_each_urls_age_since_first_seen_and_only_while_deciding() -> None:
    p = WaitParams(initial=DAY, minimum=3_600.0, maximum=90 * DAY)
    burst = BurstWaitPolicy.from_params(p)
    burst.allocator.prior = burst.prior = AgedPrior(burst.allocator.prior)  # type: ignore[assignment]
    union = AgedUnion(burst, SnapBackWaitPolicy.from_params(p))
    seen: list[float | None] = []
    original = burst.prior.get

    def spy(fallback_rate: float | None = None) -> tuple[float, float]:
        seen.append(burst.prior.age)  # type: ignore[attr-defined]
        return original(fallback_rate)

    burst.prior.get = spy  # type: ignore[method-assign]
    record: dict[str, Any] = {"visits": 0, "fetched": None, "wait": None, "policy": {}, "history": []}
    now = 1_000.0 * DAY
    for change in [ChangeState.CHANGED, ChangeState.UNCHANGED, ChangeState.CHANGED]:
        visit = Visit(
            Outcome.VISITED, status=200, change=change, url="https://a.example/p", queue="a.example", fetched=now
        )
        wait, _ = union.decide(dict(record), visit)
        record.update(visits=record["visits"] + 1, fetched=now, wait=wait, policy=visit.policy_state)
        now += wait
    assert seen and seen[0] == 0.0 and max(a for a in seen if a is not None) > 0
    assert burst.prior.age is None  # type: ignore[attr-defined]
