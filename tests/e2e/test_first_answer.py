"""A URL's first answer sets its first wait, in a real crawl.

Pages on the mock server, crawled once by the default wait policy:
some without caching headers, one last modified a year ago, one granting a
30-day lifetime (``Cache-Control: max-age``), one whose ``Cache-Control``
and ``Expires`` cannot be read.  The two whose first answer says "slow"
get a longer first wait than the plain one; the broken headers are
ignored (planned as a plain page is), counted and named in the crawl log,
and the crawl goes on.
"""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.conftest import read_records
from tests.crawlrunner import run_crawl
from tests.mockserver import MockServer

pytestmark = pytest.mark.e2e

PAGES = Path(__file__).parents[1] / "spiders" / "pages.py"
DAY = 86_400


def first_notes(log: Path) -> dict[str, str]:
    """Each URL's first crawl-log annotations."""
    found: dict[str, str] = {}
    for line in log.read_text().splitlines():
        fields = line.split(" ")
        found.setdefault(fields[3], fields[-1])
    return found


def test_old_dates_and_long_lifetimes_lengthen_the_first_wait(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    base = clean_log.url("/validators")
    year_ago = int(time.time() - 365 * DAY)
    # plain pages first, so that the crawl-wide budget is shared by a few
    # URLs when the ones under test are planned (the first URL of a crawl
    # would be given the whole budget, whatever it said)
    paths = {f"plain{i}": f"/plain{i}?etag=p{i}" for i in range(8)}
    paths.update({
        "old": f"/old?etag=o&lm={year_ago}",
        "cached": "/cached?etag=c&cc=" + quote("public, max-age=2592000"),
        "broken": "/broken?etag=b&cc=" + quote("max-age=soon") + "&expires=" + quote("next tuesday"),
        "plain": "/plain?etag=p",
    })  # fmt: skip
    urls = {name: base + path for name, path in paths.items()}
    settings = {
        **adaptive_settings,
        "ADAPTIVE_WAIT_POLICY": "scrapy_adaptive.policies.UnionWaitPolicy",
        "ADAPTIVE_BUDGET": 120,  # revisits a day: ten a day for each page
        "ADAPTIVE_WAIT_INITIAL": 600,
        "ADAPTIVE_WAIT_MIN": 60,
        "ADAPTIVE_WAIT_MAX": 365 * DAY,
        "CLOSESPIDER_TIMEOUT": 3,
    }
    result = run_crawl(PAGES, settings, timeout=60, args=["-a", "urls=" + " ".join(urls.values())])
    result.assert_ok()
    records = read_records(tmp_state / "adaptive")
    waits = {name: records[url].wait for name, url in urls.items()}
    assert all(records[url].visits == 1 for url in urls.values())
    assert waits["old"] > 1.4 * waits["plain"], waits
    assert waits["cached"] > 1.4 * waits["plain"], waits
    assert waits["broken"] == pytest.approx(waits["plain"], rel=0.25), waits  # no evidence: as a plain page
    notes = first_notes(tmp_state / "adaptive" / "crawl.log")
    assert "badCacheControl" in notes[urls["broken"]] and "badExpires" in notes[urls["broken"]]
    assert "badCacheControl" not in notes[urls["cached"]]
    assert result.stats["adaptive/headers/badCacheControl"] == 1
    assert result.stats["adaptive/headers/badExpires"] == 1
