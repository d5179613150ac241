"""``ADAPTIVE_TEXT_DIFF`` in the frontier: a version's text is written with
its verdict, the next version's event carries the diff from it, a version
taken back by a restart leaves the diff starting from the version
delivered, and a forgotten URL's text goes with its record."""

from __future__ import annotations

from scrapy_adaptive.change import text_diff
from scrapy_adaptive.frontier import ChangeState, Frontier, Outcome, Store, Visit
from scrapy_adaptive.frontier.hostqueue import Politeness
from scrapy_adaptive.model import Plan
from tests.unit.frontier.test_frontier import Clock, add, fp
from tests.unit.frontier.test_pending import URL, published

CAP = 4096


def make(store: Store, clock: Clock) -> Frontier:
    politeness = Politeness(delay_factor=5.0, min_delay=2.0, max_delay=5.0, valence=1, retry_delay=900.0)
    return Frontier(store, politeness, clock=clock, text_diff=CAP)


def version(f: Frontier, clock: Clock, digest: str, price: str, kind: str, *, deliver: bool = True) -> bytes:
    """*URL* captured again as *digest*, its text saying *price*."""
    add(f, URL, force=True)
    clock.t += 10
    issued = f.next()
    assert issued is not None
    text = ["Kettle", f"Price {price} EUR", "In stock"]
    visit = Visit(Outcome.VISITED, status=200, change=ChangeState.CHANGED, digest=digest, text=text)
    f.update(issued.fp, visit, Plan(1e4), deliver=deliver, presence=[1, 0, 0], event=kind)
    return issued.fp


def test_the_next_versions_event_carries_the_diff_from_the_last_one(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    key = version(f, clock, "d1", "10", "new", deliver=False)
    version(f, clock, "d2", "11", "changed", deliver=False)
    said = published(store)
    assert said[0]["text_diff"] is None  # nothing before it
    assert said[1]["text_diff"] == "@@ -1,3 +1,3 @@\n Kettle\n-Price 10 EUR\n+Price 11 EUR\n In stock"
    assert list(text_diff.unpack(store.get_text("a", key))) == ["d2"]  # delivered at once: its text alone


def test_a_version_taken_back_by_a_restart_leaves_the_diff_starting_from_the_one_delivered(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    key = version(f, clock, "d1", "10", "new")
    assert f.outbox.confirm([(key, "d1")]) == 1
    version(f, clock, "d2", "11", "changed")  # never confirmed: a kill -9
    assert sorted(text_diff.unpack(store.get_text("a", key))) == ["d1", "d2"]
    again = make(store, clock)
    again.load()  # d2 taken back: the record's digest is d1's again
    version(again, clock, "d3", "12", "changed")
    assert again.outbox.confirm([(key, "d3")]) == 1
    said = published(store)
    assert [(e["kind"], e["previous_digest"], e["digest"]) for e in said] == [
        ("new", None, "d1"),
        ("changed", "d1", "d3"),
    ]
    assert "-Price 10 EUR\n+Price 12 EUR" in said[1]["text_diff"]


def test_a_forgotten_urls_text_goes_with_its_record(store: Store) -> None:
    clock = Clock()
    f = make(store, clock)
    key = version(f, clock, "d1", "10", "new", deliver=False)
    assert store.get_text("a", key) is not None
    f.forget([("a", key)])
    assert store.get_text("a", key) is None and key == fp(URL)


def test_without_the_setting_no_text_is_kept(store: Store) -> None:
    clock = Clock()
    politeness = Politeness(delay_factor=5.0, min_delay=2.0, max_delay=5.0, valence=1, retry_delay=900.0)
    f = Frontier(store, politeness, clock=clock)
    key = version(f, clock, "d1", "10", "new", deliver=False)
    version(f, clock, "d2", "11", "changed", deliver=False)
    assert store.get_text("a", key) is None and [e["text_diff"] for e in published(store)] == [None, None]
