"""Start-up notes on what a JOBDIR holds from runs without scrapy-adaptive."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from queuelib.queue import FifoDiskQueue, LifoDiskQueue
from scrapy import Spider
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from scrapy_adaptive.config.spec import ConfigError, Kind, SettingSpec
from scrapy_adaptive.config.table import SETTING_SPECS
from scrapy_adaptive.integration.startup import checked_settings, note_scrapy_queue, scrapy_queue_size


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
    naming the setting; left at Scrapy's default, none is.  DEPTH_PRIORITY is
    not among them: it sets Request.priority, which orders due URLs."""
    from scrapy.settings import Settings

    from scrapy_adaptive.config.settings import AdaptiveConfig
    from scrapy_adaptive.integration.startup import settings_warnings

    replaced = [
        "SCHEDULER_DISK_QUEUE",
        "SCHEDULER_MEMORY_QUEUE",
        "SCHEDULER_PRIORITY_QUEUE",
        "DUPEFILTER_CLASS",
    ]
    quiet = Settings()
    assert not [m for m in settings_warnings(quiet, AdaptiveConfig.from_settings(quiet)) if m.split(":")[0] in replaced]
    depth = Settings()
    depth.set("DEPTH_PRIORITY", 1, priority="project")
    assert not [m for m in settings_warnings(depth, AdaptiveConfig.from_settings(depth)) if "DEPTH_PRIORITY" in m]
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


def _edges(spec: SettingSpec) -> list[float]:
    """The values at the ends of what *spec* allows."""
    edges = [bound for bound in (spec.at_least, spec.at_most) if bound is not None]
    if spec.above is not None:
        edges.append(spec.above + 1e-6)
    if spec.below is not None:
        edges.append(spec.below - 1e-6)
    return [int(edge) if spec.kind is Kind.INTEGER else edge for edge in edges]


@pytest.mark.parametrize(
    ("name", "value"),
    [
        (spec.name, edge)
        for spec in SETTING_SPECS
        if spec.kind in (Kind.NUMBER, Kind.INTEGER, Kind.SECONDS)
        for edge in _edges(spec)
    ],
)
def test_every_number_at_the_edge_of_its_range_starts_the_crawl_or_is_refused_in_one_line(
    name: str, value: float
) -> None:
    """A value the table allows builds the policies; one a combination
    forbids (ADAPTIVE_WAIT_MIN above the default ADAPTIVE_WAIT_MAX) is a
    :class:`ConfigError`: never another exception, which Scrapy shows as a
    wall of tracebacks (``ADAPTIVE_WAIT_MIN = 0`` divided by zero)."""
    crawler = get_crawler(Spider, {"ADDONS": {"scrapy_adaptive.Addon": 0}, name: value})
    try:
        checked_settings(crawler)
    except ConfigError as exc:
        assert name in str(exc) and "\n" not in str(exc)


@pytest.mark.parametrize("spec", SETTING_SPECS, ids=lambda spec: spec.name)
def test_the_add_on_takes_a_value_of_any_type_and_leaves_the_refusal_to_the_scheduler(spec: SettingSpec) -> None:
    """The add-on reads a few settings before anything is checked (Scrapy
    runs it while the crawler is made): a value of the wrong type there
    must not escape as a traceback (``ADAPTIVE_CHANGES_AS_ITEMS = [1]``
    raised TypeError), it is refused by name by :func:`checked_settings`."""
    from scrapy_adaptive.addon import Addon

    for junk in ([1], {"a": 1}, object(), 2.5, "junk"):
        settings = Settings({spec.name: junk})
        Addon().update_settings(settings)
