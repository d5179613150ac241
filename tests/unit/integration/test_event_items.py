"""Change events as items (``ADAPTIVE_CHANGES_AS_ITEMS``): the drain and the
engine adapter's item processor, with real item pipelines under a running
asyncio loop, a real frontier on a memory store and a real feed file."""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from scrapy import Spider
from scrapy.exceptions import DropItem
from scrapy.settings import Settings
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from scrapy_adaptive import ChangeEvent
from scrapy_adaptive.addon import Addon
from scrapy_adaptive.config.settings import AdaptiveConfig
from scrapy_adaptive.config.spec import ConfigError
from scrapy_adaptive.frontier import Frontier, MemoryStore, Politeness
from scrapy_adaptive.integration.engine import EVENT_ITEM_PROCESSOR, ChangeEventProcessor
from scrapy_adaptive.integration.startup import require_item_processor
from scrapy_adaptive.runtime.changes import ChangeEvents, ChangesFeed
from scrapy_adaptive.runtime.wiring import FRONTIER_OPENED
from scrapy_adaptive.store.base import Batch
from scrapy_adaptive.store.keys import event_key

URL = "http://shop.example/p/"
#: what the pipelines below saw, in order: ("open"|"close", None) or (kind, url)
SEEN: list[tuple[str, str | None]] = []


class Recorder:
    """Passes events on (slowly: each waits a loop turn), drops ``/drop``
    pages' events, fails on ``/fail`` pages' events; records what it saw."""

    def open_spider(self) -> None:
        SEEN.append(("open", None))

    def close_spider(self) -> None:
        SEEN.append(("close", None))

    async def process_item(self, item: Any) -> Any:
        await asyncio.sleep(0.001)
        if isinstance(item, ChangeEvent):
            if "/fail" in item.url:
                raise ValueError("no room")
            if "/drop" in item.url:
                raise DropItem("not wanted")
            SEEN.append((item.kind, item.url))
        return item


def world(tmp_path: Path) -> tuple[Frontier, ChangeEvents, ChangeEventProcessor, list[Any]]:
    SEEN.clear()
    frontier = Frontier(MemoryStore(), Politeness(min_delay=0, max_delay=0, delay_factor=0))
    frontier.load()
    crawler = get_crawler(Spider, {"ITEM_PIPELINES": {f"{__name__}.Recorder": 100}})
    crawler.spider = Spider("shop")
    errors: list[Any] = []
    stats = MemoryStatsCollector(crawler)
    feed = ChangesFeed(str(tmp_path / "changes.jsonl"))
    changes = ChangeEvents(frontier, feed, crawler.signals, stats, on_error=errors.append, as_items=True, limit=3)
    processor = ChangeEventProcessor.from_crawler(crawler)
    crawler.signals.send_catch_log(FRONTIER_OPENED, services=None, changes=changes)  # what the scheduler sends
    return frontier, changes, processor, errors


def put(frontier: Frontier, *pages: str, at: int = 0) -> None:
    rows = {}
    for i, page in enumerate(pages):
        url = URL + page
        key = event_key(1_700_000_000_000 + at + i, hashlib.sha1(url.encode()).digest())
        rows["shop.example", key] = json.dumps({"kind": "new", "url": url, "time": 1_700_000_000 + i}).encode()
    frontier.store.write(Batch(events=rows))


def in_outbox(frontier: Frontier) -> list[str]:
    return [json.loads(raw)["url"].removeprefix(URL) for _, _, raw in frontier.outbox.events()]


def test_events_leave_the_outbox_only_once_the_pipelines_are_done_with_them(tmp_path: Path) -> None:
    frontier, changes, processor, errors = world(tmp_path)
    put(frontier, "a", "b")

    async def crawl() -> None:
        assert changes.drain() == 0  # the pipelines are not open yet: the events wait
        await processor.open_spider_async()
        assert changes.drain() == 2
        assert in_outbox(frontier) == ["a", "b"] and changes.drain() == 0  # in the pipelines: held, not read again
        await processor._batch_through()
        assert in_outbox(frontier) == []
        put(frontier, "c", at=10)
        await processor.close_spider_async()  # the last events go through before the pipelines close

    asyncio.run(crawl())
    assert SEEN == [("open", None), ("new", URL + "a"), ("new", URL + "b"), ("new", URL + "c"), ("close", None)]
    assert changes.stats.get_value("adaptive/events/items/passed") == 3 and errors == []
    put(frontier, "d", at=20)
    changes.close()  # the scheduler closes after the pipelines: what is left waits for the next start
    assert in_outbox(frontier) == ["d"]
    assert [json.loads(line)["url"] for line in (tmp_path / "changes.jsonl").read_text().splitlines()] == [
        URL + page for page in "abc"
    ]


def test_a_dropped_event_is_done_a_failed_one_waits_for_the_next_start_and_holds_up_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    frontier, changes, processor, errors = world(tmp_path)
    put(frontier, "fail", "drop", "a")

    async def crawl() -> None:
        await processor.open_spider_async()
        with caplog.at_level(logging.ERROR):
            changes.drain()
            await processor._batch_through()
        assert in_outbox(frontier) == ["fail"]
        put(frontier, "b", "c", "d", at=10)  # the limit is 3: the failed event must not take a place
        changes.drain()
        await processor._batch_through()
        changes.drain()
        await processor._batch_through()
        await processor.close_spider_async()

    asyncio.run(crawl())
    changes.close()
    assert [url for kind, url in SEEN if kind == "new"] == [URL + page for page in "abcd"]
    assert in_outbox(frontier) == ["fail"]  # delivered again at the next start
    records = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(records) == 1 and "\n" not in records[0].getMessage() and records[0].exc_info is None
    assert f"change event new of {URL}fail (ValueError: no room, at test_event_items.py:" in records[0].getMessage()
    stats = changes.stats
    assert [stats.get_value(f"adaptive/events/items/{name}") for name in ("passed", "dropped", "failed")] == [4, 1, 1]
    assert stats.get_value("adaptive/events/delivered") == 5 and errors == []
    # a new start: the failed event goes to the pipelines again (and to the feed again)
    changes2 = ChangeEvents(
        frontier, None, None, MemoryStatsCollector(get_crawler()), on_error=errors.append, as_items=True
    )
    again: list[list[ChangeEvent]] = []

    class Pipelines:
        def process(self, events: list[ChangeEvent], done: Any) -> None:
            again.append(events)
            done([None] * len(events))

    changes2.attach(Pipelines())
    assert changes2.drain() == 1 and [e.url for e in again[0]] == [URL + "fail"] and in_outbox(frontier) == []


def test_the_add_on_installs_the_processor_and_a_project_processor_is_refused_in_one_line() -> None:
    on = Settings({"ADAPTIVE_CHANGES_AS_ITEMS": True})
    Addon().update_settings(on)
    assert on["ITEM_PROCESSOR"] == EVENT_ITEM_PROCESSOR
    require_item_processor(on, AdaptiveConfig.from_settings(on))
    off = Settings()
    Addon().update_settings(off)
    assert off["ITEM_PROCESSOR"] == "scrapy.pipelines.ItemPipelineManager"  # events off: Scrapy's own
    mine = Settings({"ADAPTIVE_CHANGES_AS_ITEMS": True, "ITEM_PROCESSOR": "myproject.Processor"})
    Addon().update_settings(mine)
    assert mine["ITEM_PROCESSOR"] == "myproject.Processor"
    with pytest.raises(ConfigError) as refused:
        require_item_processor(mine, AdaptiveConfig.from_settings(mine))
    message = str(refused.value)
    assert "\n" not in message and "ADAPTIVE_CHANGES_AS_ITEMS needs ITEM_PROCESSOR" in message
    assert "'myproject.Processor'" in message
