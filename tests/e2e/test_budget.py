"""A real crawl holds ADAPTIVE_BUDGET (the short version of bench/budget_bench.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import budget_bench

pytestmark = pytest.mark.e2e

#: Why ±20 % and not the benchmark's ±5 %: the budget's feedback closes the
#: gap between planned and realised revisits (about 9 % here: visits arrive
#: a little after their wait, behind the politeness rests of their host) at
#: about 7 % per ADAPTIVE_BUDGET_WINDOW (10 s, gain 0.5), and a fresh crawl
#: starts with a burst of revisits (the first URLs are planned for a handful
#: of URLs) that is only left out of the measurement while the population
#: still doubles; when the last doubling comes early the burst pulls the
#: correction down by about 10 % first.  So 25 s after a 25 s start the
#: correction may still be climbing: trial runs gave 0.88–0.98 depending on
#: the seed.  Over the benchmark's 100 s after an 80 s warm-up the same crawl
#: holds ±5 % (docs/benchmarks.md).  Counting noise is small next to that:
#: 450 revisits, ±5 % at two standard deviations.
TOLERANCE = 0.20


def test_a_real_crawl_spends_its_budget(tmp_path: Path) -> None:
    result = budget_bench.main(
        ["--seconds", "50", "--warmup", "25", "--pages", "90", "--budget", "20", "--workdir", str(tmp_path)]
    )
    budget = result["budget"]
    assert budget["pages_seen"] == 90 and budget["first_visits_after_warmup"] == 0
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
