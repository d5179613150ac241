"""Pins the Scrapy behaviour ``scrapy_adaptive.integration.engine`` relies on.

``EngineWaker`` calls ``engine._slot.nextcall.schedule()`` so a URL that falls
due is handed out at once rather than on the engine's 5 s heartbeat, and
``exit_with_error`` clears ``crawler.spider`` after the spider closed because
that is what makes Scrapy's crawler process set ``bootstrap_failed`` and
``scrapy crawl`` exit 1.  ``ChangeEventProcessor`` hands change events to the
item pipelines (``ADAPTIVE_CHANGES_AS_ITEMS``) as the scraper's item
processor, built from ``ITEM_PROCESSOR``, opened after the scheduler and
closed before it (``tests/e2e/test_change_events.py`` runs it in a crawl).
If a Scrapy upgrade moves any of these, these tests fail here, by name.
"""

from __future__ import annotations

import inspect
import logging
from pathlib import Path
from types import SimpleNamespace

import pytest
from scrapy.core.engine import ExecutionEngine, _Slot
from scrapy.utils.reactor import CallLaterOnce

from scrapy_adaptive.integration.engine import EVENT_ITEM_PROCESSOR, ChangeEventProcessor, EngineWaker, exit_with_error
from tests.crawlrunner import run_crawl
from tests.mockserver import MockServer

FOLLOW = Path(__file__).parents[1] / "spiders" / "follow.py"


def test_scrapy_still_has_the_attributes_the_waker_uses() -> None:
    assert "_slot" in inspect.getsource(ExecutionEngine.__init__)
    assert "nextcall" in inspect.signature(_Slot.__init__).parameters
    schedule = inspect.signature(CallLaterOnce.schedule)
    assert list(schedule.parameters) == ["self", "delay"]  # we call it without a delay
    assert isinstance(ExecutionEngine.scheduler, property)


def test_scrapy_still_fails_a_crawl_whose_spider_is_cleared() -> None:
    from scrapy.commands.crawl import Command
    from scrapy.crawler import AsyncCrawlerRunner, CrawlerRunner

    # both runners (the asyncio one is the default) judge a finished crawl by its spider
    for runner in (CrawlerRunner, AsyncCrawlerRunner):
        assert 'bootstrap_failed |= not getattr(crawler, "spider", None)' in inspect.getsource(runner), runner
    assert "bootstrap_failed" in inspect.getsource(Command.run)


def test_scrapy_still_builds_the_item_processor_from_its_setting_between_the_schedulers_open_and_close() -> None:
    """The processor joins the drain once its pipelines are open (the
    scheduler, which hands it the drain with FRONTIER_OPENED, opens first)
    and hands over the last events before they close (the scheduler closes
    after, when its final drain must leave the events to the next start)."""
    from scrapy import Spider
    from scrapy.core.scraper import Scraper
    from scrapy.utils.test import get_crawler

    scraper = Scraper(get_crawler(Spider, {"ITEM_PROCESSOR": EVENT_ITEM_PROCESSOR}))
    assert isinstance(scraper.itemproc, ChangeEventProcessor)
    # Scrapy calls the processor's async methods, the ones it overrides
    assert scraper._itemproc_has_async == {"open_spider": True, "close_spider": True, "process_item": True}
    opening = inspect.getsource(ExecutionEngine.open_spider_async)
    assert opening.index("scheduler.open(") < opening.index("self.scraper.open_spider_async()")
    closing = inspect.getsource(ExecutionEngine.close_spider_async)
    assert closing.index("self.scraper.close_spider_async()") < closing.index("scheduler.close(reason)")
    assert "await self.itemproc.close_spider_async()" in inspect.getsource(Scraper.close_spider_async)
    assert "await self.itemproc.open_spider_async()" in inspect.getsource(Scraper.open_spider_async)


def test_exit_with_error_clears_the_spider_only_once_it_closed() -> None:
    from scrapy import signals
    from scrapy.signalmanager import SignalManager

    crawler = SimpleNamespace(spider=object(), signals=SignalManager())
    exit_with_error(crawler)  # type: ignore[arg-type]
    assert crawler.spider is not None
    crawler.signals.send_catch_log(signals.spider_closed, spider=crawler.spider, reason="x")
    assert crawler.spider is None


def test_the_waker_calls_schedule_without_a_delay() -> None:
    calls: list[tuple] = []
    nextcall = SimpleNamespace(schedule=lambda *args: calls.append(args))
    crawler = SimpleNamespace(engine=SimpleNamespace(_slot=SimpleNamespace(nextcall=nextcall), running=True))
    assert EngineWaker(crawler).wake() is True  # type: ignore[arg-type]
    assert calls == [()]


def test_the_waker_degrades_to_the_heartbeat_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    crawler = SimpleNamespace(engine=SimpleNamespace(running=True))
    with caplog.at_level(logging.WARNING):
        assert EngineWaker(crawler).wake() is False  # type: ignore[arg-type]
        assert EngineWaker(crawler).wake() is False  # type: ignore[arg-type]
    assert "5 s heartbeat" in caplog.text


@pytest.mark.e2e
def test_a_due_url_is_fetched_well_before_the_engine_heartbeat(
    clean_log: MockServer, adaptive_settings: dict[str, object]
) -> None:
    """Waits of 0.3 s: woken by the frontier's timer, a single URL is fetched
    about every 0.4 s; on the 5 s heartbeat alone it would be once in 5 s."""
    url = clean_log.url("/page/wake")
    settings = {**adaptive_settings, "ADAPTIVE_WAIT_DEFAULT": 0.3, "CLOSESPIDER_TIMEOUT": 4}
    result = run_crawl(FOLLOW, settings, timeout=60, args=["-a", f"start_urls={url}"])
    result.assert_ok()
    fetches = sorted(e["start"] for e in clean_log.log() if e["path"] == "/page/wake")
    assert len(fetches) >= 6, fetches
    intervals = [b - a for a, b in zip(fetches, fetches[1:])]
    assert max(intervals) < 1.0, intervals
