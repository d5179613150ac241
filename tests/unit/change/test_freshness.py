"""Reading the lifetime a response's caching headers grant (change/freshness.py)."""

from __future__ import annotations

import math
from email.utils import formatdate

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_adaptive.change.answer import Answer
from scrapy_adaptive.change.freshness import (
    BAD_CACHE_CONTROL,
    BAD_EXPIRES,
    FUTURE_LAST_MODIFIED,
    MAX_LIFETIME,
    PROBLEMS,
    Freshness,
    cache_control_max_age,
    last_modified_problem,
)
from scrapy_adaptive.change.freshness import freshness as answer_freshness
from scrapy_adaptive.dates import parse_http_date
from tests.hypo import examples

NOW = 1_700_000_000.0
URL = "http://example.com/p"


def http(seconds: float) -> str:
    return formatdate(seconds, usegmt=True)


def answer(
    cache_control: str | None = None,
    expires: str | None = None,
    date: str | None = None,
    last_modified: str | None = None,
) -> Answer:
    """An answer with these headers, their dates read as the visit middleware reads them."""
    return Answer(
        URL,
        200,
        cache_control=cache_control,
        expires=expires,
        date=date,
        last_modified=last_modified,
        served_at=parse_http_date(date),
        modified_at=parse_http_date(last_modified),
        expires_at=None if expires is None else parse_http_date(expires.strip()),
    )


def freshness(cache_control: str | None, expires: str | None, date: str | None, now: float) -> Freshness:
    """The lifetime an answer with these headers grants."""
    return answer_freshness(answer(cache_control, expires, date), now)


def future_last_modified(last_modified: str | None, date: str | None, now: float) -> bool:
    """True if the policies read no age from this Last-Modified: it is later than the Date."""
    return last_modified_problem(answer(date=date, last_modified=last_modified), now) == FUTURE_LAST_MODIFIED


@pytest.mark.parametrize(
    ("cache_control", "lifetime"),
    [
        ("max-age=3600", 3600.0),
        ("public, max-age=3600", 3600.0),
        ("PUBLIC,MAX-AGE=3600", 3600.0),  # directive names are case-insensitive
        ('max-age="120"', 120.0),
        ("max-age=3600, s-maxage=60", 3600.0),  # s-maxage is for shared caches
        ("max-age=3600, max-age=3600", 3600.0),  # a repeat that agrees
        ("max-age=99999999999999", MAX_LIFETIME),
        ("no-cache", None),
        ("no-store, max-age=3600", None),
        ("max-age=0", None),
        ("private", None),
        ("", None),
    ],
)
def test_cache_control_lifetimes(cache_control: str, lifetime: float | None) -> None:
    found = freshness(cache_control, None, None, NOW)
    assert found.lifetime == lifetime
    assert found.problems == ()


@pytest.mark.parametrize(
    "cache_control",
    ["max-age=soon", "max-age=-5", "max-age=", "max-age=1.5", "max-age=60, max-age=120", "max age=60", "max-age=٣"],
)
def test_an_unreadable_cache_control_is_ignored_and_named(cache_control: str) -> None:
    found = freshness(cache_control, http(NOW + 3600), http(NOW), NOW)
    assert found.lifetime is None or found.lifetime == 3600.0  # Expires may still speak, never the bad max-age
    assert BAD_CACHE_CONTROL in found.problems


def test_two_different_max_ages_grant_nothing_not_even_expires() -> None:
    """RFC 9111: conflicting max-age values make the response stale."""
    found = freshness("max-age=60, max-age=120", http(NOW + 3600), http(NOW), NOW)
    assert found.lifetime is None and found.problems == (BAD_CACHE_CONTROL,)


def test_expires_counts_from_the_servers_date_not_the_local_clock() -> None:
    skewed_local_clock = NOW + 7200
    assert freshness(None, http(NOW + 3600), http(NOW), skewed_local_clock).lifetime == 3600.0
    assert freshness(None, http(NOW + 3600), None, NOW).lifetime == 3600.0  # no Date: the fetch time
    assert freshness(None, http(NOW + 3600), "garbage", NOW).lifetime == 3600.0


def test_max_age_wins_over_expires() -> None:
    assert freshness("max-age=60", http(NOW + 86_400), http(NOW), NOW).lifetime == 60.0


@pytest.mark.parametrize("expires", ["0", "-1", " 0 "])
def test_the_usual_already_expired_values_are_not_problems(expires: str) -> None:
    assert freshness(None, expires, http(NOW), NOW) == freshness(None, None, None, NOW)


@pytest.mark.parametrize("expires", ["next tuesday", "Thu, 99 Jan 2030 00:00:00 GMT", "\x00"])
def test_an_unreadable_expires_is_ignored_and_named(expires: str) -> None:
    found = freshness(None, expires, http(NOW), NOW)
    assert found.lifetime is None and found.problems == (BAD_EXPIRES,)


def test_an_expires_in_the_past_grants_nothing() -> None:
    assert freshness(None, http(NOW - 60), http(NOW), NOW).lifetime is None


def test_a_last_modified_after_the_date_is_in_the_future() -> None:
    assert future_last_modified(http(NOW + 3600), http(NOW), NOW)
    assert future_last_modified(http(NOW + 3600), None, NOW)
    assert not future_last_modified(http(NOW + 30), http(NOW), NOW)  # the clocks' rounding
    assert not future_last_modified(http(NOW - 3600), http(NOW), NOW)
    assert not future_last_modified("not a date", http(NOW), NOW)
    assert not future_last_modified(None, http(NOW), NOW)


@pytest.mark.parametrize(
    ("last_modified", "problem"),
    [
        ("yesterday-ish", "badLastModified"),
        ("Mon, 32 Foo 2020 25:61:61 GMT", "badLastModified"),
        (http(NOW + 3600), "futureLastModified"),
        (http(NOW - 3600), None),
        (None, None),
        ("", None),
    ],
)
def test_a_last_modified_that_is_not_a_date_or_in_the_future_is_named(last_modified: str | None, problem: str) -> None:
    assert last_modified_problem(answer(date=http(NOW), last_modified=last_modified), NOW) == problem


def test_max_age_reading_says_what_it_found() -> None:
    assert cache_control_max_age(None) == (None, False, False)
    assert cache_control_max_age("max-age=10, foo") == (10.0, False, False)  # an unknown directive is fine
    assert cache_control_max_age("max-age=10, ==") == (10.0, False, True)


header_text = st.one_of(
    st.none(),
    st.text(max_size=60),
    st.builds(
        lambda name, value: f"{name}={value}",
        st.sampled_from(["max-age", "MAX-AGE", "s-maxage", "no-cache", "private"]),
        st.one_of(st.integers(-(10**20), 10**20).map(str), st.text(max_size=12)),
    ),
    st.lists(
        st.sampled_from(["max-age=60", "no-store", "public", "max-age=x", ",", '"', 'max-age="5"']), max_size=5
    ).map(", ".join),  # fmt: skip
)
date_text = st.one_of(
    st.none(),
    st.text(max_size=40),
    st.floats(0, 2.5e11, allow_nan=False).map(lambda s: formatdate(s, usegmt=True)),
    st.sampled_from(["0", "-1", "Thu, 01 Jan 1970 00:00:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT"]),
)


@settings(max_examples=examples(400), deadline=None)
@given(header_text, date_text, date_text, st.floats(0, 4e9, allow_nan=False))
def test_any_headers_give_a_usable_lifetime_or_none_and_never_raise(
    cache_control: str | None, expires: str | None, date: str | None, now: float
) -> None:
    found = freshness(cache_control, expires, date, now)
    assert found.lifetime is None or (0 < found.lifetime <= MAX_LIFETIME and math.isfinite(found.lifetime))
    assert set(found.problems) <= set(PROBLEMS)
    assert isinstance(future_last_modified(expires, date, now), bool)
