"""The frontier in Redis, through the scheduler (built directly, no crawl).

Each worker keeps its own job directory (marker, checkpoint, crawl log);
the frontier is in Redis under the namespace.  A real redis-server runs
for the session (tests/redisserver.py).
"""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from scrapy import Request

from scrapy_adaptive.frontier.redis_store import RedisStore
from scrapy_adaptive.frontier.store import StoreError
from tests.redisserver import RedisServer
from tests.test_scheduler import URLS, Pages, build, drain, in_loop, visited


def worker(jobdir: Path, url: str, **settings: object):  # type: ignore[no-untyped-def]
    return build(jobdir, ADAPTIVE_STORE_URL=url, ADAPTIVE_STORE_NAMESPACE="crawl", **settings)


@in_loop
def test_a_worker_with_another_jobdir_resumes_the_shared_frontier(tmp_path: Path, redis_url: str) -> None:
    first = worker(tmp_path / "a", redis_url)
    first.open(Pages())
    assert first.frontier is not None and isinstance(first.frontier.store, RedisStore)
    assert all(first.enqueue_request(Request(url)) for url in URLS)
    issued = drain(first)
    first.verdicts.commit(issued[0], visited())  # type: ignore[union-attr]
    first.close("finished")

    second = worker(tmp_path / "b", redis_url)
    second.open(Pages())
    assert second.frontier is not None and second.frontier.url_count == len(URLS)
    assert all(second.enqueue_request(Request(url)) for url in URLS)
    assert second.stats.get_value("adaptive/enqueued/duplicate") == len(URLS)
    record = second.frontier.get_record(second.issued.identity(issued[0]))
    assert record is not None and (record.visits, record.versions) == (1, 1)
    assert issued[1].url in {r.url for r in drain(second)}  # out at the stop: due again
    second.close("finished")
    # nothing of the frontier is in the job directories: only markers
    assert not (tmp_path / "a" / "adaptive" / "frontier.ldb").exists()


@in_loop
def test_a_second_worker_on_a_namespace_is_refused_while_the_first_holds_it(
    tmp_path: Path, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    first = worker(tmp_path / "a", redis_url)
    first.open(Pages())
    second = worker(tmp_path / "b", redis_url)
    with caplog.at_level(logging.CRITICAL):
        second.open(Pages())
    assert second.frontier is None
    assert "is in use by the worker" in caplog.text and "ADAPTIVE_STORE_NAMESPACE" in caplog.text
    # another namespace is another frontier
    third = build(tmp_path / "c", ADAPTIVE_STORE_URL=redis_url, ADAPTIVE_STORE_NAMESPACE="other")
    third.open(Pages())
    assert third.frontier is not None
    third.close("finished")
    first.close("finished")
    # closed: the claim is given back at once
    again = worker(tmp_path / "b", redis_url)
    again.open(Pages())
    assert again.frontier is not None
    again.close("finished")


@in_loop
def test_a_killed_workers_claim_lapses(tmp_path: Path, redis_url: str) -> None:
    store = RedisStore(redis_url, namespace="lapse")
    store.claim("dead-worker", ttl=0.2)  # never renewed, never released: as after kill -9
    with pytest.raises(StoreError, match="in use by the worker dead-worker"):
        RedisStore(redis_url, namespace="lapse").claim("next", ttl=5)
    time.sleep(0.3)
    taker = RedisStore(redis_url, namespace="lapse")
    taker.claim("next", ttl=5)
    # the dead worker, were it only stalled, finds out at its next renewal and stops
    with pytest.raises(StoreError, match="claim .* lapsed"):
        store.keep_alive()
    taker.close()
    store.close()


@in_loop
def test_redis_restarted_mid_crawl_loses_nothing_acknowledged(
    tmp_path: Path, redis_server: RedisServer, redis_url: str
) -> None:
    first = worker(tmp_path / "a", redis_url)
    first.open(Pages())
    for url in URLS:
        first.enqueue_request(Request(url))
    issued = drain(first)
    for request in issued:
        first.verdicts.commit(request, visited())  # type: ignore[union-attr]
    redis_server.restart()  # SIGKILL, then start again from its AOF
    first.enqueue_request(Request("http://c.example/after-restart"))  # redis-py reconnects
    first.close("finished")
    second = worker(tmp_path / "a", redis_url)
    second.open(Pages())  # the marker's checkpoint holds: nothing went back
    assert second.frontier is not None and second.frontier.url_count == len(URLS) + 1
    assert second.frontier.visit_count == len(issued)
    second.close("finished")


@in_loop
def test_a_redis_that_lost_acknowledged_writes_is_refused(
    tmp_path: Path, redis_server: RedisServer, redis_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    first = worker(tmp_path / "a", redis_url)
    first.open(Pages())
    for url in URLS:
        first.enqueue_request(Request(url))
    first.close("finished")
    redis_server.client().flushall()  # as a Redis without its AOF, restarted
    again = worker(tmp_path / "a", redis_url)
    with caplog.at_level(logging.CRITICAL):
        again.open(Pages())
    assert again.frontier is None
    assert f"holds 0 URLs and 0 visits, but {len(URLS)} URLs" in caplog.text


@in_loop
def test_an_unreachable_redis_is_one_message(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    scheduler = worker(tmp_path / "a", "redis://:hidden@127.0.0.1:1/0")
    with caplog.at_level(logging.CRITICAL):
        scheduler.open(Pages())
    assert scheduler.frontier is None
    (line,) = [r.getMessage() for r in caplog.records if r.levelno == logging.CRITICAL]
    assert "Connecting to the Redis store at redis://:***@127.0.0.1:1/0" in line
    assert "hidden" not in caplog.text
