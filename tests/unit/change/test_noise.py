"""Learned noise (change/noise.py, change/noise_learner.py): the segment learner, the per-URL state
machine, the visit middleware's use of it and the frontier's probe."""

from __future__ import annotations

import time
from email.utils import formatdate
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from scrapy_adaptive.change import noise
from scrapy_adaptive.change import noise_learner as learner
from scrapy_adaptive.frontier import ChangeState, Frontier, MemoryStore, Outcome, Politeness, Visit
from scrapy_adaptive.integration.spidermiddlewares.visit import VisitMiddleware, evaluate
from scrapy_adaptive.model import UrlRecord
from tests.hypo import examples

WORDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8)
STABLE = st.lists(WORDS, min_size=1, max_size=6).map(tuple)


def noise_value(fetch: int, i: int) -> str:
    """A distinct token per fetch and slot (a fixed set: no chance collisions)."""
    return f"{fetch:x}{i:04x}z"


def render(stable: list[tuple[str, ...]], slots: list[tuple[int, bool]], fetch: int) -> list[noise.Segment]:
    """The page's segments at *fetch*: the stable segments with noise
    segments inserted after the given ones (a clock line or a lone token)."""
    out: list[noise.Segment] = []
    for index, segment in enumerate(stable):
        out.append(segment)
        for i, (after, clock) in enumerate(slots):
            if after == index:
                value = noise_value(fetch, i)
                out.append(("Clock:", value, "UTC") if clock else (value,))
    return out


@st.composite
def pages(draw: st.DrawFn) -> tuple[list[tuple[str, ...]], list[tuple[int, bool]]]:
    # distinct stable segments: a lone token is placed by the text before it
    # (see the module docstring for a page that repeats that text)
    stable = draw(st.lists(STABLE, min_size=2, max_size=12, unique=True))
    slots = draw(st.lists(st.tuples(st.integers(0, len(stable) - 1), st.booleans()), min_size=1, max_size=4))
    return stable, slots


@settings(max_examples=examples(150), deadline=None)
@given(pages(), st.data())
def test_learned_exclusion_removes_exactly_the_noise(page: tuple, data: st.DataObject) -> None:
    stable, slots = page
    before, probe = render(stable, slots, 0), render(stable, slots, 1)
    learned = noise.learn(noise.sketch(before), probe)
    assert learned.differed and learned.exclusions is not None
    assert 1 <= len(learned.exclusions) <= len(slots)
    masked = noise.masked_digest(probe, learned.exclusions)
    # any later fetch, new noise: the same digest, every exclusion found
    later = noise.masked_digest(render(stable, slots, 2), learned.exclusions)
    assert later == noise.Masked(masked.digest, len(learned.exclusions), {})
    # the noise is all that was left out: the digest of the stable text alone
    assert masked.digest == noise.masked_digest(stable, []).digest
    # a real edit of any stable token is still a change
    index = data.draw(st.integers(0, len(stable) - 1))
    position = data.draw(st.integers(0, len(stable[index]) - 1))
    edited = list(stable)
    edited[index] = (*stable[index][:position], stable[index][position] + "Q", *stable[index][position + 1 :])
    assert noise.masked_digest(render(edited, slots, 3), learned.exclusions).digest != masked.digest


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(STABLE, min_size=1, max_size=12))
def test_a_page_without_noise_learns_nothing(stable: list[tuple[str, ...]]) -> None:
    assert noise.learn(noise.sketch(stable), stable) == noise.Learned([], False)


def test_a_date_beside_a_clock_is_noise_too_and_an_edit_of_the_clock_line_is_seen() -> None:
    def page(day: str, clock: str, label: str = "Server time") -> list[noise.Segment]:
        return noise.segments_of_text(
            f"<html><body><h1>Shop</h1><p>{label} {day} {clock} UTC</p><p>Open 9 to 5</p></body></html>", html=True
        )

    learned = noise.learn(noise.sketch(page("2026-11-22", "23:59:58")), page("2026-11-22", "23:59:59"))
    assert learned.exclusions is not None
    digest = noise.masked_digest(page("2026-11-22", "23:59:59"), learned.exclusions).digest
    assert noise.masked_digest(page("2026-11-23", "00:00:04"), learned.exclusions).digest == digest
    assert noise.masked_digest(page("2026-11-23", "00:00:04", "Local time"), learned.exclusions).edited  # a change


def test_inserted_segments_and_long_segments_are_not_learnable() -> None:
    base = [("a", "b"), ("c",)]
    assert noise.learn(noise.sketch(base), [*base, ("ad", "block")]).exclusions is None
    long_before = [tuple(f"w{i}" for i in range(60))]
    long_after = [tuple(f"w{i}" if i else "x" for i in range(60))]
    assert noise.learn(noise.sketch(long_before), long_after).exclusions is None


# -- the state machine -------------------------------------------------------------

CLOCKED = [("Title",), ("Clock:", "1", "UTC"), ("Body", "text")]
PROBED = [("Title",), ("Clock:", "2", "UTC"), ("Body", "text")]
PROBED2 = [("Title",), ("Clock:", "3", "UTC"), ("Body", "text")]


def seen(segments: list | None, now: float, **kw: object) -> learner.Seen:
    args: dict = {"changed": True, "first": False, "usable": False, **kw}
    return learner.Seen(segments, now=now, **args)


def step(state: dict | None, segments: list | None, now: float = 3.0, **kw: object) -> learner.NoiseStep:
    return learner.step(state, seen(segments, now, **kw), window=30.0)


def learned_state() -> dict:
    """The clock learned over two probe pairs (t = 0, 1, 2)."""
    first = step(None, CLOCKED, 0.0)
    second = step(first.state, PROBED, 1.0)
    third = step(second.state, PROBED2, 2.0)
    assert third.learned and third.state is not None
    return third.state


def test_a_changed_revisit_without_validators_asks_for_a_probe() -> None:
    result = step(None, CLOCKED, 5.0)
    assert result.probe and result.state is not None
    assert result.state[learner.SKETCH] == noise.sketch(CLOCKED) and result.state[learner.SKETCHED_AT] == 5.0
    assert not step(None, CLOCKED, usable=True).probe
    assert not step(None, CLOCKED, first=True).probe
    assert not step(None, CLOCKED, changed=False).probe
    assert not step({learner.SETTLED: "clean", learner.PROBES: 1}, CLOCKED).probe


def test_noise_is_what_moved_over_two_pairs_and_the_first_probe_is_held_back() -> None:
    first = step(None, CLOCKED, 0.0)
    second = step(first.state, PROBED, 1.0)
    assert second.probe and second.verdict is ChangeState.UNCHANGED and not second.learned  # held back
    third = step(second.state, PROBED2, 2.0)
    assert third.learned and third.verdict is ChangeState.UNCHANGED and third.digest is not None
    assert third.state == {learner.EXCLUSIONS: third.state[learner.EXCLUSIONS], learner.PROBES: 2}
    later = step(
        third.state, [("Title",), ("Clock:", "9", "UTC"), ("Body", "text")], 3600.0, previous_digest=third.digest
    )
    assert later.digest == third.digest and not later.probe and later.state is None
    edit = step(third.state, [("Title",), ("Clock:", "9", "UTC"), ("Body", "edited")], 3600.0)
    assert edit.digest != third.digest and not edit.probe


def test_an_edit_inside_one_probe_window_is_not_learned_and_is_delivered() -> None:
    """The reported case's root: a price edited between two fetches a second
    apart moved once; only what moves over both pairs is noise."""
    price = lambda p, c: [("Shop",), ("Price", p, "EUR"), ("Server", "time", c)]  # noqa: E731
    first = step(None, price("19.99", "10:00:00"), 0.0)
    held = step(first.state, price("21.99", "10:00:01"), 1.0)  # the edit lands in the first window
    assert held.verdict is ChangeState.UNCHANGED and held.probe
    decided = step(held.state, price("21.99", "10:00:02"), 2.0)
    assert decided.learned and decided.verdict is ChangeState.CHANGED  # the edit, against the fetch that started it
    state = decided.state
    assert state is not None and [e[2] for e in state[learner.EXCLUSIONS]] == [[2]]  # the clock only
    later = noise.masked_digest(price("22.99", "11:00:00"), state[learner.EXCLUSIONS])
    assert later.digest != decided.digest  # the next price edit is a change


def test_a_difference_that_moved_once_settles_clean_and_the_edit_is_delivered() -> None:
    first = step(None, CLOCKED, 0.0)
    edited = [("Title",), ("Clock:", "1", "UTC"), ("Body", "edited")]
    held = step(first.state, edited, 1.0)
    decided = step(held.state, edited, 2.0, changed=False)
    assert decided.state == {learner.SETTLED: "clean", learner.PROBES: 2}
    assert decided.verdict is ChangeState.CHANGED and not decided.learned


def test_a_late_or_bodiless_probe_learns_nothing() -> None:
    """The reported case: the probe was answered 304 (no text), and the next
    full fetch 21 s later learned a real edit as noise against the stale
    sketch.  The probe is timed from the sketched fetch itself."""
    pending = step(None, CLOCKED, 0.0).state
    no_text = step(pending, None, 1.0)
    assert no_text.state is not None and learner.SKETCH not in no_text.state
    late = step(pending, PROBED, 31.0)  # not a probe: this fetch is probed instead
    assert not late.learned and late.digest is None and late.probe
    assert late.state is not None and late.state[learner.SKETCHED_AT] == 31.0 and late.state[learner.PROBES] == 2
    assert step(pending, PROBED, 31.0, changed=False).state == {learner.PROBES: 1}
    clean = step(pending, CLOCKED, 1.0, changed=False)
    assert clean.state == {learner.SETTLED: "clean", learner.PROBES: 1} and not clean.probe
    hard = step(pending, [*PROBED, ("ad",)], 1.0)
    assert hard.state == {learner.SETTLED: "hard", learner.PROBES: 1} and hard.digest is None


def test_validators_that_move_over_both_pairs_move_at_every_fetch() -> None:
    first = step(None, CLOCKED, 0.0, validators=(None, "Mon, 01 Jan 2024 00:00:00 GMT"))
    second = step(first.state, PROBED, 1.0, validators=(None, "Mon, 01 Jan 2024 00:00:01 GMT"))
    third = step(second.state, PROBED2, 2.0, validators=(None, "Mon, 01 Jan 2024 00:00:02 GMT"))
    assert third.learned and third.state is not None and third.state[learner.PER_FETCH] == 1
    once = step(
        step(step(None, CLOCKED, 0.0, validators=(None, "A")).state, PROBED, 1.0, validators=(None, "B")).state,
        PROBED2,
        2.0,
        validators=(None, "B"),
    )
    assert once.learned and once.state is not None and learner.PER_FETCH not in once.state


def test_a_mask_never_hides_the_only_difference_between_fetches_whose_validators_differ() -> None:
    state = learned_state()
    masked = noise.masked_digest(PROBED2, state[learner.EXCLUSIONS]).digest
    again = [("Title",), ("Clock:", "7", "UTC"), ("Body", "text")]
    moved = step(state, again, 99.0, previous_digest=masked, validators=('"v2"', None), previous=('"v1"', None))
    assert moved.verdict is ChangeState.CHANGED and moved.dropped == learner.DROPPED_VALIDATORS
    assert moved.state is not None and learner.EXCLUSIONS not in moved.state
    still = step(state, again, 99.0, previous_digest=masked, validators=('"v1"', None), previous=('"v1"', None))
    assert still.verdict is None and still.digest == masked and still.dropped is None
    per_fetch = {**state, learner.PER_FETCH: 1}
    assert (
        step(per_fetch, again, 99.0, previous_digest=masked, validators=('"v2"', None), previous=('"v1"', None)).dropped
        is None
    )


def test_an_edit_of_the_line_that_holds_the_clock_is_a_change_and_the_mask_follows_it() -> None:
    def page(price: str, clock: str) -> list[noise.Segment]:
        return noise.segments_of_text(f"<h1>Shop</h1><p>Price {price} EUR, as of {clock}</p><p>x</p>", html=True)

    learned = noise.learn(noise.sketch(page("19.99", "10:00:01")), page("19.99", "10:00:02"))
    assert learned.exclusions is not None
    state = {learner.EXCLUSIONS: learned.exclusions, learner.PROBES: 2}
    digest = noise.masked_digest(page("19.99", "10:00:02"), learned.exclusions).digest
    edit = step(state, page("24.99", "10:05:00"), 300.0, previous_digest=digest)
    assert edit.verdict is ChangeState.CHANGED and not edit.probe and edit.state is not None
    after = step(edit.state, page("24.99", "10:10:00"), 600.0, previous_digest=edit.digest)
    assert after.digest == edit.digest and after.verdict is None  # the clock is still noise, no probe spent


def test_a_lone_token_after_an_edited_line_is_still_found() -> None:
    page = lambda v, t: [("Release", "notes"), ("version", v), (t,)]  # noqa: E731
    learned = noise.learn(noise.sketch(page("3", "a1b2")), page("3", "c3d4"))
    assert learned.exclusions is not None
    masked = noise.masked_digest(page("4", "e5f6"), learned.exclusions)
    assert (
        masked.matched == 1
        and masked.digest == noise.masked_digest([("Release", "notes"), ("version", "4")], []).digest
    )


def test_a_moved_template_is_learned_again_at_most_max_probes_times() -> None:
    state: dict | None = learned_state()
    now, width = 10.0, 1

    def template(value: str) -> list[noise.Segment]:  # another shape at each move
        return [("Title",), ("Now",) * width + (value,), ("Body", "text")]

    while state is not None and state[learner.PROBES] + 2 <= learner.MAX_PROBES:
        result = step(state, template("5"), now)
        assert result.probe, state
        held = step(result.state, template("6"), now + 1)
        state = step(held.state, template("7"), now + 2).state
        now, width = now + 100, width + 1
    assert state is not None and state[learner.PROBES] == learner.MAX_PROBES
    assert not step(state, template("5"), now).probe


# -- the middleware and the frontier -----------------------------------------------


def html(clock: str, token: str, body: str = "Opening hours 9 to 5") -> HtmlResponse:
    url = "http://example.com/noisy"
    page = f"<html><body><h1>Shop</h1><p>{body}</p><p>Server time {clock}</p><p>{token}</p></body></html>"
    return HtmlResponse(url, body=page.encode(), request=Request(url))


class Record:
    """The part of a URL's record the middleware reads, kept as the frontier would."""

    def __init__(self) -> None:
        self.snapshot: dict = {}

    def visit(self, mw: VisitMiddleware, response: HtmlResponse, now: float) -> Visit:
        mw.clock = lambda: now
        visit = evaluate(response, self.snapshot, mw.rules.default)
        mw._noise(response, self.snapshot, visit)
        self.snapshot = {
            "digest": visit.digest,
            "payload_digest": visit.payload_digest,
            "etag": visit.etag,
            "last_modified": visit.last_modified,
            "fetched": now,
            "noise": (visit.noise or None) if visit.noise is not None else self.snapshot.get("noise"),
        }
        return visit


def test_middleware_probes_learns_and_then_sees_only_real_changes() -> None:
    crawler = get_crawler()
    mw = VisitMiddleware(crawler.stats, probe_window=30.0)
    record = Record()
    verdicts = []
    for now, response in (
        (0.0, html("10:00:00", "k1")),
        (600.0, html("10:10:00", "k2")),  # changed: a probe is asked for
        (603.0, html("10:10:03", "k3")),  # the first probe: held back, a second asked for
        (606.0, html("10:10:06", "k4")),  # the second: learned, unchanged
        (1200.0, html("10:20:00", "k5")),
        (1800.0, html("10:30:00", "k6", "Opening hours 10 to 6")),  # a real change
        (2400.0, html("10:40:00", "k7", "Opening hours 10 to 6")),
    ):
        visit = record.visit(mw, response, now)
        verdicts.append((visit.change.value, visit.probe))
    assert verdicts == [
        ("changed", None),
        ("changed", 0.0),
        ("unchanged", 0.0),
        ("unchanged", None),
        ("unchanged", None),
        ("changed", None),
        ("unchanged", None),
    ]
    assert crawler.stats.get_value("adaptive/noise/probes") == 2
    assert crawler.stats.get_value("adaptive/noise/learned") == 1


def test_frontier_issues_a_probe_now_keeps_the_policy_wait_and_stores_the_state(tmp_path: Path) -> None:
    now = [1000.0]
    frontier = Frontier(
        MemoryStore(),
        Politeness(delay_factor=0, min_delay=0, max_delay=0, valence=1, retry_delay=900, max_retries=3, lease=60),
        clock=lambda: now[0],
    )
    frontier.add(b"f" * 20, "http://a/x", "a", {"url": "http://a/x"})
    issued = frontier.next()
    assert issued is not None
    frontier.leases.fetch_ended(issued.fp, 0.0)
    state = {learner.SKETCH: ["abcd"], learner.PROBES: 1}
    visit = Visit(Outcome.VISITED, wait=500.0, status=200, change=ChangeState.CHANGED, digest="x", noise=state)
    visit.probe = 0.0
    record = frontier.update(issued.fp, visit)
    assert record is not None and record.wait == 500.0 and record.next_ms == 1_000_000
    assert UrlRecord.from_bytes(record.to_bytes()).noise == state
    assert record.snapshot()["noise"] == state
    again = frontier.next()
    assert again is not None and again.fp == issued.fp
    frontier.leases.fetch_ended(again.fp, 0.0)
    cleared = frontier.update(again.fp, Visit(Outcome.VISITED, wait=500.0, status=200, digest="y", noise={}))
    assert cleared is not None and cleared.noise is None and cleared.next_ms == 1_500_000


def test_a_probe_comes_before_its_queues_overdue_urls() -> None:
    now = [1000.0]
    frontier = Frontier(
        MemoryStore(),
        Politeness(delay_factor=0, min_delay=1, max_delay=1, valence=1, retry_delay=900, max_retries=3, lease=60),
        clock=lambda: now[0],
    )
    for i in range(3):
        frontier.add(bytes([i]) * 20, f"http://a/{i}", "a", {"url": f"http://a/{i}"})
        now[0] += 1
    first = frontier.next()
    assert first is not None and first.record.url == "http://a/0"
    frontier.leases.fetch_ended(first.fp, 0.0)
    visit = Visit(Outcome.VISITED, wait=500.0, status=200, change=ChangeState.CHANGED, digest="x")
    visit.probe = 0.0
    frontier.update(first.fp, visit)
    now[0] += 1  # the politeness delay
    probe = frontier.next()
    assert probe is not None and probe.record.url == "http://a/0"  # before a/1 and a/2, due earlier
    frontier.leases.fetch_ended(probe.fp, 0.0)
    after = frontier.update(probe.fp, Visit(Outcome.VISITED, wait=500.0, status=200, digest="x"))
    assert after is not None and after.directive == 0  # for one issue
    now[0] += 1
    following = frontier.next()
    assert following is not None and following.record.url == "http://a/1"


@pytest.mark.parametrize("validators", [{"ETag": '"v1"'}, {"Last-Modified": "Tue, 01 Jan 2013 00:00:00 GMT"}])
def test_pages_with_validators_are_not_probed(validators: dict[str, str]) -> None:
    mw = VisitMiddleware(get_crawler().stats)
    url = "http://example.com/v"
    first = HtmlResponse(url, body=b"<p>a 1</p>", headers=validators, request=Request(url))
    second = HtmlResponse(url, body=b"<p>a 2</p>", headers=validators, request=Request(url))
    record = {"digest": evaluate(first, {}).digest, "fetched": 0.0}
    visit = evaluate(second, record)
    mw._noise(second, record, visit)
    assert visit.change is ChangeState.CHANGED and visit.probe is None and visit.noise is None


def test_a_last_modified_of_now_is_no_validator() -> None:
    mw = VisitMiddleware(get_crawler().stats, clock=lambda: 1_700_000_000.0)
    url = "http://example.com/v"
    now = {"Last-Modified": "Tue, 14 Nov 2023 22:13:20 GMT"}  # 1_700_000_000
    first = HtmlResponse(url, body=b"<p>a 1</p>", headers=now, request=Request(url))
    second = HtmlResponse(url, body=b"<p>a 2</p>", headers=now, request=Request(url))
    record = {"digest": evaluate(first, {}).digest, "fetched": 1_699_999_000.0}
    visit = evaluate(second, record)
    mw._noise(second, record, visit)
    assert visit.probe == 0.0 and visit.noise is not None


def _template(name: str, fetch: int, clock: bool = True) -> list[noise.Segment]:
    segments: list[noise.Segment] = [("Welcome",), ("Article", name), ("Some", "stable", "text", name)]
    if clock:
        segments += [("Server", "time", f"12:00:{fetch:02d}", "UTC"), (f"{fetch:x}beef",)]
    return [*segments, ("Footer",)]


def test_a_sibling_adopts_pooled_exclusions_but_judges_nothing_until_its_probe_confirms_them() -> None:
    learned = noise.learn(noise.sketch(_template("a", 1)), _template("a", 2)).exclusions
    assert learned is not None and len(learned) == 2
    pool = noise.NoisePool()
    pool.add("https://h.example/p/1.html", learned)
    offer = pool.offer("https://h.example/p/7.html")
    assert offer == [learned] and pool.offer("https://h.example/q/7.html") == []

    def visit(state: dict | None, segments: list, now: float, **kw: object) -> learner.NoiseStep:
        return learner.step(state, seen(segments, now, **kw), window=30.0, pooled=offer)

    first = visit(None, _template("b", 3), 0.0, first=True, digest="exact:1")
    assert first.adopted and first.by_rule and not first.probe  # the rule's verdict stands
    assert first.state == {
        learner.EXCLUSIONS: learned,
        learner.ADOPTED: 1,
        learner.VERSION: "exact:1",
        learner.PROBES: 0,
    }
    # the mask would hide a difference: held back, and the page probed
    held = visit(first.state, _template("b", 9), 600.0, digest="exact:2", previous_digest=first.digest)
    assert held.probe and held.digest == first.digest and held.verdict is None
    confirmed = visit(held.state, _template("b", 10), 601.0, digest="exact:3", previous_digest=held.digest)
    assert confirmed.confirmed and confirmed.verdict is ChangeState.UNCHANGED and not confirmed.learned
    assert confirmed.state == {learner.EXCLUSIONS: learned, learner.PROBES: 1}
    edited = visit(confirmed.state, _template("c", 11), 900.0, previous_digest=confirmed.digest)
    assert edited.digest != confirmed.digest  # a real edit is still a change


def test_a_siblings_mask_that_holds_still_on_the_page_is_dropped_and_the_change_delivered() -> None:
    """The reported case: p02 adopted what p01 learned, and its own edits
    were hidden.  Here the parts the sibling's mask hides held still over the
    page's probe pair: they were an edit, delivered with the probe."""
    learned = noise.learn(noise.sketch(_template("a", 1)), _template("a", 2)).exclusions
    assert learned is not None

    def visit(state: dict | None, segments: list, now: float, **kw: object) -> learner.NoiseStep:
        return learner.step(state, seen(segments, now, **kw), window=30.0, pooled=[learned])

    first = visit(None, _template("b", 3), 0.0, first=True, digest="exact:1")
    held = visit(first.state, _template("b", 9), 600.0, digest="exact:2", previous_digest=first.digest)
    assert held.probe
    still = visit(held.state, _template("b", 9), 601.0, digest="exact:2", previous_digest=held.digest, changed=False)
    assert still.verdict is ChangeState.CHANGED and still.dropped == learner.DROPPED_UNCONFIRMED
    assert still.state is not None and learner.EXCLUSIONS not in still.state
    # a probe that never came: the mask goes at the next visit, judged against the version it last let through
    late = visit(held.state, _template("b", 9), 700.0, digest="exact:2", previous_digest=held.digest)
    assert late.verdict is ChangeState.CHANGED and late.dropped == learner.DROPPED_UNVERIFIABLE


def test_a_page_of_another_template_does_not_adopt() -> None:
    learned = noise.learn(noise.sketch(_template("a", 1)), _template("a", 2)).exclusions
    assert learned is not None
    plain = _template("b", 3, clock=False)
    result = learner.step(None, seen(plain, 0.0, first=True), window=30.0, pooled=[learned])
    assert not result.adopted and result.digest is None and result.state is None
    with_validators = learner.step(
        None, seen(_template("b", 3), 0.0, first=True, usable=True), window=30.0, pooled=[learned]
    )
    assert not with_validators.adopted  # conditional requests deal with such a page
    assert learner.needs_text(None, changed=False, first=True, usable=False, pooled=True)
    assert not learner.needs_text({learner.SETTLED: "clean"}, changed=False, first=False, usable=False, pooled=True)


def test_the_pool_is_bounded() -> None:
    pool = noise.NoisePool()
    for i in range(noise.POOL_SETS + 2):
        pool.add("https://h.example/p/1.html", [["a", 1, [0], str(i)]])
    assert len(pool.offer("https://h.example/p/2.html")) == noise.POOL_SETS
    assert pool.offer("https://h.example/p/2.html")[0] == [["a", 1, [0], str(noise.POOL_SETS + 1)]]  # newest first


@given(st.text(alphabet=st.characters(max_codepoint=0x2FF), max_size=300))
@settings(max_examples=300, deadline=None)
def test_any_text_parses_to_segments_and_visible_text(text: str) -> None:
    """Control characters (a form feed after a comment, binary served as
    HTML) never make the parsers raise: a page gets a verdict whatever it holds."""
    from scrapy_adaptive.change.digest import visible_text

    markup = f"<html><body><p>a<!--c-->{text}</p><script>x</script>{text}<style>s</style>{text}</body></html>"
    assert isinstance(visible_text(markup), str)
    assert isinstance(noise.segments_of_text(markup, html=True), list)


# -- the pages data teams watch ------------------------------------------------------

#: the data of each page after *n* edits, and where the noise sits beside it
WATCHED = {
    "price": (lambda n: f"Price {19 + n}.99 EUR", "<p>{data}, as of {clock}</p><p>Ships in 3 days</p>"),
    "stock": (lambda n: f"In stock: {40 - n}", "<p>{data}</p><p>Server time {clock} UTC</p><p>{token}</p>"),
    "version": (lambda n: f"version 1.{n}", "<p>{data}</p><p>{token}</p>"),
    "dateline": (lambda n: f"Last edited 2026-11-{n % 28 + 1:02d}", "<p>{data}</p><p>Generated {clock}</p>"),
}


def _watched(kind: str, edits: int, now: float, fetch: int, last_edit: float | None) -> HtmlResponse:
    data, template = WATCHED[kind]
    clock = time.strftime("%H:%M:%S", time.gmtime(now))
    body = template.format(data=data(edits), clock=clock, token=f"{fetch:x}beef")
    headers = {} if last_edit is None else {"Last-Modified": formatdate(last_edit, usegmt=True)}
    url = f"http://example.com/{kind}.html"
    return HtmlResponse(
        url, body=f"<html><body><h1>Shop</h1>{body}</body></html>".encode(), headers=headers, request=Request(url)
    )


@settings(max_examples=examples(120), deadline=None)
@given(
    kind=st.sampled_from(sorted(WATCHED)),
    validators=st.booleans(),
    gaps=st.lists(st.sampled_from([1.0, 2.0, 5.0, 20.0, 300.0, 3600.0]), min_size=4, max_size=30),
    edits=st.lists(st.floats(0.0, 4000.0), max_size=12),
)
def test_a_watched_value_downstream_is_never_left_stale(
    kind: str, validators: bool, gaps: list[float], edits: list[float]
) -> None:
    """Whatever the edit times and the revisit gaps (probes come a second
    after the visit that asks), once no probe is pending the value last
    delivered (the page last judged changed) is the value on the page: no
    real edit is learned as noise, with or without a Last-Modified."""
    mw = VisitMiddleware(get_crawler().stats, probe_window=30.0)
    record = Record()
    now, delivered, false_versions = 1_700_000_000.0, None, 0
    gaps = list(gaps)
    fetch = 0
    while gaps and fetch < 60:
        done = sorted(e for e in edits if 1_700_000_000.0 + e <= now)
        last_edit = (1_700_000_000.0 + done[-1]) if done else 1_699_000_000.0
        response = _watched(kind, len(done), now, fetch, last_edit if validators else None)
        visit = record.visit(mw, response, now)
        value = WATCHED[kind][0](len(done))
        if visit.change is ChangeState.CHANGED:
            false_versions += value == delivered
            delivered = value
        if visit.probe is None:
            assert delivered == value, (fetch, visit.annotations, record.snapshot.get("noise"))
            now += gaps.pop(0)
        else:
            now += 1.0
        fetch += 1
    if not validators:  # (a server with validators answers such revisits 304: not modelled here)
        assert false_versions <= learner.MAX_PROBES


@pytest.mark.xfail(
    strict=True,
    reason="known defect, found 2026-11-28 by the test above: two real edits a probe apart on a page without "
    "validators, each landing inside one of the learner's two probe pairs, are learned as noise with its clock "
    "(nothing tells them apart there); the last delivered value stays stale. To fix in the noise learner.",
)
def test_two_real_edits_inside_both_probe_pairs_are_not_learned_as_noise() -> None:
    """The falsifying example hypothesis found for
    :func:`test_a_watched_value_downstream_is_never_left_stale`, pinned: an
    XPASS (the defect fixed) fails this test, so the mark must then go."""
    test_a_watched_value_downstream_is_never_left_stale.hypothesis.inner_test(  # type: ignore[attr-defined]
        kind="dateline", validators=False, gaps=[1.0, 1.0, 1.0, 1.0], edits=[2.0, 3.0]
    )
