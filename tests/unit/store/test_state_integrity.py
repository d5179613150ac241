"""A damaged state folder is refused with one message, never reset.

Each case damages a real state folder left by a real scheduler (built
directly, as in test_scheduler.py), reopens it through the scheduler's own
open path, and checks the exact message and that the damaged files are
still there afterwards: the user can still restore or repair them.
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
import subprocess
from pathlib import Path

import plyvel
import pytest
from scrapy import Request

from scrapy_adaptive.integration.scheduler import AdaptiveScheduler
from scrapy_adaptive.store.base import Batch
from scrapy_adaptive.store.keys import record_key
from scrapy_adaptive.store.statedir import CHECKPOINT, MARKER, StateDirError, open_store, resolve
from tests.conftest import tmpfs
from tests.unit.integration.test_scheduler import Pages, build, drain, in_loop, visited

URLS = [f"http://{host}.example/p{i}" for host in ("a", "b", "c") for i in range(20)]


def crawled(jobdir: Path, visits: int = 30) -> AdaptiveScheduler:
    """A scheduler that has seen URLS and recorded *visits* visits, still open."""
    scheduler = build(jobdir)
    scheduler.open(Pages())
    for url in URLS:
        scheduler.enqueue_request(Request(url))
    done = 0
    while done < visits:
        batch = drain(scheduler, limit=10)
        assert batch, "nothing issued"
        for request in batch:
            if done < visits:
                scheduler.verdicts.commit(request, visited())  # type: ignore[union-attr]
                done += 1
    return scheduler


def files(folder: Path) -> dict[str, int]:
    """The database's data files and their sizes (LOG and LOCK are LevelDB's diary, not data)."""
    return {p.name: p.stat().st_size for p in folder.iterdir() if p.name not in ("LOG", "LOG.old", "LOCK")}


def reopen(jobdir: Path) -> AdaptiveScheduler:
    scheduler = build(jobdir)
    scheduler.open(Pages())
    return scheduler


def refusal(jobdir: Path) -> str:
    """The message the scheduler's open gets from the state folder (how the
    scheduler then refuses the crawl is tested with the start-up refusals)."""
    with pytest.raises(StateDirError) as info:
        open_store(resolve(None, str(jobdir)), spider=Pages.name, fingerprinter="test", sync=False).close()
    return str(info.value)


@in_loop
def test_a_lost_current_file_is_refused_not_reset(tmp_path: Path) -> None:
    """Issue 10 item 2: LevelDB started an empty database and deleted the old tables."""
    crawled(tmp_path).close("finished")
    db = tmp_path / "adaptive" / "frontier.ldb"
    (db / "CURRENT").unlink()
    before = files(db)
    assert refusal(tmp_path) == (
        f"The state database in {db} has lost its CURRENT file or its tables (Invalid argument: {db}: does not "
        "exist (create_if_missing is false)). Nothing was changed and no new database was created over it: "
        "restore the folder from a backup, or try plyvel.repair_db() on a copy."
    )
    assert files(db) == before  # every table and log still there, nothing new
    # and a repair on a copy gets everything back
    plyvel.repair_db(str(db))
    repaired = reopen(tmp_path)
    assert repaired.frontier is not None and repaired.frontier.counts().urls == len(URLS)
    assert repaired.frontier.counts().visits == 30
    repaired.close("finished")


@in_loop
def test_an_emptied_database_folder_is_refused(tmp_path: Path) -> None:
    crawled(tmp_path).close("finished")
    db = tmp_path / "adaptive" / "frontier.ldb"
    for p in db.iterdir():
        p.unlink()
    assert "has lost its CURRENT file or its tables" in refusal(tmp_path)
    assert files(db) == {}  # no empty database was made in its place
    assert json.loads((tmp_path / "adaptive" / MARKER).read_text())[CHECKPOINT]["urls"] == len(URLS)


@in_loop
def test_a_cut_write_ahead_log_is_reported_as_a_rollback(tmp_path: Path) -> None:
    """Issue 10 item 3: 190 visits silently gone after a truncated log."""
    crawled(tmp_path).close("finished")
    db = tmp_path / "adaptive" / "frontier.ldb"
    (log,) = db.glob("*.log")
    with open(log, "r+b") as f:
        f.truncate(log.stat().st_size // 2)
    for _ in range(2):  # refused again and again: the checkpoint is not overwritten
        message = refusal(tmp_path)
        assert message.startswith(f"The state database in {db} has rolled back: it holds ")
        assert f"but {len(URLS)} URLs and 30 visits were recorded at a clean close" in message
        assert f'delete the "{CHECKPOINT}" entry from {tmp_path / "adaptive" / MARKER}' in message
    # the user accepts the loss: the crawl goes on from what is left
    marker = json.loads((tmp_path / "adaptive" / MARKER).read_text())
    del marker[CHECKPOINT]
    (tmp_path / "adaptive" / MARKER).write_text(json.dumps(marker))
    accepted = reopen(tmp_path)
    assert accepted.frontier is not None and accepted.frontier.counts().visits < 30
    accepted.close("finished")


@in_loop
def test_a_log_cut_of_writes_that_moved_no_count_is_refused(tmp_path: Path) -> None:
    """Issue 36 item 3: the checkpoint compared URLs and visits only, so a
    cut taking a write that moved neither (a confirmation of delivery, the
    policies' aggregates, a schedule) went unseen; each batch now carries the
    store's count of writes, and the checkpoint records it."""
    scheduler = crawled(tmp_path, visits=10)
    assert scheduler.frontier is not None
    store = scheduler.frontier.store
    db = tmp_path / "adaptive" / "frontier.ldb"
    (log,) = db.glob("*.log")
    size = log.stat().st_size
    store.write(Batch(meta={"schedules": b"[]"}))  # one write, no count moved
    scheduler.runtime.checkpoint(clean=False)  # the tick's checkpoint
    point = json.loads((tmp_path / "adaptive" / MARKER).read_text())[CHECKPOINT]
    assert point["writes"] == store.writes
    store.close()  # the process dies: no clean close
    os.truncate(log, size)  # exactly that last batch cut off
    message = refusal(tmp_path)
    assert message.startswith(f"The state database in {db} has rolled back: it holds {len(URLS)} URLs and 10 visits")
    assert "; 1 write lost (a cut write-ahead log" in message


@in_loop
def test_a_garbled_table_is_reported_at_its_first_read(tmp_path: Path) -> None:
    crawled(tmp_path).close("finished")
    reopen(tmp_path).close("finished")  # the reopen turns the log into a table
    db = tmp_path / "adaptive" / "frontier.ldb"
    (table,) = db.glob("*.ldb")
    with open(table, "r+b") as f:
        f.seek(64)
        f.write(b"\xa5" * 64)  # the first block: the per-host counters, read at open
    garbled = table.read_bytes()
    message = refusal(tmp_path)
    assert table.read_bytes() == garbled  # left as it is, for a repair
    assert message == (
        f"The state database in {db} is damaged (Corruption: block checksum mismatch). No record in it was changed. "
        "To recover, restore the folder from a backup, or stop every crawl on it, keep a copy and repair it in place "
        f"with: python -c \"import plyvel; plyvel.repair_db('{db}')\" (what the damaged part held is lost; "
        "docs/state-folder.md)"
    )


@pytest.mark.parametrize("content", [b"{not json", b"[1, 2]", b"\x00\xff\xfe"])
def test_an_unreadable_marker_is_refused_and_the_database_kept(tmp_path: Path, content: bytes) -> None:
    in_loop(lambda: crawled(tmp_path).close("finished"))()
    marker = tmp_path / "adaptive" / MARKER
    db = tmp_path / "adaptive" / "frontier.ldb"
    marker.write_bytes(content)
    before = files(db)
    assert re.match(f"^{marker} is (unreadable or corrupt|not a scrapy-adaptive marker)", refusal(tmp_path))
    assert files(db) == before and marker.read_bytes() == content


@in_loop
def test_a_garbled_record_is_quarantined_in_a_crawl(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 10 item 4, through the scheduler: the host keeps being crawled."""
    scheduler = crawled(tmp_path, visits=0)
    scheduler.close("finished")
    db = tmp_path / "adaptive" / "frontier.ldb"
    bad = scheduler.issued.identity(Request(URLS[0]))
    with plyvel.DB(str(db)) as raw:
        raw.put(record_key(bad), b"\x00garbled")
    again = reopen(tmp_path)
    issued: list[str] = []
    with caplog.at_level(logging.ERROR):
        for _ in range(len(URLS)):
            batch = drain(again)
            for request in batch:
                again.verdicts.commit(request, visited())  # type: ignore[union-attr]
            issued += [r.url for r in batch]
    assert sorted(issued) == sorted(URLS[1:])  # every other URL of host a too
    assert f"The record of fingerprint {bad.hex()} in queue a.example is unreadable" in caplog.text
    with caplog.at_level(logging.INFO):
        again.close("finished")
    assert again.stats.get_value("adaptive/quarantined") == 1
    assert "; 1 quarantined" in caplog.text  # the summary line at close
    with plyvel.DB(str(db)) as raw:
        assert raw.get(b"x/" + bad) == b"\x00garbled" and raw.get(record_key(bad)) is None
    # the next start accepts the counts (URLs + quarantined never drop)
    reopen(tmp_path).close("finished")


@in_loop
def test_an_unclean_stop_is_not_taken_for_a_rollback(tmp_path: Path) -> None:
    """A kill -9 leaves the checkpoint of the last period (clean: false) and
    more in the database: that is normal, the crawl resumes."""
    scheduler = crawled(tmp_path, visits=5)
    scheduler.runtime.checkpoint(clean=False)  # the periodic checkpoint
    for request in drain(scheduler, limit=10):
        scheduler.verdicts.commit(request, visited())  # type: ignore[union-attr]
    assert scheduler.frontier is not None
    scheduler.frontier.store.close()  # the process dies: no clean close, no final checkpoint
    point = json.loads((tmp_path / "adaptive" / MARKER).read_text())[CHECKPOINT]
    assert point["clean"] is False and point["visits"] == 5
    resumed = reopen(tmp_path)
    assert resumed.frontier is not None and resumed.frontier.counts().visits > 5
    resumed.close("finished")


@in_loop
def test_a_checkpoint_that_cannot_be_written_mid_crawl_is_said_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Issue 36 item 6: a marker that could not be written warned at every
    summary; now the first checkpoint (at open) refuses the crawl
    (tests/e2e/test_damaged_state.py), and a later failure is said once."""
    scheduler = crawled(tmp_path, visits=2)
    blocker = Path(f"{tmp_path / 'adaptive' / MARKER}.{os.getpid()}.tmp")
    blocker.mkdir()  # the marker's temporary file cannot be made: a real OS error, even for root
    with caplog.at_level(logging.INFO):
        for _ in range(3):
            for request in drain(scheduler, limit=1):
                scheduler.verdicts.commit(request, visited())  # type: ignore[union-attr]
            scheduler.runtime.checkpoint(clean=False)  # the tick's
    assert caplog.text.count("Cannot write the checkpoint: The state folder") == 1, caplog.text
    blocker.rmdir()
    with caplog.at_level(logging.INFO):
        scheduler.runtime.checkpoint(clean=False)
    assert "The checkpoint is written again" in caplog.text
    assert json.loads((tmp_path / "adaptive" / MARKER).read_text())[CHECKPOINT]["visits"] == 5
    scheduler.close("finished")


def test_a_read_only_state_folder_is_not_called_in_use(tmp_path: Path) -> None:
    """Issue 10 item 9: LevelDB's ``LOCK: Read-only file system`` was matched as "lock"."""
    with tmpfs(tmp_path / "ro", "size=4m") as mount:
        in_loop(lambda: crawled(mount, visits=2).close("finished"))()
        subprocess.run(["mount", "-o", "remount,ro", str(mount)], check=True)
        message = refusal(mount)
        state = mount / "adaptive" / "frontier.ldb"
        assert message == (
            f"The state folder {state} is on a read-only file system (IO error: {state}/LOCK: Read-only file "
            "system). A crawl writes its state: mount it read-write, or give this crawl another "
            "ADAPTIVE_STATE_DIR / JOBDIR."
        )


@in_loop
def test_state_files_are_private(tmp_path: Path) -> None:
    """Issue 10 item 10: stored requests (cookies) sat in 0644 files."""
    scheduler = build(tmp_path, ADAPTIVE_CRAWL_LOG=True)
    scheduler.open(Pages())
    scheduler.enqueue_request(Request(URLS[0]))
    (request,) = drain(scheduler)
    scheduler.verdicts.commit(request, visited())  # type: ignore[union-attr]
    scheduler.close("finished")
    folder = tmp_path / "adaptive"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE((folder / "frontier.ldb").stat().st_mode) == 0o700
    for name in (MARKER, "crawl.log"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600, name
    reopen(tmp_path).close("finished")  # at open, LevelDB's files present are made private
    for p in (folder / "frontier.ldb").iterdir():
        if p.name != "LOCK":
            assert stat.S_IMODE(p.stat().st_mode) & 0o077 == 0, p.name


def test_an_existing_open_folder_is_warned_about_not_changed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    folder = tmp_path / "adaptive"
    folder.mkdir()
    os.chmod(folder, 0o755)
    with caplog.at_level(logging.WARNING):
        in_loop(lambda: reopen(tmp_path).close("finished"))()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755
    assert (
        f"The state folder {folder} can be read by other users (mode 755) and its stored requests may carry cookies "
        f"or credentials: run chmod 700 {folder}" in caplog.text
    )


@in_loop
def test_damage_first_met_by_the_final_summary_is_said_once_at_close(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A crawl shorter than a summary interval meets a damaged block at its close: said, not logged as a detail."""
    from scrapy_adaptive.store.base import StoreCorrupt

    scheduler = crawled(tmp_path)
    runtime = scheduler.runtime
    assert runtime is not None

    def damaged(final: bool = False) -> None:
        raise StoreCorrupt("The state database in X is damaged (Corruption: block checksum mismatch)")

    runtime.reporter.summary = damaged  # type: ignore[method-assign]
    with caplog.at_level(logging.INFO):
        scheduler.close("finished")
    critical = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert critical == ["The state database in X is damaged (Corruption: block checksum mismatch). Stopping the crawl."]
    assert runtime.store._db.closed  # type: ignore[attr-defined]
