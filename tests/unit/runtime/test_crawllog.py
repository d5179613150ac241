"""The crawl log: line format and size rotation."""

from __future__ import annotations

from pathlib import Path

from scrapy_adaptive.frontier import ChangeState, Outcome, UrlRecord, Visit
from scrapy_adaptive.model import Plan
from scrapy_adaptive.runtime.crawllog import CrawlLog, duration_text, format_line

NOW = 1_795_000_000.25


def record(**kw: object) -> UrlRecord:
    values: dict = {"url": "http://example.com/a", "queue": "example.com", "request": {}, "next_ms": 0}
    values.update(kw)
    return UrlRecord(**values)


def test_a_visit_line_has_the_heritrix_style_annotations() -> None:
    visit = Visit(
        Outcome.VISITED,
        status=200,
        change=ChangeState.UNCHANGED,
        content_type="text/html; charset=utf-8",
        size=5123,
        digest="exact:sha1:ab",
        duration=0.012,
        overdue=0.3,
    )
    line = format_line(record(visits=3, versions=1, outcome="visited"), visit, Plan(45.0), NOW)
    assert line == (
        "2026-11-18T11:06:40.250Z 200 5123 http://example.com/a text/html exact:sha1:ab 0.012s "
        "wt:45s,3vis,1ver,ov:0.3s unchanged"
    )


def test_a_not_modified_visit_and_an_error_line() -> None:
    visit = Visit(Outcome.VISITED, status=304, change=ChangeState.UNCHANGED, annotations=("notModified",))
    line = format_line(record(visits=4, versions=2, outcome="visited"), visit, Plan(3600 * 30), NOW)
    assert line.endswith("wt:30h0m,4vis,2ver unchanged,notModified")
    error = Visit(Outcome.RETRY, reason="TimeoutError: took too long")
    line = format_line(record(outcome="retry"), error, None, NOW)
    assert " - - http://example.com/a - - - wt:-,0vis,0ver retry,TimeoutError:_took_too_long" in line


def test_durations_read_well() -> None:
    assert [duration_text(x) for x in (0.0123, 45, 7200, 3 * 86400 + 3600)] == ["0.0123s", "45s", "2h0m", "3d1h"]


def test_the_log_rotates_by_size_and_keeps_the_backups(tmp_path: Path) -> None:
    log = CrawlLog(str(tmp_path / "crawl.log"), max_bytes=400, backups=2)
    visit = Visit(Outcome.VISITED, status=200, change=ChangeState.CHANGED)
    for _ in range(30):
        log.write(record(outcome="visited"), visit, Plan(1.0), NOW)
    log.close()
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["crawl.log", "crawl.log.1", "crawl.log.2"]
    assert all(p.stat().st_size <= 400 for p in tmp_path.iterdir())


def test_an_unwritable_log_is_reported_once_and_skipped(tmp_path: Path, caplog) -> None:  # type: ignore[no-untyped-def]
    log = CrawlLog(str(tmp_path / "missing" / "crawl.log"), max_bytes=400, backups=1)
    visit = Visit(Outcome.VISITED, status=200)
    log.write(record(outcome="visited"), visit, Plan(1.0), NOW)
    log.write(record(outcome="visited"), visit, Plan(1.0), NOW)
    assert caplog.text.count("cannot be written") == 1


def test_whitespace_never_splits_a_column() -> None:
    """Scrapy lets ``http://exa mple.com/`` through to the downloader; its
    line had ten columns, and an error message with a newline two lines."""
    error = Visit(Outcome.RETRY, reason="ValueError: Invalid URI\nsecond\tline", content_type="text/ html")
    line = format_line(record(url="http://exa mple.com/\u3000x", outcome="retry"), error, None, NOW)
    columns = line.split(" ")
    assert len(columns) == 9 and "\n" not in line and "\t" not in line, line
    assert columns[3] == "http://exa%20mple.com/%E3%80%80x" and columns[4] == "text/_html"
    assert columns[8] == "retry,ValueError:_Invalid_URI_second_line"


def test_the_plans_notes_follow_the_verdicts_annotations() -> None:
    """The judges' words and the policy's are two values, logged in that
    order, before what the frontier concluded (the record's notes)."""
    visit = Visit(Outcome.VISITED, status=200, change=ChangeState.UNCHANGED, annotations=("notModified",))
    plan = Plan(60.0, notes=("headerPace",))
    logged = record(visits=2, outcome="visited")
    logged.notes = ["validatorLie"]
    line = format_line(logged, visit, plan, NOW)
    assert line.endswith("wt:60s,2vis,0ver unchanged,notModified,headerPace,validatorLie")
