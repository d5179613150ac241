"""At-least-once delivery: pending marks, confirmations, re-delivery after a
restart (on the frontier, both stores), the ticket tracker and the durable
feed storage, built directly."""

from __future__ import annotations

import gc
import hashlib
import json
import weakref
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.http import HtmlResponse
from scrapy.signalmanager import SignalManager
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from scrapy_adaptive import meta
from scrapy_adaptive.frontier import ChangeState, Frontier, MemoryStore, Outcome, Politeness, Store, Visit
from scrapy_adaptive.integration.feedfile import DurableFileFeedStorage, feed_warnings
from scrapy_adaptive.model import Plan
from scrapy_adaptive.runtime.delivery import SINK_CLOSED, SINK_OPENED, Delivery, ticket_of
from scrapy_adaptive.store.base import StoreError
from scrapy_adaptive.store.leveldb import LevelDBStore
from tests.standins import OneIssued
from tests.unit.frontier.test_frontier import FullDisk

URL = "http://a.example/page"
FP = hashlib.sha1(URL.encode()).digest()


class Clock:
    def __init__(self) -> None:
        self.t = 1_000_000.0

    def __call__(self) -> float:
        return self.t


def frontier(store: Store, clock: Clock) -> Frontier:
    f = Frontier(store, Politeness(min_delay=0, max_delay=0, delay_factor=0), clock=clock)
    f.load()
    return f


def changed(digest: str, etag: str | None = None) -> Visit:
    return Visit(Outcome.VISITED, status=200, change=ChangeState.CHANGED, digest=digest, etag=etag)


def visit(f: Frontier, clock: Clock, v: Visit, *, deliver: bool = True) -> None:
    clock.t += 1000
    issued = f.next()
    assert issued is not None and issued.fp == FP
    f.update(FP, v, Plan(100.0), deliver=deliver)


def test_a_changed_visit_counts_as_a_version_only_once_confirmed(store: Store) -> None:
    clock = Clock()
    f = frontier(store, clock)
    f.add(FP, URL, "a.example", {"url": URL})
    visit(f, clock, changed("text:sha1:1"))
    record = f.get_record("a.example", FP)
    # the record counts it with its verdict; the crawl's counts once it is confirmed
    assert record is not None and (record.visits, record.versions, record.digest) == (1, 1, "text:sha1:1")
    assert f._pending.pending_count == 1 and f.counts().versions == 0
    assert json.loads(dict(store.pending())[FP]) == {"q": "a.example", "d": None, "n": 1, "v": 0, "s": [0, 0, 0]}
    assert f.outbox.confirm([(FP, "text:sha1:1")]) == 1
    record = f.get_record("a.example", FP)
    assert record is not None and record.versions == 1
    assert f._pending.pending_count == 0 and f.counts().versions == 1 and dict(store.pending()) == {}
    # a confirmation for nothing pending counts nothing
    assert f.outbox.confirm([(FP, "text:sha1:1")]) == 0


def test_without_delivery_a_changed_visit_counts_at_once(store: Store) -> None:
    clock = Clock()
    f = frontier(store, clock)
    f.add(FP, URL, "a.example", {"url": URL})
    visit(f, clock, changed("text:sha1:1"), deliver=False)
    record = f.get_record("a.example", FP)
    assert record is not None and record.versions == 1 and f._pending.pending_count == 0 and dict(store.pending()) == {}


def test_a_restart_fetches_an_undelivered_version_again_judged_against_the_delivered_one(tmp_path: Path) -> None:
    clock = Clock()
    path = str(tmp_path / "db")
    f = frontier(LevelDBStore(path), clock)
    f.add(FP, URL, "a.example", {"url": URL})
    visit(f, clock, changed("text:sha1:1", etag='"v1"'))
    f.outbox.confirm([(FP, "text:sha1:1")])
    visit(f, clock, changed("text:sha1:2", etag='"v2"'))  # killed before its items were durable
    f.store.close()

    f2 = frontier(LevelDBStore(path), clock)
    assert f2.redelivered == 1 and dict(f2.store.pending()) == {}
    record = f2.get_record("a.example", FP)
    assert record is not None
    # back to what the user has; no validators (a conditional GET would say 304)
    assert (record.digest, record.etag, record.last_modified, record.payload_digest) == (
        "text:sha1:1",
        None,
        None,
        None,
    )
    assert (record.visits, record.versions) == (2, 1)  # history never goes backwards
    issued = f2.next()  # due now, not 100 s after the lost visit
    assert issued is not None and issued.fp == FP and issued.record.snapshot()["etag"] is None
    f2.update(FP, changed("text:sha1:2"), Plan(100.0), deliver=True)
    assert f2.outbox.confirm([(FP, "text:sha1:2")]) == 1
    record = f2.get_record("a.example", FP)
    assert record is not None and (record.visits, record.versions) == (3, 2)
    f2.store.close()
    f3 = frontier(LevelDBStore(path), clock)
    assert f3.redelivered == 0 and f3.counts().versions == 2
    f3.store.close()


def test_several_pending_versions_keep_the_last_confirmed_as_delivered(store: Store) -> None:
    clock = Clock()
    f = frontier(store, clock)
    f.add(FP, URL, "a.example", {"url": URL})
    visit(f, clock, changed("d:1"))
    visit(f, clock, changed("d:2"))
    assert json.loads(dict(store.pending())[FP]) == {"q": "a.example", "d": None, "n": 2, "v": 0, "s": [0, 0, 0]}
    f.outbox.confirm([(FP, "d:1")])
    assert json.loads(dict(store.pending())[FP]) == {"q": "a.example", "d": "d:1", "n": 1, "v": 1}
    # a restart now goes back to d:1, the last version the user has
    again = Frontier(store, Politeness(), clock=clock)
    again.load()
    record = again.get_record("a.example", FP)
    assert again.redelivered == 1 and record is not None and record.digest == "d:1" and record.versions == 1


def test_a_confirmation_while_the_url_is_out_is_kept_by_its_next_verdict(store: Store) -> None:
    clock = Clock()
    f = frontier(store, clock)
    f.add(FP, URL, "a.example", {"url": URL})
    visit(f, clock, changed("d:1"))
    clock.t += 1000
    assert f.next() is not None  # out again before the confirmation lands
    f.outbox.confirm([(FP, "d:1")])
    f.update(FP, Visit(Outcome.VISITED, status=304, change=ChangeState.UNCHANGED), Plan(10.0))
    record = f.get_record("a.example", FP)
    assert record is not None and (record.visits, record.versions) == (2, 1)


def test_a_failed_confirmation_changes_nothing() -> None:
    clock = Clock()
    store = FullDisk()
    f = frontier(store, clock)
    f.add(FP, URL, "a.example", {"url": URL})
    visit(f, clock, changed("d:1"))
    store.full = True
    with pytest.raises(StoreError):
        f.outbox.confirm([(FP, "d:1")])
    store.full = False
    assert f._pending.pending_count == 1 and f.counts().versions == 0
    assert f.outbox.confirm([(FP, "d:1")]) == 1 and f.counts().versions == 1


# -- the tracker ------------------------------------------------------------------


class Sink:
    def __init__(self, durable: bool = True) -> None:
        self.durable = durable
        self.calls: list[str] = []

    def make_durable(self) -> bool:
        self.calls.append("durable")
        return self.durable


def tracked(tmp_path: Path) -> tuple[Delivery, Frontier, SignalManager, Clock]:
    clock = Clock()
    f = frontier(MemoryStore(), clock)
    f.add(FP, URL, "a.example", {"url": URL})
    visit(f, clock, changed("d:1"))
    signals = SignalManager()
    delivery = Delivery.connected(MemoryStatsCollector(get_crawler(Spider)), signals)
    delivery.bind(f)
    return delivery, f, signals, clock


def response_for(request: Request) -> HtmlResponse:
    return HtmlResponse(request.url, body=b"<html></html>", request=request)


def test_a_version_is_confirmed_after_its_items_passed_and_the_sinks_are_durable(tmp_path: Path) -> None:
    from scrapy import signals as scrapy_signals

    delivery, f, signals, _ = tracked(tmp_path)
    sink = Sink()
    signals.send_catch_log(SINK_OPENED, sink=sink)
    request = Request(URL)
    response = response_for(request)
    ticket = delivery.open(request, FP, "d:1")
    assert ticket_of(response) is ticket
    ticket.item_yielded()
    ticket.item_yielded()
    ticket.output_done()
    signals.send_catch_log(scrapy_signals.item_scraped, item={}, response=response, spider=None)
    assert delivery.flush() == 0 and sink.calls == []  # one item still in the pipelines
    signals.send_catch_log(scrapy_signals.item_dropped, item={}, response=response, exception=None, spider=None)
    assert delivery.flush() == 1 and sink.calls == ["durable"] and f.counts().versions == 1
    signals.send_catch_log(SINK_CLOSED, sink=sink)
    assert delivery.sinks == []


def test_a_sink_that_cannot_be_made_durable_holds_confirmations(tmp_path: Path) -> None:
    delivery, f, signals, _ = tracked(tmp_path)
    sink = Sink(durable=False)
    signals.send_catch_log(SINK_OPENED, sink=sink)
    ticket = delivery.open(Request(URL), FP, "d:1")
    ticket.output_done()
    assert delivery.flush() == 0 and f.counts().versions == 0 and delivery.waiting == 1
    signals.send_catch_log(SINK_CLOSED, sink=sink)
    assert delivery.flush() == 1 and f.counts().versions == 1


def test_an_item_failing_in_a_pipeline_leaves_its_version_pending(tmp_path: Path) -> None:
    from scrapy import signals as scrapy_signals

    delivery, f, signals, _ = tracked(tmp_path)
    request = Request(URL)
    ticket = delivery.open(request, FP, "d:1")
    ticket.item_yielded()
    ticket.output_done()
    signals.send_catch_log(
        scrapy_signals.item_error, item={}, response=response_for(request), spider=None, failure=None
    )
    assert delivery.flush() == 0 and f._pending.pending_count == 1
    assert delivery.stats.get_value("adaptive/delivery/failed") == 1


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_callback_that_raises_leaves_its_version_pending(tmp_path: Path, asynchronous: bool) -> None:
    """The callback's error ends its output with part of the page's items at
    most: the version is not confirmed, so after a restart (the callback
    fixed) the page is judged against what was delivered and its items come
    again, as scrapy-deltafetch fetches again a page whose callback failed."""
    import asyncio

    from scrapy_adaptive.integration.spidermiddlewares.visit import VisitMiddleware

    delivery, f, _, _ = tracked(tmp_path)
    request = Request(URL)
    response = response_for(request)
    ticket = delivery.open(request, FP, "d:1")
    mw = VisitMiddleware(delivery.stats)

    def callback() -> Iterator[object]:
        yield {"title": "first item"}
        raise ValueError("a bug in parse()")

    async def acallback() -> AsyncIterator[object]:
        for obj in callback():
            yield obj

    async def drain_async() -> list[object]:
        return [obj async for obj in mw.process_spider_output_async(response, acallback())]

    out: list[object] = []
    with pytest.raises(ValueError, match="a bug"):
        if asynchronous:
            out = asyncio.run(drain_async())
        else:
            out.extend(mw.process_spider_output(response, callback()))
    assert ticket.yielded == 1 and ticket.failed == "callback"
    assert delivery.flush() == 0 and f._pending.pending_count == 1 and f.counts().versions == 0
    assert delivery.stats.get_value("adaptive/delivery/failed/callback") == 1


def test_a_child_request_copying_meta_does_not_carry_the_ticket(tmp_path: Path) -> None:
    delivery, _, _, _ = tracked(tmp_path)
    parent = Request(URL)
    delivery.open(parent, FP, "d:1")
    child = Request("http://a.example/child", meta=dict(parent.meta))
    assert meta.DELIVERY in child.meta and ticket_of(response_for(child)) is None


def test_a_ticket_waiting_for_its_confirmation_does_not_keep_its_request_alive(tmp_path: Path) -> None:
    """The ticket sits in the request's meta and waits up to a second for the
    group commit: holding its request back made every changed visit's
    request (meta, headers, callback) a cycle left to the cyclic garbage
    collector, whose full passes then cost the crawl several per cent."""
    delivery, f, _, _ = tracked(tmp_path)
    request = Request(URL)
    ticket = delivery.open(request, FP, "d:1")
    ticket.output_done()
    assert delivery.waiting == 1 and ticket.request is request
    gone = weakref.ref(request)
    gc.disable()
    try:
        del request
        assert gone() is None  # freed at once, by reference counting
    finally:
        gc.enable()
    assert ticket.request is None and ticket.url == URL
    assert delivery.flush() == 1 and f.counts().versions == 1


# -- the durable feed storage -------------------------------------------------------


def test_the_file_feed_storage_is_a_durable_sink(tmp_path: Path) -> None:
    signals = SignalManager()
    seen: list[tuple[str, object]] = []
    signals.connect(lambda sink: seen.append(("opened", sink)), SINK_OPENED, weak=False)
    signals.connect(lambda sink: seen.append(("closed", sink)), SINK_CLOSED, weak=False)
    path = tmp_path / "items.jsonl"
    path.write_bytes(b'{"old": 1}\n')
    storage = DurableFileFeedStorage(str(path), feed_options={"overwrite": False}, signals=signals)
    file = storage.open(Spider("s"))
    assert seen == [("opened", storage)]
    file.write(b'{"new": 2}\n')
    assert path.read_bytes() == b'{"old": 1}\n'  # still in the buffer
    assert storage.make_durable()
    assert path.read_bytes() == b'{"old": 1}\n{"new": 2}\n'  # appended (-o), and on disk
    storage.store(file)
    assert file.closed and seen[-1] == ("closed", storage)
    held = DurableFileFeedStorage(str(path), feed_options={"postprocessing": ["gzip"]}, signals=signals)
    held.open(Spider("s"))
    assert held.make_durable() is False


def test_a_feed_that_cannot_be_written_says_so_once_and_delivery_stops_confirming(tmp_path: Path) -> None:
    from scrapy_adaptive.runtime.sink_failure import SINK_FAILED, SinkError

    signals = SignalManager()
    failures: list[SinkError] = []
    signals.connect(lambda sink, error: failures.append(error), SINK_FAILED, weak=False)
    delivery = Delivery.connected(MemoryStatsCollector(get_crawler(Spider)), signals)
    storage = DurableFileFeedStorage("/dev/full", feed_options={"overwrite": False}, signals=signals)
    file = storage.open(Spider("s"))
    delivery.sink_opened(storage)
    for _ in range(3):
        file.write(b'{"item": 1}\n' * 1000)  # past the buffer: the write fails, silently for the exporter
    assert storage.make_durable() is False and len(failures) == 1
    assert str(failures[0]).startswith("The disk holding the feed file /dev/full is full (")
    with pytest.raises(SinkError):
        delivery.flush()  # the crawl stops on it (a StoreError)
    storage.store(file)  # closing drops the buffer, raises nothing
    assert file.closed and len(failures) == 1


@pytest.mark.parametrize("kind", ["folder", "under a file"])
def test_a_feed_that_cannot_be_opened_says_so_once_and_delivery_stops_confirming(tmp_path: Path, kind: str) -> None:
    """``-o items.jsonl`` where a folder of that name stands, or under a
    file: one failure naming the file, as for a failed write, never an
    exception (Scrapy logged a traceback at every item and the crawl
    confirmed versions whose items were never written)."""
    from scrapy_adaptive.runtime.sink_failure import SINK_FAILED, SinkError

    if kind == "folder":
        path = tmp_path / "items.jsonl"
        path.mkdir()
    else:
        (tmp_path / "a-file").write_text("")
        path = tmp_path / "a-file" / "items.jsonl"
    signals = SignalManager()
    failures: list[SinkError] = []
    signals.connect(lambda sink, error: failures.append(error), SINK_FAILED, weak=False)
    delivery = Delivery.connected(MemoryStatsCollector(get_crawler(Spider)), signals)
    storage = DurableFileFeedStorage(
        str(path), feed_options={"overwrite": False, "format": "jsonlines"}, signals=signals
    )
    file = storage.open(Spider("s"))
    file.write(b'{"item": 1}\n')
    assert storage.make_durable() is False and len(failures) == 1
    assert str(failures[0]).startswith(f"Writing the feed file {path} failed (")
    with pytest.raises(SinkError):
        delivery.flush()
    storage.store(file)
    assert file.closed and len(failures) == 1


def test_feeds_that_lose_items_are_named_at_start() -> None:
    from scrapy.settings import Settings

    from scrapy_adaptive.addon import Addon

    settings = Settings({"FEEDS": {"items.jsonl": {"format": "jsonlines"}, "s3://b/k.jsonl": {"format": "jsonlines"}}})
    Addon().update_settings(settings)
    messages = feed_warnings(settings)
    assert len(messages) == 1 and "s3://b/k.jsonl" in messages[0] and "not a durable sink" in messages[0]
    settings.set("FEEDS", {"items.jsonl": {"format": "jsonlines", "overwrite": True}})
    (message,) = feed_warnings(settings)
    assert "overwritten at every start" in message and "-o" in message


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (b'{"a": 1}\n{"b": 2}\n', b'{"a": 1}\n{"b": 2}\n'),
        (b'{"a": 1}\n{"b": 2}\n{"c"', b'{"a": 1}\n{"b": 2}\n'),
        (b'{"c"', b""),
        (b"", b""),
    ],
)
def test_appending_to_a_killed_crawls_feed_drops_its_half_written_line(
    tmp_path: Path, before: bytes, after: bytes
) -> None:
    path = tmp_path / "items.jsonl"
    path.write_bytes(before)
    storage = DurableFileFeedStorage(str(path), feed_options={"format": "jsonlines"})
    file = storage.open(Spider("s"))
    file.write(b'{"d": 4}\n')
    storage.store(file)
    assert path.read_bytes() == after + b'{"d": 4}\n'


@pytest.mark.parametrize("feed_format", ["jsonl", "jsonlines", "jl", "csv"])
def test_every_line_format_scrapy_knows_is_repaired_after_a_kill(tmp_path: Path, feed_format: str) -> None:
    """``-o items.jsonl`` is format ``jsonl`` for Scrapy: repaired like the others."""
    path = tmp_path / f"items.{feed_format}"
    path.write_bytes(b'{"a": 1}\n{"b"')
    storage = DurableFileFeedStorage(str(path), feed_options={"format": feed_format})
    file = storage.open(Spider("s"))
    file.write(b'{"d": 4}\n')
    storage.store(file)
    assert path.read_bytes() == b'{"a": 1}\n{"d": 4}\n'


def test_line_formats_are_known_by_their_exporter() -> None:
    from scrapy.settings.default_settings import FEED_EXPORTERS_BASE

    from scrapy_adaptive.integration.feedfile import CSV, LINES, line_kind

    exporters = {**FEED_EXPORTERS_BASE, "mylines": "scrapy.exporters.JsonLinesItemExporter", "jsonl": None}
    assert {fmt: line_kind(fmt, exporters) for fmt in ("jsonl", "jsonlines", "jl", "csv", "mylines")} == {
        "jsonl": LINES,  # disabled in the mapping: known by its name
        "jsonlines": LINES,
        "jl": LINES,
        "csv": CSV,
        "mylines": LINES,
    }
    assert [line_kind(fmt, exporters) for fmt in ("json", "xml", "pickle", "marshal", "nope", None)] == [None] * 6
    assert line_kind("jsonl") == LINES and line_kind("json") is None


def export_csv(path: Path, feed_options: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    """One crawl's CSV feed as Scrapy's FeedSlot writes it: the storage
    opened, then the exporter built from the same options."""
    from scrapy.exporters import CsvItemExporter

    storage = DurableFileFeedStorage(str(path), feed_options=feed_options)
    file = storage.open(Spider("s"))
    exporter = CsvItemExporter(file, **feed_options.get("item_export_kwargs", {}))
    exporter.start_exporting()
    for row in rows:
        exporter.export_item(row)
    exporter.finish_exporting()
    storage.store(file)


def test_a_csv_feed_appended_at_every_start_has_one_header(tmp_path: Path) -> None:
    path = tmp_path / "items.csv"
    options: dict[str, Any] = {"format": "csv", "overwrite": False, "item_export_kwargs": {}}
    export_csv(path, options, [{"url": "a", "n": 1}])
    export_csv(path, options, [{"url": "b", "n": 2}])
    path.write_bytes(path.read_bytes() + b"c,")  # killed mid-row
    export_csv(path, options, [{"url": "d", "n": 4}])
    assert path.read_bytes().decode().splitlines() == ["url,n", "a,1", "b,2", "d,4"]
    # a new file (another batch, or the file removed) gets its header again
    path.unlink()
    export_csv(path, options, [{"url": "e", "n": 5}])
    assert path.read_bytes().decode().splitlines() == ["url,n", "e,5"]
    # overwritten at every start (-O): a header each time
    overwritten: dict[str, Any] = {"format": "csv", "overwrite": True, "item_export_kwargs": {}}
    export_csv(path, overwritten, [{"url": "f", "n": 6}])
    assert path.read_bytes().decode().splitlines() == ["url,n", "f,6"]
    # the project's own choice of no header stays
    bare = tmp_path / "bare.csv"
    quiet: dict[str, Any] = {"format": "csv", "item_export_kwargs": {"include_headers_line": False}}
    export_csv(bare, quiet, [{"url": "g", "n": 7}])
    export_csv(bare, quiet, [{"url": "h", "n": 8}])
    assert bare.read_bytes().decode().splitlines() == ["g,7", "h,8"]


def test_the_visit_middleware_counts_the_items_a_changed_page_yields(tmp_path: Path) -> None:
    from scrapy_adaptive.integration.spidermiddlewares.visit import VisitMiddleware

    delivery, _, _, _ = tracked(tmp_path)
    mw = VisitMiddleware(delivery.stats)

    def output(request: Request, objects: list[object]) -> Iterator[object]:
        yield from objects
        if request.meta.get("boom"):
            raise ValueError("callback bug")

    finished, failed, abandoned = Request(URL), Request(URL, meta={"boom": True}), Request(URL)
    tickets = [delivery.open(r, FP, "d:1") for r in (finished, failed, abandoned)]
    child = Request("http://a.example/child")
    out = list(mw.process_spider_output(response_for(finished), output(finished, [{"a": 1}, child, {"b": 2}])))
    assert out[1] is child and (tickets[0].yielded, tickets[0].done) == (2, True)
    with pytest.raises(ValueError):
        list(mw.process_spider_output(response_for(failed), output(failed, [{"a": 1}])))
    assert (tickets[1].yielded, tickets[1].done) == (1, True)  # what it yielded is what there is
    gen = mw.process_spider_output(response_for(abandoned), output(abandoned, [{"a": 1}, {"b": 2}]))
    next(gen)
    gen.close()  # the crawl stopped half way: not complete, delivered again after a restart
    assert (tickets[2].yielded, tickets[2].done) == (1, False)


def test_the_crawl_log_counts_the_version_a_changed_visit_found_before_its_confirmation(tmp_path: Path) -> None:
    from scrapy.settings import Settings

    from scrapy_adaptive.config.settings import AdaptiveConfig
    from scrapy_adaptive.policies import load_wait_policy
    from scrapy_adaptive.runtime.crawllog import CrawlLog
    from scrapy_adaptive.runtime.verdicts import Verdicts

    class Tickets:
        def open(self, request: Request, fp: bytes, digest: str | None) -> None:
            return None

    clock = Clock()
    f = frontier(MemoryStore(), clock)
    f.add(FP, URL, "a.example", {"url": URL})
    log = CrawlLog(str(tmp_path / "crawl.log"), max_bytes=1 << 20, backups=1)
    constant = {
        "ADAPTIVE_WAIT_POLICY": "scrapy_adaptive.policies.ConstantWaitPolicy",
        "ADAPTIVE_WAIT_DEFAULT": 100,
        "ADAPTIVE_WAIT_MIN": 1,
    }
    verdicts = Verdicts(
        f,
        load_wait_policy(AdaptiveConfig.from_settings(Settings(constant))),
        OneIssued(FP),  # type: ignore[arg-type]
        MemoryStatsCollector(get_crawler()),
        crawl_log=log,
        delivery=Tickets(),  # type: ignore[arg-type]
        on_store_error=lambda exc: None,
        clock=clock,
    )
    for digest in ("text:sha1:1", "text:sha1:2"):
        clock.t += 1000
        assert f.next() is not None
        verdicts.commit(Request(URL), changed(digest))
        f.outbox.confirm([(FP, digest)])
    log.close()
    first, second = (tmp_path / "crawl.log").read_text().splitlines()
    assert "1vis,1ver" in first and "2vis,2ver" in second  # as `scrapy frontier url` says once confirmed
    record = f.get_record("a.example", FP)
    assert record is not None and record.versions == 2


def test_a_stored_policy_memory_the_policy_cannot_read_starts_afresh_with_a_verdict(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A record's policy memory of another shape (a tampered state folder) is
    replaced, with one warning, and the visit still gets its verdict."""
    from scrapy.settings import Settings

    from scrapy_adaptive.config.settings import AdaptiveConfig
    from scrapy_adaptive.policies import load_wait_policy
    from scrapy_adaptive.runtime.verdicts import Verdicts

    clock = Clock()
    f = frontier(MemoryStore(), clock)
    f.add(FP, URL, "a.example", {"url": URL})
    stats = MemoryStatsCollector(get_crawler())
    policy = load_wait_policy(AdaptiveConfig.from_settings(Settings()))
    verdicts = Verdicts(f, policy, OneIssued(FP), stats, on_store_error=lambda exc: None, clock=clock)  # type: ignore[arg-type]
    issued = f.next()
    assert issued is not None
    # the record as issued holds a memory the policy cannot read (a state folder tampered with)
    issued.record.visits, issued.record.fetched, issued.record.wait = 1, clock.t - 100, 100.0
    issued.record.policy = {"o": 5, "su": "x"}
    lease = f.lent(FP)
    assert lease is not None
    lease.renew(issued.record)  # as the frontier renews it: its view is made anew
    visit = changed("text:sha1:9")
    with caplog.at_level("WARNING"):
        recorded = verdicts.commit(Request(URL), visit)
    assert recorded is not None
    record = recorded.record
    assert record.wait is not None and record.wait > 0
    assert "policy memory of" in caplog.text and stats.get_value("adaptive/errors/policy_memory") == 1
