"""Files that hold what a request carried are the crawl user's alone.

A real crawl with ``http_user``/``http_pass`` (Scrapy's HttpAuthMiddleware
adds ``Authorization: Basic ...``) and a cookie the site sets, archived to
WARC; then ``scrapy frontier export -O`` and ``report --html``.  The WARC
files, the export and the report are created ``0600`` (the WARC and state
folders ``0700``) under a permissive umask, and request records hold the
credentials as ``REDACTED`` unless ``ADAPTIVE_WARC_KEEP_CREDENTIALS``.
"""

from __future__ import annotations

import base64
import gzip
import os
import stat
from pathlib import Path

import pytest

from tests.crawlrunner import run_crawl
from tests.e2e.test_damaged_state import frontier
from tests.mockserver import MockServer

pytestmark = pytest.mark.e2e

warcio = pytest.importorskip("warcio")
from warcio.archiveiterator import ArchiveIterator  # noqa: E402

CASES = Path(__file__).parents[1] / "spiders" / "cases.py"
BASIC = "Basic " + base64.b64encode(b"alice:s3cret").decode()


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def request_headers(warc_dir: Path) -> list[dict[str, str]]:
    found = []
    for path in sorted(warc_dir.glob("*.warc.gz")):
        with open(path, "rb") as file:
            for record in ArchiveIterator(file):
                if record.rec_type == "request":
                    found.append(dict(record.http_headers.headers))
    return found


@pytest.mark.parametrize("keep", [False, True])
def test_warc_files_are_private_and_credentials_redacted_unless_kept(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_path: Path, keep: bool
) -> None:
    warc_dir = tmp_path / "warc"
    start = clean_log.page_url("/page/secret-index", ["/page/secret-a"])
    settings = {
        **adaptive_settings,
        "ADAPTIVE_WARC_DIR": str(warc_dir),
        "ADAPTIVE_WARC_KEEP_CREDENTIALS": keep,
        "ADAPTIVE_WAIT_DEFAULT": 1000,
        "CLOSESPIDER_TIMEOUT": 2,
        "HTTPAUTH_USER": "alice",
        "HTTPAUTH_PASS": "s3cret",
        "HTTPAUTH_DOMAIN": clean_log.netloc(),  # Scrapy compares it with host:port
        # a session cookie set by hand (CookiesMiddleware would replace it from its empty jar)
        "DEFAULT_REQUEST_HEADERS": {"Cookie": "session=abc123"},
        "COOKIES_ENABLED": False,
    }
    result = run_crawl(CASES, settings, timeout=60, args=["-a", f"start_urls={start}"])
    result.assert_ok()
    assert mode(warc_dir) == 0o700 and mode(Path(str(settings["ADAPTIVE_STATE_DIR"]))) == 0o700
    warcs = sorted(warc_dir.glob("*.warc.gz"))
    assert warcs and all(mode(path) == 0o600 for path in warcs), [oct(mode(p)) for p in warcs]
    sent = request_headers(warc_dir)
    assert len(sent) >= 3  # robots.txt and the two pages
    for headers in sent:
        if keep:
            assert headers["Authorization"] == BASIC and headers["Cookie"] == "session=abc123"
        else:
            assert headers["Authorization"] == "REDACTED" and headers["Cookie"] == "REDACTED"
    inflated = b"".join(gzip.decompress(path.read_bytes()) for path in warcs)
    assert (base64.b64encode(b"alice:s3cret") in inflated) is keep
    assert (b"abc123" in inflated) is keep


def test_a_first_fetch_sends_the_credentials_the_spider_set_and_the_state_keeps_none(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_path: Path
) -> None:
    """A request made with an ``Authorization`` and a ``Cookie`` header by hand
    goes out with them on its first fetch, as in plain Scrapy (the spider's
    own object, not one rebuilt from the state folder, which keeps neither)."""
    start = clean_log.page_url("/page/token-index")
    # the Cookie header as set (CookiesMiddleware's jar would ask tldextract for
    # the public suffix list, from the internet, on a fresh machine)
    settings = {**adaptive_settings, "ADAPTIVE_WAIT_DEFAULT": 1000, "CLOSESPIDER_TIMEOUT": 2, "COOKIES_ENABLED": False}
    run_crawl(CASES, settings, timeout=60, args=["-a", f"start_urls={start}", "-a", "token=t0ken"]).assert_ok()
    (first,) = clean_log.log(path_prefix="/page/token-index")
    assert first["headers"]["authorization"] == "Bearer t0ken" and first["headers"]["cookie"] == "t=t0ken"
    export = tmp_path / "export.jsonl"
    done = frontier(Path(str(settings["ADAPTIVE_STATE_DIR"])), "export", "-O", str(export))
    assert done.returncode == 0, done.stderr
    assert start in export.read_text() and "t0ken" not in export.read_text()


def test_export_and_html_report_are_created_private(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_path: Path
) -> None:
    start = clean_log.page_url("/page/private-index")
    settings = {**adaptive_settings, "ADAPTIVE_WAIT_DEFAULT": 1000, "CLOSESPIDER_TIMEOUT": 2}
    run_crawl(CASES, settings, timeout=60, args=["-a", f"start_urls={start}"]).assert_ok()
    state = Path(str(settings["ADAPTIVE_STATE_DIR"]))
    export, page = tmp_path / "export.jsonl", tmp_path / "report.html"
    umask = os.umask(0o022)  # one that would make new files readable by everyone
    try:
        for args in (["export", "-O", str(export)], ["report", "--html", str(page)]):
            done = frontier(state, *args)
            assert done.returncode == 0, done.stderr
    finally:
        os.umask(umask)
    assert start in export.read_text()
    assert mode(export) == 0o600 and mode(page) == 0o600
    assert mode(state / "report.html") == 0o600


def test_scrapys_overridden_settings_line_shows_no_secret(
    clean_log: MockServer, adaptive_settings: dict[str, object]
) -> None:
    """Scrapy logs every overridden setting at start, after the add-ons ran;
    the passwords, secret keys and tokens among them are shown as REDACTED."""
    start = clean_log.page_url("/page/overridden-index")
    secrets = {
        "HTTPAUTH_PASS": "s3cret-http",
        "FTP_PASSWORD": "s3cret-ftp",
        "MAIL_PASS": "s3cret-mail",
        "AWS_SECRET_ACCESS_KEY": "s3cret-aws",
        "AWS_SESSION_TOKEN": "s3cret-token",
        "TELNETCONSOLE_PASSWORD": "s3cret-telnet",
    }
    settings = {
        **adaptive_settings,
        **secrets,
        "HTTPAUTH_USER": "alice",
        "HTTPAUTH_DOMAIN": clean_log.netloc(),
        "LOG_LEVEL": "INFO",
        # Scrapy reopens LOG_FILE once the crawler's settings are applied: appending keeps the first lines
        "LOG_FILE_APPEND": True,
        "CLOSESPIDER_TIMEOUT": 2,
    }
    result = run_crawl(CASES, settings, timeout=60, args=["-a", f"start_urls={start}"])
    result.assert_ok()
    assert "Overridden settings:" in result.log
    assert "s3cret" not in result.text
    overridden = result.log[result.log.index("Overridden settings:") :].split("\n20")[0]
    for name in secrets:
        assert f"'{name}': 'REDACTED'" in overridden, overridden
    assert "'HTTPAUTH_USER': 'alice'" in overridden and "'CLOSESPIDER_TIMEOUT': '2'" in overridden
