"""An exception from another component settles the URL at once (issue 47).

A project's own downloader middleware that raises in ``process_response``
(Scrapy hands that to no ``process_exception``), a spider middleware that
raises before the visit middleware judged the response, a callback that
raises: none of them may leave the URL checked out until ``ADAPTIVE_LEASE``
(600 s by default) lapses.  Each is a real crawl (``scrapy runspider``, real
LevelDB) against the mock server, with the default lease; what reached the
server, the state folder and the log tell what happened.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import read_records
from tests.crawlrunner import CrawlResult, run_crawl
from tests.e2e.test_scheduler import CASES, attempts, fetch_times
from tests.mockserver import MockServer

pytestmark = pytest.mark.e2e

#: the frontier's retry rules, scaled down; the lease stays at its default (600 s)
RETRIES: dict[str, object] = {
    "ADAPTIVE_RETRY_DELAY": 1.0,
    "ADAPTIVE_MAX_RETRIES": 2,
    "ADAPTIVE_WAIT_DEFAULT": 100,
    "CLOSESPIDER_TIMEOUT": 6,
    "LOG_LEVEL": "INFO",
}


def lines_naming(result: CrawlResult, *words: str) -> list[str]:
    """The log lines that carry every one of *words*."""
    return [line for line in result.log.splitlines() if all(word in line for word in words)]


def tracebacks(result: CrawlResult) -> int:
    return sum(1 for line in result.text.splitlines() if line.startswith("Traceback (most recent call last)"))


@pytest.mark.quick
def test_a_downloader_middleware_raising_in_process_response_settles_the_url_at_once(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    server = clean_log
    start = server.page_url("/page/mw-index", links=["/page/mw-lost", "/page/mw-ok"])
    lost = server.url("/page/mw-lost")
    settings = {
        **adaptive_settings,
        **RETRIES,
        # where a project's own middleware goes (the template's 543)
        "DOWNLOADER_MIDDLEWARES": {"tests.spiders.cases.LoseResponses": 543},
        "CASES_LOSE": "/page/mw-lost",
    }
    result = run_crawl(CASES, settings, timeout=60, args=["-a", f"start_urls={start}"])
    result.assert_ok(allow_errors=True)
    # fetched, then tried again after ADAPTIVE_RETRY_DELAY twice, then failed;
    # not once and then left checked out for the 600 s lease
    times = attempts(fetch_times(server.log(), "/page/mw-lost"))
    assert len(times) == 3, times
    assert all(0.9 <= b - a < 3.0 for a, b in zip(times, times[1:])), times
    record = read_records(tmp_state / "adaptive")[lost]
    assert (record.outcome, record.failures, record.visits) == ("failed", 2, 0), record.reason
    assert "tests.spiders.cases.LoseResponses.process_response" in str(record.reason)
    assert "adaptive/leases_expired" not in result.stats
    assert result.stats["adaptive/outcome/retry"] == 2 and result.stats["adaptive/outcome/failed"] == 1
    # each failed fetch: Scrapy's own "Error downloading" with its traceback, and
    # one line of the crawler's naming the URL and the component (a retry's
    # warning; the last one's "Failed ...: it stays known")
    scrapy_errors = lines_naming(result, "Error downloading", lost)
    ours = [line for line in lines_naming(result, lost, "LoseResponses.process_response") if "scrapy_adaptive" in line]
    assert len(scrapy_errors) == 3 and tracebacks(result) == 3, result.log[-4000:]
    assert len(ours) == 3, ours
    assert sum(1 for line in ours if "WARNING" in line and "counted as a retry" in line) == 2, ours
    assert sum(1 for line in ours if re.search(rf"INFO: Failed {re.escape(lost)}: ", line)) == 1, ours
    # the other page was visited as usual
    assert read_records(tmp_state / "adaptive")[server.url("/page/mw-ok")].visits == 1


def test_a_spider_middleware_raising_before_the_visit_was_judged_settles_the_url_at_once(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    """A spider middleware placed before the add-on's visit middleware (order
    10) raises in ``process_spider_input``: the response is never judged,
    and the visit middleware's ``process_spider_exception`` settles it."""
    server = clean_log
    start = server.page_url("/page/smw-index", links=["/page/smw-lost"])
    lost = server.url("/page/smw-lost")
    settings = {
        **adaptive_settings,
        **RETRIES,
        "ADAPTIVE_MAX_RETRIES": 1,
        "SPIDER_MIDDLEWARES": {"tests.spiders.cases.FailInput": 5},
        "CASES_FAIL_INPUT": "/page/smw-lost",
    }
    result = run_crawl(CASES, settings, timeout=60, args=["-a", f"start_urls={start}"])
    result.assert_ok(allow_errors=True)
    times = attempts(fetch_times(server.log(), "/page/smw-lost"))
    assert len(times) == 2 and 0.9 <= times[1] - times[0] < 3.0, times
    record = read_records(tmp_state / "adaptive")[lost]
    assert (record.outcome, record.failures, record.visits) == ("failed", 1, 0), record.reason
    assert "ValueError: refused" in str(record.reason)
    assert "tests.spiders.cases.FailInput.process_spider_input" in str(record.reason)
    assert "adaptive/leases_expired" not in result.stats


def test_a_callback_that_raises_leaves_a_visit_judged_and_revisited(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    """The page was fetched and judged before its callback ran: the callback's
    error (Scrapy's ``spider_error``) is the spider's, the visit stands, and
    the page comes back after its wait like any other."""
    server = clean_log
    start = server.page_url("/page/cb-index", links=["/page/cb-raises"])
    raises = server.url("/page/cb-raises")
    settings = {**adaptive_settings, **RETRIES, "ADAPTIVE_WAIT_DEFAULT": 1.0, "CLOSESPIDER_TIMEOUT": 4}
    result = run_crawl(
        CASES, settings, timeout=60, args=["-a", f"start_urls={start}", "-a", "raise_on=/page/cb-raises"]
    )
    result.assert_ok(allow_errors=True)
    times = attempts(fetch_times(server.log(), "/page/cb-raises"))
    assert len(times) >= 2, times
    record = read_records(tmp_state / "adaptive")[raises]
    assert record.outcome == "visited" and record.visits >= 2 and record.failures == 0
    # it raised once: the revisits found the page unchanged and kept it from the callback
    assert result.stats["spider_exceptions/RuntimeError"] == 1
    assert result.stats["adaptive/unchanged/skipped"] >= 1
    assert "adaptive/leases_expired" not in result.stats and "adaptive/outcome/retry" not in result.stats
