"""Refusing to start: one CRITICAL line, the start-up stopped by Scrapy's own
``CloseSpider`` once every part is open, exit code 1, and the JOBDIR's
``spider.state`` of the crawl that did run left as it was."""

from __future__ import annotations

import logging
import pickle
from pathlib import Path

import pytest
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import CloseSpider
from scrapy.utils.test import get_crawler
from twisted.python.failure import Failure

from scrapy_adaptive.integration.refused_start import Refusal, RefusingScheduler
from tests.unit.integration.test_scheduler import Pages

MESSAGE = "ADAPTIVE_WAIT_MIN must be a number of seconds, got 'soon'"


def test_the_stand_in_scheduler_says_why_once_and_holds_nothing(caplog: pytest.LogCaptureFixture) -> None:
    scheduler = RefusingScheduler(MESSAGE)
    with caplog.at_level(logging.CRITICAL, logger="scrapy_adaptive.integration.refused_start"):
        assert scheduler.open(Pages()) is None
    assert [r.getMessage() for r in caplog.records] == [f"scrapy-adaptive cannot start: {MESSAGE}"]
    assert scheduler.refusal.message == MESSAGE
    assert not scheduler.enqueue_request(Request("http://a.example/"))
    assert not scheduler.has_pending_requests() and scheduler.next_request() is None


def opened(crawler: Crawler, refusal: Refusal, spider: Pages) -> list[object]:
    """What the refusal's own ``spider_opened`` handler returned (a Failure if it raised)."""
    results = crawler.signals.send_catch_log(signals.spider_opened, spider=spider)
    return [result for receiver, result in results if getattr(receiver, "__self__", None) is refusal]


def test_the_start_up_is_stopped_once_the_spider_opens_and_the_exit_code_is_1() -> None:
    crawler = get_crawler(Pages)
    refusal = Refusal(crawler)
    spider = Pages()
    crawler.spider = spider
    # not refused: opening goes on
    assert opened(crawler, refusal, spider) == [None]
    refusal.refuse(MESSAGE)
    (failure,) = opened(crawler, refusal, spider)
    assert isinstance(failure, Failure) and failure.check(CloseSpider)
    assert failure.value.reason == "adaptive_refused"
    crawler.signals.send_catch_log(signals.spider_closed, spider=spider, reason="adaptive_refused")
    assert crawler.spider is None  # Scrapy's crawler process counts the crawl as failed: exit code 1


def write_state_at_close(tmp_path: Path, *, refused: bool) -> bytes:
    """The bytes of ``JOBDIR/spider.state`` after a spider with a state closes."""
    jobdir = tmp_path / ("refused" if refused else "ran")
    jobdir.mkdir()
    (jobdir / "spider.state").write_bytes(pickle.dumps({"kept": True}))
    crawler = get_crawler(Pages, settings_dict={"JOBDIR": str(jobdir)})
    if refused:
        Refusal(crawler).refuse(MESSAGE)
    spider = Pages()
    spider.state = {"overwritten": True}
    crawler.signals.send_catch_log(signals.spider_closed, spider=spider, reason="finished")
    return (jobdir / "spider.state").read_bytes()


def test_a_refused_crawl_leaves_the_jobdirs_spider_state_alone(tmp_path: Path) -> None:
    assert pickle.loads(write_state_at_close(tmp_path, refused=False)) == {"overwritten": True}  # Scrapy's own
    assert pickle.loads(write_state_at_close(tmp_path, refused=True)) == {"kept": True}
