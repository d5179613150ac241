"""The one date parser: HTTP dates, W3C datetimes, hint times."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone
from email.utils import formatdate
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_adaptive.dates import parse_http_date, parse_time, parse_w3c_datetime
from tests.hypo import examples

#: whole seconds in UTC, inside what every form can write
moments = st.datetimes(min_value=datetime(1970, 1, 2), max_value=datetime(9999, 12, 30), timezones=st.just(UTC)).map(
    lambda d: d.replace(microsecond=0)
)
#: zones W3C datetimes may carry: whole minutes within ±14 h
zones = st.integers(min_value=-14 * 60, max_value=14 * 60).map(lambda m: timezone(timedelta(minutes=m)))


@given(moments)
def test_http_dates_round_trip_in_their_three_forms(moment: datetime) -> None:
    seconds = moment.timestamp()
    assert parse_http_date(formatdate(seconds, usegmt=True)) == seconds  # IMF-fixdate
    assert parse_http_date(moment.strftime("%a %b %d %H:%M:%S %Y")) == seconds  # asctime (a zone-less UTC)
    if moment.year < 2069:  # two-digit years: 69–99 are 19xx, 00–68 20xx
        assert parse_http_date(moment.strftime("%A, %d-%b-%y %H:%M:%S GMT")) == seconds  # RFC 850


@given(moments, zones, st.integers(min_value=0, max_value=999_999))
def test_w3c_datetimes_round_trip_through_isoformat(moment: datetime, zone: timezone, micro: int) -> None:
    local = moment.replace(microsecond=micro).astimezone(zone)
    assert parse_w3c_datetime(local.isoformat()) == pytest.approx(local.timestamp(), abs=1e-6)
    assert parse_w3c_datetime(local.isoformat(timespec="minutes")) == local.replace(second=0, microsecond=0).timestamp()


@given(moments)
def test_every_w3c_precision_means_its_first_instant_utc(moment: datetime) -> None:
    year = datetime(moment.year, 1, 1, tzinfo=UTC).timestamp()
    month = datetime(moment.year, moment.month, 1, tzinfo=UTC).timestamp()
    day = datetime(moment.year, moment.month, moment.day, tzinfo=UTC).timestamp()
    assert parse_w3c_datetime(moment.strftime("%Y")) == year
    assert parse_w3c_datetime(moment.strftime("%Y-%m")) == month
    assert parse_w3c_datetime(moment.strftime("%Y-%m-%d")) == day
    assert parse_w3c_datetime(moment.strftime("%Y-%m-%dT%H:%M:%S")) == moment.timestamp()
    assert parse_w3c_datetime(moment.strftime("%Y-%m-%dT%H:%M:%SZ")) == moment.timestamp()


def test_the_w3c_note_examples() -> None:
    assert parse_w3c_datetime("1997") == datetime(1997, 1, 1, tzinfo=UTC).timestamp()
    assert parse_w3c_datetime("1997-07") == datetime(1997, 7, 1, tzinfo=UTC).timestamp()
    assert parse_w3c_datetime("1997-07-16") == datetime(1997, 7, 16, tzinfo=UTC).timestamp()
    at = datetime(1997, 7, 16, 19, 20, tzinfo=timezone(timedelta(hours=1))).timestamp()
    assert parse_w3c_datetime("1997-07-16T19:20+01:00") == at
    assert parse_w3c_datetime("1997-07-16T19:20:30+01:00") == at + 30
    assert parse_w3c_datetime("1997-07-16T19:20:30.45+01:00") == pytest.approx(at + 30.45)
    assert parse_w3c_datetime("1997-07-16T18:20:30.45Z") == pytest.approx(at + 30.45)


def test_hint_times_read_a_four_digit_string_as_a_year_and_a_number_as_seconds() -> None:
    assert parse_time("2005") == datetime(2005, 1, 1, tzinfo=UTC).timestamp()
    assert parse_time("2005-07") == datetime(2005, 7, 1, tzinfo=UTC).timestamp()
    assert parse_time(2005) == parse_time(2005.0) == 2005.0
    assert parse_time("784111777") == 784111777.0
    assert parse_time("Sun, 06 Nov 1994 08:49:37 GMT") == 784111777.0
    assert parse_time(None) is None
    for bad in ("", "yesterday", "1969-12-31", True, [2005]):
        with pytest.raises(ValueError):
            parse_time(bad)


@settings(max_examples=examples(300))
@given(st.text())
def test_arbitrary_text_never_raises_but_the_documented_error(text: str) -> None:
    seconds = parse_http_date(text)
    assert seconds is None or math.isfinite(seconds)
    try:
        parsed = parse_w3c_datetime(text)
    except ValueError:
        pass
    else:
        assert math.isfinite(parsed)
    try:
        hinted: Any = parse_time(text)
    except ValueError:
        pass
    else:
        assert hinted is None or (math.isfinite(hinted) and hinted >= 0)
