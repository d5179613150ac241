"""The visit middleware's pure parts: verdicts and embed hops."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from scrapy import Request
from scrapy.http import HtmlResponse, Response
from scrapy.utils.test import get_crawler

from scrapy_adaptive import meta
from scrapy_adaptive.change import noise, noise_learner
from scrapy_adaptive.change.rules import DigestRules
from scrapy_adaptive.frontier import ChangeState, Outcome
from scrapy_adaptive.integration.spidermiddlewares.visit import VisitMiddleware, evaluate, is_embed
from tests.standins import Services


def response(body: bytes = b"<html>x</html>", status: int = 200, **headers: str) -> Response:
    url = "http://example.com/p"
    return HtmlResponse(url, body=body, status=status, headers=headers, request=Request(url))


def test_first_visit_is_a_new_version() -> None:
    visit = evaluate(response(), {})
    assert (visit.outcome, visit.change, visit.status) == (Outcome.VISITED, ChangeState.CHANGED, 200)
    assert visit.digest is not None and visit.digest.startswith("exact:sha1:")


def test_same_body_is_unchanged_and_other_body_changed() -> None:
    first = evaluate(response(), {})
    assert evaluate(response(), {"digest": first.digest}).change is ChangeState.UNCHANGED
    assert evaluate(response(b"<html>y</html>"), {"digest": first.digest}).change is ChangeState.CHANGED


def test_no_body_means_unknown_and_validators_are_kept_verbatim() -> None:
    visit = evaluate(response(b"", 404, ETag='W/"a"', **{"Last-Modified": "Tue, 01 Jan 2030 00:00:00 GMT"}), {})
    assert visit.change is ChangeState.UNKNOWN and visit.status == 404
    assert (visit.etag, visit.last_modified) == ('W/"a"', "Tue, 01 Jan 2030 00:00:00 GMT")


def test_embeds_are_recognised_by_extension_or_meta() -> None:
    assert is_embed(Request("http://example.com/a/logo.PNG"))
    assert is_embed(Request("http://example.com/site.css?v=3"))
    assert not is_embed(Request("http://example.com/page.html"))
    assert is_embed(Request("http://example.com/img", meta={"adaptive_embed": True}))
    assert not is_embed(Request("http://example.com/x.js", meta={"adaptive_embed": False}))


def test_embed_hops_count_along_embed_chains_only() -> None:
    mw = VisitMiddleware(get_crawler().stats, embed_hops=2)
    page = response()
    img = mw._child(Request("http://example.com/a.css"), page)
    assert img is not None and img.meta[meta.EMBED_HOPS] == 1
    css_response = HtmlResponse("http://example.com/a.css", body=b"", request=img)
    nested = mw._child(Request("http://example.com/bg.png"), css_response)
    assert nested is not None and nested.meta[meta.EMBED_HOPS] == 2
    link = mw._child(Request("http://example.com/next.html", meta={meta.EMBED_HOPS: 5}), page)
    assert link is not None and meta.EMBED_HOPS not in link.meta


def test_embed_hops_off_leaves_requests_alone() -> None:
    mw = VisitMiddleware(get_crawler().stats, embed_hops=0)
    request = Request("http://example.com/a.png")
    assert mw._child(request, response()) is request
    assert meta.EMBED_HOPS not in request.meta


def test_a_hand_written_regex_rule_is_never_replaced_by_learned_noise() -> None:
    clock_page = "<html><body><p>Server time {} UTC</p><p>Story</p></body></html>"
    rules = DigestRules.from_settings(
        [{"url": r"/lab/regex", "rule": "regex", "patterns": [r"Server time \d+"]}], "exact", 1_048_576
    )
    commits = Services()
    mw = VisitMiddleware(get_crawler().stats, commits, rules=rules)  # type: ignore[arg-type]
    # a sibling page (same host, folder, extension) learned the clock line
    learned = noise.learn(
        noise.sketch(noise.segments_of(html("http://example.com/lab/exact.html", clock_page.format(1)))),
        noise.segments_of(html("http://example.com/lab/exact.html", clock_page.format(2))),
    ).exclusions
    assert learned
    mw.noise_pool.add("http://example.com/lab/exact.html", learned)
    page = html("http://example.com/lab/regex.html", clock_page.format(3))
    commits.issue(page.request)  # type: ignore[arg-type]
    mw.process_spider_input(page)
    [visit] = commits.visits
    assert visit.digest.startswith("regex:sha1:") and visit.noise is None  # the user's rule, as written
    # a page under the default rule adopts the sibling's exclusions
    other = html("http://example.com/lab/other.html", clock_page.format(4))
    commits.issue(other.request, fp=b"fp2")  # type: ignore[arg-type]
    mw.process_spider_input(other)
    assert commits.visits[1].digest.startswith("noise:")


def html(url: str, body: str) -> HtmlResponse:
    return HtmlResponse(url, body=body.encode(), request=Request(url))


def with_learned_noise(url: str, clock_page: str) -> tuple[VisitMiddleware, Services]:
    """A visit middleware whose noise pool holds what *url* learned: two
    fetches of *clock_page* differing only in its clock."""
    commits = Services()
    mw = VisitMiddleware(get_crawler().stats, commits)  # type: ignore[arg-type]
    learned = noise.learn(
        noise.sketch(noise.segments_of(html(url, clock_page.format(1)))),
        noise.segments_of(html(url, clock_page.format(2))),
    ).exclusions
    assert learned
    mw.noise_pool.add(url, learned)
    return mw, commits


def test_same_bytes_under_a_new_digest_rule_are_unchanged_and_skip_the_callback() -> None:
    """A page whose body equals the last visit's is unchanged, even when the
    digest rule switched (here: a sibling's learned noise adopted)."""
    clock_page = "<html><body><p>Server time {} UTC</p><p>Story</p></body></html>"
    mw, commits = with_learned_noise("http://example.com/lab/a.html", clock_page)
    body = "<html><body><p>Server time 7 UTC</p><p>Story</p></body></html>"
    first = evaluate(html("http://example.com/lab/b.html", body), {})
    record = {"digest": first.digest, "payload_digest": first.payload_digest, "fetched": 0.0, "visits": 2}
    page = html("http://example.com/lab/b.html", body)
    commits.issue(page.request, record)  # type: ignore[arg-type]
    mw.process_spider_input(page)
    [visit] = commits.visits
    assert "noiseAdopted" in visit.annotations and visit.digest.startswith("noise:")  # the rule switched
    assert visit.change is ChangeState.UNCHANGED  # ... but the bytes did not change
    assert page.request.callback.__name__ == "skip_unchanged"  # type: ignore[union-attr]


def test_the_record_snapshot_carries_the_payload_digest() -> None:
    from scrapy_adaptive.model import UrlRecord

    record = UrlRecord("http://h/a", "h", {}, 0, payload_digest="sha1:X")
    assert record.snapshot()["payload_digest"] == "sha1:X"


def test_a_static_sibling_the_learned_noise_does_not_fit_gets_its_verdict() -> None:
    """A page with no noise state of its own, offered a sibling's exclusions
    that match nothing on it, is judged as it is (this crashed the visit:
    the URL was left without a verdict until its lease ran out)."""
    clock_page = "<html><body><p>Generated at {} UTC</p><p>Story</p></body></html>"
    mw, commits = with_learned_noise("http://example.com/p/a.html", clock_page)
    for body in ("<html><body><h1>Other</h1><p>static</p></body></html>", "<html><body></body></html>"):
        page = html("http://example.com/p/b.html", body)
        commits.issue(page.request)  # type: ignore[arg-type]
        mw.process_spider_input(page)
    assert [v.change for v in commits.visits] == [ChangeState.CHANGED, ChangeState.CHANGED]


def test_an_empty_answer_like_the_last_one_is_unchanged_so_the_url_backs_off() -> None:
    first = evaluate(response(b"", 200), {})
    assert first.change is ChangeState.UNKNOWN  # nothing to compare yet
    last = {"visits": 1, "status": 200, "size": 0}
    assert evaluate(response(b"", 200), last).change is ChangeState.UNCHANGED
    assert evaluate(response(b"", 404), last).change is ChangeState.UNKNOWN  # another answer
    assert evaluate(response(b"<p>back</p>", 200), {**last, "digest": None}).change is ChangeState.CHANGED


def test_the_same_redirect_as_last_time_is_unchanged_another_says_nothing() -> None:
    from scrapy_adaptive.integration.spidermiddlewares.judging import same_redirect

    last = {"visits": 3, "status": 301, "reason": "redirect to http://example.com/new"}
    assert same_redirect(last, 301, "redirect to http://example.com/new")
    assert not same_redirect(last, 302, "redirect to http://example.com/new")
    assert not same_redirect(last, 301, "redirect to http://example.com/newer")
    assert not same_redirect({}, 301, "redirect to http://example.com/new")


def test_a_learned_mask_contradicted_by_moved_validators_is_dropped_and_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A page learned its clock as noise; later its ETag moves while only the
    masked part differs: that is an edit the mask must not hide."""
    url = "http://example.com/q/a.html"
    page = "<html><body><p>Price {} EUR</p><p>Server time {} UTC</p></body></html>"
    segments = [noise.segments_of(html(url, page.format("19.99", t))) for t in ("10:00:01", "10:00:02")]
    learned = noise.learn(noise.sketch(segments[0]), segments[1]).exclusions
    assert learned
    commits = Services()
    mw = VisitMiddleware(get_crawler().stats, commits)  # type: ignore[arg-type]
    before = HtmlResponse(
        url, body=page.format("19.99", "10:00:02").encode(), headers={"ETag": '"1"'}, request=Request(url)
    )
    digest = noise.masked_digest(noise.segments_of(before), learned).digest
    record = {"digest": digest, "payload_digest": "sha1:X", "etag": '"1"', "noise": {"x": learned, "r": 2}, "visits": 3}
    for etag, expected in (('"1"', ChangeState.UNCHANGED), ('"2"', ChangeState.CHANGED)):
        again = HtmlResponse(
            url, body=page.format("19.99", "11:00:00").encode(), headers={"ETag": etag}, request=Request(url)
        )
        commits.issue(again.request, record)  # type: ignore[arg-type]
        with caplog.at_level(logging.INFO):
            mw.process_spider_input(again)
        assert commits.visits[-1].change is expected
    dropped = commits.visits[-1]
    assert "noiseDropped" in dropped.annotations and dropped.noise == {"r": 2}
    said = [r.getMessage() for r in caplog.records if "dropped" in r.getMessage()]
    assert said == [f"Learned noise of {url} dropped: {noise_learner.DROPPED_VALIDATORS}; the visit is judged changed."]


def test_a_server_error_says_nothing_of_the_page_and_its_recovery_is_no_new_version() -> None:
    """A 503 (or a 429) between two fetches of the same page: its body is not
    the page's, so it does not replace the capture, and the page answering
    again is unchanged (its items are not delivered twice)."""
    content = response(b"<html><body><p>Fridge</p></body></html>")
    first = evaluate(content, {})
    record = {"digest": first.digest, "payload_digest": first.payload_digest, "size": first.size}
    for status in (503, 500, 429):
        busy = evaluate(response(b"<html>Busy</html>", status, ETag='"busy"'), record)
        assert busy.change is ChangeState.UNKNOWN and busy.digest is None and busy.payload_digest is None
        assert (busy.size, busy.etag, busy.content_type) == (None, None, None)  # the record keeps its capture's
    again = evaluate(response(b"<html><body><p>Fridge</p></body></html>"), record)
    assert again.change is ChangeState.UNCHANGED


def test_a_page_whose_own_noise_a_siblings_mask_misses_learns_its_own_instead_of_changing_at_every_visit() -> None:
    """A sibling's mask covers the clock; this page also has a random token.
    It used to be "changed" at every visit, never probed (a false version a
    visit); now a change the adopted mask does not explain is probed, and
    the page learns its own noise."""
    clock_page = "<html><body><p>Server time {} UTC</p><p>Story</p></body></html>"
    mw, commits = with_learned_noise("http://example.com/s/a.html", clock_page)
    own = "<html><body><p>Server time {} UTC</p><p>Story</p><p>token {}</p></body></html>"
    url = "http://example.com/s/b.html"
    record: dict[str, Any] = {}
    for n, token in enumerate(("a1f3", "9c0d")):
        page = html(url, own.format(10 + n, token))
        commits.issue(page.request, dict(record), fp=b"b")  # type: ignore[arg-type]
        mw.process_spider_input(page)
        visit = commits.visits[-1]
        record = {
            "digest": visit.digest,
            "payload_digest": visit.payload_digest,
            "noise": visit.noise if visit.noise is not None else record.get("noise"),
            "visits": n + 1,
            "fetched": float(n),
        }
    first, second = commits.visits
    assert "noiseAdopted" in first.annotations  # the sibling's mask fits the clock line
    assert "noiseProbe" in second.annotations and second.probe == 0.0  # learnt here, not changed for ever
    assert second.change is ChangeState.CHANGED  # a version, as any page's first change before its probes


def test_an_items_mode_callback_reads_the_verdict_known_before_its_items() -> None:
    """Items mode judges the page by the items its callback yields, after
    the callback: ``response.meta["adaptive_change"]`` was None in the
    callback.  It reads ``"unchanged"`` for a body byte for byte the last
    visit's (the verdict then), else ``"unknown"`` (its items decide), and
    the verdict once the output ends."""
    from scrapy_adaptive.change.digest import payload_digest

    rules = DigestRules.from_settings([{"url": r"/p", "rule": "items"}], "exact", 1_048_576)
    body = b"<html><body><p>Story</p></body></html>"
    for record, before in [
        ({}, "unknown"),  # a first visit: its items decide
        ({"digest": "items:sha1:x", "payload_digest": payload_digest(b"other"), "visits": 1}, "unknown"),
        ({"digest": "items:sha1:x", "payload_digest": payload_digest(body), "visits": 1}, "unchanged"),
    ]:
        commits = Services()
        mw = VisitMiddleware(get_crawler().stats, commits, rules=rules)  # type: ignore[arg-type]
        page = response(body)
        commits.issue(page.request, record)  # type: ignore[arg-type]
        mw.process_spider_input(page)
        assert commits.visits == [] and page.meta["adaptive_change"] == before, (record, page.meta)
        out = list(mw.process_spider_output(page, [{"title": "Story"}]))
        [visit] = commits.visits
        assert page.meta["adaptive_change"] == visit.change.value
        assert out == ([] if before == "unchanged" else [{"title": "Story"}])
