"""The history of change events (``changes.log``): written by the drain
before the outbox lets go, rotated, read newest first (real files; a full
disk is ``/dev/full``)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from scrapy_adaptive.frontier import Frontier
from scrapy_adaptive.runtime.changelog import CHANGES_LOG, ChangesLog, history_start, read_history, reversed_lines
from scrapy_adaptive.runtime.changes import ChangeEvents, ChangesFeed
from scrapy_adaptive.runtime.rotation import rotated_files
from scrapy_adaptive.runtime.sink_failure import SinkError
from tests.unit.runtime.test_changes import URL, frontier, put


def event(i: int, url: str = URL, kind: str = "changed") -> dict[str, Any]:
    return {"kind": kind, "url": url, "time": 1_700_000_000.0 + i, "version": i + 1}


def drain(f: Frontier, history: ChangesLog, feed: ChangesFeed | None = None, t: float = 1_700_000_100.0) -> tuple:
    errors: list[Any] = []
    stats = MemoryStatsCollector(get_crawler())
    task = ChangeEvents(f, feed, None, stats, on_error=errors.append, history=history, clock=lambda: t)
    return task, errors


def test_the_drain_writes_the_history_before_the_outbox_lets_go(tmp_path: Path) -> None:
    f, _ = frontier()
    put(f, 3)
    history = ChangesLog(str(tmp_path), 1 << 20, 2)
    seen_at_delete: list[int] = []
    delete = f.outbox.events_delivered

    def delivered(rows: list[tuple[str, bytes]]) -> None:
        # what a kill at the moment of the delete would leave on disk
        seen_at_delete.append(len((tmp_path / CHANGES_LOG).read_bytes().splitlines()))
        delete(rows)

    f.outbox.events_delivered = delivered  # type: ignore[method-assign]
    task, errors = drain(f, history, ChangesFeed(str(tmp_path / "feed.jsonl")))
    task.run()
    assert seen_at_delete == [3] and errors == [] and f.outbox.events() == []
    lines = [json.loads(line) for line in (tmp_path / CHANGES_LOG).read_text().splitlines()]
    assert [e["version"] for e in lines] == [1, 2, 3]
    assert all(e["delivered"] == 1_700_000_100.0 and e["url"] == URL for e in lines)
    task.close()
    assert [e["version"] for e in read_history(str(tmp_path))] == [3, 2, 1]  # newest first


def test_a_history_that_cannot_be_written_stops_the_drain_and_the_events_wait(tmp_path: Path) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    (tmp_path / CHANGES_LOG).symlink_to("/dev/full")
    f, _ = frontier()
    put(f, 2)
    feed = tmp_path / "feed.jsonl"
    task, errors = drain(f, ChangesLog(str(tmp_path), 1 << 20, 2), ChangesFeed(str(feed)))
    task.run()
    task.run()
    assert len(errors) == 1 and isinstance(errors[0], SinkError) and "changes log" in str(errors[0])
    task.close()
    assert len(f.outbox.events()) == 2 and feed.read_bytes() == b""  # delivered at the next start, nowhere yet


def test_a_half_written_line_is_skipped_by_readers_and_cut_at_the_next_start(tmp_path: Path) -> None:
    path = tmp_path / CHANGES_LOG
    path.write_bytes(
        b'{"kind":"new","url":"http://a/","time":1.0,"delivered":2.0}\n{"kind":"gone","url":"http://a/","ti'
    )
    assert [e["kind"] for e in read_history(str(tmp_path))] == ["new"]
    ChangesLog(str(tmp_path), 1 << 20, 2).close()
    assert path.read_bytes().endswith(b'"delivered":2.0}\n')


def test_the_history_rotates_within_its_bound_and_reads_newest_first_across_files(tmp_path: Path) -> None:
    history = ChangesLog(str(tmp_path), 600, 2)
    for i in range(40):  # each line ~110 bytes: five to a file
        history.write([event(i)], 1_700_000_000.5 + i)
    history.close()
    files = rotated_files(str(tmp_path / CHANGES_LOG))
    assert [os.path.basename(p) for p in files] == [CHANGES_LOG, f"{CHANGES_LOG}.1", f"{CHANGES_LOG}.2"]
    assert all(os.path.getsize(p) <= 600 for p in files)
    versions = [e["version"] for e in read_history(str(tmp_path))]
    assert versions == sorted(versions, reverse=True) and versions[0] == 40 and len(versions) < 40
    assert history_start(str(tmp_path)) == 1_700_000_000.5 + 40 - len(versions)
    assert history_start(str(tmp_path / "elsewhere")) is None


def test_one_urls_events_are_found_by_its_bytes_whatever_its_characters(tmp_path: Path) -> None:
    history = ChangesLog(str(tmp_path), 1 << 20, 0)
    café = 'http://h/café?q="x"'
    history.write([event(1, URL), event(2, café, "gone"), event(3, URL + "x"), event(4, café, "back")], 5.0)
    history.close()
    assert [(e["kind"], e["version"]) for e in read_history(str(tmp_path), url=café)] == [("back", 5), ("gone", 3)]
    assert [e["version"] for e in read_history(str(tmp_path), url=URL)] == [2]  # not its longer neighbour


def test_lines_are_read_backwards_across_blocks(tmp_path: Path) -> None:
    path = tmp_path / "lines"
    lines = [f"{i}:" + "x" * (i * 997 % 70_000) for i in range(60)]
    path.write_text("\n".join(lines) + "\n")
    assert [line.decode() for line in reversed_lines(str(path))] == lines[::-1]
    assert list(reversed_lines(str(tmp_path / "missing"))) == []
