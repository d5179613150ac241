"""The frontier in Redis, through the scheduler (built directly, no crawl).

Each worker keeps its own job directory (marker, checkpoint, crawl log);
the frontier is in Redis under the namespace.  A real redis-server runs
for the session (testsite/redisserver.py).
"""

from __future__ import annotations

import hashlib
import json
import logging
import socket
import time
from pathlib import Path

import pytest
from scrapy import Request

from scrapy_adaptive.frontier import ChangeState, Frontier, Outcome, Politeness, Visit
from scrapy_adaptive.frontier.sharing import Sharing
from scrapy_adaptive.model import Plan
from scrapy_adaptive.store.redis import RedisStore
from tests.unit.integration.test_scheduler import URLS, Pages, build, drain, in_loop, visited
from testsite.redisserver import RedisServer


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
    assert second.frontier is not None and second.frontier.counts().urls == len(URLS)
    assert not any(second.enqueue_request(Request(url)) for url in URLS)  # merged: request_dropped
    assert second.stats.get_value("adaptive/enqueued/duplicate") == len(URLS)
    record = second.frontier.get_record(*second._where(issued[0].url))
    assert record is not None and (record.visits, record.versions) == (1, 1)
    assert issued[1].url in {r.url for r in drain(second)}  # out at the stop: due again
    second.close("finished")
    # nothing of the frontier is in the job directories: only markers
    assert not (tmp_path / "a" / "adaptive" / "frontier.ldb").exists()


def frontier(url: str, worker: str, *, ttl: float = 10.0) -> Frontier:
    """A worker's frontier on the shared store, politeness zeroed (real clock: leases are Redis's)."""
    store = RedisStore(url, namespace="shared")
    f = Frontier(store, Politeness(min_delay=0, max_delay=0, delay_factor=0), sharing=Sharing(store, worker, ttl))
    f.load()
    f.fleet.rebalance()
    return f


def add(f: Frontier, url: str) -> None:
    f.add(hashlib.sha1(url.encode()).digest(), url, url.split("/")[2], {"url": url})


def issue_all(f: Frontier) -> dict[str, str]:
    """Every URL *f* issues now: url -> queue."""
    issued = {}
    for _ in range(100):
        got = f.next()
        if got is None:
            return issued
        issued[got.record.url] = got.record.queue
    raise AssertionError("more than 100 URLs issued")


HOSTS = [f"h{i}.example" for i in range(4)]


def test_two_workers_split_the_hosts_and_only_the_holder_issues(redis_url: str) -> None:
    a = frontier(redis_url, "A")
    for host in HOSTS:
        add(a, f"http://{host}/1")
    assert a.sharing is not None and a.sharing.held == set(HOSTS)  # the discoverer works new hosts
    b = frontier(redis_url, "B")
    assert b.sharing is not None and b.sharing.held == set()  # all leased: B waits for A to give some back
    a.fleet.rebalance()  # two workers now: A keeps its share, gives back two idle hosts
    b.fleet.rebalance()
    assert len(a.sharing.held) == len(b.sharing.held) == 2
    assert a.sharing.held.isdisjoint(b.sharing.held)
    from_a, from_b = issue_all(a), issue_all(b)
    assert set(from_a.values()) == a.sharing.held and set(from_b.values()) == b.sharing.held
    assert len(from_a) + len(from_b) == len(HOSTS)
    # a URL B discovers on a host A holds: A issues it after its next rebalance, B never does
    host = sorted(a.sharing.held)[0]
    a.update(hashlib.sha1(f"http://{host}/1".encode()).digest(), Visit(Outcome.VISITED, status=200), Plan(3600.0))
    add(b, f"http://{host}/found-by-b")
    assert issue_all(b) == {} and issue_all(a) == {}  # A's view of the queue: next URL in an hour
    a.fleet.rebalance()
    assert issue_all(a) == {f"http://{host}/found-by-b": host}
    a.fleet.leave()
    b.fleet.leave()


def test_a_killed_workers_hosts_move_after_its_lease_and_its_out_urls_are_due_again(redis_url: str) -> None:
    a = frontier(redis_url, "A", ttl=2.0)
    for host in HOSTS:
        add(a, f"http://{host}/1")
    out = issue_all(a)
    assert len(out) == len(HOSTS)
    # A is killed (kill -9): no renewal, no release; B starts
    b = frontier(redis_url, "B", ttl=2.0)
    assert b.sharing is not None and b.sharing.held == set()
    deadline = time.monotonic() + 5
    while b.sharing.held != set(HOSTS) and time.monotonic() < deadline:
        time.sleep(0.25)
        b.fleet.rebalance()
    assert b.sharing.held == set(HOSTS)
    assert issue_all(b) == out  # what was out at A is due again, at B
    # were A only stalled, its next rebalance finds its leases lost: it issues nothing more
    a.fleet.rebalance()
    assert a.sharing is not None and a.sharing.held == set() and a.next() is None
    b.fleet.leave()


def test_undelivered_versions_stay_their_workers_until_it_stops(redis_url: str) -> None:
    """A version waits for the delivery of the worker that captured it: a
    worker starting or taking the host meanwhile leaves it alone (it would
    fetch it again and write the record under the other's feet).  Once that
    worker is gone (killed), the host's new holder takes it back: due again,
    judged against what was delivered."""
    a = frontier(redis_url, "A", ttl=2.0)
    for host in HOSTS:
        add(a, f"http://{host}/1")
    for url in issue_all(a):
        v = Visit(Outcome.VISITED, status=200, change=ChangeState.CHANGED, digest="text:sha1:new")
        a.update(hashlib.sha1(url.encode()).digest(), v, Plan(3600.0), deliver=True)
    marks = {fp: json.loads(m) for fp, m in a.store.pending()}
    assert len(marks) == len(HOSTS) and all(m["w"] == "A" and m["d"] is None for m in marks.values())
    b = frontier(redis_url, "B", ttl=2.0)
    a.fleet.rebalance()  # A gives two hosts back; B takes them while A is alive
    b.fleet.rebalance()
    assert b.sharing is not None and len(b.sharing.held) == 2
    assert b.redelivered == 0 and len(dict(b.store.pending())) == len(HOSTS) and issue_all(b) == {}
    # A is killed: its leases and its heartbeat lapse; B takes every host and A's versions
    deadline = time.monotonic() + 6
    while (b.sharing.held != set(HOSTS) or b.redelivered < len(HOSTS)) and time.monotonic() < deadline:
        time.sleep(0.25)
        b.fleet.rebalance()
    assert b.sharing.held == set(HOSTS) and b.redelivered == len(HOSTS)
    assert dict(b.store.pending()) == {}
    for url in HOSTS:
        record = b.get_record(url, hashlib.sha1(f"http://{url}/1".encode()).digest())
        assert record is not None and record.digest is None  # back to what was delivered: nothing yet
    assert set(issue_all(b)) == {f"http://{host}/1" for host in HOSTS}  # due now, not in an hour
    b.fleet.leave()


def test_counts_of_every_worker_add_up_in_the_store(redis_url: str) -> None:
    a = frontier(redis_url, "A")
    b = frontier(redis_url, "B")
    for i in range(3):
        add(a, f"http://{HOSTS[0]}/a{i}")
        add(b, f"http://{HOSTS[0]}/b{i}")  # B does not hold the host: its count is still added
    store = a.store
    assert isinstance(store, RedisStore)
    rows = dict(store.counter_rows())
    assert rows[HOSTS[0]]["u"] == 6
    a.fleet.leave()
    b.fleet.leave()


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
    assert second.frontier is not None and second.frontier.counts().urls == len(URLS) + 1
    assert second.frontier.counts().visits == len(issued)
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
    client = redis_server.client()
    client.flushall()  # as a Redis without its AOF, restarted
    client.close()
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


def test_a_host_given_back_with_urls_out_drains_before_its_lease_goes(redis_url: str) -> None:
    a = frontier(redis_url, "A")
    for host in HOSTS:
        add(a, f"http://{host}/1")
    out = issue_all(a)  # every host has a URL out at A
    b = frontier(redis_url, "B")
    a.fleet.rebalance()  # two workers: A gives two hosts back, but they have URLs out: they drain
    assert a.sharing is not None and len(a.sharing.draining) == 2
    draining = set(a.sharing.draining)
    b.fleet.rebalance()
    assert b.sharing is not None and b.sharing.held == set()  # not yet: A's fetches there still run
    for url, host in out.items():
        if host in draining:
            a.add(hashlib.sha1(f"http://{host}/2".encode()).digest(), f"http://{host}/2", host, {"url": "x"})
            a.update(hashlib.sha1(url.encode()).digest(), Visit(Outcome.VISITED, status=200), Plan(3600.0))
    assert all(q not in draining for q in issue_all(a).values())  # nothing more from a draining host
    a.fleet.rebalance()  # back: the leases go
    b.fleet.rebalance()
    assert b.sharing.held == draining and a.sharing.held.isdisjoint(draining)
    assert set(issue_all(b).values()) == draining
    a.fleet.leave()
    b.fleet.leave()


@in_loop
def test_the_tls_settings_reach_the_store(tmp_path: Path) -> None:
    (tmp_path / "redis").mkdir()
    with RedisServer(tmp_path / "redis", tls=True) as server:
        tls = server.tls_client_options()
        settings = {
            "ADAPTIVE_STORE_TLS_CA": tls["ssl_ca_certs"],
            "ADAPTIVE_STORE_TLS_CERT": tls["ssl_certfile"],
            "ADAPTIVE_STORE_TLS_KEY": tls["ssl_keyfile"],
        }
        scheduler = worker(tmp_path / "a", server.url, **settings)
        scheduler.open(Pages())
        assert scheduler.frontier is not None
        assert scheduler.enqueue_request(Request(URLS[0]))
        scheduler.close("finished")
        assert server.client().exists(b"crawl:{a.example}:q")


@in_loop
def test_the_budget_is_the_fleets_each_worker_spends_its_share(tmp_path: Path, redis_url: str) -> None:
    budgeted = {"ADAPTIVE_BUDGET": 86_400, "ADAPTIVE_WAIT_POLICY": "scrapy_adaptive.policies.ProportionalWaitPolicy"}
    first = worker(tmp_path / "a", redis_url, **budgeted)
    first.open(Pages())
    allocator = first.policy.params.crawl.allocator
    assert allocator.budget == 1.0  # alone: the whole budget, one revisit a second
    second = worker(tmp_path / "b", redis_url, **budgeted)
    second.open(Pages())
    assert second.policy.params.crawl.allocator.budget == 0.5
    first.tick()  # its next second: two live workers
    assert allocator.budget == 0.5
    second.close("finished")
    first.close("finished")


@in_loop
def test_each_worker_restores_its_own_policy_aggregates(tmp_path: Path, redis_url: str) -> None:
    """The rate allocator's histograms and epoch describe the URLs one worker
    registered: a restarted worker continues its own, never the last saver's
    (two allocators on one epoch would remove contributions they never added)."""
    budgeted = {"ADAPTIVE_BUDGET": 86_400, "ADAPTIVE_WAIT_POLICY": "scrapy_adaptive.policies.ProportionalWaitPolicy"}
    first = worker(tmp_path / "a", redis_url, **budgeted)
    first.open(Pages())
    second = worker(tmp_path / "b", redis_url, **budgeted)
    second.open(Pages())
    epochs = [w.policy.params.crawl.allocator.epoch for w in (first, second)]
    assert epochs[0] != epochs[1]
    first.close("finished")
    second.close("finished")  # the last to save
    again = worker(tmp_path / "a", redis_url, **budgeted)
    again.open(Pages())
    assert again.policy.params.crawl.allocator.epoch == epochs[0]
    again.close("finished")


@in_loop
def test_a_worker_stopping_while_redis_is_down_says_so_in_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The final summary reads the store: a Redis gone at that moment is one
    ERROR line, not a traceback from the scheduler's close."""
    (tmp_path / "redis").mkdir()
    with RedisServer(tmp_path / "redis") as server:
        scheduler = worker(tmp_path / "a", server.url)
        scheduler.open(Pages())
        assert all(scheduler.enqueue_request(Request(url)) for url in URLS)
        server.kill()
        with caplog.at_level(logging.WARNING):
            scheduler.close("finished")
    lines = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert any("final frontier summary could not be read" in line and "Redis store" in line for line in lines), lines


def test_a_test_redis_whose_free_port_was_taken_moves_to_another(tmp_path: Path, redis_server: RedisServer) -> None:
    """Test workers pick free ports side by side: one taken between the pick
    and redis-server's bind, by a listener or by another worker's server
    (which answers PING too), moves a first start to another free port, never
    to a client of the other server.  A restart keeps its port."""
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        first = RedisServer(tmp_path / "a")
        first.port = taken.getsockname()[1]
        with first:
            assert first.port != taken.getsockname()[1]
            assert first.client().info("server")["process_id"] == first.proc.pid
    second = RedisServer(tmp_path / "b")
    second.port = redis_server.port  # another server listens and answers there
    with second:
        assert second.port != redis_server.port
        assert second.client().info("server")["process_id"] == second.proc.pid
        port = second.port
        second.restart()
        assert second.port == port
