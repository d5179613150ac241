"""Soft-404s and parked pages: the frontier's judgement, built directly,
and in real crawls against a host that answers "not found" with a 200 and a
parked host that serves one placeholder for every URL."""

from __future__ import annotations

from pathlib import Path

import pytest

from scrapy_adaptive.frontier import Frontier, Outcome, Politeness, Visit
from scrapy_adaptive.frontier.hostqueue import MAX_SHARED_DIGESTS
from scrapy_adaptive.model import PARKED, SOFT_404
from scrapy_adaptive.store.base import MemoryStore
from tests.conftest import read_records
from tests.crawlrunner import SPIDERS_DIR, read_jsonl, run_crawl
from tests.mockserver import MockServer
from tests.unit.frontier.test_frontier import add, fp


def page(status: int, digest: str, content_type: str = "text/html; charset=utf-8") -> Visit:
    return Visit(Outcome.VISITED, status=status, digest=digest, content_type=content_type)


def out_frontier(urls: int, soft404_urls: int = 3) -> tuple[Frontier, list[bytes]]:
    """A frontier with *urls* URLs of one host, all issued."""
    f = Frontier(MemoryStore(), Politeness(valence=max(1, urls)), soft404_urls=soft404_urls)
    for i in range(urls):
        add(f, f"http://h/{i}")
    issued = []
    for _ in range(urls):
        out = f.next()
        assert out is not None
        issued.append(out.fp)
    return f, issued


def test_a_page_equal_to_the_hosts_404_page_is_a_soft_404() -> None:
    f, (gone, soft, real) = out_frontier(3)
    assert f.hosts.page_kind(soft, page(200, "sha1:nf")) is None  # not known yet
    assert f.hosts.page_kind(gone, page(404, "sha1:nf")) is None  # learnt
    assert f.hosts.page_kind(soft, page(200, "sha1:nf")) == SOFT_404
    assert f.hosts.page_kind(real, page(200, "sha1:real")) is None
    assert f.hosts.page_kind(real, page(500, "sha1:nf")) is None  # an error is an error


def test_a_digest_many_urls_share_is_a_parked_page_and_the_counts_are_bounded() -> None:
    f, fps = out_frontier(4, soft404_urls=3)
    kinds = [f.hosts.page_kind(u, page(200, "sha1:parked")) for u in fps]
    assert kinds == [None, None, PARKED, PARKED]
    assert f.hosts.page_kind(fps[0], page(200, "sha1:parked")) == PARKED  # a revisit of an early one too
    off, shared = out_frontier(4, soft404_urls=0)  # off unless configured
    assert [off.hosts.page_kind(u, page(200, "sha1:parked")) for u in shared] == [None] * 4
    f, (one,) = out_frontier(1)
    for i in range(MAX_SHARED_DIGESTS * 3):
        f.hosts.page_kind(one, page(200, f"sha1:{i}"))
    [q] = f.queues()
    assert len(q.soft404.shared) == MAX_SHARED_DIGESTS


def test_images_many_urls_share_are_content_not_parked_pages() -> None:
    f, fps = out_frontier(4, soft404_urls=3)
    kinds = [f.hosts.page_kind(u, page(200, "sha1:spacer", "image/gif")) for u in fps]
    assert kinds == [None, None, None, None]
    assert f.hosts.page_kind(fps[0], page(404, "sha1:nf", "image/png")) is None
    assert f.hosts.page_kind(fps[1], page(200, "sha1:nf", "image/png")) is None


def test_an_unknown_url_is_never_judged() -> None:
    f, _ = out_frontier(1)
    assert f.hosts.page_kind(fp("http://h/not-out"), page(404, "sha1:nf")) is None


@pytest.mark.e2e
def test_a_page_gone_soft_404_and_a_parked_host_are_recorded_not_delivered(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    server = clean_log
    gone = server.url("/gone/1/soft")  # a real page once, then "not found" with a 200
    parked = [server.url(f"/parked/p{i}", host="127.0.0.2") for i in range(5)]
    urls = [server.url("/notfound/x"), gone, *parked]
    settings = {**adaptive_settings, "ADAPTIVE_SOFT404_URLS": 3, "ADAPTIVE_WAIT_DEFAULT": 0.5, "CLOSESPIDER_TIMEOUT": 4}
    result = run_crawl(
        SPIDERS_DIR / "pages.py", settings, timeout=60, args=["-a", "urls=" + " ".join(urls)], collect_items=True
    )
    result.assert_ok()
    items = read_jsonl(result.workdir / "items.jsonl")
    # the gone page: its real version delivered once, its "not found" never
    assert [i["url"] for i in items].count(gone) == 1
    assert len([e for e in server.log() if e["path"] == "/gone/1/soft"]) >= 3
    # the parked host: the first two URLs' pages were versions, from the third on it is parked
    assert len([i for i in items if "/parked/" in i["url"]]) == 2
    stats = result.stats
    assert stats["adaptive/soft404/soft404"] >= 2 and stats["adaptive/soft404/parked"] >= 3
    records = read_records(tmp_state / "adaptive")
    assert records[gone].versions == 1
    assert sum(records[u].versions for u in parked) == 2
    assert "soft404" in (tmp_state / "adaptive" / "crawl.log").read_text()
