"""Change detection and wait evaluation in real crawls of the demo site.

The demo site runs 40x faster than real time, so its 15 s pages change
every 0.375 s and its 60 s pages every 1.5 s.  Each page is crawled twice
in the same crawl: under the rule being tested and, with ``?exact=1`` (the
site ignores the query), under the exact-bytes rule as the control.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import read_records
from tests.crawlrunner import run_crawl
from testsite.demo import DemoSiteProcess

pytestmark = pytest.mark.e2e

PAGES = Path(__file__).parents[1] / "spiders" / "pages.py"


@pytest.fixture(scope="module")
def demo_site() -> object:
    with DemoSiteProcess(speed=40.0) as site:
        yield site


def crawl(
    site: object,
    paths: list[str],
    settings: dict[str, object],
    tmp_state: Path,
    seconds: float = 7,
    meta: dict[str, object] | None = None,
    embeds: bool = False,
):
    urls = [site.url.rstrip("/") + p for p in paths]  # type: ignore[attr-defined]
    result = run_crawl(
        PAGES,
        {**settings, "CLOSESPIDER_TIMEOUT": seconds},
        timeout=90,
        args=["-a", "urls=" + " ".join(urls), "-a", "meta=" + json.dumps(meta or {}), "-a", f"embeds={int(embeds)}"],
        collect_items=True,
    )
    result.assert_ok()
    records = read_records(tmp_state / "adaptive")
    base = site.url.rstrip("/")  # type: ignore[attr-defined]
    return result, {url[len(base) :]: record for url, record in records.items()}


@pytest.fixture
def fast(adaptive_settings: dict[str, object]) -> dict[str, object]:
    return {
        **adaptive_settings,
        "ADAPTIVE_WAIT_INITIAL": 0.6,
        "ADAPTIVE_WAIT_MIN": 0.3,
        "ADAPTIVE_WAIT_MAX": 2.0,
        "ADAPTIVE_WAIT_DEFAULT": 1.0,
        "ADAPTIVE_WAIT_POLICY": "scrapy_adaptive.policies.HeritrixWaitPolicy",
        # the catch-all's numbers for every URL, with initial 0.6 s for every
        # type, Last-Modified or not (the catch-all itself halves it without)
        "ADAPTIVE_WAIT_POLICIES": [{"url": ".", "no_last_modified_factor": 1.0}],
    }


def test_rules_ignore_clock_and_markup_noise_but_see_real_change(
    demo_site: object, fast: dict[str, object], tmp_state: Path
) -> None:
    settings = {
        **fast,
        "ADAPTIVE_DIGEST_RULES": [
            {"url": r"timestamp\.html$", "rule": "regex", "patterns": [r"Generated at [^<]*"]},
            {"url": r"markup\.html$", "rule": "text"},
            {"url": r"conditional\.html$", "rule": "text"},
        ],
    }
    paths = [
        "/lab/timestamp.html",
        "/lab/timestamp.html?exact=1",
        "/lab/markup.html",
        "/lab/markup.html?exact=1",
        "/lab/conditional.html",
    ]
    result, records = crawl(demo_site, paths, settings, tmp_state)
    clock, clock_exact = records["/lab/timestamp.html"], records["/lab/timestamp.html?exact=1"]
    assert clock.visits >= 3 and clock.versions == 1, clock  # only the clock changes
    # exact bytes: the clock changes every fetch, by the time between two
    # fetches: the first revisit proves it a clock, and nothing changes after
    assert clock_exact.visits >= 3 and clock_exact.versions == 1, clock_exact
    assert clock_exact.noise is not None and len(clock_exact.noise["m"]) == 1
    assert [h[1] for h in clock_exact.history][:3] == ["changed", "unchanged", "unchanged"]
    markup, markup_exact = records["/lab/markup.html"], records["/lab/markup.html?exact=1"]
    assert markup.visits >= 3 and markup.versions == 1  # markup/script/attribute changes only
    assert markup_exact.versions >= 2
    real = records["/lab/conditional.html"]
    assert real.versions >= 2  # its text does change: the text rule sees it
    assert clock.digest and clock.digest.startswith("regex:sha1:")
    assert markup.digest and markup.digest.startswith("text:sha1:")
    assert clock.payload_digest and clock.payload_digest.startswith("sha1:")


def test_waits_shrink_on_change_grow_without_and_are_clamped(
    demo_site: object, fast: dict[str, object], tmp_state: Path
) -> None:
    settings = {
        **fast,
        "ADAPTIVE_DIGEST_RULES": [{"url": r"timestamp\.html$", "rule": "regex", "patterns": ["Generated at [^<]*"]}],
        "ADAPTIVE_NOISE_LEARNING": False,  # the busy page is raw noise: the wait policy's guard's job
    }
    _, records = crawl(demo_site, ["/lab/timestamp.html", "/lab/timestamp.html?exact=1"], settings, tmp_state)
    steady, busy = records["/lab/timestamp.html"], records["/lab/timestamp.html?exact=1"]
    # unchanged: 0.6 x 1.5 x 1.5 ... up to the 2.0 s maximum
    assert steady.visits >= 3 and steady.wait == pytest.approx(min(2.0, 0.6 * 1.5 ** (steady.visits - 1)))
    # changed every time: 0.6 / 1.5 / 1.5 ... down to the 0.3 s minimum; after 8 changes the
    # noise guard probes (at the minimum) and, five changed probes later, holds it at the maximum
    held = busy.policy.get("ng", [0])[0] == 2
    assert busy.visits > steady.visits and busy.wait == pytest.approx(2.0 if held else 0.3)
    assert held or busy.visits < 15 or busy.policy["ng"][0] == 3  # flagged: held, or re-tested
    assert [h[1] for h in steady.history] == ["changed"] + ["unchanged"] * (steady.visits - 1)
    assert all(h[1] == "changed" for h in busy.history)
    # one crawl-log line per visit, with the wait, counters and change state
    lines = (tmp_state / "adaptive" / "crawl.log").read_text().splitlines()
    steady_lines = [line for line in lines if line.split(" ")[3].endswith("/lab/timestamp.html")]
    assert len(steady_lines) == steady.visits
    assert f",{steady.visits}vis,1ver," in steady_lines[-1] and steady_lines[-1].endswith(" unchanged")
    assert " text/html regex:sha1:" in steady_lines[-1]


@pytest.mark.quick
def test_unchanged_pages_never_reach_the_callback(demo_site: object, fast: dict[str, object], tmp_state: Path) -> None:
    result, records = crawl(demo_site, ["/docs/page-01.html", "/lab/conditional.html"], fast, tmp_state)
    calls = Counter(item["url"].rsplit("/", 1)[1] for item in result.items)
    static, changing = records["/docs/page-01.html"], records["/lab/conditional.html"]
    assert static.visits >= 3 and static.versions == 1
    assert calls["page-01.html"] == 1  # delivered once, skipped on every unchanged revisit
    assert calls["conditional.html"] == changing.versions
    assert result.stats["adaptive/unchanged/skipped"] >= static.visits - 1
    assert all(item["change"] == "changed" for item in result.items)


def test_unchanged_pages_can_be_delivered_with_a_flag(
    demo_site: object, fast: dict[str, object], tmp_state: Path
) -> None:
    result, records = crawl(demo_site, ["/docs/page-01.html"], {**fast, "ADAPTIVE_UNCHANGED": "deliver"}, tmp_state, 4)
    static = records["/docs/page-01.html"]
    assert len(result.items) == static.visits >= 2
    assert [i["change"] for i in result.items] == ["changed"] + ["unchanged"] * (static.visits - 1)


def test_items_mode_follows_the_data_not_the_layout(
    demo_site: object, fast: dict[str, object], tmp_state: Path
) -> None:
    settings = {
        **fast,
        "ADAPTIVE_DIGEST_RULES": [{"url": r"product-0[16]\.html$", "rule": "items", "fields": ["name", "price"]}],
    }
    paths = ["/shop/product-01.html", "/shop/product-06.html", "/shop/product-06.html?exact=1"]
    result, records = crawl(demo_site, paths, settings, tmp_state, 8)
    price, layout, layout_exact = (records[p] for p in paths)
    assert price.visits >= 3 and price.versions >= 2  # the price changed: a new version
    assert layout.visits >= 3 and layout.versions == 1  # only the layout changed
    assert layout_exact.versions >= 2  # ...which the exact rule counts as change
    assert layout.digest and layout.digest.startswith("items:sha1:")
    emitted = Counter(item["url"] for item in result.items)
    base = next(iter(result.items))["url"].split("/shop/")[0]
    assert emitted[base + "/shop/product-06.html"] == 1  # the callback ran, unchanged items were dropped
    assert emitted[base + "/shop/product-01.html"] == price.versions


def test_a_project_still_listing_deltafetch_keeps_its_revisits(
    demo_site: object, fast: dict[str, object], tmp_state: Path
) -> None:
    """With the real scrapy-deltafetch installed and enabled in the project."""
    settings = {
        **fast,
        "SPIDER_MIDDLEWARES": {"scrapy_deltafetch.DeltaFetch": 100},
        "DELTAFETCH_ENABLED": True,
        "DELTAFETCH_DIR": str(tmp_state / "deltafetch"),
    }
    result, records = crawl(demo_site, ["/docs/page-01.html", "/lab/conditional.html"], settings, tmp_state, 4)
    assert "takes over scrapy-deltafetch's role" in result.log
    assert all(r.visits >= 2 for r in records.values())  # revisited, not dropped as "seen"
    calls = Counter(item["url"].rsplit("/", 1)[1] for item in result.items)
    assert calls["page-01.html"] == 1  # ...and an unchanged page's items are not emitted again


def test_deltafetch_meta_keys_are_honoured(demo_site: object, fast: dict[str, object], tmp_state: Path) -> None:
    # deltafetch_key: two URLs, one page identity -> one record
    _, records = crawl(
        demo_site,
        ["/docs/page-01.html", "/docs/page-01.html?copy=1"],
        {**fast, "ADAPTIVE_UNCHANGED": "skip"},
        tmp_state,
        3,
        meta={"deltafetch_key": "docs-page-1"},
    )
    assert len(records) == 1


def test_deltafetch_enabled_false_delivers_unchanged_pages(
    demo_site: object, fast: dict[str, object], tmp_state: Path
) -> None:
    result, records = crawl(demo_site, ["/docs/page-01.html"], fast, tmp_state, 4, meta={"deltafetch_enabled": False})
    assert len(result.items) == records["/docs/page-01.html"].visits >= 2


@pytest.mark.parametrize("on_change", [True, False])
def test_embeds_of_a_changed_page_are_revisited_with_it(
    demo_site: object, fast: dict[str, object], tmp_state: Path, on_change: bool
) -> None:
    settings = {
        **fast,
        "ADAPTIVE_REVISIT_EMBEDS_ON_CHANGE": on_change,
        "ADAPTIVE_WAIT_POLICIES": [{"content_type": "image/*", "initial": 100, "min": 100, "max": 100}],
    }
    # the page changes about every second; its images' own waits are 100 s
    seconds = 14 if on_change else 5
    result, records = crawl(demo_site, ["/news/article-01.html"], settings, tmp_state, seconds, embeds=True)
    page = records["/news/article-01.html"]
    images = {url: r for url, r in records.items() if url.startswith("/images/")}
    assert page.versions >= 3 and images
    if on_change:
        # a composite capture: every image comes again with the page's
        # changes, each once its copy is older than 5 s doubled per fetch at
        # which it stayed the same (COMPOSITE_WINDOW_S); a confirmation is a
        # conditional request, or a verification fetch while its class earns
        # trust.  photo-06 never changes: fetched at the first visit and with
        # a change 5 s on, its third fetch would come after 15 s.
        assert all(r.visits >= 2 for r in images.values()), {u: r.history for u, r in images.items()}
        for record in images.values():
            history = record.history
            for i in range(1, len(history)):
                streak = 0
                for _, change, *_ in reversed(history[:i]):
                    if change != "unchanged":
                        break
                    streak += 1
                assert history[i][0] - history[i - 1][0] > 5.0 * 2**streak, history
        still = images["/images/photo-06.png"]
        assert still.visits == 2 and still.versions == 1, still.history
    else:
        assert all(r.visits == 1 for r in images.values())
