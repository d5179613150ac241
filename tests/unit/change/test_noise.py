"""Learned noise (change/noise.py): the segment learner, the per-URL state
machine, the visit middleware's use of it and the frontier's probe."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.utils.test import get_crawler

from scrapy_adaptive.change import noise
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
    assert later == noise.Masked(masked.digest, len(learned.exclusions))
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
    assert noise.masked_digest(page("2026-11-23", "00:00:04", "Local time"), learned.exclusions).digest != digest


def test_inserted_segments_and_long_segments_are_not_learnable() -> None:
    base = [("a", "b"), ("c",)]
    assert noise.learn(noise.sketch(base), [*base, ("ad", "block")]).exclusions is None
    long_before = [tuple(f"w{i}" for i in range(60))]
    long_after = [tuple(f"w{i}" if i else "x" for i in range(60))]
    assert noise.learn(noise.sketch(long_before), long_after).exclusions is None


# -- the state machine -------------------------------------------------------------

CLOCKED = [("Title",), ("Clock:", "1", "UTC"), ("Body", "text")]
PROBED = [("Title",), ("Clock:", "2", "UTC"), ("Body", "text")]


def step(state: dict | None, segments: list | None, **kw: object) -> noise.NoiseStep:
    args: dict = {"changed": True, "first": False, "validators": False, "elapsed": 3.0, "window": 30.0, **kw}
    return noise.step(state, segments, **args)


def test_a_changed_revisit_without_validators_asks_for_a_probe() -> None:
    result = step(None, CLOCKED)
    assert result.probe and result.state == {noise.SKETCH: noise.sketch(CLOCKED), noise.PROBES: 1}
    assert not step(None, CLOCKED, validators=True).probe
    assert not step(None, CLOCKED, first=True).probe
    assert not step(None, CLOCKED, changed=False).probe
    assert not step({noise.SETTLED: "clean", noise.PROBES: 1}, CLOCKED).probe


def test_the_probe_learns_and_is_unchanged_then_noise_is_not_a_change() -> None:
    probe = step(step(None, CLOCKED).state, PROBED)
    assert probe.learned and probe.unchanged and probe.digest is not None
    assert probe.state is not None and len(probe.state[noise.EXCLUSIONS]) == 1
    later = step(probe.state, [("Title",), ("Clock:", "9", "UTC"), ("Body", "text")], elapsed=3600.0)
    assert later.digest == probe.digest and not later.probe and later.state is None
    edit = step(probe.state, [("Title",), ("Clock:", "9", "UTC"), ("Body", "edited")], elapsed=3600.0)
    assert edit.digest != probe.digest and not edit.probe


def test_a_late_probe_learns_nothing_and_an_identical_probe_settles_clean() -> None:
    pending = step(None, CLOCKED).state
    late = step(pending, PROBED, elapsed=31.0)  # not a probe: this fetch is probed instead
    assert not late.learned and late.digest is None and late.probe
    assert late.state == {noise.SKETCH: noise.sketch(PROBED), noise.PROBES: 2}
    assert step(pending, PROBED, elapsed=31.0, changed=False).state == {noise.PROBES: 1}
    clean = step(pending, CLOCKED, changed=False)
    assert clean.state == {noise.SETTLED: "clean", noise.PROBES: 1} and not clean.probe
    hard = step(pending, [*PROBED, ("ad",)])
    assert hard.state == {noise.SETTLED: "hard", noise.PROBES: 1} and hard.digest is None


def test_a_moved_template_is_learned_again_at_most_max_probes_times() -> None:
    state = step(step(None, CLOCKED).state, PROBED).state
    moved = [("Title",), ("Now", "5"), ("Body", "text")]
    for probes in range(1, noise.MAX_PROBES):
        assert state is not None and state[noise.PROBES] == probes
        result = step(state, moved)
        assert result.probe, probes
        state = step(result.state, [("Title",), ("Now", "6"), ("Body", "text")]).state
        moved = [("Title",), (f"Moved{probes}", "5"), ("Body", "text")]
    assert state is not None and state[noise.PROBES] == noise.MAX_PROBES
    assert not step(state, moved).probe


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
        (603.0, html("10:10:03", "k3")),  # the probe: learned, unchanged
        (1200.0, html("10:20:00", "k4")),
        (1800.0, html("10:30:00", "k5", "Opening hours 10 to 6")),  # a real change
        (2400.0, html("10:40:00", "k6", "Opening hours 10 to 6")),
    ):
        visit = record.visit(mw, response, now)
        verdicts.append((visit.change.value, visit.probe))
    assert verdicts == [
        ("changed", None),
        ("changed", 0.0),
        ("unchanged", None),
        ("unchanged", None),
        ("changed", None),
        ("unchanged", None),
    ]
    assert crawler.stats.get_value("adaptive/noise/probes") == 1
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
    state = {noise.SKETCH: ["abcd"], noise.PROBES: 1}
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


def test_a_sibling_adopts_pooled_exclusions_and_is_never_probed() -> None:
    learned = noise.learn(noise.sketch(_template("a", 1)), _template("a", 2)).exclusions
    assert learned is not None and len(learned) == 2
    pool = noise.NoisePool()
    pool.add("https://h.example/p/1.html", learned)
    offer = pool.offer("https://h.example/p/7.html")
    assert offer == [learned] and pool.offer("https://h.example/q/7.html") == []
    kwargs = {"validators": False, "elapsed": 60.0, "window": 30.0, "pooled": offer}
    first = noise.step(None, _template("b", 3), changed=True, first=True, **kwargs)  # type: ignore[arg-type]
    assert first.adopted and not first.probe and first.state == {noise.EXCLUSIONS: learned, noise.PROBES: 0}
    later = noise.step(first.state, _template("b", 9), changed=True, first=False, **kwargs)  # type: ignore[arg-type]
    assert later.digest == first.digest and not later.probe  # the clock and token are left out
    edited = noise.step(first.state, _template("c", 9), changed=True, first=False, **kwargs)  # type: ignore[arg-type]
    assert edited.digest != first.digest  # a real edit is still a change


def test_a_page_of_another_template_does_not_adopt() -> None:
    learned = noise.learn(noise.sketch(_template("a", 1)), _template("a", 2)).exclusions
    assert learned is not None
    plain = _template("b", 3, clock=False)
    step = noise.step(
        None, plain, changed=True, first=True, validators=False, elapsed=None, window=30.0, pooled=[learned]
    )
    assert not step.adopted and step.digest is None and step.state is None
    with_validators = noise.step(
        None, _template("b", 3), changed=True, first=True, validators=True, elapsed=None, window=30.0, pooled=[learned]
    )
    assert not with_validators.adopted  # conditional requests deal with such a page
    assert noise.needs_text(None, changed=False, first=True, validators=False, pooled=True)
    assert not noise.needs_text({noise.SETTLED: "clean"}, changed=False, first=False, validators=False, pooled=True)


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
