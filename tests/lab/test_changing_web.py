"""The pure parts of bench.changing_web: the world's timeline and bytes, and the scoring arithmetic."""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bench.changing_web import fetch_reasons, politeness, score
from bench.changing_web_site import copy_addresses
from bench.changing_web_world import KINDS, World, version_of


@pytest.fixture(scope="module")
def world() -> World:
    return World(hosts=2, pages=20, images=4, delay=1.0, horizon=600.0, seed=5)


def test_the_world_is_a_function_of_its_parameters(world: World) -> None:
    again = World(hosts=2, pages=20, images=4, delay=1.0, horizon=600.0, seed=5)
    other = World(hosts=2, pages=20, images=4, delay=1.0, horizon=600.0, seed=6)
    assert [(u.path, u.kind, u.changes) for u in world.urls] == [(u.path, u.kind, u.changes) for u in again.urls]
    assert [u.changes for u in world.urls] != [u.changes for u in other.urls]
    assert {u.kind for u in world.urls} == set(KINDS) - {"grouped"}  # off unless asked for
    assert world.pass_seconds == 25.0  # (1 index + 20 pages + 4 images) × 1 s


def test_versions_follow_the_change_instants(world: World) -> None:
    url = next(u for u in world.urls if u.kind == "poisson" and len(u.changes) >= 2)
    first, second = url.changes[:2]
    assert url.version(0.0) == 0 and url.version(first - 1e-6) == 0
    assert url.version(first) == 1 and url.version((first + second) / 2) == 1
    assert url.started(1) == first and url.started(0) < 0
    assert all(u.changes == () for u in world.urls if u.kind in ("static", "index"))


def test_the_version_id_is_in_the_bytes_and_noise_is_not_a_version(world: World) -> None:
    for url in world.urls:
        assert version_of(world.body(url, 3, now=10.0)) == 3
    noise = next(u for u in world.urls if u.kind == "noise")
    a, b = world.body(noise, 1, now=10.0), world.body(noise, 1, now=11.0)
    assert a != b and version_of(a) == version_of(b) == 1
    assert world.etag(noise, 1) is None and world.last_modified(noise, 1, 0.0) is None
    assert version_of(b"") is None and version_of(b"<html>stopped") is None


def test_traced_pages_replay_real_clustered_histories() -> None:
    """A traced page's gaps are a real document's, in order and scaled: over a
    long horizon they cluster as real histories do (a gap CV above a Poisson
    page's 1), and their mean follows the drawn interval."""
    long = World(hosts=4, pages=20, images=0, delay=1.0, horizon=200_000.0, seed=5)
    traced = [u for u in long.urls if u.kind == "traced" and len(u.changes) > 50]
    assert traced

    def cv(changes: tuple[float, ...]) -> float:
        gaps = [b - a for a, b in zip(changes, changes[1:])]
        mean = sum(gaps) / len(gaps)
        return (sum((g - mean) ** 2 for g in gaps) / len(gaps)) ** 0.5 / mean

    cvs = sorted(cv(u.changes) for u in traced)
    assert cvs[len(cvs) // 2] > 1.0
    assert all(b > a for u in traced for a, b in zip(u.changes, u.changes[1:]))


def test_grouped_pages_replay_one_service_s_documents_together() -> None:
    """With ``grouped``, a share of each host's pages (taken from the Poisson
    pages) replays the documents of real services from one shared moment:
    what one commit changed together changes at one instant on one host,
    which independent pages never do; without it the world is unchanged."""
    args = {"hosts": 4, "pages": 20, "images": 0, "delay": 1.0, "horizon": 20_000.0, "seed": 5}
    plain, off, on = World(**args), World(**args, grouped=0.0), World(**args, grouped=0.3)
    assert [(u.path, u.kind, u.changes) for u in off.urls] == [(u.path, u.kind, u.changes) for u in plain.urls]
    kinds, before = Counter(u.kind for u in on.urls), Counter(u.kind for u in plain.urls)
    assert kinds["grouped"] == 4 * 6 and kinds["poisson"] == before["poisson"] - 4 * 6
    assert all(kinds[k] == before[k] for k in KINDS if k not in ("grouped", "poisson"))

    def shared(kind: str, host: int) -> int:
        """Instants at which two pages of *kind* on *host* change at once."""
        seen = Counter(t for u in on.urls if u.host == host and u.kind == kind for t in set(u.changes))
        return sum(1 for n in seen.values() if n > 1)

    assert sum(shared("grouped", h) for h in range(4)) >= 10
    assert sum(shared("poisson", h) for h in range(4)) == 0
    grouped = [u for u in on.urls if u.kind == "grouped"]
    assert all(0.0 < t <= 20_000.0 for u in grouped for t in u.changes)
    assert all(list(u.changes) == sorted(u.changes) for u in grouped)
    assert sum(len(u.changes) for u in grouped) > 100
    with pytest.raises(ValueError):
        World(**args, grouped=1.5)


def test_sizes_are_real_sizes(world: World) -> None:
    pages = [len(world.body(u, 0)) for u in world.urls if u.kind not in ("image", "index")]
    images = [len(world.body(u, 0)) for u in world.urls if u.kind == "image"]
    assert 2_500 <= min(pages) and max(pages) <= 62_000
    assert 15_000 <= min(images) and max(images) <= 121_000


def test_a_liar_keeps_its_validators_an_honest_page_moves_them(world: World) -> None:
    liar = next(u for u in world.urls if u.kind == "liar")
    honest = next(u for u in world.urls if u.kind == "poisson" and u.changes)
    assert world.etag(liar, 0) == world.etag(liar, 5)
    assert world.last_modified(liar, 0, 100.0) == world.last_modified(liar, 5, 100.0)
    assert world.etag(honest, 0) != world.etag(honest, 1)
    assert world.last_modified(honest, 1, 100.0) == 100.0 + honest.changes[0]


def test_figures_are_embedded_in_their_page_and_redrawn_with_it() -> None:
    """Issue 48: a page's figures are its embeds (``<img>``, not links of the
    index), a third of the URLs at the default sizes, and change at the
    instants of about half their page's changes."""
    world = World(hosts=2, pages=60, images=30, delay=3.0, horizon=36_000.0, seed=5)
    figures = [u for u in world.urls if u.kind == "image"]
    assert len(figures) / len(world.urls) == pytest.approx(1 / 3, abs=0.01)
    index = world.body(world.by_path[(0, "/")], 0)
    assert b"/img/" not in index
    shared = mine = 0
    for figure in figures:
        page = world.urls[figure.owner]  # type: ignore[index]
        assert page.is_page and page.kind != "index" and page.host == figure.host
        assert f'<img src="{figure.path}"'.encode() in world.body(page, 0)
        assert world.figures(page) == [figure]
        mine += len(page.changes)
        shared += len(set(page.changes) & set(figure.changes))
    assert 0.4 < shared / mine < 0.6


def test_static_pages_have_old_honest_validators(world: World) -> None:
    static = [u for u in world.urls if u.kind == "static"]
    assert static and all(3 * 3600 <= u.age0 <= 90 * 86400 and not u.changes for u in static)
    assert world.last_modified(static[0], 0, 1_000_000.0) == 1_000_000.0 - static[0].age0


def test_score_says_whether_figures_came_with_their_page(world: World) -> None:
    origin, window = 1000.0, (1000.0, 1200.0)
    figure = next(u for u in world.urls if u.kind == "image")
    page = world.urls[figure.owner]  # type: ignore[index]
    hosts = copy_addresses(1, world.hosts)[0]
    items = [{"url": f"http://{hosts[page.host]}:8080{page.path}", "version": 0}]
    with_it = [
        [origin + 1, origin + 1.1, 0, page.host, page.index, 200, 100, 0],
        [origin + 15, origin + 15.1, 0, figure.host, figure.index, 200, 100, 0],  # within 20 delays
    ]
    late = [with_it[0], [origin + 40, origin + 40.1, 0, figure.host, figure.index, 200, 100, 0]]
    got = [score(world, origin, window, log, {0: items}, {0: hosts}, 1.0, 3)[0] for log in (with_it, late)]
    assert [r["figures_with_page"] for r in got] == [1.0, 0.0]
    assert got[0]["figure_first_fetch_s"] == pytest.approx(15.0) and got[0]["page_first_capture_s"] == 1.0


def test_politeness_counts_overlaps_and_short_gaps() -> None:
    # [arrived, finished, copy, host, url, status, bytes, version]
    rows = [
        [0.0, 0.1, 0, 0, 1, 200, 10, 0],
        [1.0, 1.1, 0, 0, 2, 200, 10, 0],  # 1.0 s after: polite
        [1.05, 1.2, 0, 0, 3, 200, 10, 0],  # while the previous one is in flight, and too soon
        [0.5, 0.6, 0, 1, 1, 200, 10, 0],  # another host: its own clock
        [1.2, 1.3, 0, 1, 2, 200, 10, 0],  # 0.7 s after its previous one: too soon
    ]
    p = politeness(rows, delay=1.0)
    assert p == {"overlaps": 1, "short_gaps": 2, "violations": 3, "min_gap_s": pytest.approx(0.05)}


def test_score_counts_a_version_once_and_only_when_its_bytes_were_received(world: World) -> None:
    origin, window = 1000.0, (1000.0, 1060.0)
    url = next(u for u in world.urls if u.kind == "poisson" and u.changes and u.changes[0] < 30)
    host = copy_addresses(1, world.hosts)[0][url.host]
    t1 = origin + url.changes[0] + 1  # version 1 is live
    log = [
        [origin + 0.5, origin + 0.6, 0, url.host, url.index, 200, 100, 0],  # version 0, received
        [origin + 0.8, origin + 0.9, 0, url.host, url.index, 200, 100, 0],  # version 0 again: not new
        [t1, t1 + 0.1, 0, url.host, url.index, 200, 100, 1],  # version 1 served, but the item has no bytes
        [t1 + 2, t1 + 2.1, 0, url.host, url.index, 304, 0, 1],  # a 304 brings nothing
    ]
    items: list[dict[str, Any]] = [
        {"url": f"http://{host}:8080{url.path}", "version": 0},
        {"url": f"http://{host}:8080{url.path}", "version": None},
    ]
    r = score(world, origin, window, log, {0: items}, {0: copy_addresses(1, world.hosts)[0]}, 1.0, 3)[0]
    assert r["captured"] == 1 and r["fetches"] == 4 and r["requests"] == 4
    assert r["precision"] == 0.25 and r["body_bytes"] == 300
    assert r["by_kind"]["poisson"]["not_modified"] == 1
    assert r["versions"] == sum(len(range(u.version(0), u.version(60) + 1)) for u in world.urls)
    assert r["recall"] == 1 / r["versions"] and r["items_not_served"] == 0
    assert r["first_pass_s"] is None  # one URL of many
    assert r["curve"][0]["captured"] == 1


def test_fetch_reasons_set_verifications_aside_and_split_the_static_pages(world: World) -> None:
    """A revisit is conditional if it sent validators; the spider's tagged verifications are left out of
    the share; noise pages send no validators and are left out; a log without the columns reads as other."""
    static = next(u for u in world.urls if u.kind == "static")
    noise = next(u for u in world.urls if u.kind == "noise")

    def row(u: Any, conditional: int, why: int) -> list[float]:
        return [0.0, 0.0, 0, u.host, u.index, 200, 10, 0, conditional, why]

    rows = [
        row(static, 0, 0),
        row(static, 0, 2),
        row(static, 0, 1),
        row(static, 1, 0),
        row(static, 1, 0),
        row(static, 0, 0),
        row(noise, 0, 0),
        row(noise, 0, 0),
        [0.0, 0.0, 0, 0, -1, 404, 0, -1, 0, 0],
    ]
    got = fetch_reasons(world, rows)
    assert got["static_reasons"] == {"first": 1, "check": 1, "verify": 1, "conditional": 2, "other": 1}
    assert got["validated_conditional"] == pytest.approx(2 / 3) and got["validated_verified"] == pytest.approx(2 / 5)
    old = fetch_reasons(world, [r[:8] for r in rows])
    assert old["static_reasons"]["other"] == 5 and old["validated_conditional"] == 0.0


def test_the_spider_tags_verifications_only() -> None:
    from scrapy import Request

    from bench.changing_web_spider import tag_fetch
    from scrapy_adaptive.model import FetchResult

    def tagged(validation: str | None, policy: dict[str, Any]) -> bytes | None:
        request = Request("http://a.test/", meta={"_adaptive_fetch": FetchResult(validation=validation),
                                                   "adaptive_record": {"policy": policy}})  # fmt: skip
        tag_fetch(request)
        return request.headers.get("X-Bench-Fetch")

    assert tagged("verified", {"ua": 1.0}) == b"check" and tagged("verified", {}) == b"verify"
    assert tagged("trusted", {"ua": 1.0}) is None and tagged(None, {}) is None
    assert tag_fetch(Request("http://a.test/")) is None


def test_the_oneline_crawler_sets_the_add_on_and_the_minimum_wait_only(tmp_path: Path) -> None:
    """``adaptive-oneline`` is what a user who added the add-on line and the crawl's time scale runs;
    ``CONFIG@LABEL`` runs the same config on the checkout ``--code LABEL=DIR`` names."""
    from bench import changing_web

    args = argparse.Namespace(delay=3.0, budget_per_day=1000.0, wait_min=9.0, code=[f"main={tmp_path}"])
    for name in ("adaptive-oneline", "adaptive-oneline@main"):
        settings = changing_web.crawl_settings(name, args, tmp_path, tmp_path / "items.jl")
        adaptive = {k for k in settings if k.startswith("ADAPTIVE_")}
        assert adaptive == {"ADAPTIVE_WAIT_MIN"} and settings["ADDONS"] == {"scrapy_adaptive.Addon": 0}
    assert changing_web.crawl_settings("adaptive", args, tmp_path, tmp_path / "i.jl")["ADAPTIVE_BUDGET"] == 1000.0
    assert changing_web.code_dir("adaptive-oneline@main", args) == tmp_path.resolve()
    assert changing_web.code_dir("adaptive-oneline", args) == changing_web.REPO_ROOT
    with pytest.raises(SystemExit):
        changing_web.code_dir("adaptive-oneline@other", args)


def test_score_gives_the_median_delay_from_a_version_s_appearance_to_its_capture(world: World) -> None:
    """Versions born in the window count (1 s and 3 s here: median 2 s); the one live at its start does not."""
    origin, window = 1000.0, (1000.0, 1060.0)
    url = next(u for u in world.urls if u.kind == "poisson" and len(u.changes) > 1 and u.changes[1] < 50)
    host = copy_addresses(1, world.hosts)[0][url.host]
    t1, t2 = origin + url.changes[0] + 1, origin + url.changes[1] + 3
    log = [
        [origin + 5, origin + 5.1, 0, url.host, url.index, 200, 100, 0],  # live at the start: no delay counted
        [t1, t1 + 0.1, 0, url.host, url.index, 200, 100, 1],
        [t2, t2 + 0.1, 0, url.host, url.index, 200, 100, 2],
    ]
    items = [{"url": f"http://{host}:8080{url.path}", "version": v} for v in (0, 1, 2)]
    r = score(world, origin, window, log, {0: items}, {0: copy_addresses(1, world.hosts)[0]}, 1.0, 3)[0]
    assert r["captured"] == 3
    assert r["median_capture_delay_s"] == pytest.approx(2.0)
    assert r["by_kind"]["poisson"]["median_capture_delay_s"] == pytest.approx(2.0)
    assert r["by_kind"]["static"]["median_capture_delay_s"] is None


def test_freshness_is_the_share_of_time_the_copy_was_the_live_version(world: World) -> None:
    """Observed from the first body received; stale from a change until the body of its version arrives
    (1 s and 3 s here), whatever the crawler fetched meanwhile."""
    origin, window = 1000.0, (1000.0, 1060.0)
    url = next(
        u
        for u in world.urls
        if u.kind == "poisson"
        and 6 < u.changes[0]
        and u.changes[0] + 1 < u.changes[1] < 50
        and (len(u.changes) == 2 or u.changes[2] > 60)
    )
    host = copy_addresses(1, world.hosts)[0][url.host]
    t1, t2 = origin + url.changes[0] + 1, origin + url.changes[1] + 3
    log = [
        [origin + 5, origin + 5.1, 0, url.host, url.index, 200, 100, 0],
        [t1 - 0.5, t1 - 0.4, 0, url.host, url.index, 304, 0, 1],  # a 304 brings no body: the copy stays old
        [t1, t1 + 0.1, 0, url.host, url.index, 200, 100, 1],
        [t2, t2 + 0.1, 0, url.host, url.index, 200, 100, 2],
    ]
    items = [{"url": f"http://{host}:8080{url.path}", "version": v} for v in (0, 1, 2)]
    r = score(world, origin, window, log, {0: items}, {0: copy_addresses(1, world.hosts)[0]}, 1.0, 3)[0]
    assert r["by_kind"]["poisson"]["freshness"] == pytest.approx((55 - 1 - 3) / 55)
    assert r["freshness"] == pytest.approx((55 - 1 - 3) / 55)  # the only URL with a copy
    assert r["by_kind"]["static"]["freshness"] is None
