"""What a crawl says when it cannot start as an adaptive crawl.

Real ``scrapy runspider`` crawls in subprocesses.  A start that cannot work
is one CRITICAL line naming what is missing or at fault and the fix, exit
code 1, no traceback; it must never crawl on recording nothing.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.crawlrunner import CrawlResult, run_crawl
from tests.mockserver import MockServer

pytestmark = pytest.mark.e2e

CASES = Path(__file__).parents[1] / "spiders" / "cases.py"
SCHEDULER = "scrapy_adaptive.AdaptiveScheduler"


def refused_in_one_line(result: CrawlResult) -> str:
    """The one CRITICAL line of a refused start (asserting exit code 1 and no traceback)."""
    assert result.returncode == 1, result.text[-3000:]
    assert "Traceback" not in result.text, result.text[-3000:]
    critical = [line for line in result.text.splitlines() if "CRITICAL" in line]
    assert len(critical) == 1, critical
    return critical[0]


@pytest.mark.quick
def test_the_scheduler_without_the_add_on_refuses_naming_the_missing_components(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    """``SCHEDULER`` alone crawled and recorded nothing, silently: no visit,
    no version, no crawl log, for as long as it ran."""
    start = clean_log.page_url("/page/no-addon-index", links=["/page/no-addon-a"])
    settings = {**adaptive_settings, "ADDONS": {}, "SCHEDULER": SCHEDULER, "CLOSESPIDER_TIMEOUT": 3}
    result = run_crawl(CASES, settings, timeout=60, args=["-a", f"start_urls={start}"])
    line = refused_in_one_line(result)
    for component in ("VisitMiddleware", "FetchErrorMiddleware", "ValidatorsMiddleware", "RedirectGuardMiddleware"):
        assert component in line, line
    assert "ADDONS = {'scrapy_adaptive.Addon': 0}" in line, line
    assert clean_log.log(path_prefix="/page/no-addon") == []  # nothing fetched to be forgotten
    assert not (tmp_state / "adaptive").exists()  # refused before the state folder was made


@pytest.mark.quick
def test_the_short_names_listed_without_the_add_on_make_an_adaptive_crawl(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    """README's components by their short names (``scrapy_adaptive.X``),
    listed by hand at the add-on's orders: the crawl starts and records."""
    start = clean_log.page_url("/page/short-index", links=["/page/short-a"])
    settings = {
        **adaptive_settings,
        "ADDONS": {},
        "SCHEDULER": SCHEDULER,
        "DOWNLOADER_MIDDLEWARES": {
            "scrapy_adaptive.FetchErrorMiddleware": 10,
            "scrapy_adaptive.ValidatorsMiddleware": 580,
            "scrapy_adaptive.RedirectGuardMiddleware": 605,
        },
        "SPIDER_MIDDLEWARES": {"scrapy_adaptive.VisitMiddleware": 10, "scrapy_adaptive.SitemapsMiddleware": 20},
        "CLOSESPIDER_TIMEOUT": 3,
    }
    result = run_crawl(CASES, settings, timeout=60, args=["-a", f"start_urls={start}"])
    assert result.returncode == 0 and "Traceback" not in result.text, result.text[-3000:]
    fetched = {entry["path"] for entry in clean_log.log(path_prefix="/page/short")}
    assert fetched == {"/page/short-index", "/page/short-a"}
    assert result.stats["adaptive/issued"] >= 2


def test_the_add_on_with_its_visit_middleware_disabled_is_refused(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    start = clean_log.page_url("/page/no-visit-index")
    visit = "scrapy_adaptive.integration.spidermiddlewares.visit.VisitMiddleware"
    settings = {**adaptive_settings, "SPIDER_MIDDLEWARES": {visit: None}, "CLOSESPIDER_TIMEOUT": 3}
    result = run_crawl(CASES, settings, timeout=60, args=["-a", f"start_urls={start}"])
    line = refused_in_one_line(result)
    assert "VisitMiddleware (SPIDER_MIDDLEWARES)" in line and "FetchErrorMiddleware" not in line, line


def test_a_jobdir_under_a_regular_file_is_one_line_naming_the_file(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_path: Path
) -> None:
    """Scrapy's ``job_dir()`` ended this start in a 25-line NotADirectoryError."""
    afile = tmp_path / "afile"
    afile.write_text("a regular file")
    settings = {k: v for k, v in adaptive_settings.items() if k != "ADAPTIVE_STATE_DIR"}
    settings |= {"JOBDIR": str(afile / "job"), "CLOSESPIDER_TIMEOUT": 3}
    result = run_crawl(CASES, settings, timeout=60, args=["-a", f"start_urls={clean_log.page_url('/page/jf')}"])
    line = refused_in_one_line(result)
    assert f"JOBDIR {afile / 'job'}" in line and f"{afile} is a file" in line, line
    assert afile.read_text() == "a regular file"


def test_a_missing_plyvel_is_one_line_on_scrapy_crawl(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_path: Path
) -> None:
    """plyvel (LevelDB) not importable: a 30-line ImportError traceback, while
    ``scrapy frontier`` said it in one line."""
    broken = tmp_path / "site"
    broken.mkdir()
    (broken / "plyvel.py").write_text("raise ImportError(\"No module named 'plyvel' (a test stands in for it)\")\n")
    settings = {**adaptive_settings, "CLOSESPIDER_TIMEOUT": 3}
    start = clean_log.page_url("/page/no-plyvel")
    result = run_crawl(CASES, settings, timeout=60, env={"PYTHONPATH": str(broken)}, args=["-a", f"start_urls={start}"])
    line = refused_in_one_line(result)
    assert "plyvel" in line and "pip install plyvel" in line, line
    assert "Traceback" not in result.stderr
    assert clean_log.log(path_prefix="/page/no-plyvel") == []
