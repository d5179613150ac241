"""Tests of the test infrastructure itself: mock server, helpers and crawl runner.

If these fail, every end-to-end test built on top of them is meaningless, so
they pin down each resource's contract (status, headers, timing, log records).
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from email.utils import formatdate
from pathlib import Path

import pytest

from tests.crawlrunner import (
    SPIDERS_DIR,
    CrawlTimeoutError,
    encode_setting,
    finish_crawl,
    parse_stats_from_log,
    run_crawl,
    start_crawl,
    wait_for_log,
)
from tests.mockserver import (
    DEFAULT_HOSTS,
    REPO_ROOT,
    MockServer,
    check_loopback,
    gaps,
    max_concurrency,
    page_html,
)

FOLLOW = SPIDERS_DIR / "follow.py"


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


# No proxies (loopback only) and no redirect following (we test redirects).
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())


def fetch(url: str, headers: dict[str, str] | None = None, timeout: float = 10.0) -> tuple[int, dict[str, str], bytes]:
    """GET ``url``; return (status, headers, body) for any HTTP status."""
    req = urllib.request.Request(url, headers=headers or {})
    try:
        with _OPENER.open(req, timeout=timeout) as resp:
            return resp.status, dict(resp.headers), resp.read()
    except urllib.error.HTTPError as err:
        with err:
            return err.code, dict(err.headers), err.read()


# --------------------------------------------------------------------------
# Host validation / startup
# --------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["10.0.0.1", "8.8.8.8", "::1", "localhost", "0.0.0.0"])
def test_check_loopback_refuses(host: str) -> None:
    with pytest.raises(ValueError):
        check_loopback(host)


def test_cli_refuses_non_loopback_host() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "tests.mockserver", "--hosts", "127.0.0.1,192.168.1.1"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert proc.returncode == 2
    assert "non-loopback" in proc.stderr
    assert proc.stdout == ""


def test_listens_on_each_host(clean_log: MockServer) -> None:
    assert set(clean_log.ports) == set(DEFAULT_HOSTS)
    for host in DEFAULT_HOSTS:
        status, _, body = fetch(clean_log.url("/page/hello", host=host))
        assert status == 200 and b"/page/hello" in body
    assert [e["host"] for e in clean_log.log()] == list(DEFAULT_HOSTS)
    assert clean_log.url("page/x", host="127.0.0.2") == f"http://127.0.0.2:{clean_log.port('127.0.0.2')}/page/x"
    with pytest.raises(KeyError):
        clean_log.url("/page/x", host="127.0.0.9")


# --------------------------------------------------------------------------
# Resources
# --------------------------------------------------------------------------


def test_page_links_and_size(clean_log: MockServer) -> None:
    status, headers, body = fetch(clean_log.url("/page/a?links=/page/b,/page/c&size=100"))
    assert status == 200
    assert headers["Content-Type"].startswith("text/html")
    assert b"/page/a" in body
    assert b'href="/page/b"' in body and b'href="/page/c"' in body
    assert b"x" * 100 in body
    assert body == page_html("/page/a", ["/page/b", "/page/c"], 100)
    # deterministic: same URL, same bytes
    assert fetch(clean_log.url("/page/a?links=/page/b,/page/c&size=100"))[2] == body
    assert b"href" not in fetch(clean_log.url("/page/nolinks"))[2]


def test_page_url_encodes_links(clean_log: MockServer) -> None:
    other = clean_log.url("/page/z?x=1", host="127.0.0.3")
    url = clean_log.page_url("/page/y", ["/page/a", other], size=5)
    assert "," not in url.partition("?")[2] and "http://" not in url.partition("?")[2]
    body = fetch(url)[2]
    assert body == page_html("/page/y", ["/page/a", other], 5)


def test_ring(clean_log: MockServer) -> None:
    body = fetch(clean_log.url("/ring/5/4?fanout=2&size=3"))[2]
    assert body == page_html("/ring/5/4", ["/ring/5/0?fanout=2&size=3", "/ring/5/1?fanout=2&size=3"], 3)
    assert b'href="/ring/1/0"' in fetch(clean_log.url("/ring/1/0"))[2]  # self-loop
    t0 = time.monotonic()
    assert fetch(clean_log.url("/ring/3/0?delay=0.3"))[0] == 200
    assert time.monotonic() - t0 >= 0.3


def test_robots_default_and_override(clean_log: MockServer) -> None:
    status, _, body = fetch(clean_log.url("/robots.txt"))
    assert status == 200
    assert body == b"User-agent: *\nDisallow: /private/\n"
    assert fetch(clean_log.url("/private/secret"))[0] == 200  # servable, just disallowed
    clean_log.set_robots(crawl_delay=0.25, disallow=["/a/", "/b/"])
    assert fetch(clean_log.url("/robots.txt"))[2] == (
        b"User-agent: *\nDisallow: /a/\nDisallow: /b/\nCrawl-delay: 0.25\n"
    )
    clean_log.reset()
    assert fetch(clean_log.url("/robots.txt"))[2] == b"User-agent: *\nDisallow: /private/\n"


def test_robots_crawl_delay_flag() -> None:
    with MockServer(hosts=["127.0.0.1"], crawl_delay=1.5) as server:
        body = fetch(server.url("/robots.txt"))[2]
    assert body == b"User-agent: *\nDisallow: /private/\nCrawl-delay: 1.5\n"


@pytest.mark.parametrize("path", ["/delay?s=0.4", "/delay/0.4/x"])
def test_delay_takes_at_least_s(clean_log: MockServer, path: str) -> None:
    t0 = time.monotonic()
    status, _, body = fetch(clean_log.url(path))
    elapsed = time.monotonic() - t0
    assert status == 200 and b"delayed 0.4s" in body
    assert 0.4 <= elapsed < 3
    (entry,) = clean_log.log()
    assert entry["end"] - entry["start"] >= 0.39


def test_delay_is_concurrent_and_measurable(clean_log: MockServer) -> None:
    """Delays don't block the server, and the log shows the overlap (valence)."""
    urls = [clean_log.url(f"/delay/0.5/c{i}", host="127.0.0.2") for i in range(3)]
    urls.append(clean_log.url("/page/other", host="127.0.0.3"))
    threads = [threading.Thread(target=fetch, args=(u,)) for u in urls]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=10)
    assert time.monotonic() - t0 < 1.4  # not 3 x 0.5 s in sequence
    log = clean_log.log()
    assert len(log) == 4
    assert max_concurrency(log, "127.0.0.2") == 3
    assert max_concurrency(log, "127.0.0.3") == 1
    assert all(g < 0 for g in gaps(log, "127.0.0.2"))  # overlapping, no idle time


def test_sequential_gaps_measure_politeness(clean_log: MockServer) -> None:
    for i in range(3):
        fetch(clean_log.url(f"/page/seq{i}"))
        time.sleep(0.2)
    log = clean_log.log(host="127.0.0.1")
    assert max_concurrency(log) == 1
    end_gaps = gaps(log, "127.0.0.1")
    start_gaps = gaps(log, "127.0.0.1", since="start")
    assert len(end_gaps) == 2 and all(0.19 <= g < 1.5 for g in end_gaps)
    assert all(s >= e for s, e in zip(start_gaps, end_gaps, strict=True))


@pytest.mark.parametrize("code", [404, 500, 503])
def test_status(clean_log: MockServer, code: int) -> None:
    status, _, body = fetch(clean_log.url(f"/status/{code}/k"))
    assert status == code and body == f"status {code}\n".encode()
    assert clean_log.log()[0]["status"] == code


def test_status_retry_after(clean_log: MockServer) -> None:
    status, headers, _ = fetch(clean_log.url("/status/429/k?retry_after=7"))
    assert status == 429 and headers["Retry-After"] == "7"


@pytest.mark.parametrize("code", [301, 302, 307])
def test_redirect(clean_log: MockServer, code: int) -> None:
    status, headers, _ = fetch(clean_log.url(f"/redirect/{code}?to=/page/x"))
    assert status == code and headers["Location"] == "/page/x"


def test_drop_raises_and_is_logged(clean_log: MockServer) -> None:
    with pytest.raises((urllib.error.URLError, ConnectionError)):
        fetch(clean_log.url("/drop/x"))
    (entry,) = clean_log.log()
    assert entry["dropped"] is True and entry["status"] is None
    assert entry["end"] >= entry["start"]
    # the server is fine afterwards
    assert fetch(clean_log.url("/page/after"))[0] == 200


def test_flaky_drops_then_succeeds(clean_log: MockServer) -> None:
    url = clean_log.url("/flaky/2/key1")
    for _ in range(2):
        with pytest.raises((urllib.error.URLError, ConnectionError)):
            fetch(url)
    assert fetch(url)[0] == 200
    assert fetch(url)[0] == 200
    with pytest.raises((urllib.error.URLError, ConnectionError)):  # its own counter
        fetch(clean_log.url("/flaky/1/other-key"))
    assert [e["dropped"] for e in clean_log.log()] == [True, True, False, False, True]


def test_flaky_with_status(clean_log: MockServer) -> None:
    url = clean_log.url("/flaky/1/key2?status=503")
    assert fetch(url)[0] == 503
    assert fetch(url)[0] == 200
    clean_log.reset()  # resets the counters
    assert fetch(url)[0] == 503


def test_changes_every_n(clean_log: MockServer) -> None:
    url = clean_log.url("/changes/2/doc")
    results = [fetch(url) for _ in range(4)]
    assert [b"version 0" in r[2] for r in results] == [True, True, False, False]
    assert b"version 1" in results[2][2]
    assert results[3][1]["ETag"] == '"doc-v1"'
    # hit 5 and 6 are version 2: a matching If-None-Match gets 304
    assert fetch(url, {"If-None-Match": '"doc-v2"'})[0] == 304
    assert fetch(url, {"If-None-Match": '"doc-v2"'})[0] == 304
    # hit 7 is version 3: the stale validator gets a full 200 with a new ETag
    status, headers, body = fetch(url, {"If-None-Match": '"doc-v2"'})
    assert status == 200 and headers["ETag"] == '"doc-v3"' and b"version 3" in body


def test_validators(clean_log: MockServer) -> None:
    lm = 1_700_000_000
    url = clean_log.url(f"/validators/k?etag=abc&lm={lm}")
    status, headers, _ = fetch(url)
    assert status == 200
    assert headers["ETag"] == '"abc"'
    assert headers["Last-Modified"] == formatdate(lm, usegmt=True)
    assert fetch(url, {"If-None-Match": '"abc"'})[0] == 304
    assert fetch(url, {"If-None-Match": 'W/"abc"'})[0] == 304
    assert fetch(url, {"If-None-Match": '"zzz"'})[0] == 200
    assert fetch(url, {"If-Modified-Since": formatdate(lm, usegmt=True)})[0] == 304
    assert fetch(url, {"If-Modified-Since": formatdate(lm - 10, usegmt=True)})[0] == 200
    # If-None-Match wins over a matching If-Modified-Since
    assert (
        fetch(
            url,
            {
                "If-None-Match": '"zzz"',
                "If-Modified-Since": formatdate(lm, usegmt=True),
            },
        )[0]
        == 200
    )
    entry = clean_log.log()[1]
    assert entry["headers"]["if-none-match"] == '"abc"' and entry["status"] == 304


def test_unknown_path_404(clean_log: MockServer) -> None:
    assert fetch(clean_log.url("/nope"))[0] == 404


def test_log_records_and_clears(clean_log: MockServer) -> None:
    t0 = time.time()
    fetch(clean_log.url("/page/logged?q=1", host="127.0.0.2"), {"X-Test": "yes"})
    t1 = time.time()
    (entry,) = clean_log.log()
    assert entry["host"] == "127.0.0.2"
    assert entry["port"] == clean_log.port("127.0.0.2")
    assert entry["path"] == "/page/logged" and entry["uri"] == "/page/logged?q=1"
    assert entry["method"] == "GET" and entry["status"] == 200 and not entry["dropped"]
    assert t0 <= entry["start"] <= entry["end"] <= t1
    assert entry["headers"]["x-test"] == "yes"
    assert clean_log.log(host="127.0.0.1") == []
    assert clean_log.log(path_prefix="/page/") == [entry]
    clean_log.clear_log()
    assert clean_log.log() == []


# --------------------------------------------------------------------------
# Pure helpers
# --------------------------------------------------------------------------


def _e(host: str, start: float, end: float | None) -> dict[str, object]:
    return {"host": host, "start": start, "end": end}


def test_max_concurrency_and_gaps_helpers() -> None:
    log = [
        _e("a", 0, 1),
        _e("a", 1, 2),
        _e("a", 1.5, 3),
        _e("b", 0, 10),
        _e("a", 5, None),
    ]
    assert max_concurrency(log, "a") == 2  # touching intervals don't overlap
    assert max_concurrency(log) == 3
    assert gaps(log, "a") == [0, -0.5, 2]
    assert gaps(log, "a", since="start") == [1, 0.5, 3.5]
    assert gaps(log, "b") == []


def test_encode_setting() -> None:
    assert encode_setting({"a": 1}) == '{"a": 1}'
    assert encode_setting(["x", "y"]) == '["x", "y"]'
    assert encode_setting(True) == "True"
    assert encode_setting(0.5) == "0.5"
    assert encode_setting(Path("/tmp/x")) == "/tmp/x"
    with pytest.raises(TypeError):
        encode_setting(None)


def test_parse_stats_from_log() -> None:
    log = (
        "2025-01-01 00:00:00 [scrapy.core.engine] INFO: Closing spider (finished)\n"
        "2025-01-01 00:00:00 [scrapy.statscollectors] INFO: Dumping Scrapy stats:\n"
        "{'downloader/response_count': 3,\n"
        " 'elapsed_time_seconds': 0.5,\n"
        " 'finish_reason': 'finished',\n"
        " 'finish_time': datetime.datetime(2025, 1, 1, 0, 0, 1, 5, tzinfo=datetime.timezone.utc),\n"
        " 'weird': SomeObject(1),\n"
        " 'neg': -2}\n"
        "2025-01-01 00:00:01 [scrapy.core.engine] INFO: Spider closed (finished)\n"
    )
    stats = parse_stats_from_log(log)
    assert stats == {
        "downloader/response_count": 3,
        "elapsed_time_seconds": 0.5,
        "finish_reason": "finished",
        "finish_time": "2025-01-01T00:00:01.000005+00:00",
        "weird": "SomeObject(1)",
        "neg": -2,
    }
    assert parse_stats_from_log("no stats here") is None


def test_wait_for_log_on_file(tmp_path: Path) -> None:
    log = tmp_path / "x.log"
    log.write_text("line one\nspider opened\nline two\n")
    match = wait_for_log(log, r"spider (\w+)", timeout=1)
    assert match.group(1) == "opened"
    with pytest.raises(CrawlTimeoutError, match="never"):
        wait_for_log(log, "never", timeout=0.2, pos=match.end())


# --------------------------------------------------------------------------
# Real crawls (subprocess)
# --------------------------------------------------------------------------


@pytest.mark.e2e
def test_run_crawl_follows_link_graph(clean_log: MockServer) -> None:
    """A real ``scrapy runspider`` crawl of a 3-page graph spanning two hosts."""
    c_url = clean_log.url("/page/c", host="127.0.0.2")
    a_url = clean_log.page_url("/page/a", ["/page/b", "/page/b", c_url])  # dupe link: filtered
    result = run_crawl(
        FOLLOW,
        {"LOG_LEVEL": "DEBUG", "DOWNLOAD_TIMEOUT": 10},
        timeout=60,
        args=["-a", f"start_urls={a_url}"],
        collect_items=True,
    )
    result.assert_ok()
    fetched = sorted((e["host"], e["path"]) for e in clean_log.log())
    assert fetched == [
        ("127.0.0.1", "/page/a"),
        ("127.0.0.1", "/page/b"),
        ("127.0.0.2", "/page/c"),
    ]
    assert result.stats_source == "json"
    assert result.stats["downloader/response_count"] == 3
    assert result.stats["finish_reason"] == "finished"
    assert isinstance(result.stats["finish_time"], str)
    # the log's own stats dump parses to the same counters
    from_log = parse_stats_from_log(result.log)
    assert from_log is not None
    assert from_log["downloader/response_count"] == result.stats["downloader/response_count"]
    assert {item["status"] for item in result.items} == {200}
    assert len(result.items) == 3
    by_url = {item["url"]: item for item in result.items}
    assert by_url[a_url]["links"] == ["/page/b", "/page/b", c_url]
    # c was reached by following a's link, not as a start URL
    (c_entry,) = clean_log.log(host="127.0.0.2")
    assert c_entry["headers"]["referer"] == a_url


@pytest.mark.e2e
def test_start_crawl_sigint_graceful_shutdown(clean_log: MockServer) -> None:
    """start_crawl + wait_for_log + SIGINT: Scrapy shuts down gracefully with stats."""
    links = ",".join(f"/delay/0.5/p{i}" for i in range(40))
    start = clean_log.url(f"/page/root?links={links}")
    proc = start_crawl(
        FOLLOW,
        {"CONCURRENT_REQUESTS_PER_DOMAIN": 1},
        args=["-a", f"start_urls={start}"],
    )
    with proc:
        wait_for_log(proc, r"Crawled \(200\) <GET http://127\.0\.0\.1:\d+/delay/", timeout=30)
        proc.signal_group(signal.SIGINT)
        result = finish_crawl(proc, timeout=30)
    assert result.returncode == 0
    assert "Received SIGINT" in result.log
    assert result.stats["finish_reason"] == "shutdown"
    assert result.stats["downloader/response_count"] < 41


@pytest.mark.e2e
def test_run_crawl_timeout_kills_and_fails_clearly(clean_log: MockServer) -> None:
    start = clean_log.url("/delay/60/forever")
    t0 = time.monotonic()
    with pytest.raises(CrawlTimeoutError, match="did not finish within 2"):
        run_crawl(
            FOLLOW,
            {"DOWNLOAD_TIMEOUT": 120},
            timeout=2,
            args=["-a", f"start_urls={start}"],
        )
    assert time.monotonic() - t0 < 15


@pytest.mark.e2e
def test_stats_from_log_and_wait_for_log_on_exit(clean_log: MockServer) -> None:
    """Without the JSON dump, stats come from the log; waiting on a dead crawl fails fast."""
    proc = start_crawl(
        FOLLOW,
        {"LOG_LEVEL": "INFO"},
        dump_stats=False,
        args=["-a", f"start_urls={clean_log.url('/page/solo')}"],
    )
    with proc:
        t0 = time.monotonic()
        with pytest.raises(AssertionError, match=r"crawl exited \(code 0\)"):
            wait_for_log(proc, "never logged", timeout=60)
        assert time.monotonic() - t0 < 30
        result = finish_crawl(proc, timeout=30)
    assert result.stats_source == "log"
    assert result.stats["downloader/response_count"] == 1
    assert result.stats["finish_reason"] == "finished"
    assert not (result.workdir / "stats.json").exists()
