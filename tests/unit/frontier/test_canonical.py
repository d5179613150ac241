"""Canonical URLs (``ADAPTIVE_CANONICAL``): the forms, the setting, and the
scheduler keeping one record for every spelling of a page."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scrapy import Request

from scrapy_adaptive.config.spec import ConfigError
from scrapy_adaptive.frontier.canonical import INDEX_NAMES, OPTIONS, Canonical
from tests.unit.integration.test_scheduler import Pages, build, drain, in_loop

ALL = Canonical.from_setting(list(OPTIONS))


@pytest.mark.parametrize(
    ("options", "spellings"),
    [
        (["www"], ["http://www.example.com/a", "http://example.com/a", "http://WWW.Example.com/a"]),
        (["case"], ["http://example.com/About/Us", "http://example.com/about/us", "http://example.com/ABOUT/us"]),
        (["slash"], ["http://example.com/docs/", "http://example.com/docs"]),
        (["index"], ["http://example.com/d/index.html", "http://example.com/d/", "http://example.com/d/default.asp"]),
    ],
)
def test_each_option_makes_its_spellings_one(options: list[str], spellings: list[str]) -> None:
    canonical = Canonical.from_setting(options)
    assert len({canonical.url(u) for u in spellings}) == 1
    assert len(set(spellings)) == len(spellings)  # and without it they differ
    assert len({Canonical().url(u) for u in spellings}) == len(spellings)


def test_the_query_keeps_its_case_and_the_root_its_slash() -> None:
    assert ALL.url("http://www.example.com/A/?Q=Big") == "http://example.com/a?Q=Big"
    assert ALL.url("http://www.example.com/") == "http://example.com/"
    assert ALL.url("http://www.example.com:8080/index.html") == "http://example.com:8080/"


def test_options_apply_per_host_with_a_catch_all() -> None:
    canonical = Canonical.from_setting({"*.shop.test": ["case"], "*": ["slash"], "example.com": ["www"]})
    assert canonical.url("http://a.shop.test/X/") == "http://a.shop.test/x/"  # case only
    assert canonical.url("http://www.example.com/X/") == "http://example.com/X/"  # www only (bare host matched)
    assert canonical.url("http://other.test/X/") == "http://other.test/X"  # the catch-all
    assert Canonical.from_setting(None).url("http://www.A.test/X/") == "http://www.A.test/X/"
    assert not Canonical.from_setting(None) and ALL


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (["wwww"], r"ADAPTIVE_CANONICAL: unknown option\(s\) 'wwww'; use www, case, slash, index"),
        ({"example.com": 3}, r"ADAPTIVE_CANONICAL\['example.com'\] \(3\) must be a list of option names"),
        ("[not json", "ADAPTIVE_CANONICAL is not valid JSON"),
    ],
)
def test_a_bad_setting_is_one_message_naming_it(value: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        Canonical.from_setting(value)


@pytest.mark.parametrize("given", ["www,slash", "www, slash", "www slash"])
def test_a_list_written_on_the_command_line_is_read_as_scrapy_lists_are(given: str) -> None:
    """``-s ADAPTIVE_CANONICAL=www,slash`` was refused as the one unknown
    option 'www,slash'; a wrong name in it is still named alone."""
    assert Canonical.from_setting(given) == Canonical.from_setting(["www", "slash"])
    with pytest.raises(ConfigError, match=r"unknown option\(s\) 'bogus'; use"):
        Canonical.from_setting(given + ",bogus")


paths = st.lists(st.text("abcXYZ-", min_size=1, max_size=5), max_size=4).map("/".join)


@given(
    st.sampled_from(["", "www."]),
    paths,
    st.sampled_from(["", "/", *(f"/{n}" for n in INDEX_NAMES)]),
)
def test_canonical_is_idempotent_and_ignores_the_spelling(www: str, path: str, tail: str) -> None:
    url = f"http://{www}example.com/{path}{tail}"
    once = ALL.url(url)
    assert ALL.url(once) == once
    assert once == ALL.url(f"http://example.com/{path.lower()}")


@in_loop
def test_every_spelling_is_one_record_and_a_redirect_to_another_spelling_is_the_same_visit(tmp_path: Path) -> None:
    scheduler = build(tmp_path, ADAPTIVE_CANONICAL=["www", "slash"])
    scheduler.open(Pages())
    first, *others = ("http://www.a.example/p/", "http://a.example/p", "http://a.example/p/")
    assert scheduler.enqueue_request(Request(first))
    for url in others:  # merged into the first spelling's record (request_dropped)
        assert not scheduler.enqueue_request(Request(url))
    assert scheduler.frontier is not None and scheduler.frontier.counts().urls == 1
    (issued,) = drain(scheduler)
    assert issued.url == "http://www.a.example/p/"  # the first spelling is fetched
    # the site redirects www. to the bare host: the same URL, fetched as this visit
    target = issued.replace(url="http://a.example/p/")
    target.meta["redirect_urls"] = [issued.url]
    target.meta["redirect_reasons"] = [301]
    assert scheduler.enqueue_request(target)
    assert scheduler.stats.get_value("adaptive/redirects") is None
    (again,) = drain(scheduler)
    assert again is target and scheduler.frontier.counts().urls == 1
    scheduler.close("finished")
