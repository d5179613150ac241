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
