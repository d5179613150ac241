"""The sitemaps middleware's readers, built directly: sitemaps at every
lastmod precision, gzip within bounds, feeds, unreadable bodies named."""

from __future__ import annotations

import gzip
import logging
import re
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy import Request
from scrapy.http import HtmlResponse, TextResponse, XmlResponse
from scrapy.utils.test import get_crawler

from scrapy_adaptive import meta
from scrapy_adaptive.config.spec import ConfigError, parse_value
from scrapy_adaptive.config.table import SPECS_BY_NAME
from scrapy_adaptive.dates import parse_time
from scrapy_adaptive.integration.spidermiddlewares.sitemaps import (
    FEED,
    SITEMAP,
    SignalBodyError,
    SitemapsMiddleware,
    feed_entries,
    sitemap_body,
    sitemap_entries,
)
from scrapy_adaptive.integration.spidermiddlewares.callback import skip_unchanged
from scrapy_adaptive.runtime.request_hints import hint_from_meta
from tests.standins import Services

URL = "http://127.0.0.1/sitemap.xml"


def urlset(*entries: tuple[str, str | None]) -> bytes:
    body = "".join(f"<url><loc>{loc}</loc>{f'<lastmod>{mod}</lastmod>' if mod else ''}</url>" for loc, mod in entries)
    return f'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{body}</urlset>'.encode()


def read(body: bytes, kind: str = SITEMAP, url: str = URL, max_size: int = 0) -> list[Request]:
    mw = SitemapsMiddleware(get_crawler().stats, max_size=max_size)  # type: ignore[arg-type]
    cls = XmlResponse if kind == SITEMAP else TextResponse
    request = Request(url, meta={meta.SIGNAL: kind})
    response = cls(url, body=body, request=request)
    mw.process_spider_input(response)
    assert request.callback == mw._read  # the spider's callback never sees it
    return list(request.callback(response))


w3c_moments = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2100, 1, 1), timezones=st.just(UTC))
precisions = st.sampled_from(
    ["%Y", "%Y-%m", "%Y-%m-%d", "%Y-%m-%dT%H:%MZ", "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M+01:00"]
)


@given(w3c_moments, precisions)
def test_a_lastmod_of_any_w3c_precision_becomes_a_valid_hint(moment: datetime, fmt: str) -> None:
    lastmod = moment.strftime(fmt)
    [request] = read(urlset(("http://127.0.0.1/a", lastmod)))
    hint = request.meta[meta.HINT]
    assert hint == {"modified": lastmod, "source": SITEMAP}
    assert hint_from_meta(hint, request.url).modified == parse_time(lastmod)


def test_an_entry_without_lastmod_is_a_new_url_without_a_hint() -> None:
    requests = read(urlset(("http://127.0.0.1/a", None), ("http://127.0.0.1/b", "2005-07")))
    assert [r.url for r in requests] == ["http://127.0.0.1/a", "http://127.0.0.1/b"]
    assert meta.HINT not in requests[0].meta and requests[0].callback is None
    assert requests[1].meta[meta.HINT]["modified"] == "2005-07"


def test_an_index_yields_its_sitemaps_flagged_for_reading() -> None:
    body = (
        b'<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        b"<sitemap><loc>http://127.0.0.1/a.xml.gz</loc><lastmod>2005</lastmod></sitemap></sitemapindex>"
    )
    [request] = read(body)
    assert request.url == "http://127.0.0.1/a.xml.gz"
    assert request.meta == {meta.SIGNAL: SITEMAP}


def test_a_gzip_sitemap_is_read_and_a_gzip_bomb_refused() -> None:
    body = urlset(("http://127.0.0.1/a", "2005"))
    assert sitemap_body(gzip.compress(body), URL, max_size=10_000) == body
    bomb = gzip.compress(b"<" * 5_000_000)
    assert len(bomb) < 10_000
    with pytest.raises(SignalBodyError, match=f"sitemap {URL} is larger than 100000 bytes once gunzipped"):
        sitemap_body(bomb, URL, max_size=100_000)
    [request] = read(gzip.compress(body), max_size=10_000)
    assert request.url == "http://127.0.0.1/a"


@pytest.mark.parametrize(
    ("body", "problem"),
    [(b"", "is not XML"), (b"<html><body>not found</body></html>", "is not a sitemap (root element 'html')")],
)
def test_an_unreadable_sitemap_is_one_warning_naming_the_url(
    body: bytes, problem: str, caplog: pytest.LogCaptureFixture
) -> None:
    with pytest.raises(SignalBodyError, match=re.escape(problem)):
        sitemap_entries(body, URL)
    with caplog.at_level(logging.WARNING):
        assert read(body) == []
    [record] = caplog.records
    assert f"sitemap {URL} {problem}" in record.getMessage()


def test_feed_entries_become_requests_with_updated_or_published_as_hints() -> None:
    atom = (
        b'<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom"><title>t</title>'
        b'<entry><title>a</title><link href="/a"/><updated>2005-07-16T19:20+01:00</updated></entry>'
        b'<entry><title>b</title><link href="http://127.0.0.1/b"/></entry></feed>'
    )
    rss = (
        b'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title><item><link>http://127.0.0.1/c</link>'
        b"<pubDate>Sun, 06 Nov 1994 08:49:37 GMT</pubDate></item></channel></rss>"
    )
    url = "http://127.0.0.1/feed.atom"
    a, b = read(atom, FEED, url)
    assert (a.url, a.meta[meta.HINT]) == ("http://127.0.0.1/a", {"modified": "2005-07-16T19:20+01:00", "source": FEED})
    assert b.url == "http://127.0.0.1/b" and meta.HINT not in b.meta
    [c] = read(rss, FEED, url)
    assert hint_from_meta(c.meta[meta.HINT], c.url).modified == 784111777.0
    with pytest.raises(SignalBodyError, match=f"feed {url} is not an RSS or Atom feed"):
        feed_entries(b"\x00\x01 not a feed <<<", url)


def test_an_unchanged_sitemap_is_not_read_and_other_pages_are_left_alone() -> None:
    mw = SitemapsMiddleware(get_crawler().stats)  # type: ignore[arg-type]
    request = Request(URL, callback=skip_unchanged, meta={meta.SIGNAL: SITEMAP})
    mw.process_spider_input(XmlResponse(URL, body=b"<urlset/>", request=request))
    assert request.callback is skip_unchanged
    page = Request("http://127.0.0.1/page")
    mw.process_spider_input(HtmlResponse(page.url, body=b"<html/>", request=page))
    assert page.callback is None


def test_the_url_list_settings_take_lists_strings_and_json() -> None:
    spec = SPECS_BY_NAME["ADAPTIVE_SITEMAPS"]
    assert parse_value(spec, "http://a/s.xml http://b/s.xml") == ("http://a/s.xml", "http://b/s.xml")
    assert parse_value(spec, '["http://a/s.xml?x=1,2"]') == ("http://a/s.xml?x=1,2",)
    assert parse_value(spec, ["http://a/s.xml"]) == ("http://a/s.xml",)
    assert parse_value(spec, None) == ()
    with pytest.raises(ConfigError, match=r"ADAPTIVE_SITEMAPS \(5\) must be http\(s\) URLs"):
        parse_value(spec, 5)


def failing_read(mw: SitemapsMiddleware, body: bytes, status: int = 200) -> list[Request]:
    request = Request(URL, meta={meta.SIGNAL: SITEMAP})
    response = XmlResponse(URL, body=body, status=status, request=request)
    mw.process_spider_input(response)
    assert request.meta["handle_httpstatus_all"] is True  # read here, not "Ignoring response" by HttpError
    return list(request.callback(response))


@pytest.mark.parametrize(
    ("body", "status", "problem", "entries"),
    [
        (b"<html>not found</html>", 404, f"sitemap {URL} answered HTTP 404", 0),
        (b"this is not xml at all", 200, f"sitemap {URL} is not XML (no element in its 22 bytes)", 0),
        (urlset(("http://127.0.0.1/a", None), ("http://127.0.0.1/b", None))[:-20], 200, "is cut short", 2),
    ],
)
def test_a_failing_sitemap_is_one_warning_naming_it_and_counted_at_every_read(
    body: bytes, status: int, problem: str, entries: int, caplog: pytest.LogCaptureFixture
) -> None:
    stats = get_crawler().stats
    stats.open_spider()  # type: ignore[union-attr, call-arg]
    mw = SitemapsMiddleware(stats)  # type: ignore[arg-type]
    with caplog.at_level(logging.WARNING):
        assert len(failing_read(mw, body, status)) == entries
        assert len(failing_read(mw, body, status)) == entries
    [record] = caplog.records  # said once, not at every re-read
    assert problem in record.getMessage() and "StopIteration" not in record.getMessage()
    assert stats.get_value("adaptive/signals/sitemap/unreadable") == 2  # type: ignore[union-attr]


def test_a_failing_sitemap_is_said_unreadable_and_the_policy_stack_backs_its_wait_off() -> None:
    """The middleware says the sitemap could not be read; the wait is the
    policy stack's: twice the last, from the default, within the bounds."""
    from scrapy.settings import Settings

    from scrapy_adaptive.config.settings import AdaptiveConfig
    from scrapy_adaptive.integration.spidermiddlewares.visit import VisitMiddleware
    from scrapy_adaptive.policies import load_wait_policy

    stats = get_crawler().stats
    stats.open_spider()  # type: ignore[union-attr, call-arg]
    services = Services()
    visits = VisitMiddleware(stats, services)  # type: ignore[arg-type]
    limits = {"ADAPTIVE_WAIT_DEFAULT": 10.0, "ADAPTIVE_WAIT_MIN": 1.0, "ADAPTIVE_WAIT_MAX": 1000.0}
    policy = load_wait_policy(AdaptiveConfig.from_settings(Settings(limits)))
    waits = []
    for wait in (None, 20.0, 800.0):
        request = services.issue(Request(URL, meta={meta.SIGNAL: SITEMAP}), {"wait": wait})
        visits.process_spider_input(
            XmlResponse(URL, body=f"<h1>gone {wait}</h1>".encode(), status=404, request=request)
        )
        visit = services.visits[-1]
        assert "signalUnreadable" in visit.annotations  # said by the middleware; the policy stack plans
        plan = policy.plan({"wait": wait, "policy": {"kept": 1}}, visit)
        assert plan.memory is None  # a failed read says nothing of how often it changes
        waits.append(plan.wait)
    assert waits == [20.0, 40.0, 1000.0]
    assert stats.get_value("adaptive/signals/sitemap/unreadable") == 3  # type: ignore[union-attr]
    ok = services.issue(Request(URL, meta={meta.SIGNAL: SITEMAP}), {"wait": 20.0})
    visits.process_spider_input(XmlResponse(URL, body=urlset(("http://127.0.0.1/a", None)), request=ok))
    assert "signalUnreadable" not in services.visits[-1].annotations  # a sitemap that reads: the policy's own wait


def test_a_sitemap_answering_304_to_its_validators_is_not_a_failure() -> None:
    from scrapy_adaptive.integration.spidermiddlewares.visit import VisitMiddleware
    from scrapy_adaptive.model import ChangeState, FetchResult

    stats = get_crawler().stats
    stats.open_spider()  # type: ignore[union-attr, call-arg]
    services = Services()
    visits = VisitMiddleware(stats, services)  # type: ignore[arg-type]
    fetch = FetchResult(
        validation="trusted", validators_sent=True, change=ChangeState.UNCHANGED, annotation="notModified"
    )
    request = services.issue(Request(URL, meta={meta.SIGNAL: SITEMAP, meta.FETCH: fetch}), {"wait": 20.0})
    visits.process_spider_input(XmlResponse(URL, body=b"", status=304, request=request))
    [visit] = services.visits
    assert "signalUnreadable" not in visit.annotations
    assert stats.get_value("adaptive/signals/sitemap/unreadable") is None  # type: ignore[union-attr]
