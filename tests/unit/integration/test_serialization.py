"""Requests survive the state folder as JSON, or are refused by name."""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import json
import uuid

import pytest
import scrapy
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy import Request, Spider
from scrapy.http import FormRequest

from scrapy_adaptive.integration.serialization import (
    RequestNotStorable,
    request_from_data,
    request_to_data,
    strip_per_fetch,
)
from tests import hypo


class MySpider(Spider):
    name = "s"

    def parse_item(self, response):  # pragma: no cover - only referenced by name
        pass


def roundtrip(request: Request, spider: Spider) -> Request:
    data = request_to_data(request, spider)
    return request_from_data(json.loads(json.dumps(data)), spider)


def test_a_request_roundtrips_through_json() -> None:
    spider = MySpider()
    request = Request(
        "http://example.com/a?b=1",
        callback=spider.parse_item,
        method="POST",
        body=b"\x00\xffbinary",
        headers={"X-Token": "abc"},
        cookies={"k": "v"},
        meta={"page": 3, "tags": ("a", "b"), "raw": b"\x01", "nested": {"x": [1, 2.5, None]}, "by_int": {1: "x"}},
        cb_kwargs={"n": 1},
        priority=5,
        flags=["f"],
    )
    back = roundtrip(request, spider)
    assert (back.url, back.method, back.body, back.priority, back.flags) == (
        request.url,
        "POST",
        b"\x00\xffbinary",
        5,
        ["f"],
    )
    assert back.callback == spider.parse_item
    assert back.headers["X-Token"] == b"abc"
    assert back.meta["tags"] == ("a", "b") and back.meta["raw"] == b"\x01"
    assert back.meta["nested"] == {"x": [1, 2.5, None]} and back.meta["by_int"] == {1: "x"}
    assert back.cb_kwargs == {"n": 1}


def test_subclasses_are_kept() -> None:
    spider = MySpider()
    back = roundtrip(FormRequest("http://example.com/f", formdata={"q": "x"}), spider)
    assert type(back) is FormRequest and back.body == b"q=x"


def test_per_fetch_meta_is_not_carried_to_the_next_visit() -> None:
    meta = {
        "retry_times": 2,
        "redirect_urls": ["http://x"],
        "redirect_ttl": 19,
        "download_slot": "x",
        "download_latency": 0.1,
        "download_timeout": 180,
        "_private": 1,
        "_adaptive_fp": "00",
        "adaptive_record": {},
        "depth": 2,
        "proxy": "http://127.0.0.1:3128",
    }
    assert strip_per_fetch(meta) == {"depth": 2, "proxy": "http://127.0.0.1:3128"}


def test_our_conditional_headers_are_not_stored_with_a_redirect_target() -> None:
    """RedirectMiddleware copies the issued request's headers and meta into the
    target: the validators we sent belong to that fetch, the user's own stay."""
    from scrapy_adaptive import meta
    from scrapy_adaptive.model import FetchResult, UrlRecord

    ours = {"If-None-Match": '"v1"', "If-Modified-Since": "Tue, 10 Nov 2026 08:00:00 GMT", "X-Mine": "1"}
    record = UrlRecord("http://example.com/a", "example.com", {}, 0)
    sent = Request(
        "http://example.com/b",
        headers=ours,
        meta={meta.FETCH: FetchResult("trusted", validators_sent=True), meta.RECORD: record.view()},
    )
    stored = roundtrip(sent, MySpider())  # the view and the fetch result are per fetch: never stored
    assert set(stored.headers) == {b"X-Mine"} and stored.meta == {}
    mine = roundtrip(Request("http://example.com/b", headers=ours), MySpider())
    assert len(mine.headers) == 3  # set by the user, not by us: kept


def test_a_lambda_callback_is_refused_with_the_request_named() -> None:
    with pytest.raises(RequestNotStorable, match=r"<GET http://example.com/l> cannot be stored") as info:
        request_to_data(Request("http://example.com/l", callback=lambda r: None), MySpider())
    # the key and why, not Scrapy's "Function <function <lambda> at 0x...> is not an instance method in: <...>"
    assert (
        "request['callback'] (test_a_lambda_callback_is_refused_with_the_request_named.<locals>.<lambda>) is not a "
        "method of the spider" in str(info.value)
    )

    def elsewhere(failure: object) -> None:
        pass

    spider = MySpider()
    with pytest.raises(RequestNotStorable, match=r"request\['errback'\] \(.*elsewhere\) is not a method of the spider"):
        request_to_data(Request("http://example.com/e", callback=spider.parse, errback=elsewhere), spider)


def test_an_unserializable_meta_value_is_refused_with_the_key_named() -> None:
    request = Request("http://example.com/m", meta={"ok": 1, "handle": object()})
    with pytest.raises(RequestNotStorable) as info:
        request_to_data(request, MySpider())
    said = str(info.value)
    assert "request['meta']['handle'] holds <object object at " in said and "(of type object)" in said
    assert "http://example.com/m" in str(info.value)


def test_a_stored_class_must_be_a_request_subclass() -> None:
    data = request_to_data(Request("http://example.com/"), MySpider())
    data["_class"] = "os.system"
    with pytest.raises(RequestNotStorable, match="not from Scrapy or the spider"):
        request_from_data(data, MySpider())


def test_the_fast_path_gives_what_to_dict_gives() -> None:
    from scrapy_adaptive.integration.serialization import _to_dict

    spider = MySpider()
    for request in (
        Request("http://example.com/a", callback=spider.parse_item, errback=spider.parse_item, meta={"k": 1}),
        Request("http://example.com/b", headers={"A": "b"}, cookies={"c": "d"}, priority=3),
        FormRequest("http://example.com/f", formdata={"q": "x"}, callback=spider.parse_item),
    ):
        assert _to_dict(request, spider) == request.to_dict(spider=spider)


def test_credentials_are_not_stored_unless_asked_for() -> None:
    spider = MySpider()
    request = Request(
        "http://example.com/private",
        headers={"Authorization": "Basic c2VjcmV0", "Proxy-Authorization": "Basic eA==", "Cookie": "s=1", "X-A": "b"},
        cookies={"session": "secret"},
    )
    text = json.dumps(request_to_data(request, spider))
    assert "c2VjcmV0" not in text and "secret" not in text and "s=1" not in text
    back = roundtrip(request, spider)
    assert back.headers.get("X-A") == b"b" and back.cookies == {}
    assert not {b"Authorization", b"Proxy-Authorization", b"Cookie"} & set(back.headers)
    kept = request_from_data(json.loads(json.dumps(request_to_data(request, spider, credentials=True))), spider)
    assert kept.headers["Authorization"] == b"Basic c2VjcmV0" and kept.cookies == {"session": "secret"}


@pytest.mark.parametrize("class_path", ["this.Request", "os.system", "tests.nope.Request"])
def test_a_stored_class_outside_scrapy_and_the_project_is_refused_without_importing(class_path: str) -> None:
    import sys

    module = class_path.rsplit(".", 1)[0]
    loaded_before = module in sys.modules
    data = request_to_data(Request("http://example.com/"), MySpider())
    data["_class"] = class_path
    with pytest.raises(RequestNotStorable, match="stored request class"):
        request_from_data(data, MySpider())
    assert (module in sys.modules) == loaded_before


def test_a_request_subclass_of_the_spiders_package_loads() -> None:
    back = roundtrip(ProjectRequest("http://example.com/p"), MySpider())
    assert type(back) is ProjectRequest


class ProjectRequest(Request):
    """A request class of the spider's own package (``tests``)."""


class RulesSpider(MySpider):
    custom_settings: dict = {}

    async def start(self):  # pragma: no cover - only referenced by name
        yield Request("http://example.com/")

    def closed(self, reason):  # pragma: no cover - only referenced by name
        pass

    @staticmethod
    def helper(response):  # pragma: no cover - only referenced by name
        pass


@pytest.mark.parametrize("key", ["callback", "errback"])
@pytest.mark.parametrize(
    "name",
    [
        "start",
        "start_requests",
        "closed",
        "close",
        "from_crawler",
        "update_settings",
        "handles_request",
        "log",
        "logger",
        "name",
        "custom_settings",
        "__init__",
        "_set_crawler",
        "helper",
        "missing",
    ],
)
def test_a_stored_callback_that_is_not_a_response_callback_is_refused_by_key(key: str, name: str) -> None:
    """A stored callback edited to ``"start"`` was restored (the spider has
    such a method) and called with the response: a spider traceback at each
    visit.  A name that does not make a response callback is refused like a
    name the spider lacks, naming the key."""
    spider = RulesSpider()
    data = request_to_data(Request("http://example.com/a", callback=spider.parse_item), spider)
    data[key] = name
    with pytest.raises(RequestNotStorable) as caught:
        request_from_data(json.loads(json.dumps(data)), spider)
    said = str(caught.value)
    assert said.startswith(f"stored request[{key!r}] {name!r} is not a ") and "\n" not in said, said


def test_a_stored_callback_of_the_spiders_own_methods_loads() -> None:
    spider = RulesSpider()
    for name in ("parse", "parse_item", "_parse"):
        data = request_to_data(Request("http://example.com/a"), spider)
        data["callback"] = data["errback"] = name
        back = request_from_data(data, spider)
        assert back.callback == getattr(spider, name) and back.errback == getattr(spider, name)


class ProjectItem(scrapy.Item):
    """An item class of the spider's own package (``tests``), as a project's items.py has."""

    name = scrapy.Field()
    price = scrapy.Field()


@dataclasses.dataclass
class ProjectRecord:
    sku: str
    seen: datetime.datetime


def test_the_values_a_spider_hands_between_callbacks_are_stored() -> None:
    """``meta={"item": item}`` and ``cb_kwargs`` carrying an item, a date or a
    set: kept for the URL's revisits (with Scrapy + JOBDIR, pickle keeps
    them), not refused as "fetched once, never revisited"."""
    spider = MySpider()
    when = datetime.datetime(2026, 11, 29, 12, 0, tzinfo=datetime.UTC)
    meta = {
        "item": ProjectItem(name="chair", price=decimal.Decimal("19.90")),
        "record": ProjectRecord("SKU-1", when),
        "day": when.date(),
        "at": datetime.time(8, 30),
        "seen": {"a", "b"},
        "frozen": frozenset({1}),
        "id": uuid.UUID(int=42),
    }
    back = roundtrip(Request("http://example.com/i", meta=meta, cb_kwargs={"item": ProjectItem(name="x")}), spider)
    assert back.meta == meta and type(back.meta["item"]) is ProjectItem and type(back.meta["record"]) is ProjectRecord
    assert back.cb_kwargs == {"item": ProjectItem(name="x")}


_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.binary(max_size=8)
    | st.decimals(allow_nan=False, allow_infinity=False)
    | st.datetimes(timezones=st.none() | st.just(datetime.UTC))
    | st.dates()
    | st.times()
    | st.uuids()
)
_hashable = _scalars.filter(lambda v: not isinstance(v, float)) | st.tuples(st.integers(), st.text())
_stored_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4)
    | st.tuples(inner, inner)
    | st.dictionaries(st.text(max_size=4), inner, max_size=4)
    | st.dictionaries(_hashable, inner, max_size=3)
    | st.sets(_hashable, max_size=3)
    | st.frozensets(_hashable, max_size=3)
    | st.builds(ProjectItem, name=inner, price=inner)
    | st.builds(ProjectRecord, sku=st.text(max_size=6), seen=st.datetimes()),
    max_leaves=12,
)


@settings(max_examples=hypo.examples(300), deadline=None)
@given(_stored_values)
def test_any_storable_value_comes_back_equal(value: object) -> None:
    back = roundtrip(Request("http://example.com/v", meta={"v": value}), MySpider())
    assert back.meta["v"] == value


def test_a_stored_item_class_outside_the_project_is_refused_without_importing() -> None:
    data = request_to_data(Request("http://example.com/", meta={"item": ProjectItem(name="x")}), MySpider())
    data["meta"]["item"]["$item"][0] = "os.environ"
    with pytest.raises(RequestNotStorable, match="stored item class 'os.environ' is not from Scrapy or the spider"):
        request_from_data(data, MySpider())
    data["meta"]["item"]["$item"][0] = "tests.unit.integration.test_serialization.ProjectRequest"
    with pytest.raises(RequestNotStorable, match="not a loaded scrapy.Item subclass or dataclass"):
        request_from_data(data, MySpider())


def test_an_item_of_another_package_is_refused_when_stored_not_at_every_revisit() -> None:
    """The state folder may only name classes of the spider's package (or
    Scrapy's): an item of another is refused as the request is stored (the
    request is fetched once, with the key named), never found unloadable at
    each revisit."""
    foreign = dataclasses.make_dataclass("Product", [("sku", str)])
    foreign.__module__ = "otherpackage.models"
    request = Request("http://example.com/f", meta={"product": foreign("SKU-1")})
    with pytest.raises(RequestNotStorable, match=r"request\['meta'\]\['product'\] holds .*of type Product"):
        request_to_data(request, MySpider())
