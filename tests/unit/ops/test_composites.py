"""Composite captures' bookkeeping, built directly (no crawl): which page
captures had every embed within 60 s, the median gap, and the bounds that
keep it small in a crawl of months."""

from __future__ import annotations

from typing import Any

from scrapy import Request
from scrapy.http import HtmlResponse

from scrapy_adaptive import meta
from scrapy_adaptive.integration.composites import CompositeCaptures
from scrapy_adaptive.ops.composites import CompositeWatch, figures_words

PAGE = "http://127.0.0.1/p.html"
IMG, CSS = "http://127.0.0.1/a.png", "http://127.0.0.1/s.css"


def test_a_page_whose_embeds_all_come_within_the_window_settles_within_with_its_span() -> None:
    watch = CompositeWatch()
    watch.expect(PAGE, 100.0, IMG, now=100.5)
    watch.expect(PAGE, 100.0, CSS, now=100.5)
    pages, _ = watch.fetched(IMG, 101.0)
    assert pages == [(PAGE, 100.0)]
    pages, _ = watch.fetched(CSS, 103.5)
    assert pages == [(PAGE, 100.0)]
    assert watch.figures()["pages"] == 0  # settles a moment after the last embed (more may be yielded)
    settled = watch.sweep(106.0)
    assert [(s.page, s.outcome, s.span) for s in settled] == [(PAGE, "within", 3.5)]
    figures = watch.figures()
    assert (figures["pages"], figures["within"], figures["share_within"], figures["gap_p50"]) == (1, 1, 1.0, 3.5)
    assert not watch.pending and not watch.awaiting


def test_late_missing_and_an_embed_fetched_just_before_the_page() -> None:
    watch = CompositeWatch(expiry=600.0)
    # a stylesheet a sibling page brought 5 s before: with this page already
    watch.fetched(CSS, 95.0)
    watch.expect(PAGE, 100.0, CSS, now=100.2)
    watch.expect(PAGE, 100.0, IMG, now=100.2)
    watch.fetched(IMG, 190.0)  # 90 s after: late
    settled = watch.sweep(200.0)
    assert [(s.outcome, s.gaps) for s in settled] == [("late", {CSS: -5.0, IMG: 90.0})]
    # a page whose image never comes is given up on after the expiry
    other = "http://127.0.0.1/q.html"
    watch.expect(other, 300.0, "http://127.0.0.1/never.png", now=300.0)
    assert watch.sweep(899.0) == []
    (gone,) = watch.sweep(901.0)
    assert (gone.outcome, gone.missing, gone.span) == ("missing", ("http://127.0.0.1/never.png",), None)
    figures = watch.figures()
    assert (figures["pages"], figures["within"], figures["late"], figures["missing"]) == (2, 0, 1, 1)
    assert figures["gap_p50"] == 90.0  # complete captures only
    assert not watch.awaiting and not watch.pending


def test_an_embed_fetched_before_the_window_is_awaited_and_two_pages_share_one_fetch() -> None:
    watch = CompositeWatch()
    watch.fetched(CSS, 10.0)
    watch.expect(PAGE, 100.0, CSS, now=100.0)  # 90 s old: not of this moment
    watch.expect("http://127.0.0.1/q.html", 101.0, CSS, now=101.0)
    pages, _ = watch.fetched(CSS, 102.0)
    assert pages == [(PAGE, 100.0), ("http://127.0.0.1/q.html", 101.0)]
    assert [s.outcome for s in watch.sweep(110.0)] == ["within", "within"]


def test_an_embed_fetched_just_before_stands_unless_it_comes_again_within_the_window() -> None:
    """The figure of the page's previous capture, 7 s old, may be a version
    behind: when it comes again (the frontier refetches it with the page's
    change) that fetch is the page's; a shared stylesheet the frontier lets
    stand counts with its fetch a moment before, once the window is over."""
    watch = CompositeWatch()
    watch.fetched(IMG, 93.0)
    watch.fetched(CSS, 99.0)
    watch.expect(PAGE, 100.0, IMG, now=100.1)
    watch.expect(PAGE, 100.0, CSS, now=100.1)
    pages, _ = watch.fetched(IMG, 100.5)
    assert pages == [(PAGE, 100.0)]  # the page's own fetch of it: its WARC via record
    assert watch.sweep(159.0) == []
    (settled,) = watch.sweep(160.5)
    assert settled.outcome == "within" and settled.gaps == {IMG: 0.5, CSS: -1.0}
    assert not watch.pending and not watch.awaiting


def test_an_embed_yielded_after_the_others_came_keeps_the_capture_open() -> None:
    watch = CompositeWatch(settle=2.0)
    watch.expect(PAGE, 100.0, IMG, now=100.0)
    watch.fetched(IMG, 101.0)
    watch.expect(PAGE, 100.0, CSS, now=101.5)  # the callback's output goes on
    assert watch.sweep(105.0) == []
    watch.fetched(CSS, 106.0)
    (settled,) = watch.sweep(109.0)
    assert settled.gaps == {IMG: 1.0, CSS: 6.0} and watch.figures()["pages"] == 1


def test_memory_is_bounded_by_the_cap_the_expiry_and_the_window() -> None:
    watch = CompositeWatch(max_pages=100, max_recent=50, kept_gaps=10)
    for i in range(1000):
        watch.expect(f"http://127.0.0.1/p{i}.html", float(i), f"http://127.0.0.1/i{i}.png", now=float(i))
        watch.fetched(f"http://127.0.0.1/other{i}.png", float(i))
    assert len(watch.pending) <= 100 and len(watch.awaiting) <= 100
    assert len(watch.recent) <= 50
    figures = watch.figures()
    assert figures["dropped"] + figures["missing"] + figures["pending"] == 1000
    for i in range(20):  # complete ones: only the last gaps are kept
        watch.expect("http://127.0.0.1/x.html", 2000.0 + i, f"http://127.0.0.1/x{i}.png", now=2000.0 + i)
        watch.fetched(f"http://127.0.0.1/x{i}.png", 2000.5 + i)
    watch.sweep(5000.0)
    assert len(watch.gaps) == 10 and not watch.pending and not watch.awaiting
    assert len(watch.recent) == 0  # nothing fetched in the last window


def test_the_summary_words() -> None:
    assert figures_words(CompositeWatch().figures()) is None
    figures = {
        "pages": 20,
        "within": 19,
        "late": 1,
        "missing": 0,
        "dropped": 0,
        "pending": 2,
        "share_within": 0.95,
        "gap_p50": 1.25,
        "window": 60.0,
    }
    assert figures_words(figures) == (
        "20 page captures with embeds settled: 19 (95 %) with every embed fetched or confirmed within 60 s of the "
        "page, 1 later, 0 missing; median gap 1.2 s; 2 pending"
    )
    words = figures_words(
        {
            "pages": 1,
            "within": 0,
            "late": 0,
            "missing": 1,
            "dropped": 3,
            "pending": 0,
            "share_within": 0.0,
            "gap_p50": None,
            "window": 60.0,
        }
    )
    assert words is not None and "1 page capture with embeds settled: 0 (0 %)" in words
    assert "median gap -" in words and "3 not followed" in words


class Stats:
    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def set_value(self, key: str, value: Any) -> None:
        self.values[key] = value


def test_the_glue_links_an_embeds_fetch_to_its_page_and_publishes_the_stats() -> None:
    """Scrapy's objects through the glue: the page's download time, the
    embed yielded with (page URL, that time), the embed's fetch given the
    page captures it came for (the WARC's via records), the stats."""
    now = [1000.0]
    stats = Stats()
    glue = CompositeCaptures(stats, clock=lambda: now[0])  # type: ignore[arg-type]
    page = Request(PAGE)
    glue.downloaded(HtmlResponse(PAGE, body=b"<img src=a.png>", request=page), page)
    captured = page.meta[meta.DOWNLOADED]
    assert captured == 1000.0 and meta.PAGE not in page.meta
    yielded = Request(IMG, meta={meta.PAGE: (PAGE, captured)})
    glue.scheduled(yielded)
    assert stats.values["adaptive/embeds/pending"] == 1
    issued = Request(IMG)  # the frontier's stored request: no private key
    now[0] = 1001.25
    glue.downloaded(HtmlResponse(IMG, body=b"png", request=issued), issued)
    assert issued.meta[meta.PAGE] == ((PAGE, 1000.0),) and issued.meta[meta.DOWNLOADED] == 1001.25
    now[0] = 1010.0
    glue.downloaded(
        HtmlResponse("http://127.0.0.1/z.html", request=Request("http://127.0.0.1/z.html")),
        Request("http://127.0.0.1/z.html"),
    )
    assert stats.values["adaptive/embeds/pages"] == 1
    assert stats.values["adaptive/embeds/within_60s"] == 1
    assert stats.values["adaptive/embeds/gap_p50"] == 1.25
    # a redirect hop's request carries its hop's pairs: not a new embed of the page
    glue.scheduled(Request(IMG + "?moved", meta={meta.PAGE: ((PAGE, 1000.0),)}))
    assert stats.values["adaptive/embeds/pending"] == 0


def test_the_summary_line_and_the_reports_section(tmp_path: Any, caplog: Any) -> None:
    """The periodic summary reads the adaptive/embeds/* stats; the running
    crawl's report (text and HTML) has a section from the watch."""
    import logging

    from scrapy.utils.test import get_crawler

    from scrapy_adaptive.frontier import MemoryStore
    from scrapy_adaptive.ops.console.api import FrontierConsole
    from scrapy_adaptive.ops.console.html import render
    from scrapy_adaptive.ops.console.run import report_lines
    from scrapy_adaptive.ops.reporting import Reporter
    from tests.unit.frontier.test_frontier import Clock, make

    frontier = make(MemoryStore(), Clock())
    stats = get_crawler().stats
    glue = CompositeCaptures(stats, clock=lambda: 100.0)
    console = FrontierConsole(frontier)
    glue.frontier_opened(console=console)
    reporter = Reporter(frontier, stats, allocator=None, state_path=str(tmp_path), interval=60.0)
    with caplog.at_level(logging.INFO, logger="scrapy_adaptive.ops.reporting"):
        reporter.composites()
    assert "Composite captures" not in caplog.text  # nothing settled: no line
    glue.watch.expect(PAGE, 90.0, IMG, now=90.0)
    glue.watch.fetched(IMG, 91.5)
    glue.watch.expect("http://127.0.0.1/q.html", 95.0, CSS, now=95.0)
    glue.closed()
    with caplog.at_level(logging.INFO, logger="scrapy_adaptive.ops.reporting"):
        reporter.composites(final=True)
    assert (
        "Composite captures at close: 1 page capture with embeds settled: 1 (100 %) with every embed fetched or "
        "confirmed within 60 s of the page, 0 later, 0 missing; median gap 1.5 s; 0 pending" in caplog.text
    )
    report = console.report()
    assert report["composites"]["within"] == 1
    assert any(line.startswith("pages captured with their embeds: 1 page capture") for line in report_lines(report))
    assert "<h2>Pages captured with their embeds</h2><p>1 page capture with embeds settled" in render(report)
