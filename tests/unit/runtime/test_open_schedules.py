"""A window opening brings its URLs forward (the tick's OpenSchedules task,
through the frontier's bring_forward), and forced revisits are kept."""

from __future__ import annotations

from typing import Any

import pytest

from scrapy_adaptive.frontier import Frontier, Store
from scrapy_adaptive.frontier.bring_forward import bring_forward
from scrapy_adaptive.model import Plan
from scrapy_adaptive.ops.console.schedule_command import ScheduleConsole
from scrapy_adaptive.policies.schedules import Schedule, Schedules
from scrapy_adaptive.runtime.schedule_entries import FORCED_KEY, STORE_KEY, forced_counts
from scrapy_adaptive.runtime.schedule_opening import SYNC_TICKS, OpenSchedules
from scrapy_adaptive.store.keys import time_to_ms
from tests.unit.frontier.test_frontier import Clock, add, fp, make, visited

DAY = 86_400.0


class Stats:
    def __init__(self) -> None:
        self.values: dict[str, Any] = {}

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] = self.values.get(key, 0) + count

    def set_value(self, key: str, value: Any) -> None:
        self.values[key] = value


def planned(f: Frontier, url: str) -> float:
    record = f.get_record(url.split("/")[2], fp(url))
    assert record is not None
    return record.next_ms / 1000


def crawled(f: Frontier, clock: Clock, urls: list[str], wait: float) -> None:
    """Every URL visited once, its next visit *wait* away."""
    for url in urls:
        add(f, url)
    for _ in urls:
        clock.t += 10
        issued = f.next()
        assert issued is not None
        f.update(issued.fp, visited(), Plan(wait))


def test_a_window_opening_brings_matched_urls_forward_spread_over_every(store: Store) -> None:
    clock = Clock()
    f = make(store, clock, min_delay=0.0, max_delay=0.0, valence=4)
    urls = [f"http://a/news/{i}" for i in range(20)] + ["http://a/about", "http://b/news/x"]
    crawled(f, clock, urls, wait=30 * DAY)
    start = clock.t + 100
    schedule = Schedule.parse({"url": "/news/", "from": start, "every": 3600}, "e")
    stats: Any = Stats()
    woken: list[int] = []
    task = OpenSchedules(f, Schedules([schedule]), stats, lambda: woken.append(1))
    task.run()
    assert planned(f, "http://a/news/0") > clock.t + 29 * DAY  # pending: nothing moves
    clock.t = start + 1
    task.run()
    news = [planned(f, u) for u in urls if "/news/" in u]
    assert all(clock.t <= t <= clock.t + 3600 for t in news), news
    assert max(news) - min(news) > 1800  # spread over `every`, not all at once
    assert planned(f, "http://a/about") > clock.t + 29 * DAY
    assert stats.values["adaptive/schedules/opened"] == 1 and woken
    # once per opening: the next tick moves nothing
    task.run()
    assert stats.values["adaptive/schedules/opened"] == 1
    # the frontier hands out the moved URLs when due
    clock.t += 3600
    assert f.next() is not None


def test_bring_forward_never_moves_a_visit_later_and_skips_urls_out(store: Store) -> None:
    clock = Clock()
    f = make(store, clock, min_delay=0.0, max_delay=0.0, valence=4)
    crawled(f, clock, ["http://a/1", "http://a/2"], wait=100)
    add(f, "http://a/3")
    out = f.next()
    assert out is not None and out.record.url == "http://a/3"
    before = planned(f, "http://a/1")
    assert bring_forward(f, lambda record: clock.t + 1000) == 0  # later than planned: stays
    assert bring_forward(f, lambda record: clock.t + 5) == 2  # a/3 is out: left to its verdict
    assert planned(f, "http://a/1") == time_to_ms(clock.t + 5) / 1000 < before


def test_forced_revisits_are_saved_and_restored(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    schedules = Schedules([Schedule.parse({"url": "/n/", "every": 60, "name": "n"}, "e")])
    task = OpenSchedules(f, schedules, Stats(), lambda: None)  # type: ignore[arg-type]
    schedules.apply("http://a/n/1", "a", None, 3600, clock.t)
    task.run()
    assert forced_counts(f) == {"n": 1}
    schedules.apply("http://a/n/1", "a", None, 3600, clock.t)
    task.run()
    assert forced_counts(f) == {"n": 2}  # what this worker added since, not its total again
    # a restart, or a second worker on the same store: starts from the stored count, the sum grows
    again = Schedules([Schedule.parse({"url": "/n/", "every": 60, "name": "n"}, "e")])
    second = OpenSchedules(f, again, Stats(), lambda: None)  # type: ignore[arg-type]
    assert again.forced == {"n": 2}
    again.apply("http://a/n/2", "a", None, 3600, clock.t)
    second.run()
    schedules.apply("http://a/n/1", "a", None, 3600, clock.t)
    task.run()
    assert forced_counts(f) == {"n": 4} and f.notes.read(FORCED_KEY) is not None


def test_a_schedule_removed_and_added_again_opens_again(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    schedule = Schedule.parse({"url": "/n/", "every": 60, "name": "n"}, "e")
    schedules = Schedules([schedule])
    stats: Any = Stats()
    task = OpenSchedules(f, schedules, stats, lambda: None)
    task.run()
    task.run()
    assert stats.values["adaptive/schedules/opened"] == 1
    schedules.remove("n")
    task.run()
    schedules.add(schedule)
    task.run()
    assert stats.values["adaptive/schedules/opened"] == 2


def test_schedules_another_worker_s_console_added_or_removed_are_taken(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    schedules = Schedules()
    task = OpenSchedules(f, schedules, Stats(), lambda: None)  # type: ignore[arg-type]
    other = ScheduleConsole(f, schedules=Schedules())  # the console of another worker
    next(iter(other.answer({"op": "schedule", "action": "add", "entry": {"url": "/n/", "every": 60, "name": "n"}})))
    for _ in range(SYNC_TICKS):
        task.run()
    assert [s.name for s in schedules] == ["n"]
    next(iter(other.answer({"op": "schedule", "action": "remove", "name": "n"})))
    for _ in range(SYNC_TICKS):
        task.run()
    assert not schedules.items


def test_unreadable_stored_schedules_leave_the_crawl_running_and_applied_ones_kept(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    """A garbled ``m/schedules`` refused the start with a wall of tracebacks
    (the task read them again, unguarded, after the assembly had said they
    are left for a repair); one garbled under a running crawl raised at
    every sync."""
    clock = Clock()
    f = make(store, clock)
    f.notes.write(STORE_KEY, b"\x00garbage{")
    OpenSchedules(f, Schedules(), Stats(), lambda: None).run()  # type: ignore[arg-type]  # said by the assembly
    assert caplog.records == []
    schedules = Schedules()
    task = OpenSchedules(f, schedules, Stats(), lambda: None)  # type: ignore[arg-type]
    f.notes.write(STORE_KEY, b'[{"url": "/n/", "every": 60, "name": "n"}]')
    for _ in range(SYNC_TICKS):
        task.run()
    assert [s.name for s in schedules] == ["n"]
    f.notes.write(STORE_KEY, b"\x00garbage{")
    for _ in range(3 * SYNC_TICKS):
        task.run()
    assert [s.name for s in schedules] == ["n"]  # kept until they can be read again
    (said,) = [r.getMessage() for r in caplog.records]
    assert said.startswith("the state folder's schedules (key m/schedules) are unreadable")


@pytest.mark.parametrize("raw", [b"not json", b"[1, 2]"])
def test_unreadable_forced_counts_are_said_once_at_open_and_count_again(store: Store, raw: bytes, caplog: Any) -> None:
    """A garbled count is not a reason to refuse the crawl, but it is said:
    the counts the console reports start from zero again."""
    clock = Clock()
    f = make(store, clock)
    f.notes.write(FORCED_KEY, raw)
    schedules = Schedules([Schedule.parse({"url": "/n/", "every": 60, "name": "n"}, "e")])
    caplog.set_level("WARNING", logger="scrapy_adaptive")
    task = OpenSchedules(f, schedules, Stats(), lambda: None)  # type: ignore[arg-type]
    said = [r.getMessage() for r in caplog.records if "m/schedules-forced" in r.getMessage()]
    assert len(said) == 1 and "count from zero again" in said[0]
    assert forced_counts(f) == {}  # read elsewhere (the console, the tick): no more lines
    schedules.apply("http://a/n/1", "a", None, 3600, clock.t)
    task.run()
    assert (
        forced_counts(f) == {"n": 1} and len([r for r in caplog.records if "m/schedules-forced" in r.getMessage()]) == 1
    )
