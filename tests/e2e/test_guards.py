"""Hostile servers and refused settings, each with its exact outcome.

Real ``scrapy`` crawls in subprocesses against the real local server
(``/hostile/...`` in :mod:`tests.mockserver`).  Every URL a crawl issues must
end in a verdict (visited, a counted retry, or failed after the retries) and
the crawl must go on; every start-up refusal is one CRITICAL line, no
traceback, exit code 1.
"""

from __future__ import annotations

import re
import resource
import signal
import time
from pathlib import Path

import pytest

from tests.conftest import read_records
from tests.crawlrunner import CrawlResult, finish_crawl, run_crawl, start_crawl, wait_for_log
from tests.mockserver import MockServer

pytestmark = pytest.mark.e2e

SPIDERS = Path(__file__).parents[1] / "spiders"
CASES = SPIDERS / "cases.py"

#: every hostile case, and the record it must end with after one crawl:
#: (outcome, visits, failures); the download errors are retried once by
#: the frontier (ADAPTIVE_MAX_RETRIES=1), then failed.  The cases that fail
#: are served by 127.0.0.2, the big pages by 127.0.0.3 (so their 10,000
#: links do not queue up before the retries).
HOSTILE = {
    "/hostile/huge-headers/a": ("failed", 0, 1),
    "/hostile/endless/a": ("failed", 0, 1),
    "/hostile/bad-gzip/a": ("failed", 0, 1),
    "/drop/hostile": ("failed", 0, 1),
    "/hostile/never/a": ("failed", 0, 1),
    "/hostile/binary/a": ("visited", None, 0),
    "/redirect/302/loop-a?to=/redirect/302/loop-b": ("visited", None, 0),
    "/redirect/302/loop-b?to=/redirect/302/loop-a": ("visited", None, 0),
    "/hostile/links/a?n=10000": ("visited", None, 0),
    "/hostile/long-link/a?kb=100": ("visited", None, 0),
}


#: a failing URL is tried twice (Scrapy's own retries off), then failed
ONE_RETRY: dict[str, object] = {
    "LOG_LEVEL": "INFO",
    "RETRY_TIMES": 0,
    "ADAPTIVE_MAX_RETRIES": 1,
    "ADAPTIVE_RETRY_DELAY": 0.5,
    "ADAPTIVE_WAIT_DEFAULT": 1000,
    "CLOSESPIDER_TIMEOUT": 6,
}


def host_of(path: str) -> str:
    return "127.0.0.3" if path.startswith(("/hostile/links", "/hostile/long-link")) else "127.0.0.2"


def traceback_lines(result: CrawlResult) -> list[str]:
    return [line for line in result.text.splitlines() if "Traceback" in line]


def test_hostile_servers_each_end_in_a_verdict_and_the_crawl_goes_on(
    clean_log: MockServer, adaptive_settings: dict[str, object]
) -> None:
    server = clean_log
    urls = {path: server.url(path, host=host_of(path)) for path in HOSTILE}
    start = server.page_url("/page/hostile-index", links=list(urls.values()))
    settings = {
        **adaptive_settings,
        "LOG_LEVEL": "INFO",
        "DOWNLOAD_TIMEOUT": 1.5,
        "RETRY_TIMES": 0,
        "ADAPTIVE_MAX_RETRIES": 1,
        "ADAPTIVE_RETRY_DELAY": 0.5,
        "ADAPTIVE_LEASE": 2,
        "ADAPTIVE_WAIT_DEFAULT": 1000,
        "ADAPTIVE_HOST_VALENCE": 4,
        "URLLENGTH_LIMIT": 0,  # let the 100 KB URL reach the frontier
        "CLOSESPIDER_TIMEOUT": 12,
    }
    result = run_crawl(CASES, settings, timeout=90, args=["-a", f"start_urls={start}"])
    result.assert_ok(allow_errors=True)
    records = read_records(Path(str(settings["ADAPTIVE_STATE_DIR"])))
    for path, (outcome, visits, failures) in HOSTILE.items():
        record = records[urls[path]]
        assert (record.outcome, record.failures) == (outcome, failures), (path, record.reason)
        if visits is None:
            assert record.visits >= 1, path
    # the bad gzip body is a verdict at once, not a lapsed lease
    assert "not valid gzip" in str(records[urls["/hostile/bad-gzip/a"]].reason)
    # 10,000 links all known; the 100 KB URL was stored and fetched
    assert sum(1 for url in records if "/page/many-" in url) == 10_000
    long_url = next(url for url in records if "/page/long?" in url)
    assert len(long_url) > 100_000
    # the crawl went on: the index page was visited, the summary came at close
    assert records[start].visits >= 1 and "Frontier at close" in result.log
    assert "Unhandled error" not in result.text and "never retrieved" not in result.text
    assert traceback_lines(result) == [], result.text[result.text.find("Traceback") - 300 :][:3000]
    # memory stayed bounded (the endless body is cut by DOWNLOAD_TIMEOUT)
    assert resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss < 600_000  # KB


def test_a_decompression_bomb_gets_its_verdict_at_once(
    clean_log: MockServer, adaptive_settings: dict[str, object]
) -> None:
    """A 20 KB gzip body inflating to 20 MB, over a 1 MB DOWNLOAD_MAXSIZE:
    refused while inflating, a counted retry at once (not after
    ADAPTIVE_LEASE), failed after the retries; the crawl goes on."""
    server = clean_log
    bomb = server.url("/hostile/gzip-bomb/a?mb=20", host="127.0.0.2")
    start = server.page_url("/page/bomb-index", links=[bomb])
    settings = {**adaptive_settings, **ONE_RETRY, "DOWNLOAD_MAXSIZE": 1_048_576}
    result = run_crawl(CASES, settings, timeout=60, args=["-a", f"start_urls={start}"])
    result.assert_ok(allow_errors=True)
    record = read_records(Path(str(settings["ADAPTIVE_STATE_DIR"])))[bomb]
    assert (record.outcome, record.visits, record.failures) == ("failed", 0, 1), record.reason
    assert "DOWNLOAD_MAXSIZE (1048576 B)" in str(record.reason)
    assert result.stats["adaptive/decompression/too_large"] == 2
    assert "adaptive/leases_expired" not in result.stats
    assert traceback_lines(result) == []


def test_a_body_past_the_download_limits_is_one_line_naming_the_setting(
    clean_log: MockServer, adaptive_settings: dict[str, object]
) -> None:
    """An endless chunked body passes DOWNLOAD_MAXSIZE, a slow drip (a byte
    every 0.2 s, never idle long enough for a read timeout) runs past
    DOWNLOAD_TIMEOUT: each fetch ends in one log line without a traceback,
    and its stored reason names the setting that ended it."""
    server = clean_log
    endless = server.url("/hostile/endless/limits", host="127.0.0.2")
    drip = server.url("/hostile/drip/limits?every=0.2", host="127.0.0.3")
    start = server.page_url("/page/limits-index", links=[endless, drip])
    settings = {**adaptive_settings, **ONE_RETRY, "DOWNLOAD_MAXSIZE": 1_048_576, "DOWNLOAD_TIMEOUT": 1.5}
    result = run_crawl(CASES, settings, timeout=60, args=["-a", f"start_urls={start}"])
    result.assert_ok(allow_errors=True)
    assert traceback_lines(result) == [], result.text[-3000:]
    records = read_records(Path(str(settings["ADAPTIVE_STATE_DIR"])))
    said = {
        endless: "body exceeds DOWNLOAD_MAXSIZE (1048576 B)",
        drip: "no complete answer within DOWNLOAD_TIMEOUT (1.5 s)",
    }
    for url, reason in said.items():
        record = records[url]
        assert (record.outcome, record.visits, record.failures) == ("failed", 0, 1), record.reason
        assert str(record.reason).startswith(reason), record.reason
        # one ERROR line per fetch (two fetches: the first try and the frontier's retry),
        # each saying the reason, and no line of a traceback after it
        lines = result.log.splitlines()
        errors = [i for i, line in enumerate(lines) if f"ERROR: Error downloading <GET {url}>" in line]
        assert len(errors) == 2, [lines[i] for i in errors]
        for i in errors:
            assert lines[i].endswith(f": {reason}"), lines[i]
            assert i + 1 == len(lines) or re.match(r"\d{4}-\d\d-\d\d ", lines[i + 1]), lines[i + 1]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        (
            {"ADAPTIVE_WAIT_POLICIES": [{"policy": "nowhere.Policy"}]},
            "ADAPTIVE_WAIT_POLICIES[0] names none of content_type, hosts, url",
        ),
        ({"ADAPTIVE_MIN_DELAY": "soon"}, "ADAPTIVE_MIN_DELAY ('soon') must be"),
        ({"ADAPTIVE_STATE_DIR": "{state_file}"}, "(ADAPTIVE_STATE_DIR) is not a folder (a file of that name exists)"),
    ],
)
def test_a_refused_start_is_one_message_and_exit_code_1(
    adaptive_settings: dict[str, object], tmp_path: Path, settings: dict[str, object], message: str
) -> None:
    state_file = tmp_path / "a-file"
    state_file.write_text("not a folder")
    values = {k: (str(state_file) if v == "{state_file}" else v) for k, v in settings.items()}
    result = run_crawl(
        CASES, {**adaptive_settings, **values}, timeout=60, args=["-a", "start_urls=http://127.0.0.1:9/"]
    )
    assert result.returncode == 1
    critical = [line for line in result.text.splitlines() if "CRITICAL" in line]
    assert len(critical) == 1 and message in critical[0], critical
    assert traceback_lines(result) == [] and "ERROR" not in result.log
    assert "Spider closed (adaptive_refused)" in result.log


def test_a_fatal_store_error_during_the_crawl_exits_1(
    clean_log: MockServer, adaptive_settings: dict[str, object]
) -> None:
    server = clean_log
    start = server.page_url("/page/fatal-index", links=["/page/fatal-1", "/page/fatal-2"])
    settings = {
        **adaptive_settings,
        "EXTENSIONS": {"tests.spiders.cases.FailStoreWrites": 0},
        "CASES_FAIL_WRITES_AFTER": 2,
        "CLOSESPIDER_TIMEOUT": 10,
    }
    result = run_crawl(CASES, settings, timeout=60, args=["-a", f"start_urls={start}"])
    assert result.returncode == 1
    assert re.search(r"CRITICAL: .*injected write failure.*Stopping the crawl", result.log)
    assert "Spider closed (adaptive_state_error)" in result.log
    assert traceback_lines(result) == []


def test_a_stop_abandons_a_hung_download_after_the_grace(
    clean_log: MockServer, adaptive_settings: dict[str, object]
) -> None:
    server = clean_log
    hung = server.url("/hostile/never/grace", host="127.0.0.2")
    start = server.page_url("/page/grace-index", links=[hung])
    settings = {**adaptive_settings, "DOWNLOAD_TIMEOUT": 120, "ADAPTIVE_STOP_GRACE": 1}
    proc = start_crawl(CASES, settings, args=["-a", f"start_urls={start}"])
    with proc:
        deadline = time.monotonic() + 30
        while not any(e["path"] == "/hostile/never/grace" for e in server.log()) and time.monotonic() < deadline:
            time.sleep(0.1)
        wait_for_log(proc, r"Crawled \(200\) <GET " + re.escape(start), timeout=30)
        stopped = time.monotonic()
        proc.signal_group(signal.SIGINT)
        result = finish_crawl(proc, timeout=60)
    took = time.monotonic() - stopped
    assert result.returncode == 0 and took < 10, took  # not DOWNLOAD_TIMEOUT's 120 s
    assert re.search(r"Abandoned 1 download still running 1s after the stop", result.log)
    assert result.stats["adaptive/abandoned"] == 1
    assert traceback_lines(result) == []
    record = read_records(Path(str(settings["ADAPTIVE_STATE_DIR"])))[hung]
    # neither visited nor a retry: due again at once on restart
    assert (record.visits, record.failures, record.outcome) == (0, 0, None)
    assert record.next_ms / 1000 <= time.time()
