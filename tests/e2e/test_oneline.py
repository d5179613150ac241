"""The add-on line and the crawl's time scale are enough for a revisiting crawl.

A project that sets ``ADDONS`` and ``ADAPTIVE_WAIT_MIN`` only (its politeness
as any Scrapy project sets it: ``DOWNLOAD_DELAY``) must revisit within
seconds, not after the hours a fixed first wait plans, and must spend what
its politeness allows where changes are: pages that change at every visit
more often than pages that never change, which back off visit by visit
however much capacity is left.  The log must say where the
budget comes from and which setting decides the next revisit.  A real
crawl (``scrapy runspider``, real LevelDB) against the mock server, 15 s.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.crawlrunner import run_crawl
from tests.e2e.test_scheduler import FOLLOW, attempts, fetch_times
from tests.mockserver import MockServer

pytestmark = [pytest.mark.e2e, pytest.mark.quick]

CHANGING = [f"/changes/1/oneline-c{i}" for i in range(4)]
STATIC = [f"/page/oneline-s{i}" for i in range(4)]


def test_the_add_on_line_and_the_minimum_wait_revisit_changing_pages_more(
    clean_log: MockServer, tmp_state: Path
) -> None:
    server = clean_log
    start = server.page_url("/page/oneline-index", links=CHANGING + STATIC)
    settings = {
        "ADDONS": {"scrapy_adaptive.Addon": 0},
        "ADAPTIVE_WAIT_MIN": 2.0,
        # what a project sets anyway: where the state lives, its politeness, how long this test runs
        "ADAPTIVE_STATE_DIR": str(tmp_state / "adaptive"),
        "DOWNLOAD_DELAY": 0.2,
        "CLOSESPIDER_TIMEOUT": 15,
        "LOG_LEVEL": "INFO",
    }
    result = run_crawl(FOLLOW, settings, timeout=90, args=["-a", f"start_urls={start}"])
    result.assert_ok()
    log = server.log(host="127.0.0.1")
    times = {path: attempts(fetch_times(log, path)) for path in CHANGING + STATIC}
    visits = {path: len(t) for path, t in times.items()}
    # revisited within the test's 15 s, every page, not after a first wait of hours
    assert all(n >= 2 for n in visits.values()), visits
    changing = sum(visits[p] for p in CHANGING) / len(CHANGING)
    static = sum(visits[p] for p in STATIC) / len(STATIC)
    # a page that changes at every visit comes back about every ADAPTIVE_WAIT_MIN
    # (2 s: 6-7 visits in 15 s when measured); a static one is checked after
    # the minimum wait too, then each quiet visit makes its wait longer
    # (2, 3, 4.5 s...: 3-4 visits), however much capacity is left
    assert changing >= 5, visits
    assert changing >= 1.5 * static, visits
    # the back-off, averaged over the static pages (politeness moves single gaps by up to a second or so)
    gaps = {path: [b - a for a, b in zip(times[path], times[path][1:])] for path in STATIC}
    backoff = [g[-1] - g[0] for g in gaps.values() if len(g) >= 2]
    assert backoff and sum(backoff) / len(backoff) > 0.5, gaps
    # the summary says where the budget comes from and what decides the next revisit
    assert re.search(
        r"Budget: \d+ revisits/day from politeness capacity \(ADAPTIVE_CAPACITY_SHARE 0\.9 of \d+ fetches/day; "
        r"ADAPTIVE_BUDGET overrides it\)",
        result.log,
    ), result.log[-3000:]
    decided = re.findall(r"next URL due [^\n]*\((?:revisit, )?([A-Z_]+|a first visit)\)", result.log)
    assert decided and set(decided) <= {
        "ADAPTIVE_WAIT_MIN",
        "ADAPTIVE_CAPACITY_SHARE",
        "ADAPTIVE_TARGET_PRECISION",
        "a first visit",
    }, decided
