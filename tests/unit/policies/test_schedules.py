"""Curated schedules: a window inside which a URL's wait is bounded, laid
over the policy that decides (which keeps its memory)."""

from __future__ import annotations

import json
from argparse import Namespace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy.settings import Settings

from scrapy_adaptive.config.settings import AdaptiveConfig
from scrapy_adaptive.config.spec import ConfigError
from scrapy_adaptive.dates import parse_time
from scrapy_adaptive.frontier import Frontier
from scrapy_adaptive.model import ChangeState, Outcome, Visit
from scrapy_adaptive.ops.console.schedule_command import schedule_request
from scrapy_adaptive.policies import load_wait_policy
from scrapy_adaptive.policies.base import PARAM_KEYS, WaitParams
from scrapy_adaptive.policies.schedules import CLOSED, OPEN, PENDING, Schedule, Schedules, schedules_of
from scrapy_adaptive.runtime.schedule_entries import STORE_KEY, load_stored
from scrapy_adaptive.store.base import MemoryStore
from tests.hypo import examples

START = parse_time("2026-11-01T00:00:00Z")
END = parse_time("2026-11-08")
ELECTION = {"url": "/news/", "from": "2026-11-01T00:00:00Z", "until": "2026-11-08", "every": 3600}


def config(*entries: dict[str, Any], **values: object) -> AdaptiveConfig:
    values.setdefault("ADAPTIVE_WAIT_POLICY", "scrapy_adaptive.policies.HeritrixWaitPolicy")
    values["ADAPTIVE_WAIT_POLICIES"] = list(entries)
    return AdaptiveConfig.from_settings(Settings(values))


def visit(url: str, at: float, change: ChangeState = ChangeState.UNCHANGED) -> Visit:
    return Visit(Outcome.VISITED, change=change, status=200, url=url, content_type="text/html", fetched=at)


def test_window_parsing_dates_datetimes_and_open_ends() -> None:
    s = Schedule.parse(ELECTION, "entry")
    assert (s.start, s.end, s.every, s.ceiling) == (START, END, 3600, 3600)
    assert s.state(START - 1) == PENDING and s.state(START) == OPEN and s.state(END) == CLOSED
    open_ended = Schedule.parse({"hosts": "news.example", "from": "2026-11-01", "max": 600}, "entry")
    assert open_ended.end is None and open_ended.state(START + 1e9) == OPEN
    until_only = Schedule.parse({"url": "x", "until": "2026-11-08T12:00+01:00", "min": 60}, "e", name="n")
    assert until_only.start is None and until_only.end == END + 11 * 3600 and until_only.ceiling is None


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"url": "/a", "from": "next tuesday", "every": 60}, r"\[1\]: 'from' \('next tuesday'\) is not an ISO 8601"),
        ({"url": "/a", "from": "2026-11-08", "until": "2026-11-01", "every": 60}, "'until'.*later than 'from'"),
        ({"url": "/a", "from": "2026-11-01"}, "must bound the wait with 'every', 'min' or 'max'"),
        ({"url": "/a", "every": 0}, "'every' \\(0\\) must be a finite number > 0"),
        ({"url": "/a", "every": 60, "initial": 5}, "unknown key\\(s\\) initial"),
        ({"every": 60}, "names none of"),
        ({"url": "/a", "every": 60, "min": 120}, "'every' \\(60\\) must not be lower than 'min'"),
    ],
)
def test_a_bad_schedule_is_one_config_error_naming_the_entry(entry: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=rf"ADAPTIVE_WAIT_POLICIES\[1\].*{message}|{message}") as info:
        load_wait_policy(config({"content_type": "text/*", "initial": 10}, entry))
    assert "ADAPTIVE_WAIT_POLICIES[1]" in str(info.value)


def test_inside_the_window_the_bounds_win_outside_the_policy_decides() -> None:
    stack = load_wait_policy(config(ELECTION, ADAPTIVE_WAIT_INITIAL=86_400, ADAPTIVE_WAIT_MIN=60))
    assert not stack.entries and len(stack.schedules.items) == 1  # an overlay, not a dispatcher
    history = {"visits": 3, "wait": 86_400.0}
    news, other = "http://example.com/news/today", "http://example.com/about"
    unchanged = 86_400 * 1.5  # Heritrix's rule, unchanged
    assert stack.next_wait(history, visit(news, START + 10)) == 3600
    assert stack.next_wait(history, visit(other, START + 10)) == unchanged
    assert stack.next_wait(history, visit(news, END + 1)) == unchanged  # closed: the policy again
    # planned before the window: at most `every` after it opens
    assert stack.next_wait(history, visit(news, START - 7200)) == 7200 + 3600
    assert stack.next_wait(history, visit(news, START - 10 * 86_400)) == unchanged
    assert stack.schedules.forced == {"ADAPTIVE_WAIT_POLICIES[0]": 2}


def test_min_and_max_bound_inside_the_window_and_a_shorter_policy_wait_stands() -> None:
    s = Schedules([Schedule.parse({"url": "/n/", "from": "2026-11-01", "min": 300, "max": 900}, "e")])
    assert s.apply("http://a/n/1", "a", "text/html", 60, START + 1) == 300
    assert s.apply("http://a/n/1", "a", "text/html", 600, START + 1) == 600
    assert s.apply("http://a/n/1", "a", "text/html", 5000, START + 1) == 900
    assert s.forced == {"e": 1}  # only the shortened wait took from the budget
    s.restore_forced({"e": 4, "gone": 2, 3: "x"})
    assert s.forced == {"e": 5, "gone": 2}


def test_the_policy_keeps_learning_the_schedule_changes_only_the_wait() -> None:
    """The policy's memory after a visit inside the window is what it would
    have been without the schedule: nothing to hand back when it closes."""
    with_schedule = load_wait_policy(config(ELECTION, ADAPTIVE_WAIT_POLICY="scrapy_adaptive.policies.BurstWaitPolicy"))
    without = load_wait_policy(config(ADAPTIVE_WAIT_POLICY="scrapy_adaptive.policies.BurstWaitPolicy"))
    history: dict[str, Any] = {"visits": 0, "policy": {}}
    news = "http://example.com/news/today"
    states = []
    for stack in (with_schedule, without):
        v = visit(news, START + 100, ChangeState.CHANGED)
        plan = stack.plan(history, v)
        states.append((plan.memory, plan.wait))
    (kept, bounded), (own, policy_wait) = states
    # the same estimate and state ('al' names each stack's own allocator)
    assert {k: v for k, v in kept.items() if k != "al"} == {k: v for k, v in own.items() if k != "al"}
    assert kept["al"][1:] == own["al"][1:]
    assert bounded == min(policy_wait, 3600)


def test_first_listed_open_schedule_decides_and_names_must_be_unique() -> None:
    fast = {"url": "/news/", "every": 60, "name": "fast"}
    slow = {"url": "/news/", "every": 600, "name": "slow"}
    stack = load_wait_policy(config(fast, slow))
    assert stack.next_wait({"visits": 1, "wait": 1e5}, visit("http://e/news/", START)) == 60
    with pytest.raises(ConfigError, match=r"ADAPTIVE_WAIT_POLICIES\[1\]: another schedule is already named 'fast'"):
        load_wait_policy(config(fast, dict(slow, name="fast")))


def test_a_request_s_own_numbers_are_bounded_by_an_open_window_too() -> None:
    stack = load_wait_policy(config(ELECTION, ADAPTIVE_WAIT_POLICY="scrapy_adaptive.policies.ConstantWaitPolicy"))
    own = stack.with_overrides({"default": 50_000})
    assert own is not stack and own is stack.with_overrides({"default": 50_000})  # cached
    assert own.next_wait({"visits": 2}, visit("http://e/news/1", START + 5)) == 3600
    assert own.next_wait({"visits": 2}, visit("http://e/news/1", END + 5)) == 50_000


def test_a_settings_schedule_whose_window_has_closed_is_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    past = {"url": "/news/", "from": "2020-01-01", "until": "2020-01-08", "every": 3600}
    later = {"url": "/live/", "until": "2999-01-01", "every": 600}
    with caplog.at_level("WARNING"):
        schedules = schedules_of([past, later], "ADAPTIVE_WAIT_POLICIES")
    assert len(list(schedules)) == 2  # kept: the setting is the user's, the warning says it does nothing
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warned == [
        "ADAPTIVE_WAIT_POLICIES[0]: its window closed at 2020-01-08, so it bounds no wait; "
        "remove it or move its 'until'."
    ]


# -- durations: one reading in every kind of entry ------------------------------------------------

#: every key that holds a duration, in every kind of entry that has one (a
#: request's ``adaptive_wait_policy`` is read as a policy entry is)
DURATION_KEYS = [
    ("settings", "ADAPTIVE_WAIT_MIN"),
    ("settings", "ADAPTIVE_WAIT_INITIAL"),
    *(("policy entry", key) for key in ("initial", "default", "min", "max")),
    *((kind, key) for kind in ("schedule", "stored schedule", "console option") for key in ("every", "min", "max")),
]
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
#: a duration as written, and its seconds (at most 3000 days: under the 10-year limit)
DURATIONS = st.one_of(
    st.tuples(st.integers(1, 3000), st.sampled_from(sorted(UNITS))).map(
        lambda t: (f"{t[0]}{t[1]}", t[0] * UNITS[t[1]])
    ),
    st.tuples(st.integers(1, 999), st.sampled_from(sorted(UNITS))).map(
        lambda t: (f"{t[0]}.5{t[1]}", (t[0] + 0.5) * UNITS[t[1]])
    ),
    st.integers(1, 10**8).map(lambda n: (str(n), n)),
    st.integers(1, 10**8).map(lambda n: (n, n)),
    st.floats(0.5, 1e8).map(lambda x: (x, x)),
)


def read_duration(kind: str, key: str, raw: Any) -> float:
    """*raw* written as *key* in an entry of *kind*, as the crawl or the console reads it."""
    wide = 10 * 365 * 86_400  # the other bound opened wide, so any value passes min <= max
    if kind == "settings":
        values = {key: raw, "ADAPTIVE_WAIT_MAX": wide}
        return getattr(AdaptiveConfig.from_settings(Settings(values)), key.removeprefix("ADAPTIVE_").lower())
    if kind == "policy entry":
        other = {"min": {"max": wide}, "max": {"min": 0}}.get(key, {})
        return getattr(WaitParams().updated({key: raw, **other}, "ADAPTIVE_WAIT_POLICIES[0]"), PARAM_KEYS[key])
    attribute = {"every": "every", "min": "minimum", "max": "maximum"}[key]
    if kind == "schedule":
        entry = {"url": "p1[0-2]", "from": "2026-01-01", key: raw}
        return getattr(load_wait_policy(config(entry)).schedules.items[0], attribute)
    if kind == "stored schedule":
        frontier = Frontier(MemoryStore())
        frontier.notes.write(STORE_KEY, json.dumps([{"name": "s1", "url": "/a", key: raw}]).encode())
        schedules = Schedules()
        for problem in load_stored(frontier, schedules):  # said at start, the entry skipped
            raise ConfigError(problem)
        return getattr(schedules.items[0], attribute)
    if kind == "console option":
        options = {"every": None, "min_wait": None, "max_wait": None, "from_": None, "until": None, "name": None}
        options[{"every": "every", "min": "min_wait", "max": "max_wait"}[key]] = str(raw)
        opts = Namespace(list=False, remove=None, match="/a", force=False, **options)
        return schedule_request(opts)["entry"][key]
    raise AssertionError(kind)


@settings(max_examples=examples(60), deadline=None)
@given(written=DURATIONS)
@pytest.mark.parametrize(("kind", "key"), DURATION_KEYS)
def test_every_duration_key_reads_a_duration_the_same_way(kind: str, key: str, written: tuple[Any, float]) -> None:
    raw, seconds = written
    assert read_duration(kind, key, raw) == pytest.approx(seconds)


@pytest.mark.parametrize(("kind", "key"), DURATION_KEYS)
def test_every_duration_key_refuses_what_is_not_one_in_the_same_words(kind: str, key: str) -> None:
    name = {"settings": key, "console option": f"--{key}"}.get(kind, f"{key!r}")
    for raw, problem in [
        ("soon", "a number of seconds (or 90s, 15m, 1h, 2d)"),
        ("1y", "a number of seconds (or 90s, 15m, 1h, 2d)"),
        ("3651d", "at most 315360000 seconds (10 years)"),
    ]:
        with pytest.raises(ConfigError) as info:
            read_duration(kind, key, raw)
        message = str(info.value)
        assert message.count("\n") == 0 and name in message and f"must be {problem}" in message, message
        assert f"({raw!r})" in message or kind == "settings", message  # a setting's range: its value in seconds


def test_the_issue_s_entries_read_30s_as_30_seconds() -> None:
    every = load_wait_policy(config({"url": "p1[0-2]", "from": "2026-01-01", "every": "30s"})).schedules.items[0]
    assert every.every == 30
    floor = load_wait_policy(config({"url": "p1[0-2]", "from": "2026-01-01", "min": "30s"})).schedules.items[0]
    assert floor.minimum == 30
    assert WaitParams().updated({"min": "30s"}, "ADAPTIVE_WAIT_POLICIES[0]").minimum == 30
