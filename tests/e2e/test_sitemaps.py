"""The sites' own signals in real crawls, with no code in the spider:
``ADAPTIVE_SITEMAPS`` (an index, a gzip sitemap), ``ADAPTIVE_FEEDS``,
robots.txt ``Sitemap:`` lines; robots.txt fetched again so a new Disallow
takes effect; ``ADAPTIVE_CANONICAL`` spellings of one page as one record."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.conftest import read_records
from tests.crawlrunner import SPIDERS_DIR, finish_crawl, run_crawl, start_crawl, wait_for_log
from tests.mockserver import MockServer

pytestmark = pytest.mark.e2e

SPIDER = SPIDERS_DIR / "pages.py"
ANNOUNCED_AT = 4  #: the feed announces its news page's change at this hit
#: sitemaps and feeds read every half second, pages left alone for ten minutes
SIGNALS_OFTEN = {
    "url": "/(sitemap|sitemapindex|feed)/",
    "policy": "scrapy_adaptive.policies.ConstantWaitPolicy",
    "initial": 0.5,
    "default": 0.5,
    "min": 0.1,
}


def items_of(result_workdir: Path) -> list[dict[str, object]]:
    path = result_workdir / "items.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_sitemaps_feeds_and_robots_sitemaps_feed_the_frontier_with_hints(
    clean_log: MockServer, adaptive_settings: dict[str, object]
) -> None:
    server = clean_log
    news = "/changes/1/feed-news"  # new content at every fetch
    server.set_robots(sitemaps=["/sitemap/from-robots?urls=/page/sm-robots"])
    index = server.url(
        "/sitemapindex/main?maps=/sitemap/plain?urls=/page/sm-a,/page/sm-b|/sitemap/zipped.gz?urls=/page/sm-gz"
    )
    settings = {
        **adaptive_settings,
        "ADAPTIVE_SITEMAPS": [index, server.url("/page/not-a-sitemap"), server.url("/notfound/sitemap.xml")],
        "ADAPTIVE_FEEDS": [server.url(f"/feed/news?urls={news}&fresh_from={ANNOUNCED_AT}")],
        "ADAPTIVE_SITEMAPS_FROM_ROBOTS": True,
        # pages are due far in the future: only a hint can bring them back
        "ADAPTIVE_WAIT_POLICY": "scrapy_adaptive.policies.PrecisionWaitPolicy",
        "ADAPTIVE_WAIT_POLICIES": [SIGNALS_OFTEN],
        "ADAPTIVE_WAIT_MIN": 600.0,
        "ADAPTIVE_WAIT_MAX": 3600.0,
        "ADAPTIVE_NOISE_LEARNING": False,  # the feed's dates change: not noise here
        "CLOSESPIDER_TIMEOUT": 6,
    }
    result = run_crawl(SPIDER, settings, timeout=60, collect_items=True)
    result.assert_ok()
    stats = result.stats
    log = server.log()

    def fetches(path: str) -> list[float]:
        return [e["start"] for e in log if e["path"] == path and e["status"] == 200]

    # every sitemap and feed was found and its pages crawled: the index's two
    # (one gzip), robots.txt's one, the feed's
    for page in ("/page/sm-a", "/page/sm-b", "/page/sm-gz", "/page/sm-robots", news):
        assert len(fetches(page)) >= 1, page
    # the spider's parse() saw the pages and never a sitemap or a feed
    seen = {item["url"] for item in items_of(result.workdir)}
    assert server.url("/page/sm-gz") in seen and server.url(news) in seen
    assert not [u for u in seen if "/sitemap" in str(u) or "/feed/" in str(u)], seen
    # sitemaps and feeds are revisited (and the index too)
    assert len(fetches("/feed/news")) >= ANNOUNCED_AT + 1
    assert len(fetches("/sitemap/zipped.gz")) >= 2
    # the feed's updated date became a hint that brought the page back soon
    announced = [e for e in log if e["path"] == "/feed/news"][ANNOUNCED_AT - 1]["end"]
    news_fetches = fetches(news)
    assert len(news_fetches) == 2, news_fetches
    assert 0 < news_fetches[1] - announced < 3.0
    assert stats["adaptive/hints/confirmed/feed"] == 1
    assert len(fetches("/page/sm-a")) == 1  # its lastmod never moved: never revisited
    # a page that is not a sitemap is one warning naming it; the crawl goes on
    assert result.log.count(f"sitemap {server.url('/page/not-a-sitemap')} is not a sitemap") == 1
    # a sitemap that answers 404 too: said once, counted, not "Ignoring response" at every re-read
    assert result.log.count(f"sitemap {server.url('/notfound/sitemap.xml')} answered HTTP 404") == 1
    assert "Ignoring response <404" not in result.log
    assert len([e for e in log if e["path"] == "/notfound/sitemap.xml"]) == 1  # backed off: not re-read yet
    assert stats["adaptive/signals/sitemap/unreadable"] >= 2
    assert stats["adaptive/signals/from_robots"] == 1
    assert stats["adaptive/signals/feed/read"] >= 1


def test_robots_txt_is_fetched_again_and_a_new_disallow_takes_effect(
    clean_log: MockServer, adaptive_settings: dict[str, object]
) -> None:
    server = clean_log
    server.set_robots(disallow=[])
    page = "/page/robots-later"
    settings = {
        **adaptive_settings,
        "ADAPTIVE_ROBOTS_REFRESH": 1.0,
        "ADAPTIVE_WAIT_DEFAULT": 0.3,
        "CLOSESPIDER_TIMEOUT": 6,
    }
    proc = start_crawl(SPIDER, settings, args=["-a", f"urls={server.url(page)}"])
    wait_for_log(proc, re.escape(f"Crawled (200) <GET {server.url(page)}"), timeout=30)
    time.sleep(1.0)  # a revisit or two while allowed
    server.set_robots(disallow=["/page/"])
    changed_at = time.time()
    result = finish_crawl(proc, timeout=60)
    result.assert_ok()
    log = server.log()
    robots = [e for e in log if e["path"] == "/robots.txt"]
    page_hits = [e["start"] for e in log if e["path"] == page]
    assert len([t for t in page_hits if t < changed_at]) >= 2, page_hits  # revisited while allowed
    # the first robots.txt fetched after the change disallows the page: from
    # then on it is never fetched again
    refreshed = min(e["end"] for e in robots if e["start"] > changed_at)
    assert refreshed < changed_at + 2.0
    assert [t for t in page_hits if t > refreshed] == []
    assert result.stats["adaptive/robots/refreshed"] >= 1
    assert result.stats["robotstxt/forbidden"] >= 1


def test_spellings_of_one_page_are_one_record_in_a_crawl(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    server = clean_log
    spellings = ["/page/Canon", "/page/canon", "/page/canon/", "/page/canon/index.html"]
    start = server.page_url("/page/canon-start", links=spellings)
    settings = {**adaptive_settings, "ADAPTIVE_CANONICAL": ["case", "slash", "index"], "CLOSESPIDER_TIMEOUT": 3}
    result = run_crawl(SPIDERS_DIR / "follow.py", settings, timeout=60, args=["-a", f"start_urls={start}"])
    result.assert_ok()
    fetched = [
        e["path"]
        for e in server.log()
        if e["path"].lower().startswith("/page/canon/") or e["path"].lower() == "/page/canon"
    ]
    assert set(fetched) == {"/page/Canon"}, fetched  # the first spelling, revisited
    assert len(fetched) >= 2
    records = read_records(tmp_state / "adaptive")
    assert [url for url in records if "canon-start" not in url] == [server.url("/page/Canon")]


def test_www_and_the_bare_host_are_one_site_in_a_crawl(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    server = clean_log
    port = server.port("127.0.0.1")
    www, bare = (f"http://{name}:{port}/page/www-one" for name in ("www.site.test", "site.test"))
    start = server.page_url("/page/www-start", links=[www, bare])
    settings = {
        **adaptive_settings,
        "ADAPTIVE_CANONICAL": ["www"],
        # the two names resolve to the mock server on 127.0.0.1 (loopback only)
        "DNS_RESOLVER": "tests.loopback_resolver.LoopbackResolver",
        "CLOSESPIDER_TIMEOUT": 3,
    }
    result = run_crawl(SPIDERS_DIR / "follow.py", settings, timeout=60, args=["-a", f"start_urls={start}"])
    result.assert_ok()
    records = read_records(tmp_state / "adaptive")
    assert [url for url in records if urlsplit(url).path == "/page/www-one"] == [www]  # one record, the first spelling
    assert records[www].visits >= 2  # and it is revisited as one page
    assert len(server.log(path_prefix="/page/www-one")) == records[www].visits
