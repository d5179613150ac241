"""The frontier console, forget, the progress series and the summary, built directly."""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from scrapy.utils.test import get_crawler

from scrapy_adaptive.frontier import ChangeState, Frontier, MemoryStore, Outcome, Store, Visit
from scrapy_adaptive.model import Plan
from scrapy_adaptive.ops.console.api import FrontierConsole
from scrapy_adaptive.ops.console.html import render
from scrapy_adaptive.ops.console.run import report_lines
from scrapy_adaptive.ops.console.seeds import file_seeder, take_seeds
from scrapy_adaptive.ops.progress import HOUR, MIN_SPAN, Progress
from scrapy_adaptive.ops.reporting import Reporter
from scrapy_adaptive.store.leveldb import LevelDBStore
from scrapy_adaptive.store.statedir import StateDir, StateDirError, open_store, stored_counts, write_checkpoint
from tests.unit.frontier.test_frontier import Clock, add, fp, make, visited


@pytest.fixture(params=["memory", "leveldb"])
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    s: Store = MemoryStore() if request.param == "memory" else LevelDBStore(str(tmp_path / "db"))
    yield s
    s.close()


def crawled(store: Store, clock: Clock) -> Frontier:
    """Three URLs of one host visited once; a.html changed twice."""
    f = make(store, clock)
    for url in ("http://h/a.html", "http://h/b.html", "http://h/c.png"):
        add(f, url)
    for _ in range(3):
        clock.t += 10
        issued = f.next()
        assert issued is not None
        f.update(issued.fp, visited(), Plan(100.0))
        clock.t += 10
    return f


def test_forget_removes_record_entry_and_mark_and_keeps_the_counts_that_never_fall(any_store: Store) -> None:
    store = any_store
    clock = Clock()
    f = crawled(store, clock)
    # a pending-delivery mark on b.html
    clock.t += 200
    issued = f.next()
    assert issued is not None
    f.update(issued.fp, visited(change=ChangeState.CHANGED), Plan(100.0), deliver=True)
    assert dict(store.pending())
    victims = [("h", fp("http://h/a.html")), ("h", fp("http://h/b.html"))]
    gone = f.forget(victims + [("h", fp("http://h/unknown"))])
    assert sorted(r.url for r in gone) == ["http://h/a.html", "http://h/b.html"]
    assert all(store.get_record(*v) is None for v in victims)
    assert not dict(store.pending())
    assert [e[2] for e in store.queue_entries("h", limit=10)] == [fp("http://h/c.png")]
    assert (f.counts().urls, f.counts().forgotten, f.counts().visits) == (1, 2, 4)
    # a reopened frontier agrees, and issues only what is left
    again = make(store, clock)
    again.load()
    assert (again.counts().urls, again.counts().forgotten, again.counts().visits) == (1, 2, 4)
    clock.t += 1000
    issued = again.next()
    assert issued is not None and issued.record.url == "http://h/c.png"
    assert again.next() is None
    # rediscovered, a forgotten URL starts a new record
    assert add(again, "http://h/a.html").value == "new"


def test_forget_of_a_url_out_for_download_ignores_its_late_verdict() -> None:
    clock = Clock()
    f = make(MemoryStore(), clock)
    add(f, "http://h/a")
    issued = f.next()
    assert issued is not None
    f.forget([("h", issued.fp)])
    assert f.update(issued.fp, visited(), Plan(100.0)) is None
    assert f.get_record("h", issued.fp) is None and f.counts().out == 0 and not f.has_pending()


def test_a_forget_is_not_a_rollback_for_the_state_folder(tmp_path: Path) -> None:
    state = StateDir(str(tmp_path / "state"), temporary=False)
    store = open_store(state, spider="s", fingerprinter="fp", sync=False)
    clock = Clock()
    f = crawled(store, clock)
    write_checkpoint(state, urls=f.counts().urls, visits=f.counts().visits, clean=True)
    before = stored_counts(store)
    f.forget([("h", fp("http://h/a.html"))])
    assert stored_counts(store) == before
    store.close()
    open_store(state, spider="s", fingerprinter="fp", sync=False).close()  # not refused


def test_report_url_export_and_forget_by_regex(any_store: Store) -> None:
    clock = Clock()
    f = crawled(any_store, clock)
    console = FrontierConsole(f, budget_per_day=240.0)
    report = console.report()
    assert report["totals"]["urls"] == 3 and report["totals"]["visits"] == 3
    assert report["hosts"][0]["host"] == "h" and report["hosts"][0]["urls"] == 3
    assert report["sampled"] == 3 and sum(report["waits"].values()) == 3
    assert report["waits"] == {"≤ 10m": 3}
    assert report["budget"] == {"set_per_day": 240.0, "spent_per_day": None}
    json.dumps(report)  # the control channel sends it as JSON
    answer = console.url("http://h/a.html")
    assert answer is not None and answer["record"]["url"] == "http://h/a.html"
    text = "\n".join(answer["lines"])
    assert "1 visit, 1 version" in text and "status 200, changed" in text
    assert re.search(r"next visit: .* \(in [^)]+\); wait 1\.\dm chosen by the wait policy", text), text
    assert console.url("http://h/nothing") is None
    exported = list(console.export())
    assert sorted(r["url"] for r in exported) == ["http://h/a.html", "http://h/b.html", "http://h/c.png"]
    assert {"fp", "request", "history", "next_time", "wait"} <= set(exported[0])
    assert sorted(console.forget(regex=r"\.html$")) == ["http://h/a.html", "http://h/b.html"]
    assert [r["url"] for r in console.export()] == ["http://h/c.png"]


def test_an_export_and_a_url_not_found_say_which_records_could_not_be_read(any_store: Store) -> None:
    """A garbled record was left out of an export without a word (exit code
    0, a backup short of a URL), and its URL was "not in the frontier":
    each now ends in one line naming the fingerprints, after what was read."""
    from scrapy_adaptive.store.base import Batch, StoreCorrupt

    clock = Clock()
    f = crawled(any_store, clock)
    garbled = fp("http://h/b.html")
    any_store.write(Batch(records={("h", garbled): b"\xff\xfe{garbage"}))
    console = FrontierConsole(f)
    exported: list[str] = []
    with pytest.raises(StoreCorrupt, match=rf"1 record of the frontier cannot be read .*fingerprint {garbled.hex()}\)"):
        for row in console.export():
            exported.append(row["url"])
    assert sorted(exported) == ["http://h/a.html", "http://h/c.png"]
    with pytest.raises(StoreCorrupt, match="this URL is not among the others, it may be one"):
        console.url("http://h/b.html")
    answer = console.url("http://h/a.html")
    assert answer is not None and answer["record"]["url"] == "http://h/a.html"


def test_answer_speaks_the_control_protocol(tmp_path: Path) -> None:
    f = crawled(MemoryStore(), Clock())
    console = FrontierConsole(f, seeder=file_seeder(str(tmp_path)))
    assert next(console.answer({"op": "url", "url": "http://h/b.html"}))["url"]["record"]["visits"] == 1
    assert len(list(console.answer({"op": "export"}))) == 3
    seeded = next(console.answer({"op": "seed", "urls": ["http://h/new"]}))["seeded"]
    assert seeded == [{"url": "http://h/new", "result": "added when the crawl next starts"}]
    assert next(console.answer({"op": "forget", "urls": ["http://h/c.png"]})) == {"forgotten": ["http://h/c.png"]}
    with pytest.raises(ValueError, match="unknown op"):
        list(console.answer({"op": "drop tables"}))
    # the next crawl takes the seeds once
    taken: list[str] = []
    take_seeds(str(tmp_path), lambda urls: taken.extend(urls) or [])
    assert taken == ["http://h/new"]
    assert take_seeds(str(tmp_path), lambda urls: []) == []


def test_progress_counts_per_hour_from_cumulative_counters() -> None:
    p = Progress()
    t0 = 100 * HOUR
    p.observe(t0, visits=50, versions=5, bytes_saved=0, due=10)  # the baseline: not this hour's work
    p.observe(t0 + 1800, visits=80, versions=8, bytes_saved=4000, due=14, budget_per_hour=100.0)
    p.observe(t0 + HOUR, visits=110, versions=9, bytes_saved=1000, due=12)  # stats restarted at 0
    assert p.hours[100] == [30.0, 3.0, 4000.0, 14, 100.0, 1800.0]
    assert p.hours[101] == [30.0, 1.0, 1000.0, 12, 0.0, 1800.0]
    rates = p.rates()
    assert rates is not None and rates["visits"] == pytest.approx(60.0) and rates["due_change"] == 2
    back = Progress.from_bytes(p.to_bytes())
    assert back.hours == p.hours and [h for h, _ in back.series()] == [100, 101]
    assert Progress.from_bytes(b"garbage").hours == {}
    # a series stored before the seconds were kept reads with none timed
    assert Progress.from_bytes(b'{"100":[1,2,3,4,5]}').hours == {100: [1.0, 2.0, 3.0, 4.0, 5.0, 0.0]}


def test_a_stopped_crawls_rates_count_the_time_it_ran_not_whole_hours() -> None:
    p = Progress()
    t0 = 100 * HOUR + 600
    p.observe(t0, visits=0, versions=0, bytes_saved=0, due=5)
    for minute in (1, 2, 3):  # three minutes of work at 200 visits a minute
        p.observe(t0 + 60 * minute, visits=200 * minute, versions=20 * minute, bytes_saved=0, due=5)
    rates = p.stored_rates()
    assert rates is not None and rates["span"] == pytest.approx(180.0)
    assert rates["visits"] == pytest.approx(12_000.0) and rates["versions"] == pytest.approx(1_200.0)


def test_a_few_seconds_are_too_short_to_rate() -> None:
    """Right after a restart two summaries a few seconds apart gave "17401
    visits/h" from 6 s: rates wait for MIN_SPAN of samples."""
    p = Progress()
    t0 = 100 * HOUR
    p.observe(t0, visits=1000, versions=100, bytes_saved=0, due=9)
    assert p.rates() is None and p.observed() == 0.0
    p.observe(t0 + 6, visits=1029, versions=104, bytes_saved=12_000, due=9)
    assert p.rates() is None and p.observed() == 6.0
    p.observe(t0 + MIN_SPAN, visits=1100, versions=110, bytes_saved=30_000, due=7)
    rates = p.rates()
    assert rates is not None and rates["span"] == MIN_SPAN and rates["visits"] == pytest.approx(6000.0)


def summarising(tmp_path: Path, *, interval: float, console: bool = False) -> tuple[MemoryStore, Clock, Reporter]:
    """A reporter on :func:`crawled`'s frontier, in a fresh crawler's stats."""
    store = MemoryStore()
    clock = Clock()
    f = crawled(store, clock)
    crawler = get_crawler()
    crawler.stats.open_spider()
    return (
        store,
        clock,
        Reporter(
            f,
            crawler.stats,
            allocator=None,
            state_path=str(tmp_path),
            interval=interval,
            console=FrontierConsole(f) if console else None,
            clock=clock,
        ),
    )


def test_a_report_file_that_cannot_be_written_is_said_once_until_it_is_written_again(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """``report.html`` a folder (or a full disk): a warning at every summary,
    every minute for the months a crawl runs."""
    _, _, reporter = summarising(tmp_path, interval=10.0, console=True)
    (tmp_path / "report.html").mkdir()
    with caplog.at_level(logging.INFO, logger="scrapy_adaptive.ops.reporting"):
        for _ in range(3):
            reporter.html()
        said = [r.getMessage() for r in caplog.records]
        assert len(said) == 1 and said[0].startswith(f"Cannot write {tmp_path / 'report.html'}: "), said
        assert said[0].endswith("(tried again at each summary, said once)")
        (tmp_path / "report.html").rmdir()
        reporter.html()
        reporter.html()
    assert [r.getMessage() for r in caplog.records][1:] == [f"Wrote {tmp_path / 'report.html'} again."]
    assert (tmp_path / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_the_summary_says_too_short_to_rate_after_a_restart(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _, clock, reporter = summarising(tmp_path, interval=10.0)
    with caplog.at_level(logging.INFO, logger="scrapy_adaptive.ops.reporting"):
        reporter.summary()
        assert "(rates after the first 1.0m of this run)" in caplog.text
        clock.t += 6
        reporter.summary()
        assert "(too short to rate: 6.0s of this run observed, rates after 1.0m)" in caplog.text
        assert "Progress over" not in caplog.text and reporter.stats.get_value("adaptive/per_hour/visits") is None
        clock.t += 60
        reporter.summary()
    assert "Progress over the last 1.1m: 0 visits/h" in caplog.text


def test_the_html_report_is_self_contained() -> None:
    f = crawled(MemoryStore(), Clock())
    p = Progress()
    for i in range(4):
        p.observe(i * HOUR, visits=10 * i, versions=i, bytes_saved=100 * i, due=3, budget_per_hour=12.0)
    page = render(FrontierConsole(f, progress=p).report())
    assert page.count("<svg") == 6 and "Top hosts" in page and "<td>h</td>" in page
    assert not re.search(r"<script|<link|src=|href=|@import|url\(", page)


def test_the_summary_says_how_late_the_due_urls_are_in_readable_units(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The summary said "overdue p50 1085.2s p95 1192.4s", the reader to divide by 60; the
    report already said "18m"."""
    _, clock, reporter = summarising(tmp_path, interval=60.0)
    clock.t += 100 + 1085  # every URL waited 100 s, then 1085 s more
    with caplog.at_level(logging.INFO, logger="scrapy_adaptive.ops.reporting"):
        reporter.summary()
    assert re.search(r"3 due now; overdue p50 1[89]m p95 1[89]m; 3 visits", caplog.text), caplog.text


def test_the_report_does_not_call_all_visits_the_revisit_budget_spent() -> None:
    """Next to the revisit budget, the report's visit rate counts first
    visits too: called "spent", a fresh crawl read as one at its budget."""
    f = crawled(MemoryStore(), Clock())
    p = Progress()
    for i in range(4):
        p.observe(i * HOUR, visits=10 * i, versions=i, bytes_saved=100 * i, due=3, budget_per_hour=12.0)
    report = FrontierConsole(f, budget_per_day=240.0, progress=p).report()
    [budget] = [line for line in report_lines(report) if line.startswith("budget: ")]
    assert budget.startswith("budget: 240, visits 240/day (first visits included)"), budget
    page = render(report)
    assert "spent" not in page and "<td>visits/day (first visits included)</td><td>240/day</td>" in page


def test_the_crawl_time_warning_ignores_hosts_not_measured_since_the_restart(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """After a restart no fetch of a host is measured yet: the paper's 2 s
    default must not be reported as the host's (it was: "fetch 2.00s + wait
    5.00s" for a host whose fetches take milliseconds)."""
    store = MemoryStore()
    clock = Clock()
    f = make(store, clock, min_delay=5.0, max_delay=5.0)
    for i in range(30):
        add(f, f"http://fast/{i}")
    restarted = make(store, clock, min_delay=5.0, max_delay=5.0)
    restarted.load()
    crawler = get_crawler()
    reporter = Reporter(restarted, crawler.stats, allocator=None, state_path=str(tmp_path), interval=60.0, clock=clock)
    with caplog.at_level(logging.INFO, logger="scrapy_adaptive.ops.reporting"):
        reporter.crawl_times()
    assert "Hosts:" not in caplog.text
    # measured, the same backlog is reported (30 fetches of 10 ms + 5 s each > 60 s)
    restarted.fetch_times.add("fast", 0.01)
    with caplog.at_level(logging.INFO, logger="scrapy_adaptive.ops.reporting"):
        reporter.crawl_times()
    assert "Hosts: 1 of 1" in caplog.text and "fetch 0.01s + wait 5.00s" in caplog.text


def test_the_summary_logs_rates_and_saves_the_hourly_series(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store, clock, reporter = summarising(tmp_path, interval=60.0, console=True)
    f, stats = reporter.frontier, reporter.stats
    with caplog.at_level(logging.INFO, logger="scrapy_adaptive.ops.reporting"):
        reporter.summary()
        clock.t += 1000
        issued = f.next()
        assert issued is not None
        f.update(issued.fp, visited(), Plan(100.0))
        stats.set_value("adaptive/validators/bytes_avoided", 5000)
        clock.t += 800
        reporter.summary()
    assert re.search(r"Progress over the last 30m: 2 visits/h, 2 versions/h, 10\.0 kB saved/h", caplog.text)
    assert "next URL due in" in caplog.text
    assert sum(v[0] for v in Progress.from_bytes(store.get_meta("progress")).hours.values()) == 1
    assert (tmp_path / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_a_record_snapshot_names_its_url() -> None:
    """Evaluators and tools reading ``adaptive_record`` see which URL it is."""
    f = crawled(MemoryStore(), Clock())
    record = f.get_record("h", fp("http://h/a.html"))
    assert record is not None and record.snapshot()["url"] == "http://h/a.html"


def test_a_budget_is_drawn_to_scale_and_only_when_set() -> None:
    from scrapy_adaptive.ops.console.html import bar_chart

    svg = bar_chart(["h1", "h2"], [73.0, 40.0], line=[543.0, 543.0])
    (path,) = re.findall(r'<path d="([^"]+)"', svg)
    assert float(path.split(",")[1].split("h")[0]) >= 8  # the level within the plot, at its height
    assert "off the scale" not in svg and ">543<" in svg  # the axis reaches the budget
    report = FrontierConsole(crawled(MemoryStore(), Clock())).report()  # no budget set
    # the hours recorded the pace the crawl planned
    report["hours"] = [[490000, [73, 2, 1074863, 0, 543.0]], [490001, [40, 1, 20000, 0, 543.0]]]
    page = render(report)
    assert "#c0392b" not in page and "budget 543" not in page and "(red: budget)" not in page
    assert ">1.1 MB<" in page and "1074863" not in page  # bytes in kB/MB, never raw
    assert "No URL was due at the last summary of any hour in the 2 hours recorded." in page  # not an empty chart


@pytest.mark.parametrize(
    "bad", ["notaurl", "ftp://h/file", "http://", "/relative/path", "http://h:port/", "mailto:someone@h"]
)
def test_a_seed_that_is_not_an_http_url_is_refused_at_once(
    tmp_path: Path, bad: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``scrapy frontier seed notaurl`` on a stopped crawl: exit code 2 (a
    usage error) and one line naming the URL, and nothing left for the next start."""
    import argparse

    from scrapy.settings import Settings

    from scrapy_adaptive.ops.console.run import main
    from scrapy_adaptive.ops.console.seeds import SEEDS_FILE

    state = StateDir(str(tmp_path / "job" / "adaptive"), temporary=False)
    open_store(state, spider="s", fingerprinter="fp", sync=False).close()
    opts = argparse.Namespace(jobdir=str(tmp_path / "job"), state_dir=None, json=False, html=None, output=None)
    assert main("seed", ["http://h/good", bad], opts, Settings()) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert err.startswith(f"scrapy frontier seed: {bad!r} is not a URL to seed") and "Nothing was seeded" in err
    assert not (Path(state.path) / SEEDS_FILE).exists()
    # the console itself (the control channel's path) refuses them too
    console = FrontierConsole(crawled(MemoryStore(), Clock()), seeder=file_seeder(str(tmp_path)))
    with pytest.raises(ValueError, match="is not a URL to seed"):
        console.seed([bad])
    assert not (tmp_path / SEEDS_FILE).exists()
    assert main("seed", ["https://h/good"], opts, Settings()) == 0
    assert "https://h/good: added when the crawl next starts" in capsys.readouterr().out


def test_forget_by_a_regex_that_does_not_compile_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``scrapy frontier forget --regex '('``: exit code 2, one line naming the
    regex, no traceback, nothing deleted; the console refuses it too."""
    import argparse

    from scrapy.settings import Settings

    from scrapy_adaptive.ops.console.run import main

    state = StateDir(str(tmp_path / "job" / "adaptive"), temporary=False)
    open_store(state, spider="s", fingerprinter="fp", sync=False).close()
    opts = argparse.Namespace(
        jobdir=str(tmp_path / "job"), state_dir=None, json=False, html=None, output=None, regex="("
    )
    assert main("forget", [], opts, Settings()) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert err.startswith("scrapy frontier forget: --regex '(' is not a valid regular expression")
    assert "nothing was forgotten" in err
    console = FrontierConsole(crawled(MemoryStore(), Clock()))
    with pytest.raises(ValueError, match="is not a valid regular expression"):
        console.forget(regex="(")
    assert len(list(console.export())) == 3


def test_the_policys_memory_of_a_url_is_said_in_words_or_left_out() -> None:
    from scrapy_adaptive.model import UrlRecord
    from scrapy_adaptive.ops.console.record_words import describe

    record = UrlRecord("http://h/a", "h", {}, 0, visits=3, versions=2)
    record.policy = {"o": [[181, 3], [200, 1]], "e": 1 / 86_400, "lm": [3, 1], "al": [4, "h", 0.1], "pp": [1, 0, 2]}
    text = "\n".join(describe(record, 0.0))
    assert "estimated change rate: 1 per day (about one change every 1.0d)" in text
    assert "the last 2 intervals" in text and "Last-Modified agreed with the content 3 times, disagreed 1 time" in text
    assert "o=" not in text and "al=" not in text and "pp=" not in text and "[[" not in text
    # before any revisit the stored rate is the crawl's prior (here its time
    # scale: a change a second), not a reading of the page: it is not shown
    fresh = UrlRecord("http://h/b", "h", {}, 0, visits=1, versions=1)
    fresh.policy = {"e": 0.9, "al": ["x", "h", 0.9, 1], "su": 43200.0}
    text = "\n".join(describe(fresh, 0.0))
    assert "estimated change rate: none yet (no revisit has yet told" in text and "per day" not in text


@pytest.mark.parametrize(
    ("noise", "words"),
    [
        ({"p": {}, "r": 1}, "learned noise: none (every part of the page is compared); 1 probe spent"),
        ({"u": 1}, "learned noise: none: the page cannot be compared by its structure, so every byte counts"),
        (
            {"p": {}, "m": {"ab": [0], "cd": "*"}, "g": ["html/body/ul"], "r": 2},
            "learned noise: 1 token and 1 field and 1 region (html/body/ul) left out of the comparison, everything "
            "else compared; 2 probes spent",
        ),
        (
            {"p": {}, "t": {}, "tt": 5.0, "hd": 1, "r": 1},
            "learned noise: being learned (a probe is due, a difference held back until it answers); 1 probe spent",
        ),
    ],
)
def test_learned_noise_is_said_in_words(noise: dict[str, object], words: str) -> None:
    """``scrapy frontier url`` printed the noise learner's raw state
    (``learned noise: {'s': 'clean', 'r': 1}``)."""
    from scrapy_adaptive.model import UrlRecord
    from scrapy_adaptive.ops.console.record_words import describe

    record = UrlRecord("http://h/a", "h", {}, 0, visits=3, versions=2)
    record.noise = noise
    lines = [line for line in describe(record, 0.0) if line.startswith("learned noise")]
    assert lines == [words]


def test_a_waiting_hint_and_the_hosts_sources_in_words() -> None:
    from scrapy_adaptive.frontier import hints
    from scrapy_adaptive.ops.console.hinttrack import pending_hint, report_words, track_record, url_words

    by_host = {"h": {"sitemap": [3.0, 1.0, 0.5], "liar": [0.0, 9.0, 0.0]}, "g": {"sitemap": [1.0, 0.0, 0.0]}}
    record = track_record(by_host)
    assert [(r["source"], r["confirmed"], r["refuted"]) for r in record["sources"]] == [
        ("liar", 0.0, 9.0),
        ("sitemap", 4.0, 1.0),
    ]
    liar = record["sources"][0]["precision"]
    assert liar < 0.15 and record["sources"][1]["precision"] > 0.6
    text = "\n".join(report_words(record))
    assert "liar: 0 confirmed, 9 refuted" in text and "sitemap on g: 1 confirmed" in text
    waiting = hints.pending(1.8e9, 1.8e9 - 60, "sitemap", [3.0, 1.0, 0.5], [4.0, 1.0, 0.5])
    lines = url_words(waiting, "h", record["by_host"])
    assert lines[0].startswith("a change hint from sitemap waits for this visit: received ")
    assert "claiming a change at " in lines[0] and "acted on at precision 0." in lines[0]
    assert lines[1].startswith("change hints on h (") and any("liar: 0 confirmed, 9 refuted" in ln for ln in lines)
    assert pending_hint(waiting)["record_then"]["confirmed"] == 3.0
    assert report_words(track_record({}))[0].startswith("change hints: no hint of a sitemap or feed has been settled")


def test_a_seeds_file_that_cannot_be_read_is_left_as_it_is_with_one_error(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from scrapy_adaptive.ops.console.seeds import REJECTED_SEEDS_FILE, SEEDS_FILE

    seeds = tmp_path / SEEDS_FILE
    taken: list[str] = []

    def seeder(urls: list[str]) -> list[dict[str, Any]]:
        taken.extend(urls)
        return []

    seeds.write_bytes(b'{"url": "http://x/' + bytes([0xFF]) + b'"}\n')  # not UTF-8
    with caplog.at_level("ERROR"):
        assert take_seeds(str(tmp_path), seeder) == []
    assert seeds.exists() and "cannot be read" in caplog.text and str(seeds) in caplog.text
    seeds.unlink()
    target = tmp_path / "elsewhere.txt"
    target.write_text('{"url": "http://h/secret"}\n')
    seeds.symlink_to(target)  # a link is refused, not followed
    assert take_seeds(str(tmp_path), seeder) == [] and taken == [] and seeds.is_symlink()
    seeds.unlink()
    seeds.write_text('{"url": "http://h/a"}\nnot json\n{"no": "url"}\n\n')
    caplog.clear()
    with caplog.at_level("WARNING"):
        take_seeds(str(tmp_path), seeder)
    assert taken == ["http://h/a"] and not seeds.exists()
    assert (tmp_path / REJECTED_SEEDS_FILE).read_text() == 'not json\n{"no": "url"}\n'
    assert "2 lines of" in caplog.text and "are not a seed" in caplog.text


@pytest.mark.parametrize("content", [b"{not json", b"", b"[1, 2, 3]", b"\xff\xfe"])
def test_a_damaged_marker_is_refused_in_one_line_as_the_crawl_refuses_it(
    tmp_path: Path, content: bytes, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 36 item 5: ``scrapy frontier report`` on these markers ended in a
    traceback while ``scrapy crawl`` refused them in one line: the console
    reads the marker with the crawl's own reader now."""
    import argparse

    from scrapy.settings import Settings

    from scrapy_adaptive.ops.console.run import main

    state = StateDir(str(tmp_path / "job" / "adaptive"), temporary=False)
    open_store(state, spider="s", fingerprinter="fp", sync=False).close()
    Path(state.marker).write_bytes(content)
    with pytest.raises(StateDirError) as crawl_says:  # the crawl's open
        open_store(state, spider="s", fingerprinter="fp", sync=False)
    opts = argparse.Namespace(jobdir=None, state_dir=state.path, json=False, html=None, output=None)
    for action in ("report", "export", "url"):
        assert main(action, ["http://h/a.html"] if action == "url" else [], opts, Settings()) == 1
        out, err = capsys.readouterr()
        assert out == "" and err == f"scrapy frontier {action}: {crawl_says.value}\n"
    assert Path(state.marker).read_bytes() == content


@pytest.mark.parametrize("where", ["job", "job/adaptive"])
def test_a_jobdir_that_is_a_file_is_no_state_folder_not_a_corrupt_marker(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    """``scrapy frontier report --jobdir FILE`` (or a state folder under a
    regular file) called the marker "unreadable or corrupt": nothing there
    is damaged, no crawl can have run there."""
    import argparse

    from scrapy.settings import Settings

    from scrapy_adaptive.ops.console.run import main

    (tmp_path / "job").write_text("a regular file\n")
    opts = argparse.Namespace(
        jobdir=None, state_dir=str(tmp_path / where), json=False, html=None, output=None, regex=None
    )
    assert main("report", [], opts, Settings()) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1, err
    assert "is not a scrapy-adaptive state folder" in err and "corrupt" not in err, err
    assert (tmp_path / "job").read_text() == "a regular file\n"


@pytest.mark.parametrize(
    ("action", "args", "format_", "said"),
    [
        ("report", ["--bogus-option"], "jsonl", "unknown option '--bogus-option': scrapy frontier -h lists them"),
        ("url", ["http://h/a.html", "--jsn"], "jsonl", "unknown option '--jsn'"),
        ("seed", ["http://h/new", "--forse"], "jsonl", "unknown option '--forse'"),
        ("report", ["extra"], "jsonl", "report takes options, not 'extra'"),
        ("export", [], "xml", "--format 'xml' is not a format export writes: use jsonl"),
    ],
)
def test_arguments_the_console_cannot_take_are_one_line_and_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], action: str, args: list[str], format_: str, said: str
) -> None:
    """Scrapy hands on options it does not know among the arguments: a
    misspelt ``--jsn`` was ignored (exit code 0), ``seed URL --forse`` was
    refused as a URL; ``--format xml`` was argparse's four-line usage block."""
    import argparse

    from scrapy.settings import Settings

    from scrapy_adaptive.ops.console.run import main

    state = StateDir(str(tmp_path / "job" / "adaptive"), temporary=False)
    open_store(state, spider="s", fingerprinter="fp", sync=False).close()
    opts = argparse.Namespace(
        jobdir=str(tmp_path / "job"), state_dir=None, json=False, html=None, output=None, regex=None, format=format_
    )
    assert main(action, args, opts, Settings()) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"scrapy frontier {action}: {said}") and err.count("\n") == 1, err


def test_an_export_under_a_file_says_the_path_asked_for(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``-O`` under a regular file named the temporary file beside it."""
    import argparse

    from scrapy.settings import Settings

    from scrapy_adaptive.ops.console.run import main

    state = StateDir(str(tmp_path / "job" / "adaptive"), temporary=False)
    store = open_store(state, spider="s", fingerprinter="fp", sync=False)
    crawled(store, Clock())
    store.close()
    (tmp_path / "afile").write_text("")
    target = tmp_path / "afile" / "x.jsonl"
    opts = argparse.Namespace(jobdir=str(tmp_path / "job"), state_dir=None, json=False, html=None, output=str(target))
    assert main("export", [], opts, Settings()) == 1
    out, err = capsys.readouterr()
    assert out == "" and err == f"scrapy frontier export: {target} cannot be written (Not a directory)\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile", "job"]


@pytest.mark.parametrize("kind", ["a folder", "a FIFO", "a symbolic link"])
def test_an_export_never_replaces_what_is_not_a_regular_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """``-O /dev/full`` as root replaced the device with a regular file
    (the export is written beside the path, then renamed over it): a path
    that is there and is not a regular file is refused in one line, exit
    code 2, and left as it was; a folder was exported to ``.partial``."""
    import argparse

    from scrapy.settings import Settings

    from scrapy_adaptive.ops.console.run import main

    state = StateDir(str(tmp_path / "job" / "adaptive"), temporary=False)
    store = open_store(state, spider="s", fingerprinter="fp", sync=False)
    crawled(store, Clock())
    store.close()
    target = tmp_path / "out.jsonl"
    (tmp_path / "real.jsonl").write_text("kept\n")
    if kind == "a folder":
        target.mkdir()
    elif kind == "a FIFO":
        os.mkfifo(target)
    else:
        target.symlink_to(tmp_path / "real.jsonl")
    opts = argparse.Namespace(jobdir=str(tmp_path / "job"), state_dir=None, json=False, html=None, output=str(target))
    assert main("export", [], opts, Settings()) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"scrapy frontier export: -O {target} is {kind}: ") and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["job", "out.jsonl", "real.jsonl"]
    assert target.is_symlink() == (kind == "a symbolic link") and (tmp_path / "real.jsonl").read_text() == "kept\n"
    assert target.is_fifo() == (kind == "a FIFO") and target.is_dir() == (kind == "a folder")


@pytest.mark.parametrize(("args", "said"), [([], "no action given"), (["bogus"], "unknown action 'bogus'")])
def test_a_missing_or_unknown_action_is_one_line_on_stderr_and_exit_code_2(
    capsys: pytest.CaptureFixture[str], args: list[str], said: str
) -> None:
    """It went to stdout, where a script reading the output took it for one."""
    import argparse

    from scrapy_adaptive.ops.console.command import Command

    command = Command()
    command.run(args, argparse.Namespace())
    out, err = capsys.readouterr()
    assert command.exitcode == 2 and out == ""
    assert err.startswith(f"scrapy frontier: {said}; usage: scrapy frontier report ") and err.count("\n") == 1


def test_a_url_last_answering_a_redirect_or_an_error_is_not_never_changing() -> None:
    """A page that moved or is gone was listed under "Never changing URLs"
    (it had one version and was revisited): it is listed as what it last
    answered instead (issue 46)."""
    clock = Clock()
    f = make(MemoryStore(), clock)
    answers = {
        "http://h/steady.html": [200, 304, 200],
        "http://h/gone.html": [200, 404, 404],
        "http://h/moved.html": [200, 301, 301],
        "http://h/back.html": [200, 404, 200],
        "http://h/refresh.html": [200, None, None],  # a meta refresh: no status, its reason says
    }
    for url in answers:
        add(f, url)
    for i in range(3):
        for _ in answers:
            clock.t += 1000
            issued = f.next()
            assert issued is not None
            status = answers[issued.record.url][i]
            change = ChangeState.CHANGED if i == 0 else ChangeState.UNCHANGED
            reason = "redirect to http://h/x.html" if status is None else None
            f.update(issued.fp, Visit(Outcome.VISITED, status=status, change=change, reason=reason), Plan(100.0))
    report = FrontierConsole(f).report()
    assert sorted(r["url"] for r in report["never_changing"]) == ["http://h/back.html", "http://h/steady.html"]
    elsewhere = {r["url"]: (r["status"], r["versions"]) for r in report["redirect_or_error"]}
    assert elsewhere == {
        "http://h/gone.html": (404, 1),
        "http://h/moved.html": (301, 1),
        "http://h/refresh.html": (None, 1),
    }
    text = "\n".join(report_lines(report))
    assert "URLs last answering a redirect or an error" in text and re.search(r"404  http://h/gone\.html", text)
    assert re.search(r"redirect  http://h/refresh\.html", text)
    page = render(report)
    assert "<h2>URLs last answering a redirect or an error</h2>" in page and "<td>http://h/moved.html</td>" in page


def test_the_report_a_run_left_is_kept_at_the_start_and_refreshed_at_the_first_interval(tmp_path: Path) -> None:
    """A restart's first summary says the frontier in the log but does not
    rebuild ``report.html`` from a sample of the records: the one the last run
    left says the same.  A crawl without one gets it at once."""
    _, clock, reporter = summarising(tmp_path, interval=60.0, console=True)
    report = tmp_path / "report.html"
    reporter.summary()
    assert "Frontier report" in report.read_text()  # none yet: written at the start
    report.write_text("the last run's report")
    _, clock, restarted = summarising(tmp_path, interval=60.0, console=True)
    restarted.summary()
    assert report.read_text() == "the last run's report"
    clock.t += 60
    assert restarted.due()
    restarted.summary()
    assert "Frontier report" in report.read_text()
    report.write_text("stale")
    restarted.summary(final=True)  # the close always writes it
    assert "Frontier report" in report.read_text()
