"""What a state folder or a bad setting must never do to a crawl.

Real ``scrapy`` crawls in subprocesses (the package imported from this
checkout: :mod:`tests.crawlrunner` puts the repository first on
``PYTHONPATH``).  A state folder is data: nothing stored in it may make the
crawl import a module.  A refused start is one CRITICAL line naming the
setting, exit code 1, no traceback, and leaves every file of the JOBDIR as
it was.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import plyvel
import pytest

from scrapy_adaptive.model import UrlRecord
from tests.conftest import read_records
from tests.crawlrunner import CrawlResult, run_crawl
from tests.mockserver import MockServer

pytestmark = pytest.mark.e2e

CASES = Path(__file__).parents[1] / "spiders" / "cases.py"
VERSIONS = Path(__file__).parents[1] / "spiders" / "versions.py"


def traceback_lines(result: CrawlResult) -> list[str]:
    return [line for line in result.text.splitlines() if "Traceback" in line]


def rewrite_meta(db_path: Path, url: str, meta: dict[str, object]) -> None:
    """What an attacker with write access to the state folder does: merge
    *meta* into the stored request of *url*."""
    db = plyvel.DB(str(db_path))
    try:
        records = db.prefixed_db(b"u/")
        for fp, raw in records:
            record = UrlRecord.from_bytes(raw)
            if record.url != url:
                continue
            record.request = {**record.request, "meta": {**(record.request.get("meta") or {}), **meta}}
            records.put(fp, record.to_bytes())
            return
    finally:
        db.close()
    raise AssertionError(f"{url} is not in {db_path}")


def test_a_policy_named_in_the_state_folder_is_never_imported(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_path: Path
) -> None:
    server = clean_log
    project = tmp_path / "project"
    project.mkdir()
    start = server.page_url("/page/sec1-index")
    settings = {k: v for k, v in adaptive_settings.items() if k != "ADAPTIVE_STATE_DIR"}
    settings |= {"JOBDIR": "jobs/sec1", "ADAPTIVE_WAIT_DEFAULT": 0.5, "CLOSESPIDER_TIMEOUT": 3}
    args = ["-a", f"start_urls={start}"]
    # revisited every half second: due again when the next crawl starts
    first = run_crawl(CASES, settings, cwd=project, timeout=60, args=args)
    first.assert_ok()
    state = project / "jobs" / "sec1" / "adaptive"
    marker = project / "evil-ran"
    # a module inside the state folder, importable from the project as jobs.sec1.adaptive.evil
    (state / "evil.py").write_text(
        "from pathlib import Path\n"
        f"Path({str(marker)!r}).write_text('ran')\n"
        "from scrapy_adaptive.policies import ConstantWaitPolicy\n"
        "class P(ConstantWaitPolicy):\n"
        "    pass\n"
    )
    rewrite_meta(state / "frontier.ldb", start, {"adaptive_wait_policy": {"policy": "jobs.sec1.adaptive.evil.P"}})

    settings["ADAPTIVE_WAIT_DEFAULT"] = 1000  # one revisit, judged by the configured policy
    result = run_crawl(CASES, settings, cwd=project, timeout=60, args=args)
    assert not marker.exists()
    result.assert_ok()
    assert result.log.count(f"Crawled (200) <GET {start}>") == 1  # the URL was revisited
    warnings = [line for line in result.log.splitlines() if "WARNING" in line and "evil" in line]
    assert len(warnings) == 1, warnings
    assert start in warnings[0] and "'jobs.sec1.adaptive.evil.P'" in warnings[0]
    assert result.stats["adaptive/wait_policy/overrides_ignored"] == 1
    assert json.dumps(result.stats).count("evil") == 0


def jobdir_files(jobdir: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of a JOBDIR: its bytes and its modification time."""
    return {
        str(path.relative_to(jobdir)): (path.read_bytes(), path.stat().st_mtime_ns)
        for path in sorted(jobdir.rglob("*"))
        if path.is_file()
    }


REFUSED = [
    ({"ADAPTIVE_DIGEST_RULES": [{"url": "(", "rule": "text"}]}, "ADAPTIVE_DIGEST_RULES[0]: 'url' ('(')"),
    ({"ADAPTIVE_DIGEST_RULES": [{"rule": "nope"}]}, "ADAPTIVE_DIGEST_RULES[0]"),
    ({"ADAPTIVE_DIGEST_DEFAULT": "nope"}, "ADAPTIVE_DIGEST_DEFAULT: unknown digest rule 'nope'"),
    (
        {"ADAPTIVE_WAIT_POLICY": "scrapy_adaptive.policies.base.WaitPolicy"},
        "ADAPTIVE_WAIT_POLICY ('scrapy_adaptive.policies.base.WaitPolicy') must name a concrete WaitPolicy subclass",
    ),
    ({"ADAPTIVE_MIN_DELAY": "soon"}, "ADAPTIVE_MIN_DELAY ('soon') must be"),
]


def test_a_refused_start_touches_no_file_of_the_jobdir(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_path: Path
) -> None:
    server = clean_log
    jobdir = tmp_path / "job"
    start = server.page_url("/page/refused-index")
    settings = {k: v for k, v in adaptive_settings.items() if k != "ADAPTIVE_STATE_DIR"}
    settings |= {"JOBDIR": str(jobdir), "ADAPTIVE_WAIT_DEFAULT": 1000, "CLOSESPIDER_TIMEOUT": 2}
    args = ["-a", f"start_urls={start}"]
    run_crawl(CASES, settings, timeout=60, args=args).assert_ok()
    before = jobdir_files(jobdir)
    assert "adaptive/frontier.ldb/CURRENT" in before and "spider.state" not in before  # nothing pickled
    for bad, message in REFUSED:
        result = run_crawl(CASES, {**settings, **bad}, timeout=60, args=args)
        assert result.returncode == 1, bad
        critical = [line for line in result.text.splitlines() if "CRITICAL" in line]
        assert len(critical) == 1 and message in critical[0], (bad, critical)
        assert traceback_lines(result) == [] and "ERROR" not in result.log, (bad, result.text[-3000:])
        assert jobdir_files(jobdir) == before, bad
    # and the JOBDIR still starts a good crawl
    run_crawl(CASES, settings, timeout=60, args=args).assert_ok()


def test_an_empty_spider_state_left_by_an_earlier_refusal_is_removed(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_path: Path
) -> None:
    """Scrapy cannot read an empty spider.state, and truncated it again at
    close: the JOBDIR would fail at every start.  Empty, it holds nothing to
    refuse or migrate: removed, said once; the state is kept as JSON in the
    state folder from then on."""
    jobdir = tmp_path / "job"
    jobdir.mkdir()
    (jobdir / "spider.state").write_bytes(b"")
    start = clean_log.page_url("/page/empty-state-index")
    settings = {**adaptive_settings, "JOBDIR": str(jobdir), "CLOSESPIDER_TIMEOUT": 2}
    said = []
    for _ in range(2):
        result = run_crawl(CASES, settings, timeout=60, args=["-a", f"start_urls={start}"])
        result.assert_ok()
        assert traceback_lines(result) == []
        assert not (jobdir / "spider.state").exists()
        said.append("spider.state was empty" in result.log)
    assert said == [True, False]  # by the first start only: the file is whole since


def test_appended_jsonl_and_csv_feeds_survive_a_kill_and_restarts(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_path: Path
) -> None:
    """``-o items.jsonl -o items.csv`` on a continuous crawl: a half-written
    last line (what a kill leaves) is cut before the next start appends, and
    the CSV keeps one header."""
    server = clean_log
    start = server.url("/changes/1/feeds-index")  # a new version at every visit: an item each time
    jsonl, csv_file = tmp_path / "items.jsonl", tmp_path / "items.csv"
    settings = {**adaptive_settings, "ADAPTIVE_WAIT_DEFAULT": 0.5, "CLOSESPIDER_TIMEOUT": 3}
    args = ["-a", f"start_urls={start}", "-o", str(jsonl), "-o", str(csv_file)]
    for _ in range(2):
        run_crawl(VERSIONS, settings, timeout=60, args=args).assert_ok()
        with jsonl.open("ab") as f:
            f.write(b'{"url": "http://half')
        with csv_file.open("ab") as f:
            f.write(b"http://half,")
    result = run_crawl(VERSIONS, settings, timeout=60, args=args)
    result.assert_ok(allow_errors=False)
    assert result.log.count("Cut a half-written last line") == 2
    items = [json.loads(line) for line in jsonl.read_text().splitlines()]  # every line whole
    assert len(items) >= 3 and all(item["url"] == start for item in items)
    rows = list(csv.reader(csv_file.read_text().splitlines()))
    assert rows[0] == ["url", "status", "payload", "version", "change"]
    assert rows.count(rows[0]) == 1 and len(rows) == len(items) + 1
    assert all(len(row) == 5 and row[0] == start for row in rows[1:])


def test_without_jobdir_the_temporary_state_folder_is_removed_at_close(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_path: Path
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    start = clean_log.page_url("/page/tempdir-index")
    settings = {k: v for k, v in adaptive_settings.items() if k != "ADAPTIVE_STATE_DIR"}
    settings |= {"ADAPTIVE_WAIT_DEFAULT": 0.5, "CLOSESPIDER_TIMEOUT": 2}
    result = run_crawl(CASES, settings, timeout=60, env={"TMPDIR": str(temp)}, args=["-a", f"start_urls={start}"])
    result.assert_ok()
    assert "the frontier lives in the temporary folder" in result.log
    assert not [p.name for p in temp.iterdir() if p.name.startswith("scrapy-adaptive-")]


def test_a_catastrophic_digest_pattern_costs_a_bounded_time_per_page(
    clean_log: MockServer, adaptive_settings: dict[str, object]
) -> None:
    """``(x+)+$`` on a page holding a run of 100,000 x's backtracks
    without end in Python's ``re`` (the crawl would hang on its first page):
    the page is digested exactly after the bound, said once in one line, and
    the crawl goes on to close by itself."""
    server = clean_log
    start = server.page_url("/page/redos-index", size=100_000, links=["/page/redos-a?size=100000"])
    rules = [{"url": "/page/redos-", "rule": "regex", "patterns": [r"\d+", "(x+)+$"]}]
    settings = {**adaptive_settings, "ADAPTIVE_DIGEST_RULES": rules, "CLOSESPIDER_TIMEOUT": 5}
    result = run_crawl(CASES, settings, timeout=40, args=["-a", f"start_urls={start}"])
    result.assert_ok()
    assert result.stats["finish_reason"] == "closespider_timeout"
    records = read_records(Path(str(settings["ADAPTIVE_STATE_DIR"])))
    pages = [r for url, r in records.items() if "/page/redos-" in url]
    assert len(pages) == 2 and all(str(r.digest).startswith("exact:") for r in pages), pages
    # the same fallback at every visit: a revisit of the unchanged page is unchanged
    assert all(change == "unchanged" for r in pages for _, change, _ in r.history[1:]), pages
    warned = [line for line in result.log.splitlines() if "WARNING" in line and "(x+)+$" in line]
    assert len(warned) == 1, warned
    assert "ADAPTIVE_DIGEST_RULES[0]: pattern '(x+)+$' ran past 1 s on http://" in warned[0]
    assert traceback_lines(result) == []
