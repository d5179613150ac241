"""The decompression middleware: a refused body is a verdict at once."""

from __future__ import annotations

import gzip
from typing import Any

import pytest
from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response
from scrapy.utils.test import get_crawler

from scrapy_adaptive.integration.downloadermiddlewares.compression import DecompressionVerdictMiddleware
from scrapy_adaptive.model import Outcome
from tests.standins import Services


def middleware(**settings: Any) -> tuple[DecompressionVerdictMiddleware, Services, Any]:
    crawler = get_crawler(settings_dict=settings)
    crawler.stats.open_spider()  # type: ignore[union-attr, call-arg]
    mw = DecompressionVerdictMiddleware.from_crawler(crawler)
    commits = Services()
    mw.frontier_opened(commits)  # type: ignore[arg-type]
    return mw, commits, crawler.stats


def gzipped(body: bytes) -> Response:
    url = "http://example.com/bomb"
    return Response(url, body=gzip.compress(body), headers={"Content-Encoding": "gzip"}, request=Request(url))


def test_a_body_inflating_past_download_maxsize_is_a_counted_retry() -> None:
    mw, commits, stats = middleware(DOWNLOAD_MAXSIZE=100_000)
    response = gzipped(b" " * 2_000_000)
    with pytest.raises(IgnoreRequest):
        mw.process_response(response.request, response)
    [visit] = commits.visits
    assert visit.outcome is Outcome.RETRY and "DOWNLOAD_MAXSIZE (100000 B)" in visit.reason
    assert stats.get_value("adaptive/decompression/too_large") == 1


def test_a_body_that_is_not_its_encoding_is_a_counted_retry() -> None:
    mw, commits, stats = middleware()
    url = "http://example.com/bad"
    response = Response(url, body=b"not gzip " * 40, headers={"Content-Encoding": "gzip"}, request=Request(url))
    with pytest.raises(Exception):  # noqa: B017 - whatever the decoder raises goes on to the errback
        mw.process_response(response.request, response)
    [visit] = commits.visits
    assert visit.outcome is Outcome.RETRY and "not valid gzip" in visit.reason
    assert stats.get_value("adaptive/decompression/undecodable") == 1


def test_a_body_within_the_limit_is_decompressed_as_scrapy_does() -> None:
    mw, commits, _ = middleware(DOWNLOAD_MAXSIZE=100_000)
    response = gzipped(b"<html>ok</html>")
    assert mw.process_response(response.request, response).body == b"<html>ok</html>"
    assert commits.visits == []


def test_the_addon_puts_it_in_the_place_of_scrapys_unless_the_project_placed_one() -> None:
    from scrapy.settings import Settings

    from scrapy_adaptive.addon import Addon
    from scrapy_adaptive.integration.downloadermiddlewares.compression import SCRAPY_COMPRESSION

    settings = Settings()
    Addon().update_settings(settings)
    mws = settings.getdict("DOWNLOADER_MIDDLEWARES")
    assert mws[SCRAPY_COMPRESSION] is None and mws[DecompressionVerdictMiddleware] == 590
    user = Settings({"DOWNLOADER_MIDDLEWARES": {SCRAPY_COMPRESSION: 591}})
    Addon().update_settings(user)
    assert DecompressionVerdictMiddleware not in user.getdict("DOWNLOADER_MIDDLEWARES")
