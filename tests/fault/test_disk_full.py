"""A full disk under the state folder: a real crawl on a small tmpfs.

The crawl must stop with one clear message naming the folder and a non-zero
exit code; once there is room again (the same tmpfs remounted bigger) the
crawl resumes from exactly what was written, and the checkpoint agrees.
A full disk under a feed, the changes feed or the WARC folder stops the
crawl the same way, and what was not written comes at the resume.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from scrapy_adaptive.change.events import KINDS
from scrapy_adaptive.runtime.sink_failure import EVENTS_AGAIN, PAGES_AGAIN
from scrapy_adaptive.store.leveldb import LevelDBStore
from tests.conftest import read_records, read_state, tmpfs
from tests.crawlrunner import CrawlResult, run_crawl
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
    # ...nor a warning repeating it (the hourly series, the reports, the policy state written at close)
    repeated = [
        line
        for line in full.log.splitlines()
        if "No space left" in line and re.search(r"\] (DEBUG|INFO|WARNING|ERROR):", line)
    ]
    assert not repeated, repeated
    assert not list(state.glob("*.tmp")), list(state.glob("*.tmp"))
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
    assert "Adaptive frontier opened in" in resumed.log and f": {len(before)} URLs in 1 queue" in resumed.log
    after = read_records(state)
    assert before.keys() <= after.keys()  # no URL lost
    assert all(after[url].visits >= record.visits for url, record in before.items())  # no visit undone


def fill(disk: Path, leave: int) -> Path:
    """A file taking all of *disk* but *leave* bytes (deleted: room again)."""
    free = os.statvfs(disk)
    filler = disk / "filler"
    filler.write_bytes(b"\0" * max(0, free.f_bavail * free.f_frsize - leave))
    return filler


def sink_settings(adaptive_settings: dict[str, object]) -> dict[str, object]:
    return {
        **adaptive_settings,
        "LOG_LEVEL": "INFO",
        "ADAPTIVE_MIN_DELAY": 0,
        "ADAPTIVE_MAX_DELAY": 0,
        "ADAPTIVE_HOST_VALENCE": 4,
        "ADAPTIVE_WAIT_DEFAULT": 1000,
        "CLOSESPIDER_TIMEOUT": 30,
    }


def assert_stopped_once(result: CrawlResult, what: str, path: Path, again: str = PAGES_AGAIN) -> None:
    """One CRITICAL line naming the file, no traceback, exit code 1."""
    message = re.compile(
        rf"CRITICAL: The disk holding the {what} {re.escape(str(path))}\S* is full \(.*No space left on device\)\. "
        rf"Free space, then run the crawl again: {again}\. "
        r"Stopping the crawl; the state on disk is consistent and the crawl can resume\."
    )
    assert len(message.findall(result.log)) == 1, result.log[-3000:]
    assert len(result.error_lines()) == 1, result.error_lines()[:5]
    assert "Traceback" not in result.log + result.stderr
    assert result.returncode == 1


def test_a_full_feed_disk_stops_the_crawl_and_its_items_come_at_the_resume(
    clean_log: MockServer, adaptive_settings: dict[str, object], small_disk: Path
) -> None:
    settings = sink_settings(adaptive_settings)
    feed = small_disk / "items.jsonl"
    filler = fill(small_disk, 6000)  # ~100 items
    start = clean_log.url("/ring/300/0?fanout=4")
    args = ["-a", f"start_urls={start}", "-o", str(feed)]
    full = run_crawl(CASES, settings, timeout=60, args=args)
    assert_stopped_once(full, "feed file", feed)
    state_dir = Path(str(settings["ADAPTIVE_STATE_DIR"]))
    state, pending = read_state(state_dir)
    assert pending, "the items not written stay pending"
    filler.unlink()  # room again
    resumed = run_crawl(CASES, {**settings, "CLOSESPIDER_TIMEOUT": 4}, timeout=60, args=args)
    resumed.assert_ok()
    lines = feed.read_bytes().splitlines()
    urls = {json.loads(line)["url"] for line in lines}  # every line whole: the cut one was cut off
    state, still = read_state(state_dir)
    assert pending & urls and pending <= urls | still  # delivered at the resume, or pending still
    assert all(url in urls for url, record in state.items() if record.versions)  # every counted version


def outbox(state_dir: Path) -> list[tuple[str, bytes, bytes]]:
    """The change events a stopped crawl has not delivered yet."""
    store = LevelDBStore(str(state_dir / "frontier.ldb"))
    try:
        return store.events()
    finally:
        store.close()


def test_a_full_changes_feed_disk_stops_the_crawl_and_no_event_is_lost(
    clean_log: MockServer, adaptive_settings: dict[str, object], small_disk: Path
) -> None:
    """The events that could not be written wait in the state's outbox and
    reach the feed at the resume: every event either run made is in it."""
    feed = small_disk / "changes.jsonl"
    settings = {
        **sink_settings(adaptive_settings),
        "ADAPTIVE_CHANGES_FEED": str(feed),
        "ADAPTIVE_HOST_VALENCE": 1,
        "ADAPTIVE_MIN_DELAY": 0.05,  # ~20 events a second: a drain or two written, then the disk is full
        "ADAPTIVE_MAX_DELAY": 0.05,
    }
    filler = fill(small_disk, 12000)
    start = clean_log.url("/ring/300/0?fanout=4")
    args = ["-a", f"start_urls={start}"]
    full = run_crawl(CASES, settings, timeout=60, args=args)
    assert_stopped_once(full, "changes feed", feed, EVENTS_AGAIN)
    state_dir = Path(str(settings["ADAPTIVE_STATE_DIR"]))
    waiting = outbox(state_dir)
    assert waiting, "the events not written wait in the outbox"
    filler.unlink()  # room again
    resumed = run_crawl(CASES, {**settings, "CLOSESPIDER_TIMEOUT": 4}, timeout=60, args=args)
    resumed.assert_ok()
    events = [json.loads(line) for line in feed.read_bytes().splitlines()]  # every line whole
    said = {(e["url"], e["kind"], e["time"]) for e in events}
    assert {(e["url"], e["kind"], e["time"]) for e in map(json.loads, (raw for _, _, raw in waiting))} <= said
    made = sum(run.stats.get(f"adaptive/events/{kind}", 0) for run in (full, resumed) for kind in KINDS)
    assert len(said) == made > len(waiting)  # every event made, at least once
    assert full.stats.get("adaptive/events/delivered", 0) > 0, "the disk was full before a drain got through"
    records = read_records(state_dir)
    captured = {url for url, record in records.items() if record.presence and record.presence[0]}
    assert captured == {url for url, kind, _ in said if kind == "new"} and len(captured) > 10
    assert outbox(state_dir) == []


def test_a_full_warc_disk_stops_the_crawl_and_the_pages_are_archived_at_the_resume(
    clean_log: MockServer, adaptive_settings: dict[str, object], small_disk: Path
) -> None:
    pytest.importorskip("warcio")
    from tests.e2e.test_warc import check_archive, read_warcs, response_digests

    settings = {**sink_settings(adaptive_settings), "ADAPTIVE_WARC_DIR": str(small_disk / "warc")}
    filler = fill(small_disk, 48000)
    start = clean_log.url("/ring/300/0?fanout=4")
    args = ["-a", f"start_urls={start}"]
    full = run_crawl(CASES, settings, timeout=60, args=args)
    assert_stopped_once(full, "WARC file", small_disk / "warc")
    assert "Error downloading" not in full.log
    state_dir = Path(str(settings["ADAPTIVE_STATE_DIR"]))
    before, _ = read_state(state_dir)
    filler.unlink()
    resumed = run_crawl(CASES, {**settings, "CLOSESPIDER_TIMEOUT": 4}, timeout=60, args=args)
    resumed.assert_ok()
    records = read_warcs(small_disk / "warc")
    check_archive(records)
    archived = response_digests(records)
    state, _ = read_state(state_dir)
    assert len(state) > len(before) > 10
    for url, record in state.items():
        if record.versions:
            assert record.payload_digest in archived[url], url  # every counted version is archived
    visited = {r["h"]["WARC-Target-URI"] for r in records if r["type"] in ("response", "revisit")}
    assert {url for url, record in state.items() if record.visits} <= visited  # no visit left out


def test_a_full_disk_at_close_keeps_the_spider_state_saved_before_in_one_line(
    adaptive_settings: dict[str, object], small_disk: Path
) -> None:
    """Scrapy's SpiderState ended such a crawl with an OSError traceback."""
    stateful = Path(__file__).parents[1] / "spiders" / "stateful.py"
    jobdir = small_disk / "job"
    settings = {k: v for k, v in adaptive_settings.items() if k != "ADAPTIVE_STATE_DIR"}
    settings |= {"JOBDIR": str(jobdir), "CLOSESPIDER_TIMEOUT": 1, "LOG_LEVEL": "INFO"}
    run_crawl(stateful, settings, timeout=60).assert_ok()
    saved = jobdir / "adaptive" / "spider-state.json"
    assert json.loads(saved.read_text()) == {"n": 1}
    filler = fill(small_disk, 48000)
    full = run_crawl(stateful, settings, timeout=60, args=["-a", "blob=200000"])  # a state bigger than the room left
    assert "Traceback" not in full.text, full.text[-3000:]
    said = [line for line in full.error_lines() if "spider's state could not be saved" in line]
    assert len(said) == 1 and "No space left on device" in said[0], full.error_lines()
    assert str(saved) in said[0]
    assert json.loads(saved.read_text()) == {"n": 1}  # the state saved before, whole
    assert [p.name for p in saved.parent.iterdir() if p.name.endswith(".tmp")] == []
    filler.unlink()
