"""What base_visit reads of a response's first answer: caching headers, a
future Last-Modified and the sitemap date the request carried."""

from __future__ import annotations

from email.utils import formatdate

from scrapy import Request
from scrapy.http import HtmlResponse

from scrapy_adaptive.change.answer import Answer
from scrapy_adaptive.change.freshness import base_visit
from scrapy_adaptive.integration.spidermiddlewares.reading import answer_of

NOW = 1_700_000_000.0


def response(headers: dict[str, object], meta: dict[str, object] | None = None) -> Answer:
    """A first answer as the visit middleware reads it."""
    request = Request("https://a.example/p", meta=meta or {})
    return answer_of(HtmlResponse(request.url, body=b"<html></html>", headers=headers, request=request))


def test_cache_control_lines_are_read_together() -> None:
    visit = base_visit(response({"Cache-Control": ["public", "max-age=600"]}), NOW)
    assert visit.freshness == 600.0 and visit.annotations == ()


def test_expires_is_read_against_the_servers_date() -> None:
    headers = {"Expires": formatdate(NOW + 7200, usegmt=True), "Date": formatdate(NOW + 3600, usegmt=True)}
    assert base_visit(response(headers), NOW).freshness == 3600.0


def test_broken_headers_are_named_and_ignored() -> None:
    headers = {
        "Cache-Control": "max-age=forever",
        "Expires": "soon",
        "Last-Modified": formatdate(NOW + 86_400, usegmt=True),
        "Date": formatdate(NOW, usegmt=True),
    }
    visit = base_visit(response(headers), NOW)
    assert visit.freshness is None
    assert visit.annotations == ("badCacheControl", "badExpires", "futureLastModified")
    assert visit.last_modified == headers["Last-Modified"]  # still a validator for conditional requests
    # one that is not a date at all gives no age either, and is named like a bad Expires
    unreadable = base_visit(response({**headers, "Last-Modified": "yesterday-ish"}), NOW)
    assert unreadable.annotations == ("badCacheControl", "badExpires", "badLastModified")
    assert base_visit(response({"Date": headers["Date"]}), NOW).annotations == ()


def test_the_sitemap_date_on_the_request_is_the_claimed_modification() -> None:
    hint = {"adaptive_hint": {"modified": "2020-01-02", "source": "sitemap"}}
    assert base_visit(response({}, hint), NOW).claimed_modified == 1_577_923_200.0
    for bad in ({"adaptive_hint": {"modified": "garbage"}}, {"adaptive_hint": "x"}, {}):
        assert base_visit(response({}, bad), NOW).claimed_modified is None
