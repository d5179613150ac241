"""Which queue a request belongs to, and the Crawl-delay robots.txt asks for."""

from __future__ import annotations

import pytest
from scrapy import Request

from scrapy_adaptive.integration.politeness import QueueKeyer, parse_crawl_delay


def test_the_host_is_the_queue_by_default() -> None:
    keyer = QueueKeyer("host")
    assert keyer.key(Request("http://A.Example.com:8080/x")) == "a.example.com"
    assert keyer.key(Request("https://b.example.com/y", meta={"download_slot": "s"})) == "b.example.com"


def test_domain_mode_groups_subdomains_by_the_bundled_suffix_list() -> None:
    keyer = QueueKeyer("domain")
    assert keyer.key(Request("http://a.example.co.uk/")) == "example.co.uk"
    assert keyer.key(Request("http://b.www.example.co.uk/")) == "example.co.uk"
    assert keyer.key(Request("http://127.0.0.1:8000/")) == "127.0.0.1"  # no domain: the host


def test_slot_mode_honours_the_projects_download_slot() -> None:
    keyer = QueueKeyer("slot")
    assert keyer.key(Request("http://a.example/", meta={"download_slot": "shared"})) == "shared"
    assert keyer.key(Request("http://a.example/")) == "a.example"


@pytest.mark.parametrize(
    ("robots", "agent", "delay"),
    [
        (b"User-agent: *\nCrawl-delay: 4\n", None, 4.0),
        (b"User-agent: *\nCrawl-delay: 0.5\n", "bot", 0.5),
        (b"User-agent: bot\nCrawl-delay: 9\n\nUser-agent: *\nCrawl-delay: 1\n", "bot", 9.0),
        (b"User-agent: bot\nCrawl-delay: 9\n\nUser-agent: *\nCrawl-delay: 1\n", "other", 1.0),
        (b"User-agent: *\nDisallow: /private\n", None, None),
        (b"User-agent: *\nCrawl-delay: soon\n", None, None),
        (b"User-agent: *\nCrawl-delay: -3\n", None, None),
        (b"\xff\xfe\x00garbage\x00", None, None),
        (b"", None, None),
    ],
)
def test_the_crawl_delay_is_read_or_none_never_an_error(robots: bytes, agent: str | None, delay: float | None) -> None:
    assert parse_crawl_delay(robots, agent) == delay
