"""A redirect no request can follow is the page's answer, seen before
Scrapy's RedirectMiddleware, which raised building a request for it."""

from __future__ import annotations

import pytest
from scrapy import Request
from scrapy.downloadermiddlewares.redirect import RedirectMiddleware
from scrapy.http import Response
from scrapy.utils.test import get_crawler

from scrapy_adaptive.integration.downloadermiddlewares.errors import RedirectGuardMiddleware, unusable_redirect


def redirect(location: bytes, status: int = 302) -> tuple[Request, Response]:
    request = Request("http://127.0.0.1/page")
    return request, Response(request.url, status=status, headers={"Location": location}, request=request)


@pytest.mark.parametrize(
    "location",
    [
        b"javascript:alert(1)",
        b"mailto:someone",
        # a host or port no URL parser accepts: w3lib's safe_url_string raises on them
        b"http://[::1",
        b"http://[zz]/",
        b"http://a.example:99999/",
        b"http://a.example:abc/",
    ],
)
def test_an_unusable_location_reaches_the_spider_as_the_3xx(location: bytes) -> None:
    crawler = get_crawler()
    scrapy_redirect = RedirectMiddleware.from_crawler(crawler)
    request, response = redirect(location)
    with pytest.raises(ValueError):  # what Scrapy does on its own: no response, no verdict
        scrapy_redirect.process_response(request, response)
    request, response = redirect(location)
    guarded = RedirectGuardMiddleware().process_response(request, response)
    assert scrapy_redirect.process_response(request, guarded) is response
    assert request.meta["dont_redirect"] is True


@pytest.mark.parametrize("location", [b"/other", b"//elsewhere.example/x", b"https://a.example/", b"ftp://a/b"])
def test_a_usable_location_is_left_to_scrapy(location: bytes) -> None:
    request, response = redirect(location, 301)
    assert not unusable_redirect(request, location)
    RedirectGuardMiddleware().process_response(request, response)
    assert "dont_redirect" not in request.meta
