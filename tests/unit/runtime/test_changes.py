"""Change events from the verdict to the feed: the outbox write, the drain,
the feed file (a real file; a full disk is ``/dev/full``)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from scrapy.signalmanager import SignalManager
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from scrapy_adaptive.config.spec import ConfigError
from scrapy_adaptive.frontier import ChangeState, Frontier, MemoryStore, Outcome, Politeness, Visit
from scrapy_adaptive.model import Plan
from scrapy_adaptive.runtime.changes import CHANGE_EVENT, ChangeEvents, ChangesFeed
from scrapy_adaptive.runtime.sink_failure import SinkError
from scrapy_adaptive.store.base import Batch
from scrapy_adaptive.store.keys import event_key

URL = "http://shop.example/p/42"
FP = hashlib.sha1(URL.encode()).digest()


class Clock:
    def __init__(self) -> None:
        self.t = 1_700_000_000.0

    def __call__(self) -> float:
        return self.t


def frontier() -> tuple[Frontier, Clock]:
    clock = Clock()
    f = Frontier(MemoryStore(), Politeness(min_delay=0, max_delay=0, delay_factor=0), clock=clock)
    f.load()
    f.add(FP, URL, "shop.example", {"url": URL})
    return f, clock


def visit(status: int, change: ChangeState, digest: str | None = None) -> Visit:
    return Visit(Outcome.VISITED, status=status, change=change, digest=digest, url=URL)


def test_an_event_is_written_with_its_visit_and_says_the_capture_before() -> None:
    f, clock = frontier()
    assert f.next() is not None
    f.update(FP, visit(200, ChangeState.CHANGED, "d1"), Plan(60.0), presence=[1, 0, 0], event="new")
    clock.t += 60
    assert f.next() is not None
    # a 410 is no version and its body does not replace the capture (issue 46)
    record = f.update(FP, visit(410, ChangeState.UNKNOWN, "d2"), Plan(60.0), presence=[1, 1, 1], event="gone")
    assert record is not None and record.presence == [1, 1, 1] and record.digest == "d1"
    rows = f.outbox.events()
    assert [json.loads(raw)["kind"] for _, _, raw in rows] == ["new", "gone"]
    gone = json.loads(rows[1][2])
    assert (gone["version"], gone["status"], gone["previous_digest"], gone["digest"]) == (1, 410, "d1", "d1")
    assert gone["previous_time"] == clock.t - 60 and gone["time"] == clock.t
    f.outbox.events_delivered([(queue, key) for queue, key, _ in rows])
    assert f.outbox.events() == []


def test_no_event_is_written_when_the_verdicts_write_fails() -> None:
    f, _ = frontier()
    assert f.next() is not None

    def refuse(batch: Batch) -> None:
        raise OSError("disk full")

    f.store.write = refuse  # type: ignore[method-assign]
    with pytest.raises(OSError):
        f.update(FP, visit(200, ChangeState.CHANGED, "d1"), Plan(60.0), presence=[1, 0, 0], event="new")
    assert f.store.events() == []


def drain(f: Frontier, feed: ChangesFeed | None, signals: SignalManager | None = None) -> tuple[ChangeEvents, list]:
    errors: list[Any] = []
    stats = MemoryStatsCollector(get_crawler())
    return ChangeEvents(f, feed, signals, stats, on_error=errors.append), errors


def put(f: Frontier, n: int) -> None:
    rows = {}
    for i in range(n):
        rows["shop.example", event_key(1_700_000_000_000 + i, FP)] = json.dumps(
            {"kind": "changed", "url": URL, "time": 1_700_000_000 + i, "version": i + 1}
        ).encode()
    f.store.write(Batch(events=rows))


def test_the_drain_writes_the_feed_sends_the_signal_then_empties_the_outbox(tmp_path: Path) -> None:
    f, _ = frontier()
    put(f, 3)
    signals = SignalManager()
    seen: list[dict[str, Any]] = []
    signals.connect(lambda event: seen.append(event), CHANGE_EVENT, weak=False)
    path = tmp_path / "changes.jsonl"
    task, errors = drain(f, ChangesFeed(str(path)), signals)
    task.run()
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [e["version"] for e in lines] == [1, 2, 3] == [e["version"] for e in seen]
    assert f.outbox.events() == [] and errors == []
    put(f, 1)  # appended, across a reopen
    task.close()
    task2, _ = drain(f, ChangesFeed(str(path)))
    put(f, 2)
    task2.close()
    assert len(path.read_text().splitlines()) == 6


def test_a_torn_last_line_is_cut_and_csv_has_one_header(tmp_path: Path) -> None:
    path = tmp_path / "changes.jsonl"
    path.write_bytes(b'{"kind":"new","url":"x"}\n{"kind":"chan')  # a kill mid-write
    ChangesFeed(str(path)).close()
    assert path.read_bytes() == b'{"kind":"new","url":"x"}\n'
    csv_path = tmp_path / "changes.csv"
    for _ in range(2):
        f, _ = frontier()
        put(f, 2)
        task, _ = drain(f, ChangesFeed(str(csv_path)))
        task.close()
    lines = csv_path.read_text().splitlines()
    assert lines[0].startswith("kind,url,time,version") and len(lines) == 5 and lines.count(lines[0]) == 1


def test_csv_structured_cells_are_json(tmp_path: Path) -> None:
    """A CSV cell holding a dict or a list (items mode's ``fields``) is JSON
    a consumer reads back with json.loads, not a Python repr."""
    import csv

    f, _ = frontier()
    fields = {"changed": [{"item": "SKU-1", "fields": ["price"], "note": None, "flag": True}]}
    event = {"kind": "changed", "url": URL, "time": 1_700_000_000, "version": 2, "fields": fields}
    f.store.write(Batch(events={("shop.example", event_key(1_700_000_000_000, FP)): json.dumps(event).encode()}))
    path = tmp_path / "changes.csv"
    task, errors = drain(f, ChangesFeed(str(path)))
    task.close()
    with open(path, newline="", encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    assert errors == [] and len(rows) == 1
    assert json.loads(rows[0]["fields"]) == fields
    assert rows[0]["version"] == "2" and rows[0]["digest"] == "" and rows[0]["url"] == URL


def test_a_csv_feed_begun_without_a_newer_column_goes_on_under_its_header_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Fields are only added to events (``text_diff``): a CSV feed written
    by an earlier version keeps its columns, and the ones it lacks are said."""
    import csv

    path = tmp_path / "changes.csv"
    old = "kind,url,time,version,status,reason,digest,previous_time,previous_digest,location,fields"
    path.write_text(old + "\nnew,http://shop.example/x,1,1,200,,,,,,\n")
    f, _ = frontier()
    put(f, 1)
    task, errors = drain(f, ChangesFeed(str(path)))
    task.close()
    with open(path, newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file))
    assert errors == [] and rows[0] == old.split(",") and len(rows) == 3 and len(rows[2]) == len(rows[0])
    assert "was begun without the column text_diff" in caplog.text


def test_a_full_disk_is_said_once_and_the_events_wait_in_the_outbox(tmp_path: Path) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full on this system")
    path = tmp_path / "changes.jsonl"
    path.symlink_to("/dev/full")
    f, _ = frontier()
    put(f, 2)
    task, errors = drain(f, ChangesFeed(str(path)))
    task.run()
    task.run()
    assert len(errors) == 1 and isinstance(errors[0], SinkError) and "full" in str(errors[0])
    task.close()  # stopped: nothing more leaves the outbox
    assert len(f.outbox.events()) == 2  # delivered at the next start


def test_a_garbled_event_is_removed_and_said(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    f, _ = frontier()
    put(f, 1)
    f.store.write(Batch(events={("shop.example", event_key(1_600_000_000_000, FP)): b"\xff garbled"}))
    path = tmp_path / "changes.jsonl"
    task, _ = drain(f, ChangesFeed(str(path)))
    task.close()
    assert f.outbox.events() == [] and len(path.read_text().splitlines()) == 1
    assert "garbled" in caplog.text


def test_a_feed_that_cannot_be_appended_to_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"ADAPTIVE_CHANGES_FEED .* must end in \.jsonl"):
        ChangesFeed(str(tmp_path / "changes.json"))
    with pytest.raises(ConfigError, match="does not exist"):
        ChangesFeed(str(tmp_path / "nowhere" / "changes.jsonl"))
    (tmp_path / "a-file").write_text("")
    with pytest.raises(ConfigError, match=r"the folder .*a-file is not a folder"):
        ChangesFeed(str(tmp_path / "a-file" / "changes.jsonl"))
    # a folder of the feed's name: one line, not IsADirectoryError from cutting its last line
    (tmp_path / "folder.jsonl").mkdir()
    with pytest.raises(ConfigError, match=r"ADAPTIVE_CHANGES_FEED \('.*folder.jsonl'\) cannot be opened for writing"):
        ChangesFeed(str(tmp_path / "folder.jsonl"))


def test_each_queue_counts_its_gone_pages_as_verdicts_forgets_and_failed_writes_change_them() -> None:
    """The report's gone pages per host come from the queue's counters, kept
    with each verdict in the same write: no record is read to count them."""
    f, clock = frontier()
    other = "http://shop.example/p/43"
    other_fp = hashlib.sha1(other.encode()).digest()
    f.add(other_fp, other, "shop.example", {"url": other})

    def answer(status: int, presence: list[int], event: str | None) -> None:
        clock.t += 60
        issued = f.next()
        assert issued is not None
        verdict = visit(status, ChangeState.CHANGED, f"d{status}")
        f.update(issued.fp, verdict, Plan(60.0), presence=presence, event=event)

    answer(200, [1, 0, 0], "new")
    answer(200, [1, 0, 0], "new")
    answer(404, [1, 1, 1], "gone")
    answer(410, [1, 1, 1], "gone")
    q = f.book.get("shop.example")
    assert q.gone == 2
    reopened = Frontier(f.store, f.politeness, clock=clock)
    reopened.load()
    assert reopened.book.get("shop.example").gone == 2  # kept with the queue's counters
    answer(200, [1, 0, 0], "back")
    assert q.gone == 1
    gone_fp = next(fp for fp in (FP, other_fp) if is_gone(f, fp))
    # a verdict whose write fails leaves the count as the store has it
    clock.t += 60
    issued = f.next()
    assert issued is not None and issued.fp == gone_fp
    write = f.store.write

    def refuse(batch: Batch) -> None:
        raise OSError("disk full")

    f.store.write = refuse  # type: ignore[method-assign]
    with pytest.raises(OSError):
        f.update(issued.fp, visit(200, ChangeState.CHANGED, "d3"), Plan(60.0), presence=[1, 0, 0], event="back")
    f.store.write = write  # type: ignore[method-assign]
    assert q.gone == 1
    f.forget([("shop.example", gone_fp)])
    assert q.gone == 0
    reopened = Frontier(f.store, f.politeness, clock=clock)
    reopened.load()
    assert reopened.book.get("shop.example").gone == 0


def is_gone(f: Frontier, fp: bytes) -> bool:
    record = f.get_record("shop.example", fp)
    return record is not None and record.presence == [1, 1, 1]
