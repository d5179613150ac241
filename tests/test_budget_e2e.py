"""A real crawl holds ADAPTIVE_BUDGET (the short version of bench/budget_bench.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import budget_bench

pytestmark = pytest.mark.e2e

#: Why ±15 % and not the benchmark's ±5 %: the budget's feedback closes the
#: gap between planned and realised revisits (about 9 % here: visits arrive
#: a little after their wait, behind the politeness rests of their host) at
#: about 7 % per ADAPTIVE_BUDGET_WINDOW (10 s, gain 0.5), once the
#: population has stopped doubling (about 20 s in).  Measured over seconds
#: 25 to 50 the correction is still climbing: trial runs gave 0.93–0.96.
#: Over the benchmark's 100 s after a 50 s warm-up the same crawl holds
#: ±5 % (docs/benchmarks.md).  Counting noise is small next to that: 500
#: revisits, ±4.5 % at two standard deviations.
TOLERANCE = 0.15


def test_a_real_crawl_spends_its_budget(tmp_path: Path) -> None:
    result = budget_bench.main(
        ["--seconds", "50", "--warmup", "25", "--pages", "150", "--budget", "20", "--workdir", str(tmp_path)]
    )
    budget = result["budget"]
    assert budget["pages_seen"] == 150 and budget["first_visits_after_warmup"] == 0
    assert budget["revisits"] > 300
    assert budget["ratio"] == pytest.approx(1.0, abs=TOLERANCE), budget
    # the crawler's own measure of its spending agrees with the site's count
    realised = result["crawl"]["stats"]["adaptive/budget/realised_per_day"]
    assert realised / (20 * 86_400) == pytest.approx(budget["ratio"], abs=TOLERANCE)
    # revisits find versions (the budget is below the pages' change rate, so not all)
    assert 0 < budget["versions_captured"] < budget["versions_existing"]
    # the crawl-time estimate was sampled and compared inside the crawl
    assert result["crawltime"]["drained"] > 0
    assert "adaptive/hosts/max_load" in result["crawl"]["stats"]
