"""The scheduler and the verdict path, built directly (no crawl).

In the manner of Scrapy's own tests/test_scheduler.py: fill a scheduler,
close it, reopen it from the same job directory, and assert.  The crawler
is not needed: ``__init__`` takes plain values.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.settings import Settings
from scrapy.utils.test import get_crawler

from scrapy_adaptive import meta
from scrapy_adaptive.config.settings import AdaptiveConfig
from scrapy_adaptive.frontier import ChangeState, Outcome, Visit
from scrapy_adaptive.frontier.canonical import Canonical
from scrapy_adaptive.integration.scheduler import AdaptiveScheduler
from scrapy_adaptive.integration.startup import settings_warnings
from scrapy_adaptive.model import Plan
from scrapy_adaptive.policies import load_wait_policy
from scrapy_adaptive.runtime.issued_requests import url_identity


class Pages(Spider):
    name = "pages"

    def parse(self, response: Any) -> None:
        return None


def in_loop(test: Callable[..., None]) -> Callable[..., None]:
    """Run *test* inside a running asyncio loop: the scheduler's timers
    (Scrapy's ``call_later`` and looping calls) need one, as in a crawl."""

    @functools.wraps(test)
    def wrapper(*args: Any, **kwargs: Any) -> None:
        async def body() -> None:
            test(*args, **kwargs)

        asyncio.run(body())

    return wrapper


def build(jobdir: Path, **settings: Any) -> AdaptiveScheduler:
    values = {"ADAPTIVE_MIN_DELAY": 0, "ADAPTIVE_MAX_DELAY": 0, "ADAPTIVE_CRAWL_LOG": False, **settings}
    config = AdaptiveConfig.from_settings(Settings(values))
    crawler = get_crawler(Pages)
    return AdaptiveScheduler(
        config,
        load_wait_policy(config),
        crawler.stats,  # type: ignore[arg-type]
        identity=url_identity(crawler.request_fingerprinter, Canonical.from_setting(config.canonical)),  # type: ignore[arg-type]
        jobdir=str(jobdir),
        fingerprinter="test",
    )


def drain(scheduler: AdaptiveScheduler, limit: int = 100) -> list[Request]:
    issued = []
    for _ in range(limit):
        request = scheduler.next_request()
        if request is None:
            break
        issued.append(request)
    return issued


def visited(change: ChangeState = ChangeState.CHANGED, **fields: Any) -> Visit:
    return Visit(Outcome.VISITED, status=200, change=change, content_type="text/html", **fields)


URLS = [f"http://{host}/p{i}" for host in ("a.example", "b.example") for i in range(3)]


@in_loop
def test_fill_close_reopen(tmp_path: Path) -> None:
    scheduler = build(tmp_path)
    scheduler.open(Pages())
    assert all(scheduler.enqueue_request(Request(url)) for url in URLS)
    assert scheduler.has_pending_requests()
    # valence 1: one URL per host out at a time
    first = drain(scheduler)
    assert sorted(r.url.split("/")[2] for r in first) == ["a.example", "b.example"]
    assert all(meta.FP in r.meta and meta.RECORD in r.meta for r in first)
    scheduler.verdicts.commit(first[0], visited())  # type: ignore[union-attr]
    scheduler.close("finished")

    reopened = build(tmp_path)
    reopened.open(Pages())
    assert reopened.frontier is not None and reopened.frontier.counts().urls == len(URLS)
    # known URLs are duplicates, not new
    # known URLs merge into their records: not scheduled, as Scrapy's duplicate filter would say (request_dropped)
    assert not any(reopened.enqueue_request(Request(url)) for url in URLS)
    assert reopened.stats.get_value("adaptive/enqueued/duplicate") == len(URLS)
    # the URL out at the stop is due again; the visited one waits its wait
    again = {r.url for r in drain(reopened)}
    assert first[1].url in again and first[0].url not in again
    record = reopened.frontier.get_record(*reopened._where(first[0].url))
    assert record is not None and (record.visits, record.versions) == (1, 1)
    reopened.close("finished")


@in_loop
def test_a_verdict_goes_through_the_policy_to_the_record(tmp_path: Path) -> None:
    scheduler = build(tmp_path, ADAPTIVE_WAIT_POLICY="scrapy_adaptive.policies.FixedWaitPolicy")
    scheduler.open(Pages())
    scheduler.enqueue_request(Request("http://a.example/x"))
    (request,) = drain(scheduler)
    recorded = scheduler.verdicts.commit(request, visited())  # type: ignore[union-attr]
    assert recorded is not None
    record = recorded.record
    assert record.visits == 1 and record.wait is not None and record.wait > 0
    assert record.queue == "a.example"
    # a second verdict on the same request is not ours any more
    assert scheduler.verdicts.commit(request, visited()) is None  # type: ignore[union-attr]
    assert scheduler.stats.get_value("adaptive/visits") == 1
    assert scheduler.stats.get_value("adaptive/versions") == 1
    scheduler.close("finished")


@in_loop
def test_a_child_request_copying_meta_is_a_new_url(tmp_path: Path) -> None:
    scheduler = build(tmp_path)
    scheduler.open(Pages())
    scheduler.enqueue_request(Request("http://a.example/parent"))
    (parent,) = drain(scheduler)
    child = Request("http://a.example/child", meta=dict(parent.meta))
    assert scheduler.issued.fp_of(child) is None
    assert scheduler.enqueue_request(child)
    assert scheduler.stats.get_value("adaptive/enqueued/new") == 2
    scheduler.close("finished")


@in_loop
def test_a_quick_retry_reissues_the_same_request_object(tmp_path: Path) -> None:
    scheduler = build(tmp_path)
    scheduler.open(Pages())
    scheduler.enqueue_request(Request("http://a.example/flaky"))
    (request,) = drain(scheduler)
    retry = request.copy()
    retry.meta["retry_times"] = 1
    assert scheduler.enqueue_request(retry)
    assert scheduler.stats.get_value("adaptive/resent") == 1
    (again,) = drain(scheduler)
    assert again is retry and again.meta["retry_times"] == 1
    scheduler.close("finished")


@in_loop
def test_a_redirect_is_the_visit_and_its_target_a_new_url(tmp_path: Path) -> None:
    scheduler = build(tmp_path)
    scheduler.open(Pages())
    scheduler.enqueue_request(Request("http://a.example/old"))
    (request,) = drain(scheduler)
    target = request.replace(url="http://a.example/new")
    target.meta["redirect_urls"] = [request.url]
    target.meta["redirect_reasons"] = [301]
    assert scheduler.enqueue_request(target)
    assert scheduler.stats.get_value("adaptive/redirects") == 1
    assert scheduler.frontier is not None
    old = scheduler.frontier.get_record(*scheduler._where(request.url))
    assert old is not None and (old.visits, old.status) == (1, 301)
    assert scheduler.frontier.counts().urls == 2
    scheduler.close("finished")


@in_loop
def test_the_policy_sees_the_politeness_queue_not_the_host(tmp_path: Path) -> None:
    """With ADAPTIVE_POLITENESS_KEY = "domain", a.example.com and
    b.example.com are one queue, example.com: the verdict carries that key to
    the policy, so a budget's host caps and the policy's grouping agree."""
    scheduler = build(tmp_path, ADAPTIVE_POLITENESS_KEY="domain", ADAPTIVE_BUDGET=10_000)
    seen: list[str | None] = []
    policy = scheduler.policy
    original = policy.plan

    def spy(history: Any, visit: Visit, **kw: Any) -> Plan:
        seen.append(visit.queue)
        return original(history, visit, **kw)

    policy.plan = spy  # type: ignore[method-assign]
    scheduler.open(Pages())
    for url in ("http://a.example.com/x", "http://b.example.com/y"):
        scheduler.enqueue_request(Request(url))
    for request in drain(scheduler):
        scheduler.verdicts.commit(request, visited())  # type: ignore[union-attr]
    for request in drain(scheduler):
        scheduler.verdicts.commit(request, visited())  # type: ignore[union-attr]
    assert seen == ["example.com", "example.com"]
    allocator = policy.params.crawl.allocator
    assert set(allocator.state()["hosts"]) == {"example.com"}
    scheduler.close("finished")


@in_loop
def test_validator_trust_is_the_frontiers(tmp_path: Path) -> None:
    """Verification decisions and a caught lie live in the host's queue record."""
    scheduler = build(tmp_path, ADAPTIVE_TRUST_WARMUP=1)
    scheduler.open(Pages())
    verdicts = scheduler.verdicts
    assert verdicts is not None and scheduler.frontier is not None
    scheduler.enqueue_request(Request("http://a.example/v"))
    (request,) = drain(scheduler)
    assert verdicts.verify(request) is True  # nothing trusted yet
    # a verification fetch whose headers said "unchanged" over a changed body
    recorded = verdicts.commit(request, visited(ChangeState.CHANGED, validation="verified", prediction="unchanged"))
    assert recorded is not None and recorded.record.notes == ["validatorLie"]
    trust = scheduler.frontier.hosts.trust_report()["a.example"].data[""]
    assert trust["lies"] == 1 and trust["said_unchanged"] == 1
    assert scheduler.stats.get_value("adaptive/validators/lies") == 1
    scheduler.close("finished")


def test_start_up_warns_of_a_misspelt_setting_with_the_closest_name() -> None:
    settings = Settings({"ADAPTIVE_MIN_DELAYY": 5, "HTTPCACHE_ENABLED": True})
    config = AdaptiveConfig.from_settings(settings)
    messages = settings_warnings(settings, config)
    assert any("ADAPTIVE_MIN_DELAYY" in m and "ADAPTIVE_MIN_DELAY?" in m for m in messages)
    assert any(m.startswith("HTTPCACHE_ENABLED") for m in messages)


def test_start_up_warns_once_of_a_removed_setting_with_what_took_its_place() -> None:
    """Issue 49: a project still setting ADAPTIVE_GC_FREEZE hears, once, that it
    is a constant now, and the crawl starts."""
    settings = Settings({"ADAPTIVE_GC_FREEZE": False})
    messages = settings_warnings(settings, AdaptiveConfig.from_settings(settings))
    assert [m for m in messages if "ADAPTIVE_GC_FREEZE" in m] == [
        "ADAPTIVE_GC_FREEZE is no longer a scrapy-adaptive setting and is ignored: what lives when the frontier "
        "opens is always frozen out of the garbage collector's scans (the constant "
        "scrapy_adaptive.runtime.collector.FREEZE). Remove it from your settings."
    ]


@in_loop
def test_a_crawl_delay_removed_from_a_refreshed_robots_txt_is_cleared(tmp_path: Path) -> None:
    from scrapy.http import TextResponse

    scheduler = build(tmp_path / "job")
    scheduler.open(Pages())
    scheduler.capacity.all_nominal()  # type: ignore[union-attr]
    assert scheduler.enqueue_request(Request("http://a.example/p"))
    robots = Request("http://a.example/robots.txt", meta={"dont_obey_robotstxt": True})

    def robots_say(text: bytes) -> float | None:
        scheduler.download_signals.response_received(
            TextResponse(robots.url, body=text, request=robots), robots, Pages()
        )
        [queue] = scheduler.frontier.queues()  # type: ignore[union-attr]
        return queue.crawl_delay

    assert robots_say(b"User-agent: *\nCrawl-delay: 2\n") == 2.0
    assert robots_say(b"User-agent: *\nDisallow: /x/\n") is None  # fetched again without it
    scheduler.close("finished")


@in_loop
def test_a_crawl_delay_beyond_the_longest_wait_is_honoured_and_said(tmp_path: Path, caplog: Any) -> None:
    """``Crawl-delay: 1e12`` is the site's wish, kept as it stands (no cap), but
    a host thereby as good as never fetched again is said in a warning, not an
    INFO line among the others."""
    from scrapy.http import TextResponse

    scheduler = build(tmp_path / "job", ADAPTIVE_WAIT_MAX=86_400)
    scheduler.open(Pages())
    scheduler.capacity.all_nominal()  # type: ignore[union-attr]
    assert scheduler.enqueue_request(Request("http://a.example/p"))
    robots = Request("http://a.example/robots.txt", meta={"dont_obey_robotstxt": True})
    caplog.set_level("INFO", logger="scrapy_adaptive")
    for text in (b"User-agent: *\nCrawl-delay: 60\n", b"User-agent: *\nCrawl-delay: 1e12\n"):
        scheduler.download_signals.response_received(
            TextResponse(robots.url, body=text, request=robots), robots, Pages()
        )
    [queue] = scheduler.frontier.queues()  # type: ignore[union-attr]
    assert queue.crawl_delay == 1e12
    said = [(r.levelname, r.getMessage()) for r in caplog.records if "Crawl-delay" in r.getMessage()]
    assert said[0] == ("INFO", "Honouring robots.txt Crawl-delay of 60.0s for a.example")
    assert said[1][0] == "WARNING" and said[1][1].startswith("a.example's robots.txt asks for a Crawl-delay of ")
    assert "longer than ADAPTIVE_WAIT_MAX (1.0d)" in said[1][1] and len(said) == 2
    scheduler.close("finished")


@in_loop
def test_a_caught_lie_replans_the_unchecked_siblings_through_the_verdict_path(tmp_path: Path) -> None:
    """The verdict that catches a first-visit Last-Modified lying (``ageLie``)
    makes the frontier ask the wait policy again for that URL's siblings whose
    own is unchecked: with their class's headers now known to lie, their
    checks come sooner than planned at their first visits."""
    from email.utils import formatdate

    # the burst policy alone: in the default union a page the snap-back part
    # already plans sooner than the replanned wait is (rightly) not moved
    burst = "scrapy_adaptive.policies.BurstWaitPolicy"
    scheduler = build(tmp_path, ADAPTIVE_BUDGET=20_000, ADAPTIVE_WAIT_MIN=10, ADAPTIVE_WAIT_POLICY=burst)
    scheduler.open(Pages())
    verdicts, frontier = scheduler.verdicts, scheduler.frontier
    assert verdicts is not None and frontier is not None
    urls = [f"http://a.example/p/{i}.html" for i in range(6)]
    week_old = formatdate(time.time() - 7 * 86_400, usegmt=True)
    planned: dict[str, int] = {}
    # a population first (the budget is shared by it), then six old-dated pages
    for batch in ([f"http://a.example/u{i}" for i in range(30)], urls):
        for url in batch:
            scheduler.enqueue_request(Request(url))
        for _ in batch:
            (request,) = drain(scheduler, 1)
            old = "/p/" in request.url
            recorded = verdicts.commit(request, visited(last_modified=week_old if old else None))
            assert recorded is not None
            record = recorded.record
            assert ("ua" in record.policy) is old
            planned[request.url] = record.next_ms
    belief = verdicts.policy.select(Visit(Outcome.VISITED, url=urls[0])).header_belief  # type: ignore[attr-defined]
    for _ in range(4):  # checks elsewhere in the class caught its old headers lying
        belief.note("a.example", True, "http://a.example/p/x.html")
    scheduler.enqueue_request(Request("http://a.example/p/liar.html"))
    (request,) = drain(scheduler, 1)  # its plan says the caught lie (the policy's word, not the verdict's)
    stack = verdicts.policy
    stack.plan = lambda history, visit, **kw: Plan(60.0, notes=("ageLie",))  # type: ignore[method-assign]
    verdicts.commit(request, visited())
    del stack.plan
    moved = scheduler.stats.get_value("adaptive/validators/age_checks_replanned")
    assert moved == 6
    for url in urls:
        record = frontier.get_record(*scheduler._where(url))
        assert record is not None and record.next_ms < planned[url] - 60_000
    scheduler.close("finished")


@in_loop
def test_opening_sets_the_collector_for_the_crawl(tmp_path: Path) -> None:
    """Its constants (scrapy_adaptive.runtime.collector: FREEZE, THRESHOLD;
    settings no more): what they do is tests/unit/runtime/test_collector.py's."""
    import gc

    thresholds = gc.get_threshold()
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    try:
        on = build(tmp_path / "on")
        on.open(Pages())
        assert gc.get_freeze_count() > 0  # the default: collections skip the crawl's long-lived objects
        assert gc.get_threshold()[0] == 10_000  # and the youngest generation is scanned less often
        on.close("finished")
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)


@in_loop
def test_the_leveldb_cache_is_bounded_by_the_setting(tmp_path: Path) -> None:
    """The block cache is what a long crawl's memory grows by (to its bound,
    then flat): the setting reaches the store that holds it."""
    scheduler = build(tmp_path, ADAPTIVE_STATE_CACHE_MB=8)
    scheduler.open(Pages())
    assert scheduler.frontier is not None and scheduler.frontier.store.cache_mb == 8
    scheduler.close("finished")


@in_loop
def test_the_start_up_line_says_whether_the_crawl_is_new_resumed_or_resumed_after_a_kill(
    tmp_path: Path, caplog: Any
) -> None:
    """A user who stopped a crawl, or killed it, reads at the restart how the
    last run ended and that nothing it recorded was lost."""

    def opened() -> str:
        lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Adaptive frontier opened")]
        assert len(lines) == 1
        caplog.clear()
        return lines[0]

    caplog.set_level("INFO", logger="scrapy_adaptive")
    first = build(tmp_path)
    first.open(Pages())
    assert ": 0 URLs in 0 queues, 0 visits; a new crawl (state: " in opened()
    assert all(first.enqueue_request(Request(url)) for url in URLS)
    issued = drain(first)
    first.verdicts.commit(issued[0], visited())  # type: ignore[union-attr]
    first.close("shutdown")

    clean = build(tmp_path)
    clean.open(Pages())
    line = opened()
    assert ": 6 URLs in 2 queues, 1 visit; resuming the crawl that closed cleanly at 20" in line
    assert "without closing" not in line
    drain(clean)  # URLs out when the process dies
    # a kill -9: the database is left as the running crawl wrote it, no clean close
    assert clean.runtime is not None and clean._ticker is not None
    clean._ticker.stop()
    clean.runtime.store.close()

    killed = build(tmp_path)
    killed.open(Pages())
    line = opened()
    assert ": 6 URLs in 2 queues, 1 visit; resuming the crawl that stopped without closing (kill -9, " in line
    assert "every verdict it recorded is kept, and the URLs it was fetching are due again" in line
    assert len(drain(killed)) == 2  # and they are: one per host (valence 1)
    killed.close("shutdown")


@in_loop
def test_a_request_that_cannot_be_stored_is_fetched_once_outside_the_frontier(tmp_path: Path) -> None:
    """Dropped, its URL was lost, and ``scrapy fetch``/``parse``/``shell``
    (whose callbacks are their own functions) did nothing or hung."""
    scheduler = build(tmp_path)
    scheduler.open(Pages())
    one_off = Request("http://a.example/once", callback=lambda response: None)
    assert scheduler.enqueue_request(one_off) and scheduler.has_pending_requests()
    assert scheduler.next_request() is one_off and meta.FP not in one_off.meta  # not the frontier's
    assert not scheduler.has_pending_requests()
    assert scheduler.verdicts.commit(one_off, visited()) is None  # type: ignore[union-attr]
    # once per URL, unless the request asks for it again (the shell's do)
    assert not scheduler.enqueue_request(Request("http://a.example/once", callback=lambda response: None))
    again = Request("http://a.example/once", callback=lambda response: None, dont_filter=True)
    assert scheduler.enqueue_request(again) and drain(scheduler) == [again]
    assert scheduler.frontier is not None and scheduler.frontier.counts().urls == 0
    assert scheduler.stats.get_value("adaptive/enqueued/refused") == 3
    scheduler.close("finished")


@in_loop
def test_requests_fetched_once_are_paced_by_the_minimum_delay(tmp_path: Path) -> None:
    """They are outside the frontier's per-host politeness, so they go one per
    ADAPTIVE_MIN_DELAY, and the engine is woken when the next may go."""
    scheduler = build(tmp_path, ADAPTIVE_MIN_DELAY=30, ADAPTIVE_MAX_DELAY=30)
    scheduler.open(Pages())
    first = Request("http://a.example/1", callback=lambda response: None)
    second = Request("http://a.example/2", callback=lambda response: None)
    assert scheduler.enqueue_request(first) and scheduler.enqueue_request(second)
    before = time.time()
    assert scheduler.next_request() is first
    assert scheduler.next_request() is None and scheduler.has_pending_requests()
    assert before + 29 < scheduler.waker._timer_at <= time.time() + 31  # woken for the second
    scheduler.close("finished")


@in_loop
def test_an_enqueue_error_goes_back_to_the_caller_in_one_line_naming_the_request(tmp_path: Path) -> None:
    """Issue 47: a request fingerprinter that raises was logged as "could not
    enqueue" with a traceback and the request dropped; Scrapy's own scheduler
    lets the error reach what enqueued (the engine then says "Error while
    processing requests from start()"). It does now, as one exception that
    names the request."""
    from scrapy_adaptive.integration.scheduler import EnqueueError

    scheduler = build(tmp_path)
    scheduler.open(Pages())

    def broken(request: Request) -> bytes:
        raise ValueError("no fingerprint today")

    scheduler.issued.identity = broken  # type: ignore[method-assign]
    with pytest.raises(EnqueueError) as caught:
        scheduler.enqueue_request(Request("http://a.example/x"))
    assert str(caught.value) == "<GET http://a.example/x> could not be enqueued: ValueError: no fingerprint today"
    assert caught.value.__suppress_context__ and scheduler.stats.get_value("adaptive/errors/enqueue") == 1
    scheduler.close("finished")


@in_loop
def test_a_first_fetch_is_the_spiders_own_request_with_its_credentials(tmp_path: Path) -> None:
    """As from Scrapy's memory queue: the request that made a URL known goes
    out as that very object (its cookies and Authorization header with it,
    which the state folder does not keep), without the meta a fetch sets
    (a child built from ``response.meta`` copies its parent's)."""
    scheduler = build(tmp_path)
    scheduler.open(Pages())
    made = Request(
        "http://a.example/private",
        headers={"Authorization": "Bearer T"},
        cookies={"session": "abc"},
        meta={"download_slot": "parent's", "_adaptive_fp": "00", "mine": (1, 2)},
    )
    assert scheduler.enqueue_request(made)
    (first,) = drain(scheduler)
    assert first is made and first.headers[b"Authorization"] == b"Bearer T" and first.cookies == {"session": "abc"}
    assert first.meta["mine"] == (1, 2) and "download_slot" not in first.meta  # the parent's is not this fetch's
    assert first.meta[meta.FP] != "00"  # tagged for this fetch
    stored = scheduler.frontier.get_record(*scheduler._where(made.url))  # type: ignore[union-attr]
    assert stored is not None and b"Authorization" not in str(stored.request).encode()
    assert stored.request.get("credentials_left_out") is True
    scheduler.close("shutdown")


@in_loop
def test_a_first_fetch_from_the_store_says_once_that_its_credentials_were_left_out(tmp_path: Path, caplog: Any) -> None:
    scheduler = build(tmp_path)
    scheduler.open(Pages())
    for i in range(2):
        scheduler.enqueue_request(Request(f"http://a.example/p{i}", headers={"Authorization": "Bearer T"}))
    scheduler.close("shutdown")  # stopped before their first fetches

    reopened = build(tmp_path)
    reopened.open(Pages())
    with caplog.at_level("WARNING"):
        issued = drain(reopened)
    assert [r.url for r in issued] == ["http://a.example/p0"]  # valence 1
    assert b"Authorization" not in issued[0].headers
    said = [r for r in caplog.records if "ADAPTIVE_STORE_CREDENTIALS" in r.getMessage()]
    assert len(said) == 1 and "http://a.example/p0" in said[0].getMessage()
    reopened.close("shutdown")


@in_loop
def test_a_first_fetch_keeps_its_credentials_when_the_store_keeps_them(tmp_path: Path, caplog: Any) -> None:
    scheduler = build(tmp_path, ADAPTIVE_STORE_CREDENTIALS=True)
    scheduler.open(Pages())
    scheduler.enqueue_request(Request("http://a.example/p", headers={"Authorization": "Bearer T"}))
    scheduler.close("shutdown")
    reopened = build(tmp_path, ADAPTIVE_STORE_CREDENTIALS=True)
    reopened.open(Pages())
    with caplog.at_level("WARNING"):
        (first,) = drain(reopened)
    assert first.headers[b"Authorization"] == b"Bearer T"
    assert not [r for r in caplog.records if "ADAPTIVE_STORE_CREDENTIALS" in r.getMessage()]
    reopened.close("shutdown")


def test_first_fetch_objects_are_bounded_and_credentials_kept_longest() -> None:
    from scrapy_adaptive.runtime import issued_requests as ir

    issued = ir.IssuedRequests(lambda r: b"")
    plain = Request("http://a.example/")
    for i in range(ir.MAX_FIRST):
        assert issued.hold_first(i.to_bytes(4, "big"), plain, credentials=lambda: False)
    assert issued.hold_first(
        b"over", plain, credentials=lambda: False
    )  # not kept, nothing lost: rebuilt from the store
    assert issued.take_for_issue(b"over", tried=False) == (None, False, False)
    assert issued.hold_first(b"secret", plain, credentials=lambda: True)  # kept past the plain bound
    assert issued.take_for_issue(b"secret", tried=False) == (plain, True, False)
    assert issued.take_for_issue(b"secret", tried=False) == (None, False, False)
