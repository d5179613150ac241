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


def test_scrapy_queue_settings_the_frontier_replaces_are_named_once_each_when_set() -> None:
    """Set by the project (above the default priority), each is said once,
    naming the setting; left at Scrapy's default, none is."""
    from scrapy.settings import Settings

    from scrapy_adaptive.config.settings import AdaptiveConfig
    from scrapy_adaptive.integration.startup import settings_warnings

    replaced = [
        "DEPTH_PRIORITY",
        "SCHEDULER_DISK_QUEUE",
        "SCHEDULER_MEMORY_QUEUE",
        "SCHEDULER_PRIORITY_QUEUE",
        "DUPEFILTER_CLASS",
    ]
    quiet = Settings()
    assert not [m for m in settings_warnings(quiet, AdaptiveConfig.from_settings(quiet)) if m.split(":")[0] in replaced]
    project = Settings()
    project.setdict(
        {
            "DEPTH_PRIORITY": 1,
            "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
            "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
            "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
            "DUPEFILTER_CLASS": "scrapy.dupefilters.BaseDupeFilter",
        },
        priority="project",
    )
    messages = settings_warnings(project, AdaptiveConfig.from_settings(project))
    named = [m.split(":")[0] for m in messages]
    assert sorted(n for n in named if n in replaced) == sorted(replaced)
    for message in messages:
        if message.split(":")[0] in replaced:
            assert "\n" not in message and "ignored" in message, message


def test_components_listed_by_hand_or_subclassed_satisfy_the_scheduler_and_a_missing_one_is_named() -> None:
    from scrapy.settings import Settings

    from scrapy_adaptive.addon import Addon
    from scrapy_adaptive.config.settings import AdaptiveConfig
    from scrapy_adaptive.config.spec import ConfigError
    from scrapy_adaptive.integration.spidermiddlewares.visit import VisitMiddleware
    from scrapy_adaptive.integration.startup import require_components

    class MyVisits(VisitMiddleware):
        pass

    package = "scrapy_adaptive.integration"
    by_hand = Settings()
    by_hand.setdict(
        {
            "DOWNLOADER_MIDDLEWARES": {
                f"{package}.downloadermiddlewares.errors.FetchErrorMiddleware": 10,
                f"{package}.downloadermiddlewares.validators.ValidatorsMiddleware": 580,
                f"{package}.downloadermiddlewares.errors.RedirectGuardMiddleware": 605,
            },
            "SPIDER_MIDDLEWARES": {MyVisits: 10},
        },
        priority="project",
    )
    require_components(by_hand, AdaptiveConfig.from_settings(by_hand))
    with pytest.raises(ConfigError, match=r"WarcMiddleware \(DOWNLOADER_MIDDLEWARES\)") as refused:
        warc = by_hand.copy()
        warc.set("ADAPTIVE_WARC_DIR", "warc", "project")
        require_components(warc, AdaptiveConfig.from_settings(warc))
    assert "VisitMiddleware" not in str(refused.value)
    with_addon = Settings()
    Addon().update_settings(with_addon)
    require_components(with_addon, AdaptiveConfig.from_settings(with_addon))
