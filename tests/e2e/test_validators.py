"""Conditional GETs, mid-fetch aborts and trust, in real crawls.

The demo site runs on a frozen clock (``--clock-file``), so its pages do
not change during a crawl unless a test says so; the lying page is tested
on a fast real clock instead.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from tests.conftest import read_records
from tests.crawlrunner import run_crawl
from tests.mockserver import MockServer
from testsite.demo import DemoSiteProcess

pytestmark = pytest.mark.e2e

PAGES = Path(__file__).parents[1] / "spiders" / "pages.py"


@pytest.fixture(scope="module")
def frozen_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DemoSiteProcess]:
    clock = tmp_path_factory.mktemp("clock") / "clock"
    with DemoSiteProcess(clock_file=clock, start_time=time.time() - 3600) as site:
        yield site


@pytest.fixture
def settings(adaptive_settings: dict[str, object]) -> dict[str, object]:
    return {**adaptive_settings, "ADAPTIVE_WAIT_DEFAULT": 0.3, "ADAPTIVE_TRUST_WARMUP": 1}


def crawl(base: str, paths: list[str], settings: dict[str, object], seconds: float = 5):
    urls = [base.rstrip("/") + p for p in paths]
    result = run_crawl(
        PAGES, {**settings, "CLOSESPIDER_TIMEOUT": seconds}, timeout=90, args=["-a", "urls=" + " ".join(urls)],
        collect_items=True,
    )  # fmt: skip
    result.assert_ok()
    return result


def crawl_log(tmp_state: Path) -> list[str]:
    return (tmp_state / "adaptive" / "crawl.log").read_text().splitlines()


@pytest.mark.quick
def test_not_modified_is_an_unchanged_visit_that_keeps_the_digest(
    frozen_site: DemoSiteProcess, settings: dict[str, object], tmp_state: Path
) -> None:
    result = crawl(frozen_site.url, ["/docs/page-01.html"], settings)
    record = next(iter(read_records(tmp_state / "adaptive").values()))
    stats = result.stats
    assert stats["adaptive/validators/not_modified"] >= 2
    assert stats["adaptive/validators/conditional_sent"] >= stats["adaptive/validators/not_modified"]
    assert record.visits >= 4 and record.versions == 1 and record.status in (200, 304)
    lines = crawl_log(tmp_state)
    first_digest = lines[0].split(" ")[5]
    assert record.digest == first_digest  # a 304 never replaces the digest
    assert any(line.endswith("unchanged,notModified") for line in lines)
    assert "HttpError:" not in result.log and "Ignoring response <304" not in result.log
    assert len(result.items) == 1  # the callback ran for the first, full response only
    assert stats["adaptive/validators/bytes_avoided"] >= stats["adaptive/validators/not_modified"] * 500
    report = json.loads((tmp_state / "adaptive" / "validators-report.json").read_text())
    host = next(iter(report.values()))
    assert host["reliability"] == 1.0 and host.get("lies", 0) == 0 and host["right"] >= 1


@pytest.mark.parametrize("scheme", ["etag", "timestamp", "both", "either"])
def test_a_server_ignoring_validators_is_aborted_after_its_headers(
    frozen_site: DemoSiteProcess, settings: dict[str, object], tmp_state: Path, scheme: str
) -> None:
    result = crawl(
        frozen_site.url, ["/lab/ignores-conditional.html"], {**settings, "ADAPTIVE_VALIDATOR_SCHEME": scheme}
    )
    record = next(iter(read_records(tmp_state / "adaptive").values()))
    assert result.stats["adaptive/validators/aborted"] >= 2
    assert record.versions == 1 and record.size and record.size > 500  # the size of the real body is kept
    assert any(line.endswith("unchanged,midFetchAbort") for line in crawl_log(tmp_state))
    assert len(result.items) == 1


def test_validators_can_be_switched_off(
    frozen_site: DemoSiteProcess, settings: dict[str, object], tmp_state: Path
) -> None:
    off = {**settings, "ADAPTIVE_CONDITIONAL_GET": False, "ADAPTIVE_MIDFETCH_ABORT": False}
    result = crawl(frozen_site.url, ["/docs/page-01.html"], off, 3)
    assert "adaptive/validators/not_modified" not in result.stats
    assert "adaptive/validators/aborted" not in result.stats
    assert result.stats["adaptive/change/unchanged"] >= 2  # the digest still sees "no change"


def test_a_lying_server_is_caught_by_verification_fetches(
    adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    """The liar keeps its ETag and Last-Modified while its content changes
    (every 1.5 s here: slower than a noise probe's pair, or its changes would
    be what moves at every fetch) and answers conditional GETs with 304."""
    with DemoSiteProcess(speed=10.0) as site:
        result = crawl(
            site.url,
            ["/lab/liar.html"],
            {
                **adaptive_settings,
                "ADAPTIVE_WAIT_DEFAULT": 0.4,
                "ADAPTIVE_TRUST_WARMUP": 1,
                "ADAPTIVE_TRUST_MIN_RATE": 0.5,
            },
            6,
        )
    record = next(iter(read_records(tmp_state / "adaptive").values()))
    assert result.stats["adaptive/validators/lies"] >= 2
    # said once per URL: a caught liar lies at each change for as long as the crawl runs
    assert result.log.count("the validators said 'no change' but the content changed") == 1
    assert record.versions >= 2  # its changes are still captured, through verification fetches
    report = json.loads((tmp_state / "adaptive" / "validators-report.json").read_text())
    liar = report["127.0.0.1"]
    assert liar["lies"] >= 1 and liar["reliability"] < 1 and liar["verify_rate"] == 1.0


def test_a_304_to_a_request_without_validators_is_suspicious(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    url = clean_log.url("/status/304/odd")
    result = run_crawl(
        PAGES, {**adaptive_settings, "ADAPTIVE_WAIT_DEFAULT": 0.3, "CLOSESPIDER_TIMEOUT": 3}, timeout=60,
        args=["-a", f"urls={url}"],
    )  # fmt: skip
    result.assert_ok()
    record = read_records(tmp_state / "adaptive")[url]
    assert record.visits >= 2 and record.status == 304
    assert all(h[1] == "unknown" for h in record.history)  # not "unchanged"
    assert result.stats["adaptive/validators/unexpected_304"] == record.visits


@pytest.mark.parametrize(
    ("etag", "lm"),
    [
        ('W/"weak"', "garbage-date"),
        ('"a","b"', "Sat, 01 Jan 2101 00:00:00 GMT"),
        ("x" * 1500, "Tue, 99 Nov 2026 08:00:00 GMT"),  # long, under URLLENGTH_LIMIT
    ],
)
def test_malformed_validators_never_break_a_crawl(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path, etag: str, lm: str
) -> None:
    url = clean_log.url(f"/validators/bad?etag={quote(etag)}&lm={quote(lm)}")
    result = run_crawl(
        PAGES,
        {**adaptive_settings, "ADAPTIVE_WAIT_DEFAULT": 0.3, "ADAPTIVE_TRUST_WARMUP": 0, "CLOSESPIDER_TIMEOUT": 3},
        timeout=60,
        args=["-a", f"urls={url}"],
    )
    result.assert_ok()
    record = next(iter(read_records(tmp_state / "adaptive").values()))
    assert record.visits >= 3
