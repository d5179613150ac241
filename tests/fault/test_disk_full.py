"""A full disk under the state folder: a real crawl on a small tmpfs.

The crawl must stop with one clear message naming the folder and a non-zero
exit code; once there is room again (the same tmpfs remounted bigger) the
crawl resumes from exactly what was written, and the checkpoint agrees.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import read_records, tmpfs
from tests.crawlrunner import run_crawl
from tests.mockserver import MockServer

pytestmark = pytest.mark.e2e

CASES = Path(__file__).parents[1] / "spiders" / "cases.py"


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB tmpfs, unmounted afterwards (skipped where mounting is refused)."""
    with tmpfs(tmp_path / "disk", "size=1m,mode=0700") as mount:
        yield mount


def test_a_full_disk_stops_the_crawl_with_an_error_and_the_crawl_resumes_after(
    clean_log: MockServer, adaptive_settings: dict[str, object], small_disk: Path, tmp_path: Path
) -> None:
    state = small_disk / "adaptive"
    settings = {
        **adaptive_settings,
        "ADAPTIVE_STATE_DIR": str(state),
        "LOG_LEVEL": "INFO",
        "ADAPTIVE_MIN_DELAY": 0,
        "ADAPTIVE_MAX_DELAY": 0,
        "ADAPTIVE_HOST_VALENCE": 4,
        "ADAPTIVE_WAIT_DEFAULT": 1000,
        "CLOSESPIDER_TIMEOUT": 40,
    }
    start = clean_log.url("/ring/400/0?fanout=4")
    # every stored request carries 20 KB: 1 MB is full after a few dozen URLs
    full = run_crawl(CASES, settings, timeout=90, args=["-a", f"start_urls={start}", "-a", "pad=20000"])
    database = state / "frontier.ldb"
    message = re.compile(
        rf"CRITICAL: The disk holding the state folder {re.escape(str(database))} is full \(IO error: .*No space left "
        r"on device\)\. Free space, then run the crawl again: it resumes from the last write that succeeded\. "
        r"Stopping the crawl; the state on disk is consistent and the crawl can resume\."
    )
    assert len(message.findall(full.log)) == 1, full.log[-3000:]
    assert len(full.error_lines()) == 1  # that line and nothing else: no traceback, no second complaint
    assert "Spider closed (adaptive_state_error)" in full.log
    assert full.returncode == 1

    # room again: the same folder, remounted bigger
    subprocess.run(["mount", "-o", "remount,size=64m", str(small_disk)], check=True)
    before = read_records(state)
    assert len(before) > 10, "the disk filled before the crawl got going"
    resumed = run_crawl(
        CASES, {**settings, "CLOSESPIDER_TIMEOUT": 3}, timeout=60, args=["-a", f"start_urls={start}", "-a", "pad=20000"]
    )
    resumed.assert_ok()
    assert "Adaptive frontier opened in" in resumed.log and f": {len(before)} URLs in 1 queues" in resumed.log
    after = read_records(state)
    assert before.keys() <= after.keys()  # no URL lost
    assert all(after[url].visits >= record.visits for url, record in before.items())  # no visit undone
