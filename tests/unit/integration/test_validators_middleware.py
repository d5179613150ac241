"""The validators middleware, built directly with a stand-in for the
frontier's services (no crawl): what it sends, when it aborts, what it says."""

from __future__ import annotations

from typing import Any

import pytest
from scrapy import Request
from scrapy.exceptions import StopDownload
from scrapy.http import Headers, Response
from scrapy.utils.test import get_crawler

from scrapy_adaptive import meta
from scrapy_adaptive.frontier import ChangeState, UrlRecord, Visit
from scrapy_adaptive.integration.downloadermiddlewares.validators import ValidatorsMiddleware
from scrapy_adaptive.model import FetchResult

ETAG = '"v1"'
LM = "Tue, 10 Nov 2026 08:00:00 GMT"


class Services:
    """Answers ``verify`` as told and records what is asked."""

    def __init__(self, verify: bool) -> None:
        self.answer = verify
        self.asked: list[str] = []

    def verify(self, request: Request) -> bool:
        self.asked.append(request.url)
        return self.answer

    def commit(self, request: Request, visit: Visit) -> UrlRecord | None:
        raise AssertionError("the validators middleware never commits")

    def record(self, request: Request) -> dict[str, Any] | None:
        return ISSUED.get(id(request))


#: the record each issued request was issued with (the frontier's leases, standing in)
ISSUED: dict[int, dict[str, Any]] = {}


def middleware(verify: bool = False, **options: Any) -> tuple[ValidatorsMiddleware, Services]:
    services = Services(verify)
    return ValidatorsMiddleware(get_crawler().stats, services, **options), services  # type: ignore[arg-type]


def issued(record: dict[str, Any] | None = None) -> Request:
    snapshot = {"etag": ETAG, "last_modified": LM, "size": 1234} if record is None else record
    request = Request("http://example.com/p", meta={meta.FP: "00"})
    ISSUED[id(request)] = snapshot
    return request


def fetch(request: Request) -> FetchResult:
    result = request.meta[meta.FETCH]
    assert isinstance(result, FetchResult)
    return result


def test_a_trusted_fetch_sends_the_stored_validators_verbatim() -> None:
    mw, services = middleware()
    request = issued()
    mw.process_request(request)
    assert request.headers[b"If-None-Match"] == ETAG.encode()
    assert request.headers[b"If-Modified-Since"] == LM.encode()
    assert fetch(request).validation == "trusted" and fetch(request).validators_sent is True
    assert services.asked == [request.url]


def test_a_verification_fetch_sends_nothing_and_records_the_prediction() -> None:
    mw, _ = middleware(verify=True)
    request = issued()
    mw.process_request(request)
    assert b"If-None-Match" not in request.headers and fetch(request).validation == "verified"
    response = Response(request.url, headers={"ETag": ETAG, "Last-Modified": LM}, request=request)
    mw.process_response(request, response)
    assert fetch(request).prediction == "unchanged"


def test_nothing_to_validate_against_is_a_plain_fetch() -> None:
    mw, services = middleware()
    request = issued({})
    mw.process_request(request)
    assert meta.FETCH not in request.meta and not services.asked


def test_requests_the_frontier_did_not_issue_are_left_alone() -> None:
    mw, services = middleware()
    request = Request("http://example.com/other")
    mw.process_request(request)
    assert not request.headers and not services.asked


def test_unbound_it_stays_out_of_the_way() -> None:
    mw = ValidatorsMiddleware(get_crawler().stats)  # type: ignore[arg-type]
    request = issued()
    mw.process_request(request)
    assert not request.headers and meta.FETCH not in request.meta


def test_a_304_to_our_validators_is_unchanged() -> None:
    mw, _ = middleware()
    request = issued()
    mw.process_request(request)
    mw.process_response(request, Response(request.url, status=304, request=request))
    assert (fetch(request).change, fetch(request).annotation) == (ChangeState.UNCHANGED, "notModified")
    assert mw.stats.get_value("adaptive/validators/bytes_avoided") == 1234


def test_a_304_without_validators_is_unknown() -> None:
    mw, _ = middleware(conditional=False)
    request = issued()
    mw.process_request(request)
    mw.process_response(request, Response(request.url, status=304, request=request))
    assert (fetch(request).change, fetch(request).annotation) == (ChangeState.UNKNOWN, "unexpected304")


@pytest.mark.parametrize(
    ("etag", "aborts"),
    [(ETAG, True), ('W/"v1"', True), ('"v2"', False)],
)
def test_headers_that_predict_no_change_abort_the_download(etag: str, aborts: bool) -> None:
    mw, _ = middleware(conditional=False, scheme="etag")
    request = issued()
    mw.process_request(request)
    headers = Headers({"ETag": etag})
    if aborts:
        with pytest.raises(StopDownload):
            mw._on_headers_received(headers, 5000, request, None)  # type: ignore[arg-type]
        assert fetch(request).abort_length == 5000
        stopped = Response(request.url, request=request, flags=["download_stopped"])
        mw.process_response(request, stopped)
        assert fetch(request).annotation == "midFetchAbort"
    else:
        mw._on_headers_received(headers, 5000, request, None)  # type: ignore[arg-type]
        assert fetch(request).abort_length is None


def test_no_abort_when_switched_off_or_on_a_verification() -> None:
    off, _ = middleware(abort=False, conditional=False)
    request = issued()
    off.process_request(request)
    off._on_headers_received(Headers({"ETag": ETAG}), 5000, request, None)  # type: ignore[arg-type]
    verifying, _ = middleware(verify=True)
    request = issued()
    verifying.process_request(request)
    verifying._on_headers_received(Headers({"ETag": ETAG}), 5000, request, None)  # type: ignore[arg-type]
    assert meta.FETCH not in request.meta or fetch(request).abort_length is None


def test_a_noise_probe_is_a_full_download() -> None:
    """Issue 36: the probe of a page whose Last-Modified was too fresh to
    trust went out conditional and was answered 304, which showed nothing;
    the learner then compared a later fetch with the stale sketch."""
    mw, services = middleware()
    request = issued({"etag": ETAG, "last_modified": LM, "size": 10, "noise": {"p": {}, "t": {}, "tt": 1.0, "r": 1}})
    mw.process_request(request)
    assert b"If-None-Match" not in request.headers and b"If-Modified-Since" not in request.headers
    # a verification of the validators (the held fetch left that check to it), never aborted
    assert request.meta[meta.FETCH].validation == "verified" and services.asked == []
    mw._on_headers_received(Headers({"ETag": ETAG}), 10, request, None)  # type: ignore[arg-type]


def test_after_a_redirect_or_an_error_the_page_is_fetched_in_full() -> None:
    """The record keeps its capture's validators through a 404 or a
    redirect (they are not the page's, issue 46): a 304 to them would say
    "back, unchanged" with the archive's capture of the URL the error page.
    The page's body is fetched and compared with its capture instead."""
    mw, services = middleware()
    for status in (404, 410, 301, 403, 503):
        request = issued({"etag": ETAG, "last_modified": LM, "size": 1234, "status": status})
        mw.process_request(request)
        assert b"If-None-Match" not in request.headers and meta.FETCH not in request.meta, status
    assert services.asked == []  # no verification counted either
    for status in (200, 304):
        request = issued({"etag": ETAG, "last_modified": LM, "size": 1234, "status": status})
        mw.process_request(request)
        assert request.headers[b"If-None-Match"] == ETAG.encode()
    assert mw.stats.get_value("adaptive/validators/after_error_full_fetches") == 5
