"""``scrapy frontier changes`` and the events ``scrapy frontier url`` lists:
options checked in one line, filters, newest first, the history and the
outbox, on a stopped crawl's real state folder (LevelDB, ``changes.log``)."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import Settings

from scrapy_adaptive.frontier import Frontier, MemoryStore
from scrapy_adaptive.model import Plan
from scrapy_adaptive.ops.console.api import FrontierConsole
from scrapy_adaptive.ops.console.changes_command import changes_request, find_changes, kinds_of
from scrapy_adaptive.ops.console.run import main
from scrapy_adaptive.runtime.changelog import ChangesLog
from scrapy_adaptive.store.base import Batch
from scrapy_adaptive.store.keys import event_key, time_to_ms
from scrapy_adaptive.store.statedir import StateDir, open_store
from tests.unit.frontier.test_frontier import Clock, add, fp, make, visited

NOW = time.time()
A, B = "http://shop.example/p/a", "http://shop.example/p/b"


def event(kind: str, url: str, age: float, **more: Any) -> dict[str, Any]:
    return {"kind": kind, "url": url, "time": round(NOW - age, 3), "version": 1, "status": 200, **more}


def opts(state: str, **given: Any) -> argparse.Namespace:
    values = dict(since=None, url=None, kind=None, limit=None)
    values.update(given)
    return argparse.Namespace(jobdir=None, state_dir=state, json=False, html=None, output=None, **values)


@pytest.fixture
def stopped(tmp_path: Path) -> str:
    """A stopped crawl's state folder: a history of five events (A gone an
    hour ago, B moved a day ago...), one event still in the outbox."""
    state = StateDir(str(tmp_path / "state"), temporary=False)
    store = open_store(state, spider="s", fingerprinter="fp", sync=False)
    history = ChangesLog(state.path, 1 << 20, 2)
    history.write([event("new", A, 3 * 86_400), event("new", B, 3 * 86_400)], NOW - 3 * 86_400 + 1)
    moved = event("moved", B, 86_400, status=301, location="http://shop.example/q/b")
    history.write([moved, event("changed", A, 6000)], NOW - 5900)
    gone = event("gone", A, 3600, status=404)
    history.write([gone], NOW - 3590)
    history.write([gone], NOW - 3580)  # delivered twice (a kill before the outbox's delete): listed once
    history.close()
    back = json.dumps(event("back", A, 60)).encode()
    store.write(Batch(events={("shop.example", event_key(time_to_ms(NOW - 60), fp(A))): back}))
    store.close()
    return state.path


def run(capsys: pytest.CaptureFixture[str], state: str, **given: Any) -> tuple[int, str, str]:
    code = main("changes", [], opts(state, **given), Settings())
    out, err = capsys.readouterr()
    return code, out, err


def test_the_events_are_listed_newest_first_once_each_with_those_not_delivered_yet(
    stopped: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, stopped)
    assert code == 0 and err == "", err
    lines = out.splitlines()
    assert lines[0] == "6 change events, newest first:"
    kinds = [line.split()[2] for line in lines[1:7]]
    assert kinds == ["back", "gone", "changed", "moved", "new", "new"]
    assert lines[1].endswith("(not delivered yet)") and "-> http://shop.example/q/b" in lines[4]
    assert "the history (changes.log) holds events delivered since" in out


def test_since_kind_and_url_filter_and_limit_says_what_it_left_out(
    stopped: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, stopped, since="2h", kind=["gone,changed", "back"])
    assert code == 0 and [line.split()[2] for line in out.splitlines()[1:4]] == ["back", "gone", "changed"]
    assert out.startswith("3 change events in the last 2.0h; of kind gone, changed, back, newest first:")
    code, out, _ = run(capsys, stopped, url=r"/p/b$")
    assert code == 0 and [line.split()[2] for line in out.splitlines()[1:3]] == ["moved", "new"]
    code, out, _ = run(capsys, stopped, limit="2")
    assert [line.split()[2] for line in out.splitlines()[1:3]] == ["back", "gone"]
    assert "only the newest 2 are listed (--limit)" in out
    code, out, _ = run(capsys, stopped, kind=["gone"], url="nothing-like-it")
    assert code == 0 and out.startswith("no change events of kind gone; of URLs matching 'nothing-like-it'")


def test_json_gives_every_field_of_each_event(stopped: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main("changes", [], argparse.Namespace(**{**vars(opts(stopped, kind=["moved"])), "json": True}), Settings())
    answer = json.loads(capsys.readouterr().out)["changes"]
    assert code == 0 and answer["more"] is False and answer["pending"] == 1
    (moved,) = answer["events"]
    assert moved["location"] == "http://shop.example/q/b" and moved["status"] == 301
    assert moved["delivered"] == round(NOW - 5900, 3) and moved["time"] == round(NOW - 86_400, 3)


@pytest.mark.parametrize(
    ("given", "said"),
    [
        (
            {"kind": ["gone", "deleted"]},
            "--kind 'deleted' is not a change event kind: use new, changed, gone, back, moved.",
        ),  # fmt: skip
        ({"url": "(unclosed"}, "--url '(unclosed' is not a valid regular expression"),
        ({"since": "soon"}, "--since ('soon') must be"),
        ({"since": "0"}, "--since ('0') must be"),
        ({"limit": "many"}, "--limit ('many') must be a whole number from 1 to 100000."),
    ],
)
def test_bad_options_get_one_line_and_exit_code_2_before_anything_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], given: dict[str, Any], said: str
) -> None:
    code, out, err = run(capsys, str(tmp_path / "no-such-folder"), **given)  # refused before the folder is looked at
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert err.startswith(f"scrapy frontier changes: {said}"), err


def test_a_folder_without_history_says_how_events_are_turned_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = StateDir(str(tmp_path / "state"), temporary=False)
    open_store(state, spider="s", fingerprinter="fp", sync=False).close()
    code, out, _ = run(capsys, state.path)
    assert code == 0 and out.splitlines() == [
        "no change events",
        "the state folder holds no history of change events (changes.log): they are recorded when "
        "ADAPTIVE_CHANGE_EVENTS or ADAPTIVE_CHANGES_FEED is on",
    ]


def test_the_reading_stops_once_nothing_older_can_qualify_and_misses_none_delivered_late(tmp_path: Path) -> None:
    """Events leave the outbox in delivery order, not in their own time's:
    one made long ago and delivered late (a fleet worker's queue taken
    over) is still among the newest when it is."""
    history = ChangesLog(str(tmp_path), 1 << 20, 0)
    for i in range(200):
        history.write([event("changed", f"{A}{i}", 10_000 - i)], NOW - 10_000 + i + 1)
    history.write([event("gone", B, 50)], NOW - 10)  # made 50 s ago, delivered 10 s ago
    history.write([event("changed", A, 5_000)], NOW - 5)  # made long ago, delivered last
    history.close()
    found = find_changes(str(tmp_path), None, now=NOW, limit=3)
    assert [(e["kind"], e["url"]) for e in found["events"]] == [
        ("gone", B),
        ("changed", A),
        ("changed", A + "199"),
    ]
    assert found["more"] is True and found["pending"] == 0
    found = find_changes(str(tmp_path), None, now=NOW, since=100)
    assert [e["url"] for e in found["events"]] == [B] and found["more"] is False


def test_kinds_are_named_one_by_one_or_with_commas() -> None:
    assert kinds_of(None) == ["new", "changed", "gone", "back", "moved"]
    assert kinds_of(["Gone, back", "gone"]) == ["gone", "back"]
    assert changes_request(opts("x", since="90m", kind=["moved"], limit="5")) == {
        "op": "changes",
        "since": 5400.0,
        "url": None,
        "kinds": ["moved"],
        "limit": 5,
    }


def test_url_lists_the_urls_events_and_the_control_channel_answers_changes(tmp_path: Path) -> None:
    clock = Clock(NOW)
    f: Frontier = make(MemoryStore(), clock)
    f.load()
    add(f, A)
    issued = f.next()
    assert issued is not None
    f.update(issued.fp, visited(), Plan(100.0), presence=[1, 0, 0], event="new")  # in the outbox, not delivered yet
    history = ChangesLog(str(tmp_path), 1 << 20, 0)
    history.write([event("new", B, 30), event("gone", A, 7200, status=410)], NOW - 7000)
    history.close()
    console = FrontierConsole(f, state_path=str(tmp_path))
    answer = console.url(A)
    assert answer is not None and [e["kind"] for e in answer["events"]] == ["new", "gone"]
    lines = answer["lines"]
    at = lines.index("change events, newest first:")
    assert "new" in lines[at + 1] and "(not delivered yet)" in lines[at + 1]
    assert "gone" in lines[at + 2] and "410" in lines[at + 2] and A not in lines[at + 2]
    (reply,) = console.answer({"op": "changes", "kinds": ["gone"], "since": 86_400, "url": None, "limit": 10})
    assert [e["url"] for e in reply["changes"]["events"]] == [A]


def test_the_report_lists_the_latest_changes_and_the_gone_pages_per_host(tmp_path: Path) -> None:
    from scrapy_adaptive.ops.console.html import render
    from scrapy_adaptive.ops.console.run import report_lines

    clock = Clock(NOW)
    f: Frontier = make(MemoryStore(), clock, min_delay=0.0, max_delay=0.0, delay_factor=0.0)
    f.load()
    for url in (A, B, "http://other.example/x"):
        add(f, url)
    said: dict[str, int] = {}
    for presence, event_kind in (([1, 0, 0], "new"), ([1, 2, 1], "gone"), ([1, 2, 1], "gone")):
        clock.t += 1
        issued = f.next()
        assert issued is not None
        f.update(issued.fp, visited(), Plan(100.0), presence=presence, event=event_kind)
        host = issued.record.queue
        said[host] = said.get(host, 0) + (event_kind == "gone")
    history = ChangesLog(str(tmp_path), 1 << 20, 0)
    history.write([event("moved", A, 600, status=301, location="http://shop.example/new/a")], NOW - 500)
    history.close()
    report = FrontierConsole(f, state_path=str(tmp_path)).report()
    section = report["changes"]
    assert report["totals"]["gone"] == 2 and sum(h["gone"] for h in report["hosts"]) == 2
    assert {r["host"]: r["gone"] for r in section["gone_by_host"]} == {h: n for h, n in said.items() if n}
    assert [e["kind"] for e in section["events"]] == ["gone", "gone", "new", "moved"]  # three not delivered yet
    page = render(report)
    assert "<h2>Latest changes</h2>" in page and "<h2>Gone pages per host</h2>" in page
    host, n = max(said.items(), key=lambda kv: kv[1])
    assert f"<td>{host}</td><td>{n}</td>" in page and "http://shop.example/new/a" in page
    assert "gone (not delivered yet)" in page
    text = "\n".join(report_lines(report))
    assert "latest change events:" in text and "gone pages per host:" in text


#: an items-mode change and a text diff, as the feed has them
PRICE = {
    "changed": [{"item": "SKU-42", "fields": ["name", "price"], "values": {"price": ["10.00", "9." + "9" * 80]}}],
    "added": ["SKU-77"],
    "removed": [],
}
DIFF = "@@ -1,3 +1,3 @@\n Kettle\n-Price 10 EUR\n+Price 11 EUR\n In stock"


def test_each_event_says_what_changed_in_the_changes_url_and_report_views(tmp_path: Path) -> None:
    """Items mode: the item, the field, old → new (values cut at 60
    characters); a text diff: its changed lines.  ``--json`` keeps them whole."""
    from scrapy_adaptive.ops.console.changes_command import what_changed
    from scrapy_adaptive.ops.console.html import render
    from scrapy_adaptive.ops.console.run import report_lines

    assert what_changed(event("changed", A, 60, fields=PRICE)) == [
        "item SKU-42: name; price 10.00 → 9." + "9" * 57 + "…",
        "items added: SKU-77",
    ]
    assert what_changed(event("changed", A, 60, text_diff=DIFF)) == ["-Price 10 EUR", "+Price 11 EUR"]
    many = {"changed": [{"item": str(n), "fields": ["f"]} for n in range(5)], "added": [], "removed": []}
    assert what_changed(event("changed", A, 60, fields=many))[-1] == "… 2 more changed items"
    assert what_changed(event("gone", A, 60)) == []
    clock = Clock(NOW)
    f: Frontier = make(MemoryStore(), clock)
    f.load()
    history = ChangesLog(str(tmp_path), 1 << 20, 0)
    history.write([event("changed", A, 120, fields=PRICE), event("changed", B, 60, text_diff=DIFF)], NOW - 50)
    history.close()
    console = FrontierConsole(f, state_path=str(tmp_path))
    listed = console.changes({"since": None, "url": None, "kinds": ["changed"], "limit": 10})
    from scrapy_adaptive.ops.console.changes_command import changes_lines

    lines = changes_lines(listed, {"kinds": ["changed"]})
    assert lines[1].endswith(B) and lines[2:4] == ["      -Price 10 EUR", "      +Price 11 EUR"]
    assert lines[4].endswith(A) and lines[5].startswith("      item SKU-42: name; price 10.00 → 9.99")
    assert listed["events"][0]["text_diff"] == DIFF and listed["events"][1]["fields"] == PRICE  # --json: whole
    report = console.report()
    text = "\n".join(report_lines(report))
    assert "      +Price 11 EUR" in text and "price 10.00 → 9.99" in text
    page = render(report)
    assert "<th>what changed</th>" in page and '<span class="mono">+Price 11 EUR</span>' in page
    assert "price 10.00 → 9.99" in page
