"""The visit middleware's pure parts: verdicts and embed hops."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from scrapy import Request
from scrapy.http import HtmlResponse, Response
from scrapy.utils.test import get_crawler

from scrapy_adaptive import meta
from scrapy_adaptive.change import judge, noise_learner, text_diff
from scrapy_adaptive.change.rules import DigestRules
from scrapy_adaptive.frontier import ChangeState, Outcome, Visit
from scrapy_adaptive.integration.spidermiddlewares.reading import answer_of, is_embed
from scrapy_adaptive.integration.spidermiddlewares.visit import VisitMiddleware
from tests.standins import Services


def response(body: bytes = b"<html>x</html>", status: int = 200, **headers: str) -> Response:
    url = "http://example.com/p"
    return HtmlResponse(url, body=body, status=status, headers=headers, request=Request(url))


def evaluate(response: Response, record: Any) -> Visit:
    """The verdict as the middleware makes it: the response read once, then judged."""
    return judge.judge(answer_of(response), record, judge.Judging()).visit


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
    assert is_embed(Request("http://example.com/a/logo.png;v=2"))  # a last segment's parameters, as urlparse reads them
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


def html(url: str, body: str) -> HtmlResponse:
    return HtmlResponse(url, body=body.encode(), request=Request(url))


def test_the_record_snapshot_carries_the_payload_digest() -> None:
    from scrapy_adaptive.model import UrlRecord

    record = UrlRecord("http://h/a", "h", {}, 0, payload_digest="sha1:X")
    assert record.snapshot()["payload_digest"] == "sha1:X"


def test_an_empty_answer_like_the_last_one_is_unchanged_so_the_url_backs_off() -> None:
    first = evaluate(response(b"", 200), {})
    assert first.change is ChangeState.UNKNOWN  # nothing to compare yet
    last = {"visits": 1, "status": 200, "size": 0}
    assert evaluate(response(b"", 200), last).change is ChangeState.UNCHANGED
    assert evaluate(response(b"", 404), last).change is ChangeState.UNKNOWN  # another answer
    assert evaluate(response(b"<p>back</p>", 200), {**last, "digest": None}).change is ChangeState.CHANGED


def test_the_same_redirect_as_last_time_is_unchanged_another_says_nothing() -> None:
    from scrapy_adaptive.change.difference import same_redirect

    last = {"visits": 3, "status": 301, "reason": "redirect to http://example.com/new"}
    assert same_redirect(last, 301, "redirect to http://example.com/new")
    assert not same_redirect(last, 302, "redirect to http://example.com/new")
    assert not same_redirect(last, 301, "redirect to http://example.com/newer")
    assert not same_redirect({}, 301, "redirect to http://example.com/new")


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


def test_a_hand_written_regex_rule_is_never_replaced_by_learned_noise() -> None:
    """The user's regex rule says what the noise is: the learner stays out."""
    clock_page = "<html><body><p>Server time {} UTC</p><p>Story</p></body></html>"
    rules = DigestRules.from_settings(
        [{"url": r"/lab/regex", "rule": "regex", "patterns": [r"Server time \\d+"]}], "exact", 1_048_576
    )
    commits = Services()
    mw = VisitMiddleware(get_crawler().stats, commits, rules=rules)  # type: ignore[arg-type]
    page = html("http://example.com/lab/regex.html", clock_page.format(3))
    commits.issue(page.request)  # type: ignore[arg-type]
    mw.process_spider_input(page)
    [visit] = commits.visits
    assert visit.digest.startswith("regex:sha1:") and visit.noise is None  # the user's rule, as written
    other = html("http://example.com/lab/other.html", clock_page.format(4))
    commits.issue(other.request, fp=b"fp2")  # type: ignore[arg-type]
    mw.process_spider_input(other)
    assert commits.visits[1].noise is not None and noise_learner.VERSION in commits.visits[1].noise


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


def test_an_items_mode_error_answer_is_judged_at_once_and_never_by_its_items() -> None:
    """A 404 or a redirect has no items of the page (issue 46): judged as an
    answer when it comes, so that a callback allowed to see it
    (``handle_httpstatus_list``) cannot make its items a version, and one
    that never runs (``HttpErrorMiddleware``) leaves no verdict waiting."""
    rules = DigestRules.from_settings([{"url": r"/p", "rule": "items"}], "exact", 1_048_576)
    for status, record, change in [
        (404, {"digest": "items:sha1:x", "visits": 1, "status": 200}, ChangeState.UNKNOWN),
        (404, {"digest": "items:sha1:x", "visits": 2, "status": 404}, ChangeState.UNCHANGED),
        (410, {}, ChangeState.UNKNOWN),
    ]:
        commits = Services()
        mw = VisitMiddleware(get_crawler().stats, commits, rules=rules)  # type: ignore[arg-type]
        page = response(b"<html><body>Not found</body></html>", status)
        commits.issue(page.request, record)  # type: ignore[arg-type]
        mw.process_spider_input(page)
        [visit] = commits.visits
        assert (visit.status, visit.change) == (status, change) and meta.PENDING_VISIT not in page.meta
        assert page.meta["adaptive_change"] == change.value
        assert list(mw.process_spider_output(page, [{"title": "Not found"}])) == [{"title": "Not found"}]
        assert len(commits.visits) == 1  # no second verdict from the items


def test_an_error_answer_is_never_a_version_whatever_its_body() -> None:
    """A 404 whose body differs from the page's capture (and from the last
    404's) is no version: the same answer as last time is unchanged, another
    answer unknown; its body is digested all the same (the host's not-found
    page, for soft 404s) but does not describe the page (issue 46)."""
    page = evaluate(response(b"<p>Kettle</p>"), {})
    record = {"visits": 1, "status": 200, "digest": page.digest, "payload_digest": page.payload_digest}
    first = evaluate(response(b"<p>Not found 1</p>", 404), record)
    assert first.change is ChangeState.UNKNOWN and first.digest is not None and first.digest != page.digest
    record = {**record, "visits": 2, "status": 404, "reason": None}
    assert evaluate(response(b"<p>Not found 2</p>", 404), record).change is ChangeState.UNCHANGED
    assert evaluate(response(b"<p>Not found 2</p>", 410), record).change is ChangeState.UNKNOWN
    assert evaluate(response(b"<p>Kettle</p>"), record).change is ChangeState.UNCHANGED  # back, the same


def test_only_a_changed_2xx_is_read_for_its_text_and_only_with_the_setting() -> None:
    """``ADAPTIVE_TEXT_DIFF``: the text of an unchanged page is the one kept
    already, an error page's is not the page's, and off reads nothing."""
    page = response(b"<html><body><p>Price 10</p><script>x()</script></body></html>")
    for cap, change, status, read in (
        (4096, ChangeState.CHANGED, 200, True),
        (4096, ChangeState.UNCHANGED, 200, False),
        (4096, ChangeState.CHANGED, 404, False),
        (0, ChangeState.CHANGED, 200, False),
    ):
        judging = VisitMiddleware(get_crawler().stats, text_diff=cap).judging
        answer = response(page.body, status)
        visit = replace(evaluate(answer, {}), change=change)
        assert (text_diff.with_text(answer_of(answer), visit) if judging.keep_text else visit).text == (["Price 10"] if read else None), (
            cap,
            change,
            status,
        )
