"""Shared pytest fixtures: the mock HTTP server and crawl plumbing.

Generic test infrastructure only. Package-specific fixtures go in the marked
section at the end of this file.
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from scrapy_adaptive.frontier.pending import delivered_versions
from scrapy_adaptive.model import UrlRecord
from scrapy_adaptive.store.base import MemoryStore, Store
from scrapy_adaptive.store.leveldb import LevelDBStore
from scrapy_adaptive.store.redis import RedisStore, close_client
from tests import crawlrunner
from tests.mockserver import DEFAULT_HOSTS, MockServer
from testsite.redisserver import RedisClusterServers, RedisServer

# No per-example deadline: tests assert behaviour, never time, and a loaded
# machine (three test workers per core, a crawl beside each) is slow at random.
settings.register_profile("adaptive", deadline=None)
settings.load_profile("adaptive")


UNIT = Path(__file__).parent / "unit"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every unit test is in the quick subset (``-m quick``); end-to-end tests join it one by one."""
    for item in items:
        if item.path.is_relative_to(UNIT):
            item.add_marker(pytest.mark.quick)


@pytest.fixture(scope="session")
def mockserver() -> Iterator[MockServer]:
    """One mock server for the whole session, on 127.0.0.1, 127.0.0.2 and 127.0.0.3.

    Session-scoped because starting it costs ~0.5 s; tests isolate themselves
    with ``clean_log`` and unique paths/keys.
    """
    with MockServer(hosts=DEFAULT_HOSTS) as server:
        yield server


@pytest.fixture
def clean_log(mockserver: MockServer) -> MockServer:
    """Reset the shared server before the test and return it.

    Clears ``/_log`` and also resets the /flaky and /changes counters and any
    robots.txt override, so the test sees a server exactly as freshly started.
    """
    mockserver.reset()
    return mockserver


@pytest.fixture
def tmp_state(tmp_path: Path) -> Path:
    """An empty directory for a crawl's persistent state (frontier, job dir...)."""
    state = tmp_path / "state"
    state.mkdir()
    return state


@pytest.fixture(scope="session", autouse=True)
def _crawl_workdirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Put crawl work directories (logs, stats) under pytest's managed tmp dir.

    pytest keeps the last few runs there, so logs of a failed crawl can be
    inspected afterwards without littering /tmp.
    """
    crawlrunner.set_default_workdir_root(tmp_path_factory.mktemp("crawls"))
    yield
    crawlrunner.set_default_workdir_root(None)


@pytest.fixture(autouse=True)
def _reap_crawls() -> Iterator[None]:
    """Never let a crawl started by a test outlive it (e.g. after a failed assert)."""
    yield
    crawlrunner.reap_crawls()


# ==========================================================================
# Package-specific fixtures (scrapy_adaptive) — maintained by the lead.
# Add them below this line.
# ==========================================================================


ADDON = {"scrapy_adaptive.Addon": 0}


@pytest.fixture
def adaptive_settings(tmp_state: Path) -> dict[str, object]:
    """Settings for a fast adaptive crawl with its state in ``tmp_state``.

    Politeness and waits are scaled down to fractions of a second so a test
    sees several revisits within seconds; tests override what they measure.
    Every visit waits ``ADAPTIVE_WAIT_DEFAULT`` (the fixed policy), so tests
    of the scheduling machinery do not depend on change detection.
    """
    return {
        "ADDONS": ADDON,
        "ADAPTIVE_STATE_DIR": str(tmp_state / "adaptive"),
        "ADAPTIVE_MIN_DELAY": 0.05,
        "ADAPTIVE_MAX_DELAY": 0.2,
        "ADAPTIVE_DELAY_FACTOR": 1.0,
        "ADAPTIVE_WAIT_DEFAULT": 1.0,
        "ADAPTIVE_WAIT_MIN": 0.1,
        "ADAPTIVE_WAIT_POLICY": "scrapy_adaptive.policies.ConstantWaitPolicy",
        "ADAPTIVE_WAIT_POLICIES": [],
        "ADAPTIVE_LOG_INTERVAL": 1.0,
        "ROBOTSTXT_OBEY": True,
        "LOG_LEVEL": "DEBUG",
    }


def read_records(state_dir: Path) -> dict[str, UrlRecord]:
    """Every URL record of a stopped crawl's state folder, by URL."""
    store = LevelDBStore(str(state_dir / "frontier.ldb"))
    try:
        records = [UrlRecord.from_bytes(raw) for _, raw in store.records()]
    finally:
        store.close()
    return {r.url: r for r in records}


def read_state(state_dir: Path) -> tuple[dict[str, UrlRecord], set[str]]:
    """Every record of a stopped crawl by URL, and the URLs pending delivery.

    A record's versions are those delivered (:func:`.delivered_versions`):
    a stopped crawl's record also counts the versions its pending mark says
    are waiting, which its next start takes back and delivers again."""
    store = LevelDBStore(str(state_dir / "frontier.ldb"))
    try:
        records = {fp: UrlRecord.from_bytes(raw) for fp, raw in store.records()}
        marks = {fp: mark for fp, mark in store.pending() if fp in records}
        for fp, mark in marks.items():
            records[fp].versions = delivered_versions(records[fp], mark)
        pending = {records[fp].url for fp in marks}
    finally:
        store.close()
    return {r.url: r for r in records.values()}, pending


@contextlib.contextmanager
def tmpfs(mount: Path, options: str) -> Iterator[Path]:
    """A real tmpfs at *mount* (e.g. ``size=1m``) for full-disk and read-only
    cases; skips the test where mounting is refused (not root), unmounts after."""
    mount.mkdir(exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.fixture(scope="session")
def as_user(tmp_path_factory: pytest.TempPathFactory) -> bool:
    """Whether a child started with :func:`tests.crawlrunner.without_file_override`
    is refused a file it may not read (skips the test where it is not)."""
    probe = tmp_path_factory.mktemp("as-user") / "locked"
    probe.write_text("x")
    probe.chmod(0)
    done = subprocess.run(
        [sys.executable, "-c", f"open({str(probe)!r}).read()"],
        capture_output=True,
        preexec_fn=crawlrunner.without_file_override,
    )
    if done.returncode == 0:
        pytest.skip("a child process here still reads any file (it keeps CAP_DAC_OVERRIDE)")
    return True


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisServer]:
    """One real redis-server (AOF on) for the session; tests flush it with ``redis_url``."""
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server


@pytest.fixture
def redis_url(redis_server: RedisServer) -> str:
    """The session's Redis, emptied for this test."""
    client = redis_server.client()
    client.flushall()
    client.close()
    return redis_server.url


@pytest.fixture(scope="session")
def redis_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RedisClusterServers]:
    """A real Redis Cluster (3 primaries on loopback, about 2 s to start) for the session."""
    with RedisClusterServers(tmp_path_factory.mktemp("cluster")) as cluster:
        yield cluster


@pytest.fixture
def redis_cluster_url(redis_cluster: RedisClusterServers) -> str:
    """The session's Redis Cluster, every primary emptied for this test."""
    client = redis_cluster.client()
    client.flushall()
    close_client(client)
    return redis_cluster.url


#: every backend behind the :class:`Store` contract
ALL_STORES = ["memory", "leveldb", "redis", "redis-cluster"]
#: the embedded backends: the unit tests run on these (no server); tests/contract
#: runs the frontier's tests again on the Redis ones
EMBEDDED_STORES = ["memory", "leveldb"]


def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """The store named by the fixture's parameter, closed after the test."""
    s: Store
    if request.param == "memory":
        s = MemoryStore()
    elif request.param == "leveldb":
        s = LevelDBStore(str(tmp_path / "db"))
    elif request.param == "redis":
        s = RedisStore(request.getfixturevalue("redis_url"), namespace="test")
    else:
        s = RedisStore(request.getfixturevalue("redis_cluster_url"), namespace="test")
    yield s
    s.close()


@pytest.fixture(params=ALL_STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """Each store behind the :class:`Store` contract: the contract tests run on all four."""
    yield from open_store(request, tmp_path)
