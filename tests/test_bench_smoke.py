"""The benchmarks still run (tiny sizes): figures live in bench/, not here.

No speed is asserted: only that each benchmark completes and reports the
figures it promises, so the code behind docs/benchmarks.md does not rot.
"""

from __future__ import annotations

import pytest

from bench import frontier_bench, validators_bench

pytestmark = pytest.mark.e2e


def test_frontier_bench_runs_and_reports_every_figure() -> None:
    result = frontier_bench.main(["--urls", "2000", "--hosts", "20", "--dups", "500", "--cycles", "1000", "--quiet"])
    metrics = {row["metric"] for row in result["rows"]}
    assert all(row["adaptive"] for row in result["rows"] if row["kind"] == "rate")
    assert any("duplicate adds/s" in m for m in metrics)
    assert any("cycles/s" in m for m in metrics)
    assert any("restart" in m for m in metrics)


def test_validators_bench_runs_and_reports_every_figure() -> None:
    result = validators_bench.main(["--pages", "10", "--rounds", "3", "--size", "2000"])
    for run in ("baseline", "validators"):
        site = result[run]["site"]
        assert site["honest"]["requests"] > 0 and site["ignore"]["requests"] > 0
    assert result["validators"]["site"]["honest"]["missed_changes"] == 0


def test_changing_web_bench_runs_end_to_end_and_its_scores_are_consistent() -> None:
    """The smoke size of bench.changing_web, cut to 60 s: every crawler crawled, scores hang together."""
    from bench import changing_web

    result = changing_web.main(["--smoke", "--seconds", "60", "--quiet"])
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
