"""Real ``scrapy`` crawls against the real local server, with the add-on.

Each test runs a crawl in a subprocess, measures what reached the server
(``/_log``: per-request start and end times per host) and reads the state
folder afterwards.  Times are scaled down to fractions of a second.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from tests.conftest import read_records
from tests.crawlrunner import finish_crawl, run_crawl, start_crawl, wait_for_log
from tests.mockserver import MockServer, gaps, max_concurrency

pytestmark = pytest.mark.e2e

SPIDERS = Path(__file__).parents[1] / "spiders"
FOLLOW = SPIDERS / "follow.py"
CASES = SPIDERS / "cases.py"


def fetch_times(entries: list[dict], path: str) -> list[float]:
    return sorted(e["start"] for e in entries if e["path"] == path)


def attempts(times: list[float], within: float = 0.1) -> list[float]:
    """Fetch attempts, folding Twisted's own immediate re-send of a GET whose
    reused keep-alive connection was closed under it into one attempt."""
    folded: list[float] = []
    for t in times:
        if not folded or t - folded[-1] > within:
            folded.append(t)
    return folded


@pytest.mark.quick
def test_every_url_is_revisited_promptly_and_the_crawl_never_ends(
    clean_log: MockServer, adaptive_settings: dict[str, object]
) -> None:
    server = clean_log
    start = server.page_url("/page/r0", links=["/page/r1", "/page/r2"])
    settings = {**adaptive_settings, "ADAPTIVE_WAIT_DEFAULT": 1.5, "CLOSESPIDER_TIMEOUT": 7}
    result = run_crawl(FOLLOW, settings, timeout=60, args=["-a", f"start_urls={start}"])
    result.assert_ok()
    assert result.stats["finish_reason"] == "closespider_timeout"  # not "finished": it never ends by itself
    log = server.log(host="127.0.0.1")
    for path in ("/page/r0", "/page/r1", "/page/r2"):
        times = fetch_times(log, path)
        assert len(times) >= 3, (path, times)
        intervals = [b - a for a, b in zip(times, times[1:])]
        # due 1.5 s after the previous visit's verdict; handed out within
        # about a second of that, not on the engine's 5 s heartbeat
        assert all(1.4 <= i <= 2.6 for i in intervals), (path, intervals)
    assert result.stats["adaptive/enqueued/new"] == 3
    assert "Frontier: 3 URLs" in result.log


def test_politeness_wait_and_valence_are_enforced_per_host(
    clean_log: MockServer, adaptive_settings: dict[str, object]
) -> None:
    server = clean_log
    starts = []
    for host in ("127.0.0.1", "127.0.0.2"):
        links = [f"/delay/0.2/{host}-{i}" for i in range(6)]
        starts.append(server.page_url(f"/page/{host}-index", links=links, host=host))
    settings = {
        **adaptive_settings,
        "ADAPTIVE_MIN_DELAY": 0.5,
        "ADAPTIVE_MAX_DELAY": 0.5,
        "ADAPTIVE_WAIT_DEFAULT": 100,
        "CLOSESPIDER_TIMEOUT": 6,
    }
    result = run_crawl(FOLLOW, settings, timeout=60, args=["-a", "start_urls=" + ",".join(starts)])
    result.assert_ok()
    entries = [e for e in server.log() if e["path"] != "/robots.txt"]
    for host in ("127.0.0.1", "127.0.0.2"):
        host_entries = [e for e in entries if e["host"] == host]
        assert len(host_entries) >= 5
        assert max_concurrency(host_entries, host) == 1
        assert min(gaps(host_entries, host, since="end")) >= 0.45, gaps(host_entries, host)
    # the two hosts were crawled at the same time, not one after the other
    assert max_concurrency(entries) == 2


def test_host_valence_allows_concurrent_fetches(clean_log: MockServer, adaptive_settings: dict[str, object]) -> None:
    server = clean_log
    links = [f"/delay/0.5/v-{i}" for i in range(8)]
    start = server.page_url("/page/v-index", links=links)
    settings = {**adaptive_settings, "ADAPTIVE_HOST_VALENCE": 3, "ADAPTIVE_WAIT_DEFAULT": 100, "CLOSESPIDER_TIMEOUT": 5}
    result = run_crawl(FOLLOW, settings, timeout=60, args=["-a", f"start_urls={start}"])
    result.assert_ok()
    entries = [e for e in server.log() if e["path"].startswith("/delay/")]
    assert max_concurrency(entries, "127.0.0.1") == 3


def test_robots_crawl_delay_is_honoured(clean_log: MockServer, adaptive_settings: dict[str, object]) -> None:
    server = clean_log
    server.set_robots(crawl_delay=1.0)
    start = server.page_url("/page/cd-index", links=[f"/page/cd-{i}" for i in range(4)])
    settings = {**adaptive_settings, "ADAPTIVE_WAIT_DEFAULT": 100, "CLOSESPIDER_TIMEOUT": 5}
    result = run_crawl(FOLLOW, settings, timeout=60, args=["-a", f"start_urls={start}"])
    result.assert_ok()
    pages = [e for e in server.log() if e["path"].startswith("/page/")]
    assert len(pages) >= 3
    assert min(gaps(pages, "127.0.0.1", since="end")) >= 0.95
    assert "Crawl-delay of 1.0s" in result.log


def test_robots_disallowed_urls_are_disregarded_and_never_fetched(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    server = clean_log
    start = server.page_url("/page/rb-index", links=["/private/secret", "/page/rb-ok"])
    settings = {**adaptive_settings, "CLOSESPIDER_TIMEOUT": 4}
    result = run_crawl(FOLLOW, settings, timeout=60, args=["-a", f"start_urls={start}"])
    result.assert_ok()
    assert not [e for e in server.log() if e["path"].startswith("/private/")]
    records = read_records(tmp_state / "adaptive")
    secret = records[server.url("/private/secret")]
    assert secret.outcome == "disregarded" and secret.never and "robots.txt" in (secret.reason or "")
    assert result.stats["adaptive/outcome/disregarded"] == 1


def test_quick_retries_are_not_lost_nor_double_counted(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    """RetryMiddleware's copies come back through enqueue_request: they are
    re-issued (politely) and the visit is counted once, with a clean record."""
    server = clean_log
    url = server.url("/flaky/3/quick")
    settings = {**adaptive_settings, "RETRY_TIMES": 3, "ADAPTIVE_WAIT_DEFAULT": 100, "CLOSESPIDER_TIMEOUT": 4}
    result = run_crawl(FOLLOW, settings, timeout=60, args=["-a", f"start_urls={url}"])
    result.assert_ok(allow_errors=True)
    # (Twisted itself may transparently retry a GET on a reused connection,
    # so count Scrapy's retries, not the server's hits)
    assert len(fetch_times(server.log(), "/flaky/3/quick")) == 4
    assert result.stats["adaptive/resent"] == result.stats["retry/count"] >= 1
    assert result.stats["adaptive/issued"] == 1 + result.stats["retry/count"]
    record = read_records(tmp_state / "adaptive")[url]
    assert (record.visits, record.failures, record.status) == (1, 0, 200)
    assert "retry_times" not in record.request.get("meta", {})


def test_the_frontier_retries_after_the_retry_delay_then_gives_up(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    server = clean_log
    url = server.url("/drop/always")
    settings = {
        **adaptive_settings,
        "RETRY_TIMES": 0,
        "ADAPTIVE_RETRY_DELAY": 0.7,
        "ADAPTIVE_MAX_RETRIES": 2,
        "CLOSESPIDER_TIMEOUT": 15,
    }
    result = run_crawl(FOLLOW, settings, timeout=60, args=["-a", f"start_urls={url}"])
    result.assert_ok(allow_errors=True)
    # nothing is left to visit: the crawl ends by itself
    assert result.stats["finish_reason"] == "finished"
    times = attempts(fetch_times(server.log(), "/drop/always"))
    assert len(times) == 3
    assert all(b - a >= 0.65 for a, b in zip(times, times[1:]))
    record = read_records(tmp_state / "adaptive")[url]
    assert record.outcome == "failed" and record.never and record.failures == 2


def test_a_redirect_is_a_visit_and_its_target_a_url_of_its_own(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    server = clean_log
    url = server.url("/redirect/301?to=/page/target")
    settings = {**adaptive_settings, "ADAPTIVE_WAIT_DEFAULT": 100, "CLOSESPIDER_TIMEOUT": 3}
    result = run_crawl(FOLLOW, settings, timeout=60, args=["-a", f"start_urls={url}"])
    result.assert_ok()
    records = read_records(tmp_state / "adaptive")
    source, target = records[url], records[server.url("/page/target")]
    assert (source.status, source.visits, source.outcome) == (301, 1, "visited")
    assert (target.status, target.visits) == (200, 1)
    assert "redirect_urls" not in target.request.get("meta", {})
    assert result.stats["adaptive/redirects"] == 1


def test_a_url_lost_in_a_middleware_gets_a_retry_verdict_after_its_lease(
    clean_log: MockServer, adaptive_settings: dict[str, object]
) -> None:
    server = clean_log
    start = server.page_url("/page/lease-index", links=["/page/lost-one", "/page/lease-ok"])
    settings = {
        **adaptive_settings,
        # the response goes on with a request of the middleware's own: the
        # issued one never reaches the visit middleware, and no error says so
        "DOWNLOADER_MIDDLEWARES": {"tests.spiders.cases.SwapRequests": 20},
        "CASES_SWAP": "/page/lost-one",
        "ADAPTIVE_LEASE": 1.5,
        "ADAPTIVE_RETRY_DELAY": 0.5,
        "ADAPTIVE_MAX_RETRIES": 1,
        "ADAPTIVE_WAIT_DEFAULT": 100,
        "CLOSESPIDER_TIMEOUT": 6,
    }
    result = run_crawl(CASES, settings, timeout=60, args=["-a", f"start_urls={start}"])
    result.assert_ok()
    lost = fetch_times(server.log(), "/page/lost-one")
    assert len(lost) == 2  # the first fetch and one frontier retry, then failed
    assert result.stats["adaptive/leases_expired"] == 2
    assert "no verdict within ADAPTIVE_LEASE" in result.log
    record = read_records(Path(str(settings["ADAPTIVE_STATE_DIR"])))[server.url("/page/lost-one")]
    assert (record.outcome, record.failures, record.visits) == ("failed", 1, 0)
    # the host was never blocked: the other page was fetched too
    assert fetch_times(server.log(), "/page/lease-ok")


def test_an_unstorable_request_is_refused_by_name_and_the_crawl_goes_on(
    clean_log: MockServer, adaptive_settings: dict[str, object]
) -> None:
    server = clean_log
    start = server.url("/page/ser-ok")
    bad = server.url("/page/ser-lambda")
    settings = {**adaptive_settings, "CLOSESPIDER_TIMEOUT": 3}
    result = run_crawl(CASES, settings, timeout=60, args=["-a", f"start_urls={start}", "-a", f"lambda_url={bad}"])
    result.assert_ok(allow_errors=True)
    assert f"<GET {bad}> cannot be stored" in result.log
    assert result.stats["adaptive/enqueued/refused"] == 1
    assert len(fetch_times(server.log(), "/page/ser-ok")) >= 2
    # not lost: fetched this once, outside the frontier, and never again
    assert len(fetch_times(server.log(), "/page/ser-lambda")) == 1


def test_a_second_crawl_on_the_same_state_folder_stops_at_start_up(
    clean_log: MockServer, adaptive_settings: dict[str, object]
) -> None:
    server = clean_log
    start = server.url("/page/lock")
    first = start_crawl(FOLLOW, adaptive_settings, args=["-a", f"start_urls={start}"])
    with first:
        wait_for_log(first, r"Adaptive frontier opened", timeout=30)
        second = run_crawl(FOLLOW, adaptive_settings, timeout=30, args=["-a", f"start_urls={start}"])
        assert second.returncode == 1
        assert "is in use by another crawl" in second.text
        # one message: no traceback, no "Scraper close failure"
        assert "Traceback" not in second.text and "ERROR" not in second.log
        assert len([line for line in second.log.splitlines() if "CRITICAL" in line]) == 1
        first.signal_group(signal.SIGINT)
        finish_crawl(first, timeout=30).assert_ok()


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_crawl_resumes_after_a_stop_or_a_kill_without_losing_anything(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path, stop: signal.Signals
) -> None:
    server = clean_log
    links = [f"/page/k{i}" for i in range(12)]
    start = server.page_url("/page/k-index", links=links)
    settings = {**adaptive_settings, "ADAPTIVE_WAIT_DEFAULT": 0.5, "ADAPTIVE_HOST_VALENCE": 2}
    proc = start_crawl(FOLLOW, settings, args=["-a", f"start_urls={start}"])
    with proc:
        wait_for_log(proc, r"Frontier: 13 URLs .* ([3-9]\d|\d{3,}) visits", timeout=40)
        proc.signal_group(stop)
        result = finish_crawl(proc, timeout=30)
    if stop is not signal.SIGKILL:
        assert result.returncode == 0 and "Frontier at close" in result.log
    before = read_records(tmp_state / "adaptive")
    assert len(before) == 13
    visits_before = sum(r.visits for r in before.values())
    fetched_before = len([e for e in server.log() if e["path"].startswith("/page/k")])
    # every fetch that got its verdict is in the records (at most the
    # in-flight ones, valence 2, were cut short by the stop)
    assert fetched_before - 2 <= visits_before <= fetched_before

    server.clear_log()
    resumed = run_crawl(FOLLOW, {**settings, "CLOSESPIDER_TIMEOUT": 3}, timeout=60, args=["-a", f"start_urls={start}"])
    resumed.assert_ok()
    assert "Adaptive frontier opened" in resumed.log and "13 URLs in 1 queue" in resumed.log
    # the restart says how the last run ended
    ended = "stopped without closing (kill -9" if stop is signal.SIGKILL else "closed cleanly at"
    assert f"; resuming the crawl that {ended}" in resumed.log
    after = read_records(tmp_state / "adaptive")
    assert set(after) == set(before)
    for url, record in after.items():
        assert record.visits >= before[url].visits and record.discovered == before[url].discovered
    assert sum(r.visits for r in after.values()) > visits_before
    # the start URL was already known: the resume added nothing new
    assert resumed.stats.get("adaptive/enqueued/new", 0) == 0


def test_many_hosts_are_crawled_fairly(clean_log: MockServer, adaptive_settings: dict[str, object]) -> None:
    server = clean_log
    starts = [
        server.page_url(f"/page/f-{h}", links=[f"/page/f-{h}-{i}" for i in range(3)], host=h)
        for h in ("127.0.0.1", "127.0.0.2", "127.0.0.3")
    ]
    settings = {**adaptive_settings, "ADAPTIVE_WAIT_DEFAULT": 1.0, "CLOSESPIDER_TIMEOUT": 5}
    result = run_crawl(FOLLOW, settings, timeout=60, args=["-a", "start_urls=" + ",".join(starts)])
    result.assert_ok()
    per_host = Counter(e["host"] for e in server.log() if e["path"].startswith("/page/"))
    assert len(per_host) == 3
    assert max(per_host.values()) <= 1.5 * min(per_host.values()), per_host
    by_path: dict[str, int] = defaultdict(int)
    for e in server.log():
        by_path[e["path"]] += 1
    assert all(n >= 2 for p, n in by_path.items() if p.startswith("/page/f-")), by_path


FULL_DISK_WRAPPER = """
import os, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # writes past the limit fail with EFBIG instead
limit = int(os.environ["FSIZE_LIMIT"])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
os.execv(sys.argv[1], sys.argv[1:])
"""


def test_a_full_disk_stops_the_crawl_and_loses_nothing(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    """Files may not grow past 2 MB (RLIMIT_FSIZE), as if the disk were full:
    LevelDB's write fails, the crawl stops with a clear message, and every
    verdict committed before is still there on the next start."""
    server = clean_log
    start = server.url("/ring/400/0?fanout=4")
    cmd = [sys.executable, "-c", FULL_DISK_WRAPPER, sys.executable, "-m", "scrapy", "runspider", str(CASES)]
    settings = {
        **adaptive_settings,
        "LOG_LEVEL": "INFO",
        "LOG_FILE": str(tmp_state / "crawl.log"),
        "ADAPTIVE_MIN_DELAY": 0,
        "ADAPTIVE_MAX_DELAY": 0,
        "ADAPTIVE_HOST_VALENCE": 4,
        "ADAPTIVE_WAIT_DEFAULT": 1000,
        "CLOSESPIDER_TIMEOUT": 40,
        "TELNETCONSOLE_ENABLED": False,
    }
    for key, value in settings.items():
        cmd += ["-s", f"{key}={json.dumps(value) if isinstance(value, dict) else value}"]
    cmd += ["-a", f"start_urls={start}", "-a", "pad=30000"]
    env = {**os.environ, "FSIZE_LIMIT": str(2 * 2**20), "PYTHONPATH": str(Path(__file__).parents[2])}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=90)
    log = (tmp_state / "crawl.log").read_text()
    assert "Writing to the state database" in log and "Stopping the crawl" in log, log[-2000:]
    assert "Spider closed (adaptive_state_error)" in log, log[-2000:]
    assert done.returncode == 1  # stopped to protect the state: an error exit
    records = read_records(tmp_state / "adaptive")  # opens cleanly without the limit
    assert len(records) > 20
    visited = [r for r in records.values() if r.visits]
    assert visited and all(r.status == 200 for r in visited)
    # a resumed crawl (with room again) carries on from the same records
    resumed = run_crawl(
        CASES,
        {**settings, "LOG_FILE": str(tmp_state / "resume.log"), "CLOSESPIDER_TIMEOUT": 3},
        timeout=60,
        args=["-a", f"start_urls={start}"],
    )
    resumed.assert_ok()
    assert f"{len(records)} URLs in 1 queue" in resumed.log


def test_a_budgeted_policy_runs_in_a_crawl_and_reports_its_budget(
    clean_log: MockServer, adaptive_settings: dict[str, object]
) -> None:
    starts = [
        clean_log.page_url("/page/b-1", links=["/page/b-2", "/page/b-3"]),
        clean_log.page_url("/page/b-4", links=["/page/b-5"], host="127.0.0.2"),
    ]
    settings = {
        **adaptive_settings,
        "ADAPTIVE_WAIT_POLICY": "scrapy_adaptive.policies.ProportionalWaitPolicy",
        "ADAPTIVE_BUDGET": 86_400 * 4,
        "ADAPTIVE_WAIT_MIN": 0.2,
        "ADAPTIVE_WAIT_MAX": 2.0,
        "CLOSESPIDER_TIMEOUT": 5,
    }
    result = run_crawl(FOLLOW, settings, timeout=60, args=["-a", "start_urls=" + ",".join(starts)])
    result.assert_ok()
    assert "Budget: 345600 revisits/day" in result.log
    assert result.stats["adaptive/budget/per_day"] == 345_600
    fetched = Counter(e["path"] for e in clean_log.log() if e["path"].startswith("/page/b-"))
    assert len(fetched) == 5 and max(fetched.values()) >= 2  # revisited under the budget


def test_a_resumed_crawl_continues_the_budget_and_the_learned_priors(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    """The default policy's aggregates (allocator, priors, burst offsets) are saved
    with the frontier and restored under the same epoch, so the URLs' own
    contributions are replaced, not counted again, after a restart."""
    start = clean_log.page_url("/page/r-1", links=["/page/r-2", "/page/r-3"])
    settings = {
        **adaptive_settings,
        "ADAPTIVE_WAIT_POLICY": "scrapy_adaptive.policies.BurstWaitPolicy",
        "ADAPTIVE_BUDGET": 86_400 * 3,
        "ADAPTIVE_WAIT_INITIAL": 0.3,
        "ADAPTIVE_WAIT_MIN": 0.2,
        "ADAPTIVE_WAIT_MAX": 2.0,
        "CLOSESPIDER_TIMEOUT": 3,
    }
    args = ["-a", f"start_urls={start}"]
    first = run_crawl(FOLLOW, settings, timeout=60, args=args)
    first.assert_ok()
    assert "Policy state restored" not in first.log
    epochs = {r.policy.get("al", [None])[0] for r in read_records(tmp_state / "adaptive").values() if r.policy}
    assert len(epochs) == 1
    resumed = run_crawl(FOLLOW, settings, timeout=60, args=args)
    resumed.assert_ok()
    assert "Policy state restored: rate_allocator, header_belief, burst_offsets" in resumed.log
    after = read_records(tmp_state / "adaptive")
    # every URL revisited after the restart registered under the same epoch
    assert {r.policy["al"][0] for r in after.values() if r.policy and "al" in r.policy} == epochs
