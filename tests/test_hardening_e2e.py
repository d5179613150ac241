"""What a state folder or a bad setting must never do to a crawl.

Real ``scrapy`` crawls in subprocesses (the package imported from this
checkout: :mod:`tests.crawlrunner` puts the repository first on
``PYTHONPATH``).  A state folder is data: nothing stored in it may make the
crawl import a module.  A refused start is one CRITICAL line naming the
setting, exit code 1, no traceback, and leaves every file of the JOBDIR as
it was.
"""

from __future__ import annotations

import json
from pathlib import Path

import plyvel
import pytest

from scrapy_adaptive.model import UrlRecord
from tests.crawlrunner import CrawlResult, run_crawl
from tests.mockserver import MockServer

pytestmark = pytest.mark.e2e

CASES = Path(__file__).parent / "spiders" / "cases.py"


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
        "from scrapy_adaptive.policies import DefaultWaitPolicy\n"
        "class P(DefaultWaitPolicy):\n"
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
