"""Issue 47: ``Request.priority`` orders the work, as in Scrapy.  Links found
together are fetched higher priority first, equal priorities in the order
they were found; a real crawl (``scrapy runspider``, real LevelDB) against
the mock server, its fetches read from the server's log."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.crawlrunner import run_crawl
from tests.mockserver import MockServer

pytestmark = pytest.mark.e2e

PRIORITIZED = Path(__file__).parents[1] / "spiders" / "prioritized.py"


def test_links_are_fetched_by_priority_then_in_the_order_they_were_found(
    clean_log: MockServer, adaptive_settings: dict[str, object]
) -> None:
    index = "/page/prio"
    links = [("low", -2), ("plain", 0), ("high", 3), ("mid", 1), ("plain2", 0), ("lowest", -5), ("plain3", 0)]
    result = run_crawl(
        PRIORITIZED,
        {**adaptive_settings, "CONCURRENT_REQUESTS": 1, "ADAPTIVE_WAIT_DEFAULT": 600, "CLOSESPIDER_TIMEOUT": 5},
        timeout=60,
        args=["-a", f"url={clean_log.url(index)}", "-a", "links=" + ",".join(f"{n}:{p}" for n, p in links)],
    )
    result.assert_ok(allow_errors=False)
    fetched = [e["path"] for e in clean_log.log() if e["path"].startswith(index + "-")]
    assert fetched == [f"{index}-{name}" for name in ("high", "mid", "plain", "plain2", "plain3", "low", "lowest")]
