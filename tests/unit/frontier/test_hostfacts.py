"""What the frontier knows of each host besides its URLs: Crawl-delay (kept
across a restart), the trust of its validators, unchecked first-visit ages
and change hints, each dropped where it cannot be news.  Soft-404 and parked
pages are tested in tests/e2e/test_soft404.py, beside the crawl that
records them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scrapy_adaptive.change.trust import HEADER_UNCHECKED
from scrapy_adaptive.frontier import Outcome, Store, Visit
from scrapy_adaptive.frontier.hints import Hint, HintResult
from scrapy_adaptive.frontier.hostfacts import UNCHECKED_PER_CLASS
from scrapy_adaptive.model import UrlRecord
from scrapy_adaptive.store.keys import time_to_ms
from tests.unit.frontier.test_frontier import Clock, add, fp, make, visit_once


def test_a_crawl_delay_is_honoured_and_kept_across_a_restart(store: Store) -> None:
    clock = Clock()
    f = make(store, clock, min_delay=1.0, max_delay=2.0)
    add(f, "http://a/1")
    f.hosts.set_crawl_delay("a", 30.0)
    f.hosts.set_crawl_delay("unknown", 30.0)  # a queue never met: nothing to say
    assert f.book.find("unknown") is None
    again = make(store, clock)
    again.load()
    q = again.book.get("a")
    assert q.crawl_delay == 30.0
    assert again.book.rest_after(q, 0.0) == 30.0
    f.hosts.set_crawl_delay("a", None)  # the robots.txt dropped it
    again = make(store, clock)
    again.load()
    assert again.book.get("a").crawl_delay is None


def test_a_url_not_out_is_always_verified(store: Store) -> None:
    f = make(store, Clock())
    assert f.hosts.verify_validators(b"not out")
    assert f.hosts.trust_report() == {} and f.hosts.hint_report() == {}


def unchecked(url: str, *, checked: bool = False) -> UrlRecord:
    policy = {} if checked else {HEADER_UNCHECKED: 1}
    return UrlRecord(url=url, queue="a", request={}, next_ms=0, policy=policy)


def test_the_index_of_unchecked_ages_is_bounded_per_class(store: Store) -> None:
    f = make(store, Clock())
    for i in range(UNCHECKED_PER_CLASS + 5):
        f._hosts.track_unchecked(i.to_bytes(4, "big"), unchecked(f"http://a/p/{i}"))
    index = f._hosts._unchecked
    (fps,) = index.values()
    assert len(fps) == UNCHECKED_PER_CLASS
    assert (0).to_bytes(4, "big") not in fps  # the oldest went first
    # once checked, a URL leaves the index; an emptied class goes
    for key in list(fps):
        f._hosts.track_unchecked(key, unchecked("http://a/p/x", checked=True))
    assert index == {}


def test_siblings_are_replanned_at_the_1st_2nd_4th_8th_lie_and_only_earlier(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    keys = []
    for i in range(3):
        keys.append(visit_once(f, f"http://a/p/{i}", wait=10_000.0))
        clock.t += 10  # the politeness wait
    for key in keys:
        record = f.get_record("a", key)
        assert record is not None
        record.policy = {HEADER_UNCHECKED: 1}
        f._hosts.track_unchecked(key, record)
    asked: list[Mapping[str, Any]] = []

    def decide(snapshot: Mapping[str, Any]) -> float | None:
        asked.append(snapshot)
        return 500.0

    moved = [f.hosts.replan_unchecked("a", "http://a/p/0", decide) for _ in range(8)]
    assert moved == [3, 0, 0, 0, 0, 0, 0, 0]  # the 2nd, 4th, 8th ask, but nothing is earlier now
    assert len(asked) == 4 * 3  # asked at the 1st, 2nd, 4th and 8th lie only
    for key in keys:
        record = f.get_record("a", key)
        assert record is not None and record.next_ms == time_to_ms(record.fetched + 500.0)  # type: ignore[operator]
    assert f.hosts.replan_unchecked("a", "http://a/p/0", lambda s: 1.0, lie=False) == 3


def test_a_hint_that_cannot_be_news_is_dropped_for_every_policy(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    hosts = f.hosts

    def soon(snapshot: Mapping[str, Any], hint: Hint) -> float:
        return 1.0

    assert hosts.hint("a", fp("http://a/none"), Hint("http://a/none", None, "sitemap"), soon) is HintResult.UNKNOWN
    key = visit_once(f, "http://a/1", wait=10_000.0)
    fetched = clock.t
    clock.t += 50
    hint = Hint("http://a/1", fetched - 1, "sitemap")
    assert hosts.hint("a", key, hint, soon) is HintResult.STALE  # the visit saw it
    hint = Hint("http://a/1", clock.t, "sitemap")
    assert hosts.hint("a", key, hint, None) is HintResult.DECLINED
    assert hosts.hint("a", key, hint, lambda s, h: 20_000.0) is HintResult.LATER
    assert hosts.hint("a", key, hint, soon) is HintResult.ACTED
    assert hosts.hint("a", key, hint, soon) is HintResult.PENDING
    record = f.get_record("a", key)
    assert record is not None and record.next_ms == time_to_ms(clock.t + 1.0)
    clock.t += 5
    issued = f.next()
    assert issued is not None and issued.fp == key
    assert hosts.hint("a", key, hint, soon) is HintResult.OUT
    f.update(key, Visit(Outcome.FAILED, reason="gone"), None)
    assert hosts.hint("a", key, Hint("http://a/1", None, "ping"), soon) is HintResult.NEVER
