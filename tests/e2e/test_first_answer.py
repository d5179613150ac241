"""A URL's first answer sets its first wait, in a real crawl.

Pages on the mock server, crawled once by the default wait policy after
thirty plain pages (so that each is planned with the same share of the
crawl's budget): one without caching headers, one last modified a year
ago, one granting a 30-day lifetime (``Cache-Control: max-age``), one
whose ``Cache-Control`` and ``Expires`` cannot be read.  The two whose
first answer says "slow" get a longer first wait than the plain one; the
broken headers are ignored (planned as a plain page is), counted and
named in the crawl log, and the crawl goes on.
"""

from __future__ import annotations

import time
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.conftest import read_records
from tests.crawlrunner import run_crawl
from tests.mockserver import DEFAULT_HOSTS, MockServer

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
    year_ago = int(time.time() - 365 * DAY)
    settings = {
        **adaptive_settings,
        "ADAPTIVE_WAIT_POLICY": "scrapy_adaptive.policies.UnionWaitPolicy",
        "ADAPTIVE_BUDGET": 120,  # revisits a day
        "ADAPTIVE_WAIT_INITIAL": 600,
        "ADAPTIVE_WAIT_MIN": 60,
        "ADAPTIVE_WAIT_MAX": 365 * DAY,
        "CLOSESPIDER_TIMEOUT": 3,
    }
    # A new URL's first wait is its share of the crawl-wide budget among the
    # URLs known when it is planned: the first URL of a crawl is given the
    # whole budget, the tenth a tenth of it.  So the crawl's plain pages come
    # first, in a crawl of their own (over the three hosts, so it is short),
    # and the pages under test are planned in a second crawl of the same
    # state, each as the 31st to 34th URL: their shares differ by 10 % at
    # most, whatever order they are fetched in (that order is the frontier's,
    # not the list's), well inside the margins below.  In one crawl a page
    # under test could be planned as the 6th URL and the plain one as the
    # 12th, twice as far off for nothing its answer said.
    warmup = [clean_log.url(f"/validators/warm{i}?etag=w{i}", host) for i in range(10) for host in DEFAULT_HOSTS]
    warmed = run_crawl(PAGES, settings, timeout=60, args=["-a", "urls=" + " ".join(warmup)])
    warmed.assert_ok()
    assert all(r.visits == 1 for r in read_records(tmp_state / "adaptive").values())
    base = clean_log.url("/validators")
    paths = {
        "old": f"/old?etag=o&lm={year_ago}",
        "cached": "/cached?etag=c&cc=" + quote("public, max-age=2592000"),
        "broken": "/broken?etag=b&cc=" + quote("max-age=soon") + "&expires=" + quote("next tuesday"),
        "plain": "/plain?etag=p",
    }  # fmt: skip
    urls = {name: base + path for name, path in paths.items()}
    result = run_crawl(PAGES, settings, timeout=60, args=["-a", "urls=" + " ".join(urls.values())])
    result.assert_ok()
    records = read_records(tmp_state / "adaptive")
    waits = {name: records[url].wait for name, url in urls.items()}
    assert all(r.visits == 1 for r in records.values())
    assert waits["old"] > 1.4 * waits["plain"], waits
    assert waits["cached"] > 1.4 * waits["plain"], waits
    assert waits["broken"] == pytest.approx(waits["plain"], rel=0.25), waits  # no evidence: as a plain page
    notes = first_notes(tmp_state / "adaptive" / "crawl.log")
    assert "badCacheControl" in notes[urls["broken"]] and "badExpires" in notes[urls["broken"]]
    assert "badCacheControl" not in notes[urls["cached"]]
    assert result.stats["adaptive/headers/badCacheControl"] == 1
    assert result.stats["adaptive/headers/badExpires"] == 1
