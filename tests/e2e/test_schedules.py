"""A curated schedule whose window opens and closes during a real crawl.

The policy's own wait is long (1000 s): outside the window each page is
visited once.  The schedule on ``/page/sched/`` opens 6 s after the crawl
starts and closes 10 s later, with ``every`` 1 s: inside it the matched
pages are revisited about every second, the others are not, and after it
the policy's wait stands again.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import read_records
from tests.crawlrunner import run_crawl
from tests.mockserver import MockServer

pytestmark = pytest.mark.e2e

PAGES = Path(__file__).parents[1] / "spiders" / "pages.py"
OPENS, CLOSES, EVERY, LENGTH = 6.0, 16.0, 1.0, 21


def iso(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).isoformat(timespec="milliseconds")


def test_a_window_bounds_the_wait_while_open_and_the_policy_decides_outside(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    ms = clean_log
    paths = ["/page/sched/a", "/page/sched/b", "/page/other/c"]
    urls = [ms.url(p) for p in paths]
    start = time.time()
    schedule = {"url": "/page/sched/", "from": iso(start + OPENS), "until": iso(start + CLOSES), "every": EVERY}
    settings = {
        **adaptive_settings,
        "ADAPTIVE_WAIT_DEFAULT": 1000.0,
        "ADAPTIVE_WAIT_MAX": 1000.0,
        "ADAPTIVE_WAIT_POLICIES": [schedule],
        "CLOSESPIDER_TIMEOUT": LENGTH,
    }
    result = run_crawl(PAGES, settings, timeout=60, args=["-a", "urls=" + " ".join(urls)])
    result.assert_ok()
    log = ms.log(host="127.0.0.1")
    times = {p: [e["start"] - start for e in log if e["path"] == p] for p in paths}
    detail = json.dumps(times, indent=1)
    for path in paths[:2]:
        seen = times[path]
        before = [t for t in seen if t < OPENS]
        inside = [t for t in seen if OPENS <= t < CLOSES + EVERY + 1.0]
        after = [t for t in seen if t >= CLOSES + EVERY + 1.0]
        assert len(before) == 1, detail  # the first visit; the policy waits 1000 s
        assert not after, detail  # closed: the policy's wait again
        # revisited about every second inside the 10 s window (politeness and a loaded machine: >= 5)
        assert len(inside) >= 5, detail
        assert inside[0] <= OPENS + EVERY + 2.0, detail
        gaps = [b - a for a, b in zip(inside, inside[1:])]
        assert max(gaps) <= EVERY + 2.0, detail
    assert len(times["/page/other/c"]) == 1, detail  # not matched: the policy's one visit
    records = read_records(tmp_state / "adaptive")
    last = records[urls[0]]
    assert last.wait == pytest.approx(1000.0)  # the last visit, in the window's last second, or after it
    stats = result.stats or {}
    assert stats.get("adaptive/schedules/opened") == 1
    assert "Schedule ADAPTIVE_WAIT_POLICIES[0] is closed" in result.log
    forced = stats.get("adaptive/schedules/forced/ADAPTIVE_WAIT_POLICIES[0]", 0)
    assert forced >= 2 * 5, stats
