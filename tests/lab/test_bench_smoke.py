"""The benchmarks still run (tiny sizes): figures live in bench/, not here.

No speed is asserted: only that each benchmark completes and reports the
figures it promises, so the code behind docs/benchmarks.md does not rot.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import fleet_bench, frontier_bench

pytestmark = pytest.mark.e2e


def test_frontier_bench_runs_and_reports_every_figure() -> None:
    result = frontier_bench.main(["--urls", "2000", "--hosts", "20", "--dups", "500", "--cycles", "1000", "--quiet"])
    metrics = {row["metric"] for row in result["rows"]}
    assert all(row["adaptive"] for row in result["rows"] if row["kind"] == "rate")
    assert any("duplicate adds/s" in m for m in metrics)
    assert any("cycles/s" in m for m in metrics)
    assert any("restart" in m for m in metrics)


def test_frontier_bench_compares_leveldb_and_redis_in_one_run(redis_url: str) -> None:
    argv = ["--urls", "2000", "--hosts", "20", "--dups", "500", "--cycles", "500", "--no-baseline", "--quiet"]
    result = frontier_bench.main([*argv, "--store", redis_url])
    rows = {row["metric"]: row for row in result["store"]["rows"]}
    cycles = rows["next+update cycles/s"]
    assert cycles["leveldb"] > 0 and cycles["redis"] > 0 and cycles["ratio"] == cycles["redis"] / cycles["leveldb"]
    assert result["store"]["adaptive_restart"]["url_count"] == 2000
    assert result["store"]["server_used_memory_mb"] > 0


def test_changing_web_bench_runs_end_to_end_and_its_scores_are_consistent() -> None:
    """bench.changing_web below its smoke size (3 hosts × (6 pages + 3 images), a pass in about 5 s), for
    30 s, about six passes: every crawler crawled and revisited, its scores hang together."""
    from bench import changing_web

    result = changing_web.main(["--smoke", "--pages", "6", "--images", "3", "--seconds", "30", "--quiet"])
    crawlers = result["crawlers"]
    assert set(crawlers) == set(changing_web.CONFIGS)
    for name, r in crawlers.items():
        assert r["runs"] >= 1 and not r["errors"], (name, r["errors"])
        # every URL was fetched at least once: each crawler completed its first pass
        assert r["fetches"] >= result["urls"] and r["first_pass_s"] is not None, name
        assert 0.0 < r["recall"] <= 1.0 and 0.0 < r["precision"] <= 1.0
        assert r["captured"] == sum(k["captured"] for k in r["by_kind"].values())
        assert r["versions"] == result["versions"] == sum(k["versions"] for k in r["by_kind"].values())
        assert r["fetches"] == sum(k["fetches"] for k in r["by_kind"].values()) <= r["requests"]
        # the hindsight optimum at the crawler's own fetches is a ceiling for it
        assert r["recall"] <= r["optimum"] + 1e-9, name
        # what the items say was received, the server's log says was served
        assert r["items_not_served"] == 0, name
        assert r["body_bytes"] > 0
    for name in changing_web.ADAPTIVE:
        assert crawlers[name]["politeness"]["violations"] == 0, crawlers[name]["politeness"]
    # the baselines in the loop crawl again and again; the HttpCache loop revalidates (304s)
    assert crawlers["recrawl"]["runs"] >= 2 and crawlers["recrawl"]["fetches"] > 2 * result["urls"]
    assert crawlers["httpcache"]["by_kind"]["poisson"]["not_modified"] > 0
    assert all(t["verdict"] in ("PASS", "MISS", None) for rows in result["targets"].values() for t in rows)


def test_fleet_bench_runs_one_and_two_workers_on_one_redis_frontier() -> None:
    result = fleet_bench.main(
        ["--workers", "1,2", "--pages", "300", "--hosts", "4", "--crawl-timeout", "60", "--quiet"]
    )
    one, two = result["rows"]
    assert one["fetched"] >= 0.95 * 300 and two["fetched"] >= 0.95 * 300
    assert one["pages_per_s"] > 0 and two["ratio"] == two["pages_per_s"] / one["pages_per_s"]
    assert one["rss_mb_per_worker"] and len(two["rss_mb_per_worker"]) == 2


def test_e2e_bench_pairs_each_round_with_its_own_baseline() -> None:
    """The paired ratio divides within a round, so a machine that is twice as
    fast in one round than another leaves the ratio as it is; a round with a
    failed crawl gives no pair."""
    from bench.e2e_bench import paired_ratios

    def run(rnd: int, config: str, pages: float, cpu: float, **extra: object) -> dict[str, object]:
        return {"round": rnd, "config": config, "pages_per_s": pages, "cpu_ms_per_page": cpu, **extra}

    runs = [
        run(1, "adaptive", 90.0, 10.0),
        run(1, "default+jobdir", 100.0, 9.0),
        run(2, "adaptive", 180.0, 5.0),
        run(2, "default+jobdir", 200.0, 4.5),
        run(3, "adaptive", 50.0, 20.0, error="killed"),
        run(3, "default+jobdir", 100.0, 9.0),
    ]
    paired = paired_ratios(runs, "default+jobdir")
    assert paired["pages_per_s"] == [0.9, 0.9]
    assert paired["median_pages_per_s"] == 0.9
    assert paired["median_cpu"] == 0.9
    assert paired_ratios(runs, "default")["median_pages_per_s"] is None


def test_e2e_bench_pairs_two_versions_of_the_code_and_refuses_a_folder_without_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--against`` pairs this checkout's adaptive crawl with another's in
    each round; a folder that holds no package is refused in one line."""
    from bench.e2e_bench import AGAINST, main, paired_ratios

    runs = [
        {"round": 1, "config": "adaptive", "pages_per_s": 110.0, "cpu_ms_per_page": 9.0},
        {"round": 1, "config": AGAINST, "pages_per_s": 100.0, "cpu_ms_per_page": 10.0},
    ]
    paired = paired_ratios(runs, AGAINST)
    assert paired["median_pages_per_s"] == 1.1 and paired["median_cpu"] == pytest.approx(10 / 9)
    with pytest.raises(SystemExit) as exit_:
        main(["--against", str(tmp_path)])
    assert exit_.value.code == 2
    assert f"--against {tmp_path}: no scrapy_adaptive package" in capsys.readouterr().err


def test_e2e_site_bumps_one_page_in_k_to_a_new_version_with_its_own_date() -> None:
    """``/_bump?every=K`` (e2e_bench's revisit pass): pages 0, K, 2K ... move to their next version at
    that instant, the others keep version 0 and the site's start as their date."""
    from bench.e2e_site import SiteModel

    model = SiteModel(25, {"127.0.0.1": 1}, origin=100.0)
    assert model.bump(10, now=200.0) == 3
    assert [model.version(p, 300.0) for p in (0, 5, 10, 20, 21)] == [1, 0, 1, 1, 0]
    assert model.version(10, 150.0) == 0 and model.modified(10, 300.0) == 200.0 and model.modified(5, 300.0) == 100.0
    assert b"Version 1" in model.body(10, 1) and b"Version" not in model.body(5, 0)
