"""The console's ``schedule`` requests on an opened frontier: costed, kept
in the store, listed, in the report (text and HTML), removed."""

from __future__ import annotations

from argparse import Namespace
from typing import Any

import pytest

from scrapy_adaptive.frontier import MemoryStore
from scrapy_adaptive.ops.console.html import render
from scrapy_adaptive.ops.console.run import report_lines
from scrapy_adaptive.ops.console.schedule_command import (
    ScheduleConsole,
    schedule_lines,
    schedule_request,
)
from scrapy_adaptive.policies.schedules import Schedule, Schedules
from scrapy_adaptive.runtime.schedule_entries import load_stored, stored_entries
from tests.unit.frontier.test_frontier import Clock, make
from tests.unit.runtime.test_open_schedules import crawled


def console(schedules: Schedules | None = None, budget: float | None = None) -> ScheduleConsole:
    clock = Clock()
    f = make(MemoryStore(), clock, min_delay=1.0, max_delay=1.0, valence=1)
    crawled(f, clock, [f"http://a/news/{i}" for i in range(10)] + ["http://b/news/x", "http://b/about"], wait=1e6)
    return ScheduleConsole(f, schedules=Schedules() if schedules is None else schedules, budget_per_day=budget)


def ask(c: ScheduleConsole, **request: Any) -> dict[str, Any]:
    (answer,) = c.answer({"op": "schedule", **request})
    return answer


def test_add_is_costed_refused_when_politeness_cannot_and_kept_when_it_can() -> None:
    live = Schedules()
    c = console(live, budget=10_000)
    # 10 URLs a second apart on host a, each every 5 s: 172,800 fetches a day against ~43,000
    refused = ask(c, action="add", entry={"url": "/news/", "every": 5})
    assert "host a: 10 URLs need 172800 fetches a day, its politeness allows" in refused["error"]
    assert "nothing was kept" in refused["error"] and not stored_entries(c.frontier) and not live
    added = ask(c, action="add", entry={"url": "/news/", "every": 3600})
    assert added["added"] == "s1" and added["warning"] is None
    assert added["cost"]["matched"] == 11 and added["cost"]["per_day"] == 11 * 24
    assert (
        added["words"] == "schedule s1: 11 URLs on 2 hosts, up to 264 fetches a day (3% of ADAPTIVE_BUDGET, 10000/day)"
    )
    assert live.get("s1") is not None  # a running crawl's own collection: applied at once
    forced = ask(c, action="add", entry={"url": ".", "every": 1, "name": "all"}, force=True)
    assert forced["added"] == "all" and "politeness cannot honour it" in forced["warning"]
    again = Schedules()
    assert load_stored(c.frontier, again) == [] and [s.name for s in again] == ["s1", "all"]
    closed = ask(c, action="add", entry={"url": "x", "every": 60, "until": "1970-01-02"})
    assert closed["error"] == "schedule 's2': its window closed at 1970-01-02; nothing was kept."
    assert "already named 's1'" in ask(c, action="add", entry={"url": "x", "every": 60, "name": "s1"})["error"]


def test_list_report_and_remove() -> None:
    settings = Schedules([Schedule.parse({"url": "/about", "min": 60, "name": "about"}, "e")])
    c = console(settings)
    ask(c, action="add", entry={"url": "/news/", "every": 60, "from": "1971-01-01T00:00:00Z", "name": "later"})
    rows = ask(c, action="list")["schedules"]
    assert [(r["name"], r["state"], r["matched"], r["source"]) for r in rows] == [
        ("about", "open", 1, "settings"),
        ("later", "pending", 11, "console"),
    ]
    report = c.report()
    text = "\n".join(report_lines(report))
    assert "schedules (2):" in text and "later" in text and "1971-01-01T00:00:00Z" in text
    page = render(report)
    assert "<h2>Curated schedules</h2>" in page and "<td>later</td>" in page
    assert "is set in ADAPTIVE_WAIT_POLICIES" in ask(c, action="remove", name="about")["error"]
    assert ask(c, action="remove", name="later") == {"removed": "later"}
    assert schedule_lines(ask(c, action="list"))[1].lstrip().startswith("about")
    assert "does not exist" in ask(c, action="remove", name="later")["error"]


def test_the_command_line_options() -> None:
    base = dict(list=False, remove=None, match=None, every=None, min_wait=None, max_wait=None)
    base.update(from_=None, until=None, name=None, force=False)
    with pytest.raises(ValueError, match=r"--every \('hourly'\) must be a number of seconds \(or 90s, 15m, 1h, 2d\)"):
        schedule_request(Namespace(**{**base, "match": "/n/", "every": "hourly"}))
    request = schedule_request(
        Namespace(**{**base, "match": "/n/", "every": "15m", "from": None, "until": "2026-12-01"})
    )
    assert request == {
        "op": "schedule",
        "action": "add",
        "entry": {"url": "/n/", "every": 900.0, "until": "2026-12-01"},
        "force": False,
    }
    with pytest.raises(ValueError, match="give --match"):
        schedule_request(Namespace(**base))
    assert schedule_request(Namespace(**{**base, "remove": "n"})) == {"op": "schedule", "action": "remove", "name": "n"}


@pytest.mark.parametrize("raw", [b"{garbled", b'{"name": "a"}', b'[{"url": "x", "every": 60}]'])
def test_unreadable_stored_schedules_are_said_and_never_overwritten(raw: bytes) -> None:
    from scrapy_adaptive.runtime.schedule_entries import STORE_KEY

    c = console()
    c.frontier.notes.write(STORE_KEY, raw)
    (problem,) = load_stored(c.frontier, Schedules())
    assert f"key m/{STORE_KEY}" in problem and "left as they are" in problem
    refused = ask(c, action="add", entry={"url": "/news/", "every": 3600})
    assert f"key m/{STORE_KEY}" in refused["error"]
    assert c.frontier.notes.read(STORE_KEY) == raw  # the operator's schedules, kept for a repair
    assert ask(c, action="list")["schedules"] == []
