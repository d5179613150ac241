"""Durations, byte counts and clock times as a report's reader wants them."""

from __future__ import annotations

import time

import pytest

from scrapy_adaptive.humanize import human, human_bytes, when


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "-"),
        (0.0, "0ms"),
        (0.25, "250ms"),
        (1.5, "1.5s"),
        (45, "45s"),
        (90, "1.5m"),
        (720, "12m"),
        (3600 * 3.5, "3.5h"),
        (86_400 * 2, "2.0d"),
        (-45, "-45s"),
        (-7200, "-2.0h"),
    ],
)
def test_a_duration_in_the_largest_unit_that_fits(seconds: float | None, text: str) -> None:
    assert human(seconds) == text


@pytest.mark.parametrize(
    ("n", "text"),
    [
        (None, "-"),
        (0, "0 B"),
        (512, "512 B"),
        (999, "999 B"),
        (3_200_000, "3.2 MB"),
        (1_500, "1.5 kB"),
        (7e9, "7.0 GB"),
        (2.5e12, "2.5 TB"),
    ],
)
def test_a_byte_count_in_the_largest_decimal_unit(n: float | None, text: str) -> None:
    assert human_bytes(n) == text


def test_a_clock_time_is_local_and_reads_back() -> None:
    assert when(None) == "-"
    t = 1_700_000_000.0
    assert time.mktime(time.strptime(when(t), "%Y-%m-%d %H:%M:%S")) == t
