"""The rate allocator's arithmetic: what a plan at ratio r costs, the bracket
beyond which it no longer moves, and the r that spends a target."""

from __future__ import annotations

import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from scrapy_adaptive.policies.rate_histogram import FALLBACK_BIN, ZERO_BIN, cells_rate, log_bracket, solve_ratio
from tests.hypo import examples

F_MIN, F_MAX = 1 / 86_400, 1 / 60

rates = st.floats(1e-7, 1e-1)
cells = st.dictionaries(
    st.integers(-50, 50),
    st.tuples(st.integers(1, 1000), rates).map(lambda c: [float(c[0]), c[0] * c[1]]),
    min_size=1,
    max_size=6,
)


def test_a_plan_asks_each_url_its_rate_over_r_clipped_to_the_waits() -> None:
    # 10 URLs changing once an hour, at r = 0.5: each fetched twice an hour
    assert cells_rate({0: [10, 10 / 3600]}, 0.5, F_MIN, F_MAX, 0.0) == pytest.approx(10 * 2 / 3600)
    # a URL changing every second is held to the shortest wait, one never changing to the longest
    assert cells_rate({1: [1, 1.0]}, 0.5, F_MIN, F_MAX, 0.0) == pytest.approx(F_MAX)
    assert cells_rate({ZERO_BIN: [4, 0.0]}, 0.5, F_MIN, F_MAX, 0.0) == pytest.approx(4 * F_MIN)


def test_urls_nothing_is_known_of_take_the_fallback_rate_at_solve_time() -> None:
    stale = {FALLBACK_BIN: [3, 999.0]}  # the sum registered earlier is not used
    assert cells_rate(stale, 1.0, F_MIN, F_MAX, 1 / 3600) == pytest.approx(3 / 3600)
    assert cells_rate(stale, 1.0, F_MIN, F_MAX, 0.0) == pytest.approx(3 * F_MIN)


def test_nothing_known_gives_an_empty_bracket() -> None:
    assert log_bracket([], 0.0, F_MIN, F_MAX) == (0.0, 0.0)
    assert log_bracket([{ZERO_BIN: [5, 0.0]}, {FALLBACK_BIN: [2, 0.0]}], 0.0, F_MIN, F_MAX) == (0.0, 0.0)


@settings(max_examples=examples(90))
@given(cells, st.floats(1e-3, 1e3), st.floats(1e-3, 1e3))
def test_a_higher_ratio_never_asks_more(group: dict[int, list[float]], r1: float, r2: float) -> None:
    lo, hi = sorted((r1, r2))
    assert cells_rate(group, hi, F_MIN, F_MAX, 1e-4) <= cells_rate(group, lo, F_MIN, F_MAX, 1e-4) * (1 + 1e-12)


@settings(max_examples=examples(90))
@given(cells)
def test_beyond_the_bracket_every_url_is_at_its_fastest_or_slowest(group: dict[int, list[float]]) -> None:
    lo, hi = log_bracket([group], 1e-4, F_MIN, F_MAX)
    urls = sum(n for n, _ in group.values())
    assert cells_rate(group, math.exp(lo), F_MIN, F_MAX, 1e-4) == pytest.approx(urls * F_MAX, rel=1e-6)
    assert cells_rate(group, math.exp(hi), F_MIN, F_MAX, 1e-4) == pytest.approx(urls * F_MIN, rel=1e-6)


@settings(max_examples=examples(90))
@given(cells, st.floats(0.0, 1.0))
def test_the_solved_ratio_spends_the_target(group: dict[int, list[float]], share: float) -> None:
    bracket = log_bracket([group], 1e-4, F_MIN, F_MAX)
    assume(bracket[1] - bracket[0] > 1e-3)
    urls = sum(n for n, _ in group.values())
    target = urls * (F_MIN + share * (F_MAX - F_MIN))  # within what the waits allow

    def fetch_rate(r: float) -> float:
        return cells_rate(group, r, F_MIN, F_MAX, 1e-4)

    r = solve_ratio(fetch_rate, target, bracket)
    assert math.exp(bracket[0]) * (1 - 1e-9) <= r <= math.exp(bracket[1]) * (1 + 1e-9)
    assert fetch_rate(r) == pytest.approx(target, rel=1e-3, abs=urls * F_MIN * 1e-3)


def test_a_target_out_of_reach_lands_on_the_nearer_edge() -> None:
    group = {0: [10.0, 10 / 3600]}
    bracket = log_bracket([group], 0.0, F_MIN, F_MAX)

    def fetch_rate(r: float) -> float:
        return cells_rate(group, r, F_MIN, F_MAX, 0.0)

    assert solve_ratio(fetch_rate, 1e9, bracket) == pytest.approx(math.exp(bracket[0]))
    assert solve_ratio(fetch_rate, 0.0, bracket) == pytest.approx(math.exp(bracket[1]))
