"""Which request is out for which URL: each request's fingerprint computed once.

The issued request is known by its object at every signal and middleware of
its fetch; a copy (a retry), a redirect or a child request that copied the
meta is judged as before, its identity computed once however often the
scheduler asks.
"""

from __future__ import annotations

from scrapy import Request
from scrapy.utils.request import RequestFingerprinter

from scrapy_adaptive import meta
from scrapy_adaptive.frontier.canonical import Canonical
from scrapy_adaptive.runtime.issued_requests import IssuedRequests, url_identity


class Counting:
    """A fingerprinter that counts what it computes."""

    def __init__(self) -> None:
        self.inner = RequestFingerprinter()
        self.computed = 0

    def fingerprint(self, request: Request) -> bytes:
        self.computed += 1
        return self.inner.fingerprint(request)


def issued(url: str = "http://a.example/x") -> tuple[IssuedRequests, Request, bytes]:
    table = IssuedRequests(url_identity(RequestFingerprinter()))  # type: ignore[arg-type]
    request = Request(url)
    fp = table.identity(request)
    table.add(fp, request)
    return table, request, fp


def test_the_issued_object_is_ours_until_its_verdict() -> None:
    table, request, fp = issued()
    assert table.fp_of(request) == fp and table.fp_of(request) == fp
    assert table.pop(fp) is request
    assert table.fp_of(request) is None  # its verdict came: not ours any more
    table.add(fp, request)
    assert table.fp_of(request) == fp
    table.resend(fp, request)
    assert table.fp_of(request) is None  # waiting to go out again


def test_a_retry_copy_and_a_first_redirect_are_ours_a_child_and_a_second_hop_are_not() -> None:
    table, request, fp = issued()
    assert table.fp_of(request.copy()) == fp  # same URL: a retry
    hop = request.replace(url="http://a.example/moved", meta={**request.meta, "redirect_urls": [request.url]})
    assert table.fp_of(hop) == fp
    second = hop.replace(url="http://a.example/again", meta={**hop.meta, "redirect_urls": [request.url, hop.url]})
    assert table.fp_of(second) is None
    child = Request("http://a.example/child", meta=dict(request.meta))
    assert table.fp_of(child) is None


def test_a_tag_changed_on_the_issued_object_is_read_again() -> None:
    table, request, fp = issued()
    other, _, other_fp = issued("http://a.example/other")
    request.meta[meta.FP] = "zz"  # not hex
    assert table.fp_of(request) is None
    request.meta[meta.FP] = fp.hex()  # an equal tag, not the one given
    assert table.fp_of(request) == fp
    table.add(other_fp, request)  # the same object issued for another URL
    assert table.fp_of(request) == other_fp
    table.pop(fp)
    assert table.fp_of(request) == other_fp
    table.pop(other_fp)
    assert table.fp_of(request) is None
    assert other.fp_of(request) is None


def test_a_requests_identity_is_computed_once() -> None:
    counting = Counting()
    identity = url_identity(counting, Canonical.from_setting(["slash"]))  # type: ignore[arg-type]
    request = Request("http://a.example/x/")
    first = identity(request)
    assert identity(request) == first and identity(request.copy()) == first
    assert counting.computed == 2  # the request, then its copy (another object)
    request.meta["deltafetch_key"] = "page-1"  # a key given later is read
    assert identity(request) != first and counting.computed == 2
    assert identity(Request("http://a.example/x")) == first
