"""Start-up notes on what a JOBDIR holds from runs without scrapy-adaptive."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from queuelib.queue import FifoDiskQueue, LifoDiskQueue

from scrapy_adaptive.integration.startup import note_scrapy_queue, scrapy_queue_size


def fill(queue: LifoDiskQueue | FifoDiskQueue, n: int) -> None:
    for i in range(n):
        queue.push(b"\x80\x04pickled request %d" % i)
    queue.close()


def test_pending_requests_are_counted_in_both_of_scrapys_disk_queues_without_reading_them(tmp_path: Path) -> None:
    """Scrapy's per-slot layout: requests.queue/active.json, then one folder per
    download slot holding a queue per priority (LIFO: a file; FIFO: a folder)."""
    queues = tmp_path / "requests.queue"
    (queues / "a.example-1").mkdir(parents=True)
    (queues / "active.json").write_text('{"a.example": [0, -1]}')
    fill(LifoDiskQueue(queues / "a.example-1" / "0"), 5)
    fill(LifoDiskQueue(queues / "a.example-1" / "-1"), 2)
    fill(FifoDiskQueue(queues / "b.example-2" / "0"), 4)
    assert scrapy_queue_size(str(tmp_path)) == 11
    assert scrapy_queue_size(str(tmp_path / "nothing here")) == 0


def test_a_jobdir_with_scrapys_queue_is_named_once_with_its_count(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (tmp_path / "requests.queue" / "s-1").mkdir(parents=True)
    fill(LifoDiskQueue(tmp_path / "requests.queue" / "s-1" / "0"), 17)
    with caplog.at_level(logging.WARNING, logger="scrapy_adaptive.integration.startup"):
        note_scrapy_queue(str(tmp_path))
        note_scrapy_queue(None)
    [record] = caplog.records
    assert f"{tmp_path} holds 17 requests pending in Scrapy's own scheduler queue" in record.getMessage()
    assert "scrapy frontier seed URL" in record.getMessage()
    assert (tmp_path / "requests.queue" / "s-1" / "0").stat().st_size > 4  # left as it was


def test_one_pending_request_is_one_request(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "requests.queue" / "s-1").mkdir(parents=True)
    fill(LifoDiskQueue(tmp_path / "requests.queue" / "s-1" / "0"), 1)
    with caplog.at_level(logging.WARNING, logger="scrapy_adaptive.integration.startup"):
        note_scrapy_queue(str(tmp_path))
    assert f"{tmp_path} holds 1 request pending in Scrapy's own scheduler queue" in caplog.text


def test_an_empty_or_damaged_queue_says_nothing(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "requests.queue" / "s-1").mkdir(parents=True)
    fill(LifoDiskQueue(tmp_path / "requests.queue" / "s-1" / "0"), 0)
    (tmp_path / "requests.queue" / "s-1" / "1").write_bytes(b"\x00")  # truncated header
    (tmp_path / "requests.queue" / "s-2").mkdir()
    (tmp_path / "requests.queue" / "s-2" / "info.json").write_text("not json")
    with caplog.at_level(logging.WARNING, logger="scrapy_adaptive.integration.startup"):
        note_scrapy_queue(str(tmp_path))
    assert caplog.records == []
