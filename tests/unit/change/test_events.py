"""The change events of a URL's life, judged visit by visit (no crawl)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from scrapy_adaptive.change.events import (
    BACK,
    CHANGED,
    GONE,
    MOVED,
    NEW,
    judge,
    read_event,
    removal_redirect,
)
from scrapy_adaptive.model import SOFT_404, ChangeState, Outcome, Visit
from tests.hypo import examples

URL = "http://shop.example/products/42"


def answer(kind: str) -> Visit:
    """A visit's verdict by a short name."""
    if kind == "changed":
        return Visit(Outcome.VISITED, status=200, change=ChangeState.CHANGED, url=URL)
    if kind == "same":
        return Visit(Outcome.VISITED, status=200, change=ChangeState.UNCHANGED, url=URL)
    if kind == "304":
        return Visit(Outcome.VISITED, status=304, change=ChangeState.UNCHANGED, url=URL)
    if kind in ("404", "410", "500", "403"):
        # an error answer is never a version: its change is unknown (issue 46)
        return Visit(Outcome.VISITED, status=int(kind), change=ChangeState.UNKNOWN, url=URL)
    if kind == "soft404":
        return Visit(Outcome.VISITED, status=200, change=ChangeState.UNKNOWN, url=URL, annotations=(SOFT_404,))
    if kind == "home":
        return Visit(Outcome.VISITED, status=301, url=URL, location="http://shop.example/")
    if kind == "category":
        return Visit(Outcome.VISITED, status=308, url=URL, location="http://shop.example/products/")
    if kind == "moved":
        return Visit(Outcome.VISITED, status=301, url=URL, location="http://shop.example/p/42-blue-kettle")
    if kind == "temporary":
        return Visit(Outcome.VISITED, status=302, url=URL, location="http://shop.example/")
    if kind == "timeout":
        return Visit(Outcome.RETRY, reason="timeout", url=URL)
    raise AssertionError(kind)


def life(kinds: list[str], confirmations: int = 2) -> list[str | None]:
    """The events of a URL answering *kinds* in turn, its presence carried
    from visit to visit as the record carries it."""
    record: dict[str, Any] = {}
    events = []
    for kind in kinds:
        transition = judge(record, answer(kind), confirmations)
        record = {"presence": transition.presence}
        events.append(transition.kind)
    return events


def test_a_product_page_s_life() -> None:
    kinds = ["changed", "same", "changed", "404", "404", "404", "changed", "same", "moved", "moved"]
    assert life(kinds) == [NEW, None, CHANGED, None, GONE, None, BACK, None, MOVED, MOVED]


def test_one_404_is_a_glitch_and_a_5xx_or_timeout_neither_confirms_nor_breaks_the_row() -> None:
    assert life(["changed", "404", "same"]) == [NEW, None, None]
    assert life(["changed", "404", "500", "timeout", "403", "temporary", "410"]) == [
        NEW,
        None,
        None,
        None,
        None,
        None,
        GONE,
    ]
    assert life(["changed", "500", "500", "500"], confirmations=1) == [NEW, None, None, None]


def test_gone_is_said_once_and_back_once() -> None:
    assert life(["changed", "410", "410", "410", "410", "304", "same", "404"], confirmations=1) == [
        NEW,
        GONE,
        None,
        None,
        None,
        BACK,
        None,
        GONE,  # one 404 is enough with one confirmation
    ]


def test_a_redirect_to_the_home_or_a_folder_above_is_gone_elsewhere_moved() -> None:
    assert life(["changed", "home", "home"]) == [NEW, None, GONE]
    assert life(["changed", "category"], confirmations=1) == [NEW, GONE]
    assert life(["changed", "soft404", "soft404"]) == [NEW, None, GONE]
    assert removal_redirect(URL, "https://shop.example/")
    assert removal_redirect(URL, "http://shop.example/products")
    assert not removal_redirect(URL, "http://shop.example/products/42-v2")
    assert not removal_redirect(URL, "http://shop.example/?ref=42")  # a page of its own
    assert not removal_redirect(URL, "http://other.example/products/")
    assert removal_redirect(URL, "http://other.example/")  # sold to another shop: gone here


def test_a_url_that_never_had_content_is_never_gone_or_moved() -> None:
    assert life(["404", "404", "404", "moved", "changed"]) == [None, None, None, None, NEW]


def test_a_record_from_before_presence_was_kept_had_content_if_its_last_answer_did() -> None:
    old = {"status": 200, "digest": "exact:sha1:1"}
    assert judge(old, answer("404"), 1).kind == GONE
    assert judge({"status": 404, "digest": "exact:sha1:1"}, answer("404"), 1).kind is None


KINDS = [
    "changed",
    "same",
    "304",
    "404",
    "410",
    "500",
    "403",
    "soft404",
    "home",
    "category",
    "moved",
    "temporary",
    "timeout",
]


@settings(max_examples=examples(200), deadline=None)
@given(st.lists(st.sampled_from(KINDS), max_size=40), st.integers(min_value=1, max_value=4))
def test_any_life_says_gone_and_back_in_turn_and_gone_only_after_n_absent_answers(
    kinds: list[str], confirmations: int
) -> None:
    events = life(kinds, confirmations)
    said = [e for e in events if e in (GONE, BACK)]
    assert said == [GONE, BACK] * (len(said) // 2) + [GONE] * (len(said) % 2)  # alternate, starting with gone
    assert events.count(NEW) <= 1 and (NEW not in events or events.index(NEW) == kinds.index("changed"))
    absent = {"404", "410", "soft404", "home", "category"}
    neutral = {"500", "403", "temporary", "timeout"}
    for i, event in enumerate(events):
        if event == GONE:  # the last `confirmations` answers that say anything were all absent
            telling = [k for k in kinds[: i + 1] if k not in neutral]
            assert len(telling) >= confirmations and set(telling[-confirmations:]) <= absent
        if event in (CHANGED, BACK):
            assert kinds[i] in ("changed", "same", "304")


def test_an_outbox_row_reads_back_and_a_garbled_one_is_refused() -> None:
    from scrapy_adaptive.change.events import event_row

    row = event_row(
        GONE,
        URL,
        1_700_000_000.1234,
        version=3,
        status=410,
        reason=None,
        digest="exact:sha1:9",
        previous_time=1_699_999_000.0,
        previous_digest="exact:sha1:9",
    )
    event = read_event(row)
    assert event is not None and event["kind"] == GONE and event["time"] == 1_700_000_000.123
    assert event["version"] == 3 and event["location"] is None
    assert read_event(b"\xff{") is None and read_event(b'{"kind": "exploded", "url": "x"}') is None
