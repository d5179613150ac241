"""The steps of the frontier's update, each on one record: measure the fetch,
judge the outcome, count the visit, fold what it saw and plan the next time."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_adaptive.frontier.hostqueue import HostQueue
from scrapy_adaptive.frontier.leases import Lease
from scrapy_adaptive.frontier.queues import Totals
from scrapy_adaptive.frontier.update_steps import (
    SEEN_FIELDS,
    change_event,
    count_visit,
    fold_visit,
    judge,
    measure,
    set_outcome_time,
)
from scrapy_adaptive.model import ChangeState, Outcome, Plan, UrlRecord, Visit
from scrapy_adaptive.store.keys import NEVER_MS, PROBE_DIRECTIVE, time_to_ms
from tests.hypo import examples

NOW = 1_800_000_000.0


def record(**fields: object) -> UrlRecord:
    return UrlRecord(url="http://a/1", queue="a", request={}, next_ms=0, **fields)  # type: ignore[arg-type]


def lease(**fields: object) -> Lease:
    return Lease("a", NOW - 10, NOW + 50, 0.0, record(), **fields)  # type: ignore[arg-type]


# -- measure -----------------------------------------------------------------------


def test_measure_prefers_the_verdicts_own_duration() -> None:
    visit = Visit(Outcome.VISITED, duration=0.25)
    assert measure(visit, lease(duration=3.0, fetch_started=NOW - 5), NOW) == 0.25


def test_measure_takes_the_downloaders_duration_then_the_time_since_it_started() -> None:
    visit = Visit(Outcome.VISITED)
    assert measure(visit, lease(duration=3.0, fetch_started=NOW - 5), NOW) == 3.0
    assert measure(visit, lease(fetch_started=NOW - 5), NOW) == 5.0
    assert measure(visit, lease(fetch_started=NOW + 1), NOW) == 0.0  # a clock step back: never negative
    assert visit.duration is None  # the verdict is left as it came


def test_measure_without_a_lease_or_signal_leaves_no_duration() -> None:
    visit = Visit(Outcome.VISITED)
    assert measure(visit, None, NOW) is None
    assert measure(visit, lease(), NOW) is None


# -- judge -------------------------------------------------------------------------


def test_a_retry_within_the_limit_stays_a_retry() -> None:
    r = record(failures=1, directive=3)
    visit = Visit(Outcome.RETRY, reason="timeout")
    assert judge(r, visit, max_retries=2) is Outcome.RETRY
    assert (r.outcome, r.reason, r.directive) == ("retry", "timeout", 0)


def test_a_retry_past_the_limit_is_a_failure_that_says_why() -> None:
    r = record(failures=2)
    visit = Visit(Outcome.RETRY, reason="timeout")
    assert judge(r, visit, max_retries=2) is Outcome.FAILED
    assert r.outcome == "failed"
    assert r.reason == "timeout (gave up after 2 retries)"
    visit = Visit(Outcome.RETRY)
    r = record(failures=1)
    assert judge(r, visit, max_retries=1) is Outcome.FAILED
    assert r.reason == "error (gave up after 1 retry)" and visit.reason is None  # the verdict is left as it came


def test_other_outcomes_are_kept_and_the_preference_ends() -> None:
    for outcome in (Outcome.VISITED, Outcome.FAILED, Outcome.DISREGARDED):
        r = record(failures=9, directive=1)
        assert judge(r, Visit(outcome), max_retries=0) is outcome
        assert r.outcome == outcome.value and r.directive == 0


# -- count_visit ---------------------------------------------------------------------


@settings(max_examples=examples(60))
@given(st.lists(st.booleans(), max_size=30))
def test_a_visit_is_counted_alike_in_the_record_its_queue_and_the_totals(versions: list[bool]) -> None:
    r = record(failures=2)
    q = HostQueue("a", 1)
    totals = Totals()
    for counted in versions:
        count_visit(q, totals, r, changed=counted)
        assert r.failures == 0
    assert r.visits == q.visits == totals.visits == len(versions)
    assert r.versions == q.versions == totals.versions == sum(versions)


def test_a_version_awaiting_delivery_is_in_the_record_only() -> None:
    r = record()
    q = HostQueue("a", 1)
    totals = Totals()
    count_visit(q, totals, r, changed=True, delivered_later=True)
    assert (r.visits, r.versions) == (1, 1)
    assert (q.visits, q.versions, totals.visits, totals.versions) == (1, 0, 1, 0)


# -- set_outcome_time and change_event ------------------------------------------------


def test_a_retry_waits_the_retry_delay_and_a_failure_is_never_due_again() -> None:
    r = record()
    set_outcome_time(r, Outcome.RETRY, Lease("a", NOW - 10, NOW + 50, 12.3456, record()), NOW, retry_delay=60.0)
    assert (r.failures, r.next_ms, r.overdue) == (1, time_to_ms(NOW + 60.0), 12.346)
    set_outcome_time(r, Outcome.FAILED, None, NOW, retry_delay=60.0)
    assert r.next_ms == NEVER_MS and r.failures == 1
    visited = record()
    set_outcome_time(visited, Outcome.VISITED, None, NOW, retry_delay=60.0)
    assert visited.next_ms == 0  # its plan sets it (fold_visit)


def test_a_change_event_carries_the_record_version_count_and_the_capture_before() -> None:
    r = record(versions=3, digest="sha1:new")
    visit = Visit(Outcome.VISITED, status=200, change=ChangeState.CHANGED, digest="sha1:new")
    event = json.loads(change_event("changed", r, visit, NOW, (NOW - 60, "sha1:old")))
    assert (event["kind"], event["version"], event["digest"]) == ("changed", 3, "sha1:new")
    assert (event["previous_time"], event["previous_digest"]) == (NOW - 60, "sha1:old")


# -- fold_visit ------------------------------------------------------------------------


def seen() -> dict[str, object]:
    return {
        "content_type": "text/html",
        "size": 10,
        "digest": "sha1:a",
        "payload_digest": "sha1:b",
        "etag": '"e"',
        "last_modified": "Mon, 01 Jan 2024 00:00:00 GMT",
    }


def test_a_digested_body_replaces_everything_seen_even_with_none() -> None:
    r = record(**seen())
    fold_visit(r, Visit(Outcome.VISITED, status=200, digest="sha1:new"), Plan(60.0), NOW, 16)
    assert r.digest == "sha1:new"
    assert all(getattr(r, name) is None for name in SEEN_FIELDS if name != "digest")  # the page no longer sends them


def test_without_a_body_only_what_was_seen_replaces_what_is_known() -> None:
    r = record(**seen())
    fold_visit(r, Visit(Outcome.VISITED, status=304, etag='"f"'), Plan(60.0), NOW, 16)
    expected = {**seen(), "etag": '"f"'}
    assert {name: getattr(r, name) for name in SEEN_FIELDS} == expected
    assert r.status == 304


def test_the_next_time_is_the_plans_wait_after_now() -> None:
    r = record(directive=0)
    fold_visit(r, Visit(Outcome.VISITED, status=200, duration=0.5), Plan(120.0), NOW, 16)
    assert r.next_ms == time_to_ms(NOW + 120.0)
    assert (r.wait, r.fetched, r.duration, r.directive) == (120.0, NOW, 0.5, 0)
    r = record()
    fold_visit(r, Visit(Outcome.VISITED, status=200), Plan(0.0), NOW, 16)  # no wait: due at once
    assert r.next_ms == time_to_ms(NOW) and r.wait == 0.0


def test_a_probe_comes_within_seconds_ahead_of_its_queue_and_keeps_the_wait() -> None:
    r = record()
    fold_visit(r, Visit(Outcome.VISITED, status=200, probe=5.0), Plan(3600.0), NOW, 16)
    assert r.next_ms == time_to_ms(NOW + 5.0)
    assert r.directive == PROBE_DIRECTIVE
    assert r.wait == 3600.0
    r = record()
    fold_visit(r, Visit(Outcome.VISITED, status=200, probe=5.0), Plan(2.0), NOW, 16)  # the wait is sooner
    assert r.next_ms == time_to_ms(NOW + 2.0)


def test_policy_memory_and_noise_are_replaced_only_when_given() -> None:
    r = record(policy={"k": 1}, noise={"n": 1})
    fold_visit(r, Visit(Outcome.VISITED, status=200), Plan(60.0), NOW, 16)
    assert (r.policy, r.noise) == ({"k": 1}, {"n": 1})
    fold_visit(r, Visit(Outcome.VISITED, status=200, noise={}), Plan(60.0, memory={"k": 2}), NOW, 16)
    assert r.policy == {"k": 2}
    assert r.noise is None  # an empty noise clears what was learned


@settings(max_examples=examples(60))
@given(
    changes=st.lists(st.sampled_from(list(ChangeState)), max_size=40),
    size=st.integers(1, 20),
)
def test_the_history_keeps_the_last_visits_in_order(changes: list[ChangeState], size: int) -> None:
    r = record()
    for i, change in enumerate(changes):
        fold_visit(r, Visit(Outcome.VISITED, status=200 + i, change=change), Plan(60.0), NOW + i, size)
    assert len(r.history) == min(size, len(changes))
    expected = [[round(NOW + i, 3), c.value, 200 + i] for i, c in enumerate(changes)][-size:] if changes else []
    assert r.history == expected
