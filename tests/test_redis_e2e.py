"""Real ``scrapy`` crawls with the frontier in a real redis-server.

The worker's job directory keeps only its marker, checkpoint and crawl log;
every record and queue is read back from Redis after the crawl.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from scrapy_adaptive.frontier.record import UrlRecord
from scrapy_adaptive.frontier.redis_store import RedisStore
from tests.crawlrunner import finish_crawl, run_crawl, start_crawl, wait_for_log
from tests.mockserver import MockServer, max_concurrency
from tests.redisserver import RedisServer
from tests.test_guards_e2e import traceback_lines

pytestmark = pytest.mark.e2e

FOLLOW = Path(__file__).parent / "spiders" / "follow.py"


def redis_records(url: str, namespace: str = "adaptive:follow") -> dict[str, UrlRecord]:
    store = RedisStore(url, namespace=namespace)
    try:
        return {r.url: r for r in (UrlRecord.from_bytes(raw) for _, raw in store.records())}
    finally:
        store.close()


def three_host_site(server: MockServer, tag: str) -> tuple[str, list[str]]:
    """A start page linking to two pages on each of three hosts."""
    pages = [server.page_url(f"/page/{tag}-{h}-{i}", host=h) for h in server.hosts for i in range(2)]
    return server.page_url(f"/page/{tag}-index", links=pages), pages


def test_a_crawl_on_redis_visits_revisits_and_keeps_politeness(
    clean_log: MockServer, adaptive_settings: dict[str, object], redis_url: str
) -> None:
    start, pages = three_host_site(clean_log, "redis")
    settings = {**adaptive_settings, "ADAPTIVE_STORE_URL": redis_url, "CLOSESPIDER_TIMEOUT": 5}
    result = run_crawl(FOLLOW, settings, timeout=60, args=["-a", f"start_urls={start}"])
    result.assert_ok()
    records = redis_records(redis_url)
    assert set(records) == {start, *pages}
    assert all(r.visits >= 2 for r in records.values()), {u: r.visits for u, r in records.items()}
    state = Path(str(adaptive_settings["ADAPTIVE_STATE_DIR"]))
    assert sorted(p.name for p in state.iterdir()) == ["ADAPTIVE_STATE.json", "crawl.log"]
    for host in clean_log.hosts:
        assert max_concurrency(clean_log.log(host=host), host) == 1


def test_redis_restarted_during_a_crawl_loses_nothing(
    clean_log: MockServer, adaptive_settings: dict[str, object], redis_server: RedisServer, redis_url: str
) -> None:
    start, pages = three_host_site(clean_log, "restart")
    settings = {**adaptive_settings, "ADAPTIVE_STORE_URL": redis_url, "CLOSESPIDER_TIMEOUT": 6}
    proc = start_crawl(FOLLOW, settings, args=["-a", f"start_urls={start}"])
    wait_for_log(proc, r"Crawled \(200\) <GET http://127\.0\.0\.\d:\d+/page/restart-127", timeout=30)
    before = redis_records(redis_url)
    redis_server.restart()  # SIGKILL and start again from its AOF, under the running crawl
    result = finish_crawl(proc, timeout=60)
    after = redis_records(redis_url)
    # a crawl either rode out the restart (redis-py reconnects) or stopped
    # with one message; either way nothing acknowledged went back
    assert set(before) <= set(after)
    assert all(after[u].visits >= r.visits for u, r in before.items())
    if result.returncode != 0:
        assert re.search(r"CRITICAL: .*Redis store at redis://127\.0\.0\.1:\d+/0", result.log)
    assert traceback_lines(result) == []
    # and the worker resumes: its checkpoint holds against what Redis kept
    again = run_crawl(FOLLOW, {**settings, "CLOSESPIDER_TIMEOUT": 2}, timeout=60, args=["-a", f"start_urls={start}"])
    again.assert_ok()
    assert set(redis_records(redis_url)) == {start, *pages}


def test_an_unreachable_redis_refuses_the_start_with_one_message(
    adaptive_settings: dict[str, object], redis_server: RedisServer
) -> None:
    settings = {**adaptive_settings, "ADAPTIVE_STORE_URL": "redis://:pw@127.0.0.1:1/0"}
    result = run_crawl(FOLLOW, settings, timeout=60, args=["-a", "start_urls=http://127.0.0.1:9/"])
    assert result.returncode == 1
    critical = [line for line in result.text.splitlines() if "CRITICAL" in line]
    assert len(critical) == 1 and "Connecting to the Redis store at redis://:***@127.0.0.1:1/0" in critical[0]
    assert traceback_lines(result) == [] and ":pw@" not in result.text
    assert "Spider closed (adaptive_refused)" in result.log
