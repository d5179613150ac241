"""What a version is: new content of the page, a 2xx whose content differs
from the last 2xx the URL delivered (issue 46).

A 404 counted as a version (its body was digested and compared) while a
301 did not; each answer is judged here the way a crawl judges it: the
visit middleware's :func:`evaluate` on the record as issued, then
:class:`Verdicts` into a real frontier, with change events on.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.settings import Settings
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from scrapy_adaptive.change.judge import Judging, judge
from scrapy_adaptive.config.settings import AdaptiveConfig
from scrapy_adaptive.frontier import ChangeState, Frontier, MemoryStore, Outcome, Politeness, Visit
from scrapy_adaptive.integration.spidermiddlewares.reading import answer_of
from scrapy_adaptive.policies import load_wait_policy
from scrapy_adaptive.runtime.verdicts import Recorded, Verdicts
from tests.standins import OneIssued

URL = "http://shop.example/p/42"
FP = hashlib.sha1(URL.encode()).digest()
KETTLE = b"<html><body><h1>Kettle</h1><p>10.00</p></body></html>"
BLUE_KETTLE = b"<html><body><h1>Blue kettle</h1><p>11.50</p></body></html>"


class Crawl:
    """One URL, visited answer after answer, as the crawl judges and records them."""

    def __init__(self, confirmations: int = 1) -> None:
        self.t = 1_700_000_000.0
        self.frontier = Frontier(
            MemoryStore(), Politeness(min_delay=0, max_delay=0, delay_factor=0), clock=lambda: self.t
        )
        self.frontier.load()
        self.frontier.add(FP, URL, "shop.example", {"url": URL})
        self.stats = MemoryStatsCollector(get_crawler())
        policy = load_wait_policy(AdaptiveConfig.from_settings(Settings({})))
        self.verdicts = Verdicts(
            self.frontier,
            policy,
            OneIssued(FP),  # type: ignore[arg-type]
            self.stats,
            on_store_error=lambda exc: None,
            clock=lambda: self.t,
            events=True,
            gone_confirmations=confirmations,
        )

    def answer(self, status: int, body: bytes = KETTLE, **headers: str) -> Recorded:
        """The URL answers *status* with *body* when next due: judged and recorded."""
        self.due()
        issued = self.frontier.next()
        assert issued is not None
        response = HtmlResponse(URL, status=status, body=body, headers=headers, request=Request(URL))
        return self.commit(judge(answer_of(response), issued.record.view(), Judging()).visit)

    def due(self) -> None:
        """The clock at the URL's next visit."""
        record = self.frontier.get_record("shop.example", FP)
        assert record is not None
        self.t = max(self.t, record.next_ms / 1000) + 1

    def commit(self, visit: Visit) -> Recorded:
        recorded = self.verdicts.commit(Request(URL), visit)
        assert recorded is not None
        return recorded

    def events(self) -> list[dict[str, Any]]:
        return [json.loads(raw) for _, _, raw in self.frontier.outbox.events()]


def not_found(n: int) -> bytes:
    """A 404 page that differs at each answer (a request id, a clock)."""
    return f"<html><body>Not found (request {n})</body></html>".encode()


def test_a_404_after_content_is_no_version_and_keeps_the_capture() -> None:
    crawl = Crawl(confirmations=2)
    first = crawl.answer(200)
    capture = first.record.digest
    assert first.visit.change is ChangeState.CHANGED and first.record.versions == 1
    gone = crawl.answer(404, not_found(1), ETag='"404-page"')
    assert gone.visit.change is ChangeState.UNKNOWN  # another answer: nothing said of the content
    record = gone.record
    assert (record.versions, record.status, record.digest) == (1, 404, capture)
    assert record.etag is None and record.size == len(KETTLE)  # the capture's, not the error page's
    again = crawl.answer(404, not_found(2))  # a 404 page that changed is still no version
    assert again.visit.change is ChangeState.UNCHANGED  # the same answer: the wait backs off
    assert again.record.versions == 1 and again.record.digest == capture
    assert [e["kind"] for e in crawl.events()] == ["new", "gone"]
    assert crawl.stats.get_value("adaptive/versions") == 1
    assert crawl.stats.get_value("adaptive/change/changed") == 1


def test_the_same_content_after_a_404_is_unchanged_and_back() -> None:
    crawl = Crawl()
    capture = crawl.answer(200).record.digest
    crawl.answer(404, not_found(1))
    back = crawl.answer(200)
    assert back.visit.change is ChangeState.UNCHANGED
    assert (back.record.versions, back.record.status, back.record.digest) == (1, 200, capture)
    events = crawl.events()
    assert [e["kind"] for e in events] == ["new", "gone", "back"]
    assert events[-1]["version"] == 1 and events[-1]["previous_digest"] == capture == events[-1]["digest"]


def test_other_content_after_a_404_is_a_version() -> None:
    crawl = Crawl()
    capture = crawl.answer(200).record.digest
    crawl.answer(410, not_found(1))
    back = crawl.answer(200, BLUE_KETTLE)
    assert back.visit.change is ChangeState.CHANGED and back.record.versions == 2
    event = crawl.events()[-1]
    assert (event["kind"], event["version"], event["previous_digest"]) == ("back", 2, capture)
    assert event["digest"] == back.record.digest != capture


def test_a_301_that_reaches_the_spider_is_no_version_and_says_where() -> None:
    """A redirect not followed (``dont_redirect``, ``handle_httpstatus_list``)
    reached the visit middleware as a page: its body counted as a version,
    and ``moved`` had no target to say."""
    crawl = Crawl()
    capture = crawl.answer(200).record.digest
    moved = crawl.answer(301, b"<html>Moved</html>", Location="/p/42-blue-kettle")
    assert moved.visit.change is ChangeState.UNKNOWN
    assert moved.visit.location == "http://shop.example/p/42-blue-kettle"
    assert (moved.record.versions, moved.record.digest) == (1, capture)
    again = crawl.answer(301, b"<html>Moved!</html>", Location="/p/42-blue-kettle")
    assert again.visit.change is ChangeState.UNCHANGED and again.record.versions == 1
    events = crawl.events()
    assert [e["kind"] for e in events] == ["new", "moved"]
    assert events[1]["location"] == "http://shop.example/p/42-blue-kettle"


def test_no_layer_can_make_an_error_answer_a_version() -> None:
    """Whichever layer judged it (items mode, a user's middleware), a
    changed verdict on a non-2xx is recorded as unknown."""
    crawl = Crawl()
    crawl.answer(200)
    crawl.due()
    assert crawl.frontier.next() is not None
    visit = Visit(Outcome.VISITED, status=403, change=ChangeState.CHANGED, digest="exact:sha1:other", url=URL)
    recorded = crawl.commit(visit)
    assert recorded.visit.change is ChangeState.UNKNOWN and recorded.record.versions == 1
    assert crawl.stats.get_value("adaptive/versions") == 1


def test_a_first_answer_that_is_an_error_is_no_version_and_content_after_it_is_new() -> None:
    crawl = Crawl()
    first = crawl.answer(404, not_found(1))
    assert first.record.versions == 0 and first.record.digest is None
    content = crawl.answer(200)
    assert content.visit.change is ChangeState.CHANGED and content.record.versions == 1
    assert [e["kind"] for e in crawl.events()] == ["new"]
