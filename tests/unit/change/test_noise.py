"""Learned noise (change/noise.py, change/noise_learner.py) held by its contract.

The contract (issue 46), whatever the page:

* nothing lost: every value a 200 response carried reaches the callback;
* nothing parked by doubt: no wait is set by "the judge gave up";
* no false change: a difference that is only noise is never delivered
  (at most one duplicate delivery in a page's life);
* smallest masks, compared by structure: the head, attributes and JSON-LD
  stay compared.

The generator test drives the real chain (the visit middleware, the
verdicts, the wait policy and a frontier on a store, its politeness and
probes) over generated pages; the scenario tests pin the shapes a tester
found, each a test that failed before.
"""

from __future__ import annotations

import hashlib
import json
import random
import re
import time
from collections.abc import Callable
from dataclasses import replace
from email.utils import formatdate
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy import Request
from scrapy.http import HtmlResponse
from scrapy.settings import Settings
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from scrapy_adaptive import meta
from scrapy_adaptive.change import noise
from scrapy_adaptive.change import noise_learner as learner
from scrapy_adaptive.change.answer import Answer
from scrapy_adaptive.config.settings import AdaptiveConfig
from scrapy_adaptive.frontier import Frontier, MemoryStore, Politeness
from scrapy_adaptive.integration.spidermiddlewares.reading import answer_of
from scrapy_adaptive.integration.spidermiddlewares.visit import VisitMiddleware
from scrapy_adaptive.policies import load_wait_policy
from scrapy_adaptive.runtime.verdicts import Verdicts
from tests.hypo import examples
from tests.standins import OneIssued

T0 = 1_764_403_200.0  # 2025-11-29 08:00:00 UTC
WAIT_MAX = 28 * 86_400

# -- the parts ---------------------------------------------------------------------------


def page(body: str, head: str = "<title>Shop</title>") -> Answer:
    url = "http://shop.example/p/1.html"
    html = f"<html><head>{head}</head><body>{body}</body></html>"
    return answer_of(HtmlResponse(url, body=html.encode(), request=Request(url)))


def test_fields_name_each_place_and_keep_head_attributes_and_json_ld() -> None:
    head = '<title>Fridge</title><meta name="description" content="cold"><script type="application/ld+json">{"offers": {"price": "19.99"}}</script>'
    body = '<table><tr><td>Value</td><td>abc</td></tr><tr><td>Value</td><td>17</td></tr></table><img src="/a.png">'
    fields = dict(noise.fields_of(page(body, head)) or [])
    assert fields["html/head/title#t"] == "Fridge"
    assert fields["html/head/meta@content"] == "cold"
    assert fields["html/head/script$.offers.price"] == "19.99"
    assert fields["html/body/table/tr/td[1]#t"] == "abc" and fields["html/body/table/tr[1]/td[1]#t"] == "17"
    assert fields["html/body/img@src"] == "/a.png"
    visible = dict(noise.fields_of(page(body, head), visible=True) or [])
    assert "html/head/title#t" not in visible and "html/body/img@src" not in visible


@settings(max_examples=examples(200))
@given(st.text(max_size=300))
def test_any_text_is_cut_into_fields_or_refused_without_raising(text: str) -> None:
    for content_type in ("text/html", "application/json", "text/plain"):
        url = "http://shop.example/x"
        response = HtmlResponse(url, body=text.encode(), headers={"Content-Type": content_type}, request=Request(url))
        fields = noise.fields_of(answer_of(response))
        assert fields is None or all(isinstance(n, str) and isinstance(v, str) for n, v in fields)


@pytest.mark.parametrize(
    ("token", "kind"),
    [("12:03:04", "s"), ("12:03", "m"), ("2025-11-29T08:00:01Z", "a"), (str(int(T0)), "a"), (str(int(T0 * 1000)), "a")],
)
def test_a_clock_moves_with_the_fetch_time_and_a_written_time_does_not(token: str, kind: str) -> None:
    clock = noise.clock_offset(token, T0)
    assert clock is not None and clock[0] == kind
    later = noise.field_sketch("at 12:33", T0 + 1800)
    assert noise.same_clock(noise.field_sketch("at 12:03", T0).split("|")[1], later.split("|")[1])
    opening = noise.field_sketch("opens 09:30", T0 + 7)
    assert not noise.same_clock(noise.field_sketch("opens 09:00", T0).split("|")[1], opening.split("|")[1])
    assert noise.clock_offset("12345", T0) is None  # a number, not a Unix time near the fetch


@pytest.mark.parametrize(
    "value",
    ["served at 12:03:04", f"stamp {int(T0)}", "posted 5 minutes ago", "2025-11-29T08:00:01Z", "Page 17 of 40"],
)
def test_a_field_read_once_per_value_still_reads_its_clock_at_each_fetch(value: str) -> None:
    """The tokens of a field are read once per distinct value (a site's
    template repeats them), but a clock's offset is the fetch's own: the
    same value sketched at two fetch times reads as the same clock only
    where it is a clock, and a field without one sketches alike."""
    first, later = noise.field_sketch(value, T0), noise.field_sketch(value, T0 + 600)
    assert noise.field_sketch(value, T0) == first  # read again from the cache: same
    if "~" in first:
        assert first != later  # the offset moved with the fetch time: not cached
        assert not noise.same_clock(first.split("|")[1], later.split("|")[1])
    else:
        assert first == later


# -- the chain: middleware, verdicts, policy, frontier -------------------------------------

URL = "http://shop.example/p/1.html"
FP = hashlib.sha1(URL.encode()).digest()


class Chain:
    """One URL crawled by the real parts, on a simulated clock: the frontier
    issues it (its waits, probes and politeness), *site(t, fetch)* answers
    ``(body, headers, value)``, the visit middleware judges it and the
    verdicts commit it through the wait policy."""

    def __init__(self, politeness: float, wait_min: float = 5.0) -> None:
        self.clock = [T0]
        now = lambda: self.clock[0]  # noqa: E731
        self.frontier = Frontier(
            MemoryStore(), Politeness(min_delay=politeness, max_delay=politeness, delay_factor=0), clock=now
        )
        self.frontier.load()
        self.frontier.add(FP, URL, "shop.example", {"url": URL})
        self.stats = MemoryStatsCollector(get_crawler())
        config = AdaptiveConfig.from_settings(
            Settings({"ADAPTIVE_WAIT_MIN": wait_min, "ADAPTIVE_WAIT_INITIAL": 30, "ADAPTIVE_WAIT_DEFAULT": 30})
        )
        policy = load_wait_policy(config)
        self.verdicts = Verdicts(
            self.frontier, policy, OneIssued(FP), self.stats, on_store_error=lambda exc: None, clock=now
        )  # type: ignore[arg-type]
        self.mw = VisitMiddleware(self.stats, self.verdicts, probe_window=max(30.0, 10 * politeness), clock=now)  # type: ignore[arg-type]
        self.delivered: list[Any] = []  # the value of each visit delivered as changed
        self.false = 0  # deliveries of the value delivered last (duplicates)
        self.verdicts_seen: list[str] = []
        self.values: list[Any] = []  # the value each response carried

    def expected(self) -> list[Any]:
        """Every value a response carried, once, in order: what must be delivered."""
        out: list[Any] = []
        for value in self.values:
            if not out or out[-1] != value:
                out.append(value)
        return out

    def fetch(self, site: Callable[[float, int], tuple[str, dict[str, str], Any]], fetch: int) -> tuple[str, Any]:
        """Wait for the URL to be due, fetch it, judge it; its verdict and value."""
        issued = self.frontier.next()
        while issued is None:
            due = self.frontier.next_ready_time()
            assert due is not None
            self.clock[0] = max(self.clock[0] + 0.001, due)
            issued = self.frontier.next()
        self.frontier.downloads.fetch_started(issued.fp)
        self.clock[0] += 0.01
        body, headers, value = site(self.clock[0], fetch)
        headers = {"Date": formatdate(self.clock[0], usegmt=True), **headers}
        response = HtmlResponse(
            URL, body=body.encode(), headers=headers, request=Request(URL, meta={meta.FP: FP.hex()})
        )
        self.frontier.downloads.fetch_ended(issued.fp)
        self.mw.process_spider_input(response)
        verdict = response.request.meta[meta.CHANGE]  # type: ignore[union-attr]
        self.verdicts_seen.append(verdict)
        self.values.append(value)
        if verdict == "changed":
            self.false += bool(self.delivered) and self.delivered[-1] == value
            self.delivered.append(value)
        return verdict, value

    def record(self) -> Any:
        return self.frontier.get_record("shop.example", FP)

    def settled(self) -> bool:
        record = self.record()
        return not learner.probing(record.noise if record is not None else None)


# -- the generator: pages of data and noise, edits anywhere ------------------------------------

#: where a page keeps its data (what the spider extracts): value n after n edits
DATA = {
    "text": lambda n: f"<p>In stock: {40 - n} units</p>",
    "attr": lambda n: f'<a href="/item/{n}.html">item</a>',
    "jsonld": lambda n: f'<script type="application/ld+json">{{"price": "{19 + n}.99"}}</script>',
    "meta": lambda n: f'<meta name="description" content="Fridge, model {n}">',
    "title": lambda n: f"<title>Fridge mk {n}</title>",
    "img": lambda n: f'<img src="/img/photo-{n}.jpg">',
    "label": lambda n: f"<table><tr><td>Value</td><td>{{token}}</td></tr><tr><td>Value</td><td>{17 + n}</td></tr></table>",
    "price_clock": lambda n: f"<p>Price {19 + n}.99 EUR, as of {{hms}}</p>",
    "dateline": lambda n: f"<p>Last edited 2025-11-{n % 28 + 1:02d}</p>",
}
HEAD_DATA = ("meta", "title", "jsonld")

#: what moves at every fetch without an edit
NOISE = {
    "clock": "<p>Server time {hms} UTC</p>",
    "coarse": "<p>Updated {hm}</p>",
    "token": '<form><input type="hidden" name="csrf" value="{token}"></form>',
    "counter": "<p>Visitors: {count} · Availability: in stock</p>",
    "long": "<p>" + " ".join(["word"] * 30) + " rendered at {hms} " + " ".join(["more"] * 30) + "</p>",
    "list": "<ul class=related>{items}</ul>",
    "ad": "<div class=ad>{ad}</div>",
    "epoch": '<div data-ts="{epoch}">x</div>',
}


def make_site(data: list[str], noises: list[str], edits: list[float], validators: bool) -> Callable[..., Any]:
    """A page with *data* slots and *noises*; edit k (at ``T0 + edits[k]``) changes slot k mod len(data)."""
    times = sorted(edits)

    def site(t: float, fetch: int) -> tuple[str, dict[str, str], Any]:
        done = [i for i, e in enumerate(times) if T0 + e <= t]
        counts = [sum(1 for i in done if i % len(data) == s) for s in range(len(data))]
        rng = random.Random(fetch)
        fill = {
            "hms": time.strftime("%H:%M:%S", time.gmtime(t)),
            "hm": time.strftime("%H:%M", time.gmtime(t)),
            "token": f"{rng.getrandbits(64):016x}",
            "count": str(1000 + fetch),
            "epoch": str(int(t)),
            "items": "".join(f"<li>item {rng.randrange(100)}</li>" for _ in range(rng.randrange(1, 6))),
            "ad": " ".join(rng.choice(["Buy", "Try", "Free", "Now", "Sale"]) for _ in range(rng.randrange(1, 5))),
        }
        head = "".join(DATA[d](counts[s]) for s, d in enumerate(data) if d in HEAD_DATA) or "<title>Shop</title>"
        body = "".join(DATA[d](counts[s]) for s, d in enumerate(data) if d not in HEAD_DATA)
        body += "".join(NOISE[n] for n in noises)
        html = f"<html><head>{head}</head><body><h1>Shop</h1>{body}</body></html>"
        for key, value in fill.items():
            html = html.replace("{" + key + "}", value)
        headers = {}
        if validators:
            headers["ETag"] = '"' + hashlib.sha1(json.dumps(counts).encode()).hexdigest()[:12] + '"'
            last = T0 - 86_400 + (max((times[i] for i in done), default=0.0) + 86_400 if done else 0.0)
            headers["Last-Modified"] = formatdate(last, usegmt=True)
        return html, headers, tuple(counts)

    return site


@settings(max_examples=examples(300), deadline=None)
@given(
    data=st.lists(st.sampled_from(sorted(DATA)), min_size=1, max_size=3, unique=True),
    noises=st.lists(st.sampled_from(sorted(NOISE)), max_size=3, unique=True),
    edits=st.lists(st.floats(0.0, 3000.0), max_size=8),
    politeness=st.sampled_from([0.05, 0.13, 1.0, 2.0, 5.0]),
    validators=st.booleans(),
)
def test_no_edit_is_lost_no_noise_delivered_and_nothing_parked(
    data: list[str], noises: list[str], edits: list[float], politeness: float, validators: bool
) -> None:
    chain = Chain(politeness)
    site = make_site(data, noises, edits, validators)
    for fetch in range(70):
        if chain.clock[0] > T0 + 3600:
            break
        _, value = chain.fetch(site, fetch)
        if chain.settled():
            # nothing lost: once no probe is pending, the value last delivered is the page's
            assert chain.delivered[-1] == value, (fetch, chain.verdicts_seen[-6:], chain.record().noise)
        record = chain.record()
        assert record.wait is not None and record.wait < WAIT_MAX  # nothing parked
    # no false change: at most one duplicate delivery in the page's life
    assert chain.false <= 1, chain.verdicts_seen


def test_two_real_edits_inside_both_probe_windows_are_not_learned_as_noise() -> None:
    """Session 24's falsifying example, now through the whole chain: a page
    without validators with a clock and a "Last edited" date edited twice,
    a second apart, right where the probes land."""
    chain = Chain(1.0, wait_min=1.0)
    site = make_site(["dateline"], ["clock"], [2.0, 3.0], validators=False)
    for fetch in range(12):
        _, value = chain.fetch(site, fetch)
        if chain.settled():
            assert chain.delivered[-1] == value
    assert chain.false == 0


# -- the shapes a tester found (issue 46), one each ------------------------------------------


#: an edit every five minutes for an hour
EVERY_5_MIN = [300.0 * k + 17.0 for k in range(1, 12)]


def crawl(
    data: list[str],
    noises: list[str],
    edits: list[float] = EVERY_5_MIN,
    *,
    politeness: float = 2.0,
    validators: bool = False,
    fetches: int = 40,
) -> Chain:
    chain = Chain(politeness, wait_min=5.0)
    site = make_site(data, noises, edits, validators)
    for fetch in range(fetches):
        _, value = chain.fetch(site, fetch)
        if chain.settled():
            assert chain.delivered[-1] == value, (data, noises, fetch, chain.verdicts_seen)
    return chain


@pytest.mark.parametrize("where", ["jsonld", "meta", "attr", "img", "title"])
def test_an_edit_outside_the_visible_text_is_delivered_on_a_page_with_a_token_and_a_clock(where: str) -> None:
    chain = crawl([where], ["token", "clock"], politeness=1.0)
    assert chain.delivered == chain.expected() and len(chain.expected()) >= 3 and chain.false == 0
    masks = noise.Masks.of(chain.record().noise)
    assert masks and not masks.regions and all(v != noise.WHOLE for v in masks.fields.values())  # tokens only


@pytest.mark.parametrize(("shape", "politeness"), [("clock", 0.13), ("coarse", 2.0), ("long", 1.0), ("epoch", 1.0)])
def test_a_clock_coarser_than_the_probe_or_inside_a_long_paragraph_is_learned_not_parked(
    shape: str, politeness: float
) -> None:
    chain = crawl(["text"], [shape], politeness=politeness)
    assert chain.delivered == chain.expected() and len(chain.expected()) >= 2 and chain.false == 0
    assert chain.record().wait < 1800  # keeps the wait its real changes earn


def test_an_edit_inside_the_probe_window_beside_a_visitor_counter_is_delivered() -> None:
    chain = Chain(1.0)
    site = make_site(["text"], ["counter"], [], validators=False)
    for fetch in range(6):
        chain.fetch(site, fetch)
    # the stock edit lands right after a held fetch, inside its probe window
    edited = make_site(["text"], ["counter"], [chain.clock[0] - T0 + 0.005], validators=False)
    for fetch in range(6, 20):
        _, value = chain.fetch(edited, fetch)
        if chain.settled():
            assert chain.delivered[-1] == value
    assert chain.delivered[-1] == (1,) and chain.false == 0


def test_a_repeated_label_hides_only_its_own_token() -> None:
    chain = crawl(["label"], [], politeness=1.0)
    assert chain.delivered == chain.expected() and len(chain.expected()) >= 3 and chain.false == 0


@pytest.mark.parametrize("shape", ["list", "ad"])
def test_a_list_or_an_ad_of_varying_length_is_learned_and_edits_beside_it_are_delivered(shape: str) -> None:
    chain = crawl(["text", "meta"], [shape], [400.0, 1000.0], politeness=1.0, fetches=30)
    assert chain.delivered[-1] == (1, 1) and chain.false <= 1


def test_the_first_revisit_of_a_page_with_a_token_is_not_a_change() -> None:
    chain = crawl(["text"], ["token"], [], politeness=1.0, fetches=8)
    assert chain.delivered == [(0,)]
    assert chain.verdicts_seen[:4] == ["changed", "unchanged", "unchanged", "unchanged"]
    assert chain.stats.get_value("adaptive/noise/learned") == 1


def test_a_sibling_proves_the_pooled_mask_with_one_probe_and_delivers_nothing_false() -> None:
    first = crawl(["text"], ["token"], [], politeness=1.0, fetches=6)
    sibling = Chain(1.0)
    sibling.mw.judging = replace(sibling.mw.judging, noise=first.mw.judging.noise)
    site = make_site(["text"], ["token"], [], validators=False)
    for fetch in range(6):
        sibling.fetch(site, fetch + 100)
    assert sibling.delivered == [(0,)]
    assert sibling.stats.get_value("adaptive/noise/probes") == 1
    assert sibling.stats.get_value("adaptive/noise/confirmed") == 1


def test_a_masks_state_is_a_snapshot_so_a_clock_learned_beside_another_counts_as_learned() -> None:
    """The learner asks whether a clock hid anything new by comparing the
    masks' state before and after; a state that shared the masks' own dict
    changed with them, and a second clock on a page that had one was never
    counted (``adaptive/noise/learned``, the ``noiseLearned`` annotation)."""
    masks = noise.Masks.of({"m": {"a1": [0]}, "g": ["body/div"]})
    before = masks.state()
    masks.add_tokens("b2", [3])
    masks.add_region("body/ul")
    assert before == {"m": {"a1": [0]}, "g": ["body/div"]}
    assert masks.state() == {"m": {"a1": [0], "b2": [3]}, "g": ["body/div", "body/ul"]}


def test_the_pool_offers_a_url_classs_masks_newest_first_each_once_and_forgets_the_oldest_class(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from scrapy_adaptive.change import noise_learner

    monkeypatch.setattr(noise_learner, "POOL_KEYS", 2)
    pool = noise_learner.NoisePool()
    clock, token = {"m": {"a1": [0]}}, {"m": {"b2": "*"}}
    pool.add("shop/p/*.html", {"p": "version only"})  # nothing learned: nothing kept
    assert pool.offer("shop/p/*.html") == []
    pool.add("shop/p/*.html", clock)
    pool.add("shop/p/*.html", token)
    pool.add("shop/p/*.html", clock)  # learned again: first, and once
    assert [m.state() for m in pool.offer("shop/p/*.html")] == [clock, token]
    for n in range(noise_learner.POOL_SETS + 2):
        pool.add("shop/p/*.html", {"m": {f"k{n}": [n]}})
    assert len(pool.offer("shop/p/*.html")) == noise_learner.POOL_SETS
    pool.add("news/*", clock)
    pool.add("blog/*", token)  # a third class: the least recently learned goes
    assert pool.offer("shop/p/*.html") == [] and [m.state() for m in pool.offer("blog/*")] == [token]


def test_an_etag_that_follows_the_data_with_a_clock_in_the_body_is_right_not_a_liar() -> None:
    chain = crawl(["text"], ["clock"], politeness=1.0, validators=True)
    assert chain.delivered == chain.expected() and len(chain.expected()) >= 2 and chain.false == 0


def test_a_last_modified_read_alike_twice_is_never_taken_for_a_clock() -> None:
    """Two fetches each a few seconds after an edit read Last-Modified minus
    Date alike: the header was hidden as a clock, and every later edit of a
    server that sends only Last-Modified was held and probed (found by the
    changing-web benchmark, 41 of 910 URLs).  A content date that moves is
    an edit, delivered at once; it is never masked."""
    chain = Chain(1.0)
    edits = [0.0]

    def site(t: float, fetch: int) -> tuple[str, dict[str, str], int]:
        if fetch in (1, 3, 5):
            edits.append(t - T0 - 3.0)  # an edit three seconds before this fetch
        n = len(edits)
        last = T0 + edits[-1]
        html = (
            f"<html><body><p>Stock {n}</p><p>Server time {time.strftime('%H:%M:%S', time.gmtime(t))}</p></body></html>"
        )
        return html, {"Last-Modified": formatdate(last, usegmt=True)}, n

    for fetch in range(8):
        verdict, value = chain.fetch(site, fetch)
        if fetch in (1, 3, 5):
            assert verdict == "changed", (fetch, chain.verdicts_seen)  # at once, not held for a probe
    masks = noise.Masks.of(chain.record().noise)
    assert noise.name_hash(noise.LAST_MODIFIED_FIELD) not in masks.fields
    assert chain.false == 0


# the plain scan the fast one must equal: every word (a date with a month's
# name, else a run of word characters), kept when it holds a digit
_PLAIN_WORDS = re.compile(
    rf"\b\d{{1,2}}\.?\s+{noise._MONTH_WORD},?\s+\d{{4}}\b"
    rf"|\b{noise._MONTH_WORD}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b"
    r"|[\w.:+/=@-]+",
    re.IGNORECASE,
)
_TOKEN_PIECES = st.sampled_from(
    list("0123456789 :.-/,+=@_aJunemMyg\té٣") + [" minutes ago", " June ", "2026", "12:", "th", "Dec.", "sept ", ", "]
)


@settings(max_examples=examples(1500), deadline=None)
@given(st.lists(_TOKEN_PIECES, max_size=24).map("".join))
def test_the_volatile_tokens_are_the_words_holding_a_digit(value: str) -> None:
    """The scan matches only the tokens that hold a digit (a paragraph's
    other words are passed over), and finds exactly those a scan of every
    word keeps: the same spans, so a learned mask's positions mean the same."""
    plain = [(m.start(), m.end()) for m in _PLAIN_WORDS.finditer(value) if re.search(r"\d", m.group(0))]
    assert [(m.start(), m.end()) for m in noise.volatile(value)] == plain
