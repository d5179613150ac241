"""Real ``scrapy`` crawls with the frontier in a real redis-server.

The worker's job directory keeps only its marker, checkpoint and crawl log;
every record and queue is read back from Redis after the crawl.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from scrapy_adaptive.model import UrlRecord
from scrapy_adaptive.store.redis import RedisStore
from tests.crawlrunner import CrawlProcess, finish_crawl, run_crawl, start_crawl, wait_for_log
from tests.e2e.test_guards import traceback_lines
from tests.mockserver import MockServer, max_concurrency
from testsite.redisserver import RedisServer

pytestmark = pytest.mark.e2e

FOLLOW = Path(__file__).parents[1] / "spiders" / "follow.py"


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
    assert "; this worker's first start on the shared frontier (state: " in result.log
    records = redis_records(redis_url)
    assert set(records) == {start, *pages}
    assert all(r.visits >= 2 for r in records.values()), {u: r.visits for u, r in records.items()}
    state = Path(str(adaptive_settings["ADAPTIVE_STATE_DIR"]))
    # the worker's folder: its marker, crawl log and reports, no database
    assert (state / "ADAPTIVE_STATE.json").exists() and not (state / "frontier.ldb").exists()
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
    assert traceback_lines(result) == [], result.text[-6000:]
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


SIX_HOSTS = tuple(f"127.0.0.{i}" for i in range(1, 7))


@pytest.fixture(scope="module")
def six_host_site() -> Iterator[MockServer]:
    with MockServer(hosts=SIX_HOSTS) as server:
        yield server


def test_three_workers_one_killed_and_restarted_share_one_polite_frontier(
    six_host_site: MockServer, adaptive_settings: dict[str, object], redis_url: str, tmp_path: Path
) -> None:
    """Three ``scrapy crawl`` workers on one Redis frontier; one is killed
    (SIGKILL) mid-crawl and started again.  Every URL is known, no visit
    history goes back, and the site's log shows at most one request at a time
    per host (the valence) across all workers."""
    server = six_host_site
    server.reset()
    rings = [server.url("/ring/4/0?fanout=1&delay=0.2", host=h) for h in SIX_HOSTS]
    start = server.page_url("/page/fleet-index", links=rings)
    expected = {start} | {server.url(f"/ring/4/{i}?fanout=1&delay=0.2", host=h) for h in SIX_HOSTS for i in range(4)}
    base = {**adaptive_settings, "ADAPTIVE_STORE_URL": redis_url, "ADAPTIVE_STORE_LEASE": 2}

    def worker(name: str, seconds: int) -> CrawlProcess:
        settings = {**base, "ADAPTIVE_STATE_DIR": str(tmp_path / name), "CLOSESPIDER_TIMEOUT": seconds}
        return start_crawl(FOLLOW, settings, args=["-a", f"start_urls={start}"], workdir=tmp_path / f"run-{name}")

    first, doomed, third = worker("w1", 16), worker("w2", 16), worker("w3", 16)
    wait_for_log(doomed, r"Crawled \(200\)", timeout=30)
    time.sleep(1.5)
    doomed.kill_group()  # kill -9: no clean stop, its leases lapse after 2 s
    killed_at = time.time()
    middle = redis_records(redis_url)
    time.sleep(1.0)
    again = worker("w2", 9)
    results = [finish_crawl(p, timeout=60) for p in (first, third, again)]
    for result in results:
        result.assert_ok()
        # the close summary says which figures are the fleet's and which this worker's
        assert re.search(r"Fleet's frontier, as this worker last read it, at close: \d+ URLs", result.log)
        assert re.search(r"This worker \(one of [1-3]\) holds \d of the fleet.s \d+ hosts: \d+ URLs", result.log)
    final = redis_records(redis_url)
    assert set(final) == expected
    assert all(r.visits >= 1 for r in final.values())
    for url, record in middle.items():  # nothing went back
        assert final[url].visits >= record.visits and (final[url].fetched or 0) >= (record.fetched or 0), url
    log = server.log()
    for host in SIX_HOSTS:
        assert max_concurrency(log, host) == 1, host
        # the killed worker's hosts were taken over: every host is crawled after the kill
        assert any(e["host"] == host and e["start"] > killed_at + 2.5 for e in log), host


def test_two_workers_on_a_redis_cluster_share_one_polite_frontier(
    clean_log: MockServer, adaptive_settings: dict[str, object], redis_cluster_url: str, tmp_path: Path
) -> None:
    """``redis+cluster://``: two workers on a real 3-node Redis Cluster.  Every
    batch is one transaction in one queue's slot (a cross-slot MULTI would
    stop the crawl with CROSSSLOT): every URL is known and visited, each
    host sees one request at a time across both workers."""
    start, pages = three_host_site(clean_log, "cluster")
    # CLOSESPIDER_TIMEOUT only bounds the run: the workers are stopped
    # (SIGINT) once every URL was visited, however slow the machine
    base = {**adaptive_settings, "ADAPTIVE_STORE_URL": redis_cluster_url, "CLOSESPIDER_TIMEOUT": 40}
    workers = [
        start_crawl(
            FOLLOW,
            {**base, "ADAPTIVE_STATE_DIR": str(tmp_path / name)},
            args=["-a", f"start_urls={start}"],
            workdir=tmp_path / f"run-{name}",
        )
        for name in ("w1", "w2")
    ]
    expected = {start, *pages}
    deadline = time.monotonic() + 40
    records: dict[str, UrlRecord] = {}
    while time.monotonic() < deadline and all(p.poll() is None for p in workers):
        records = redis_records(redis_cluster_url)
        if set(records) == expected and all(r.visits >= 1 for r in records.values()):
            break
        time.sleep(0.5)
    for p in workers:
        p.signal_group()
    results = [finish_crawl(p, timeout=60) for p in workers]
    logs = "\n".join(f"--- {name}\n{r.log[-4000:]}" for name, r in zip(("w1", "w2"), results, strict=True))
    for result in results:
        result.assert_ok()
        assert traceback_lines(result) == []
    records = redis_records(redis_cluster_url)
    assert set(records) == expected, logs
    assert all(r.visits >= 1 for r in records.values()), {u: r.visits for u, r in records.items()}
    for host in clean_log.hosts:
        assert max_concurrency(clean_log.log(host=host), host) == 1
