"""Change hints: parsing the meta, the frontier's hint method, learned trust,
the policies' decisions and accounting, and the simulator's hints."""

from __future__ import annotations

import hashlib
import math
from datetime import UTC, datetime, timedelta, timezone
from email.utils import format_datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_adaptive.frontier import ChangeState, Frontier, MemoryStore, Outcome, Politeness, Visit
from scrapy_adaptive.frontier.hints import CONFIRMED, REFUTED, TRUST_MEMORY, Hint, HintResult, observe
from scrapy_adaptive.model import Plan
from scrapy_adaptive.policies import (
    BurstWaitPolicy,
    ConstantWaitPolicy,
    PolicyStack,
    PrecisionWaitPolicy,
    ProportionalWaitPolicy,
    RateAllocator,
    WaitParams,
)
from scrapy_adaptive.policies.hint_decisions import accept, evidence, marginal_value, precision
from scrapy_adaptive.policies.history import elapsed, visit_time
from scrapy_adaptive.runtime.request_hints import HintError, hint_from_meta, parse_time
from tests.hypo import examples

T0 = 1_700_000_000.0
URL = "http://a.example/p"

# -- parsing ------------------------------------------------------------------------

moments = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC)).map(
    lambda d: d.replace(microsecond=0)
)


@given(moments)
def test_every_accepted_form_gives_the_same_second(moment: datetime) -> None:
    expected = moment.timestamp()
    forms = [
        format_datetime(moment, usegmt=True),  # HTTP date
        moment.isoformat(),  # +00:00
        moment.isoformat().replace("+00:00", "Z"),
        moment.replace(tzinfo=None).isoformat(),  # no zone: UTC
        moment.astimezone(timezone(timedelta(hours=-5))).isoformat(),
        expected,
        int(expected),
        moment,
    ]
    if len(str(int(expected))) != 8:  # eight digits are an ISO 8601 basic date (before 1973-03-03 as seconds)
        forms.append(str(int(expected)))
    for form in forms:
        assert parse_time(form) == pytest.approx(expected), form


@given(st.dates(min_value=datetime(1971, 1, 1).date(), max_value=datetime(2200, 1, 1).date()))
def test_a_sitemap_date_alone_is_midnight_utc(day: Any) -> None:
    midnight = datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()
    assert parse_time(day.isoformat()) == midnight
    assert parse_time(day) == midnight


@settings(max_examples=examples(200))
@given(st.one_of(st.text(), st.booleans(), st.lists(st.integers()), st.floats()))
def test_anything_else_is_refused_with_a_value_error_or_read(value: Any) -> None:
    try:
        seconds = parse_time(value)
    except (ValueError, OverflowError, OSError):
        return
    assert seconds is None or (math.isfinite(seconds) and seconds >= 0)


@pytest.mark.parametrize(
    ("meta", "words"),
    [
        ("2024-01-01", ["must be a dict"]),
        ({"modified": "yesterday"}, ["'modified' ('yesterday')", "HTTP date"]),
        ({"modified": True}, ["'modified' (True)"]),
        ({"modified": -5}, ["'modified' (-5)"]),
        ({"modifed": "2024-01-01"}, ["unknown key", "'modifed'"]),
        ({"source": ""}, ["'source' ('')"]),
        ({"source": "a/b"}, ["without '/'"]),
    ],
)
def test_bad_meta_is_named_with_the_key_and_url(meta: Any, words: list[str]) -> None:
    with pytest.raises(HintError) as info:
        hint_from_meta(meta, URL)
    message = str(info.value)
    assert "meta['adaptive_hint']" in message and URL in message
    for word in words:
        assert word in message


def test_good_meta() -> None:
    hint = hint_from_meta({"modified": "2024-01-01T00:00:00Z", "source": "sitemap"}, URL)
    assert (hint.url, hint.modified, hint.source) == (URL, 1_704_067_200.0, "sitemap")
    assert hint_from_meta({}, URL).modified is None
    assert hint_from_meta({}, URL).source == "default"


# -- the frontier --------------------------------------------------------------------


class Clock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def fp(url: str) -> bytes:
    return hashlib.sha1(url.encode()).digest()


def visited(frontier: Frontier, clock: Clock, url: str, change: ChangeState, wait: float) -> None:
    issued = frontier.next()
    assert issued is not None and issued.record.url == url
    frontier.downloads.fetch_ended(issued.fp, 0.1)
    frontier.update(issued.fp, Visit(Outcome.VISITED, status=200, change=change, fetched=clock.t), Plan(wait))


def now_policy(history: Any, hint: Hint) -> float:
    return 0.0


def setup() -> tuple[Frontier, Clock, MemoryStore]:
    clock = Clock()
    store = MemoryStore()
    frontier = Frontier(store, Politeness(min_delay=0.0, max_delay=0.0, delay_factor=0.0), clock=clock)
    frontier.add(fp(URL), URL, "a.example", {"url": URL})
    return frontier, clock, store


def test_hint_moves_a_known_url_forward_and_its_visit_settles_it() -> None:
    frontier, clock, store = setup()
    assert (
        frontier.hosts.hint("a.example", fp("http://a.example/unknown"), Hint("x", None, "s"), now_policy)
        is HintResult.UNKNOWN
    )
    # due now anyway
    assert frontier.hosts.hint("a.example", fp(URL), Hint(URL, None, "s"), now_policy) is HintResult.LATER
    visited(frontier, clock, URL, ChangeState.CHANGED, 10 * 86_400)
    clock.t += 3_600
    assert frontier.next() is None
    # a modification the last visit already saw is stale
    assert frontier.hosts.hint("a.example", fp(URL), Hint(URL, T0 - 60, "s"), now_policy) is HintResult.STALE
    declined = frontier.hosts.hint("a.example", fp(URL), Hint(URL, clock.t - 60, "s"), lambda h, x: None)
    assert declined is HintResult.DECLINED
    seen: list[Hint] = []

    def policy(history: Any, hint: Hint) -> float:
        seen.append(hint)
        return 0.0

    assert frontier.hosts.hint("a.example", fp(URL), Hint(URL, clock.t - 60, "s"), policy) is HintResult.ACTED
    assert seen[0].received == clock.t and seen[0].trust == (0.0, 0.0, 0.0)
    assert frontier.hosts.hint("a.example", fp(URL), Hint(URL, None, "s"), policy) is HintResult.PENDING
    issued = frontier.next()
    assert issued is not None and issued.record.hint is not None and issued.record.hint["s"] == "s"
    assert issued.record.snapshot()["hint"]["s"] == "s"
    assert frontier.hosts.hint("a.example", fp(URL), Hint(URL, None, "s"), policy) is HintResult.OUT
    visit = Visit(Outcome.VISITED, status=200, change=ChangeState.CHANGED, fetched=clock.t)
    record = frontier.update(issued.fp, visit, Plan(86_400, hint_base=0.25))
    assert record is not None and record.hint is None
    assert record.notes == [CONFIRMED] and CONFIRMED not in visit.annotations  # the frontier's, not the verdict's
    assert frontier.hosts.hint_report() == {"a.example": {"s": [1.0, 0.0, 0.25]}}

    # the counts are persisted with the queue and pooled over hosts at load
    reopened = Frontier(store, clock=clock)
    reopened.load()
    assert reopened.hosts.hint_report() == {"a.example": {"s": [1.0, 0.0, 0.25]}}
    clock.t += 60
    reopened.hosts.hint("a.example", fp(URL), Hint(URL, None, "s"), policy)
    assert seen[-1].trust == (1.0, 0.0, 0.25) and seen[-1].pooled == (1.0, 0.0, 0.25)


def test_an_unchanged_visit_refutes_and_a_retry_keeps_the_hint() -> None:
    frontier, clock, _ = setup()
    visited(frontier, clock, URL, ChangeState.CHANGED, 86_400)
    clock.t += 60
    assert frontier.hosts.hint("a.example", fp(URL), Hint(URL, None, "feed"), now_policy) is HintResult.ACTED
    issued = frontier.next()
    assert issued is not None
    frontier.update(issued.fp, Visit(Outcome.RETRY, reason="timeout"), None)
    clock.t += 1_000
    issued = frontier.next()
    assert issued is not None and issued.record.hint is not None
    visit = Visit(Outcome.VISITED, status=200, change=ChangeState.UNCHANGED, fetched=clock.t)
    record = frontier.update(issued.fp, visit, Plan(86_400))
    assert record is not None and record.notes == [REFUTED]
    assert frontier.hosts.hint_report()["a.example"]["feed"] == [0.0, 1.0, 0.0]


# -- trust -----------------------------------------------------------------------------


def test_counts_are_halved_past_the_memory() -> None:
    counts: list[float] = [0.0, 0.0, 0.0]
    for i in range(TRUST_MEMORY + 1):
        counts = observe(counts, i % 4 == 0, 0.5)
    assert counts[0] + counts[1] <= TRUST_MEMORY
    assert counts[0] / (counts[0] + counts[1]) == pytest.approx(0.25, abs=0.01)


def test_changes_a_visit_would_have_found_anyway_are_not_credited() -> None:
    # junk hints on a page that changes anyway: half the hinted visits find a
    # change, and the policy expected that half without the hint
    assert evidence((50.0, 50.0, 50.0)) == (0.0, 50.0)
    junk = Hint(URL, None, "s", trust=(50.0, 50.0, 50.0))
    assert precision(junk) < 0.05


def acceptance(trust: tuple[float, float, float], threshold: float, pooled: tuple[float, ...] | None = None) -> float:
    pool = tuple(pooled) if pooled is not None else trust
    hints = [
        Hint(f"{URL}/{i}", None, "s", received=T0 + i, trust=trust, pooled=pool)  # type: ignore[arg-type]
        for i in range(2_000)
    ]
    return sum(accept(h, threshold) for h in hints) / len(hints)


def test_thompson_acceptance_follows_the_learned_precision() -> None:
    theta = marginal_value(1.0)
    assert theta == pytest.approx(1 - 2 / math.e)
    # a source never scored is acted on (else it never would be)
    assert acceptance((0.0, 0.0, 0.0), theta) == 1.0
    # one right and one wrong elsewhere: Beta(2, 2), P(p > θ) = 1 − (3θ² − 2θ³)
    expected = 1 - (3 * theta**2 - 2 * theta**3)
    assert acceptance((0.0, 0.0, 0.0), theta, pooled=(1.0, 1.0, 0.0)) == pytest.approx(expected, abs=0.04)
    assert acceptance((45.0, 5.0, 0.0), theta) > 0.97
    assert acceptance((5.0, 45.0, 0.0), theta) < 0.02
    # a new host of a source that lied everywhere else is hardly explored
    assert acceptance((0.0, 0.0, 0.0), theta, pooled=(0.0, 300.0, 0.0)) < 0.1
    # and the same hint always gets the same answer (runs repeat)
    hint = Hint(URL, None, "s", received=T0)
    assert len({accept(hint, theta) for _ in range(10)}) == 1


# -- policies ------------------------------------------------------------------------------


def trusted(url: str = URL) -> Hint:
    return Hint(url, None, "s", received=T0, trust=(40.0, 2.0, 5.0), pooled=(40.0, 2.0, 5.0))


def test_only_policies_that_account_for_hints_act_on_them() -> None:
    allocator = RateAllocator(1.0)
    assert ProportionalWaitPolicy(allocator).hint_wait({}, trusted()) == 0.0
    assert PrecisionWaitPolicy().hint_wait({}, trusted()) == 0.0
    # the burst policy shares the proportional plan (its schedule_rate hook), hence its accounting
    assert BurstWaitPolicy(allocator).hint_wait({}, trusted()) == 0.0

    class OwnPlan(ProportionalWaitPolicy):
        def plan(self, history: Any, visit: Visit) -> Plan:
            return Plan(60.0)

    assert OwnPlan(allocator).hint_wait({}, trusted()) is None  # has not said how it accounts for them
    assert ConstantWaitPolicy(WaitParams()).hint_wait({}, trusted()) is None
    stack = PolicyStack([], ProportionalWaitPolicy(allocator), WaitParams(), ProportionalWaitPolicy)
    assert stack.hint_wait({"content_type": "text/html"}, trusted()) == 0.0


def test_an_early_visit_is_timed_by_its_fetch_time() -> None:
    history = {"visits": 1, "fetched": T0, "wait": 10 * 86_400.0, "discovered": T0 - 5}
    early = Visit(Outcome.VISITED, change=ChangeState.CHANGED, overdue=2.0, fetched=T0 + 3_600)
    assert elapsed(history, early) == 3_600 and visit_time(history, early) == T0 + 3_600
    legacy = Visit(Outcome.VISITED, change=ChangeState.CHANGED, overdue=2.0)
    assert elapsed(history, legacy) == 10 * 86_400 + 2 and visit_time(history, legacy) == T0 + 10 * 86_400 + 2


def test_a_confirmed_hinted_visit_is_a_revisit_but_not_an_observation() -> None:
    allocator = RateAllocator(1.0, control_window=1_000.0)
    policy = ProportionalWaitPolicy(allocator)
    memory = {"o": [[86_400, 0]], "e": 1e-6}
    base = {"visits": 2, "fetched": T0, "wait": 86_400.0, "policy": memory, "url": URL}
    hinted = {**base, "hint": {"t": T0 + 100, "m": None, "s": "s", "c": [9, 1, 0], "g": [9, 1, 0]}}
    junk = {**base, "hint": {"t": T0 + 100, "m": None, "s": "s", "c": [2, 20, 1], "g": [2, 20, 1]}}
    visit = Visit(Outcome.VISITED, change=ChangeState.CHANGED, url=URL, fetched=T0 + 3_600)
    plan = policy.plan(hinted, visit)
    assert plan.memory is not None and plan.memory["o"] == [[86_400, 0]]  # not observed
    assert plan.hint_base == pytest.approx(-math.expm1(-1e-6 * 3_600))
    refuted = Visit(Outcome.VISITED, change=ChangeState.UNCHANGED, url=URL, fetched=T0 + 3_600)
    plan = policy.plan(hinted, refuted)
    assert plan.memory is not None and plan.memory["o"][-1] == [3_600, 0]  # an honest interval
    # a change found on a junk source's hint was found at a random moment: observed
    lucky = Visit(Outcome.VISITED, change=ChangeState.CHANGED, url=URL, fetched=T0 + 3_600)
    plan = policy.plan(junk, lucky)
    assert plan.memory is not None and plan.memory["o"][-1] == [3_600, 1]
    plain = Visit(Outcome.VISITED, change=ChangeState.CHANGED, url=URL, fetched=T0 + 3_600)
    plan = policy.plan(base, plain)
    assert plan.memory is not None and plan.memory["o"][-1] == [3_600, 1]
    assert plan.hint_base is None
    # hinted revisits are counted, and reserved from the schedule's budget
    assert allocator.hinted_rate() == 0.0  # too early to tell
    fresh = RateAllocator(1.0, control_window=1_000.0)
    for i in range(300):
        fresh.note_fetch(T0 + 10 * i, hinted=i % 2 == 0)
    assert fresh.hinted_rate() == pytest.approx(fresh.realised_rate() / 2, rel=0.05)  # type: ignore[operator]


# -- the simulator -----------------------------------------------------------------------
