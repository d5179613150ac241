"""A real crawl holds ADAPTIVE_BUDGET, as counted by the site it crawls.

One 50 s crawl (the follow spider with the add-on and
``ProportionalWaitPolicy``) of :mod:`bench.e2e_site`'s 90 changing pages on
127.0.0.1–.3: every page changes as a Poisson process (median mean interval
10 s, log-normal across pages), the second host answers after 50 ms, the
third after 200 ms behind a 0.5 s robots.txt Crawl-delay.  The budget is 20
revisits a second, given per day as a user would, with the allocator's
feedback window shortened to 10 s to match.  After a 25 s warm-up (every
page has had its first visit) the site's own log of page requests gives the
revisits per second and the versions the visits saw; the crawl's stats give
its own measure of its spending, and :class:`tests.spiders.crawltime.CrawlTimeProbe`
samples the crawl-time estimate inside the crawl.  (This was the short
version of the budget benchmark, ``git show 8c8e821:bench/budget_bench.py``,
whose figures are in docs/benchmarks.md.)
"""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.crawlrunner import run_crawl
from testsite.process import SiteProcess

pytestmark = pytest.mark.e2e

FOLLOW = Path(__file__).parents[1] / "spiders" / "follow.py"
DAY = 86_400.0
SECONDS = 50.0
WARMUP = 25.0
PAGES = 90
#: revisits per second
BUDGET = 20.0

#: Why ±20 % and not the benchmark's ±5 %: the budget's feedback closes the
#: gap between planned and realised revisits (about 9 % here: visits arrive
#: a little after their wait, behind the politeness rests of their host) at
#: about 7 % per ADAPTIVE_BUDGET_WINDOW (10 s, gain 0.5), and a fresh crawl
#: starts with a burst of revisits (the first URLs are planned for a handful
#: of URLs) that is only left out of the measurement while the population
#: still doubles; when the last doubling comes early the burst pulls the
#: correction down by about 10 % first.  So 25 s after a 25 s start the
#: correction may still be climbing: trial runs gave 0.88–1.07 depending on
#: the seed and the machine's load.  Over the benchmark's 100 s after an 80 s warm-up the same crawl
#: held ±5 % (docs/benchmarks.md).  Counting noise is small next to that:
#: 450 revisits, ±5 % at two standard deviations.
TOLERANCE = 0.20


def crawl_settings(workdir: Path) -> dict[str, object]:
    return {
        "ADDONS": {"scrapy_adaptive.Addon": 0},
        "JOBDIR": str(workdir / "jobdir"),
        "LOG_LEVEL": "INFO",
        "ROBOTSTXT_OBEY": True,  # the slow host's Crawl-delay is read from it
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 2,
        "DOWNLOAD_TIMEOUT": 30,
        "CLOSESPIDER_TIMEOUT": SECONDS,
        "ADAPTIVE_HOST_VALENCE": 2,
        "ADAPTIVE_MIN_DELAY": 0.1,
        "ADAPTIVE_MAX_DELAY": 1.0,
        "ADAPTIVE_DELAY_FACTOR": 2.0,
        "ADAPTIVE_WAIT_POLICY": "scrapy_adaptive.policies.ProportionalWaitPolicy",
        "ADAPTIVE_WAIT_POLICIES": [],
        "ADAPTIVE_WAIT_MIN": 1.0,
        # the first revisit while the population prior is not learned yet:
        # soon, so that it is learned in the first seconds, while the number
        # of URLs still doubles and the budget's measurement restarts
        "ADAPTIVE_WAIT_INITIAL": 1.0,
        "ADAPTIVE_WAIT_MAX": 60.0,
        "ADAPTIVE_BUDGET": BUDGET * DAY,
        "ADAPTIVE_BUDGET_WINDOW": 10.0,
        "ADAPTIVE_LOG_INTERVAL": 10.0,
        "EXTENSIONS": {"tests.spiders.crawltime.CrawlTimeProbe": 0},
        "CRAWLTIME_PROBE_FILE": str(workdir / "crawltime.json"),
        # due sets drain cleanly from the start: URLs found later queue behind
        "CRAWLTIME_PROBE_START": 1.0,
        "CRAWLTIME_PROBE_INTERVAL": 2.0,
    }


def site_figures(visits: list[list[float]], versions_at: Any) -> dict[str, Any]:
    """Revisits per second over the budget and versions captured after the warm-up.

    *visits* is the site's ``[time, page, version]`` per page request;
    *versions_at(t)* gives every page's version at time t.
    """
    visits = sorted(visits)
    assert visits, "the site served no page"
    start, end = visits[0][0] + WARMUP, visits[-1][0]
    assert end - start > 10.0, f"the crawl's last page came {end - visits[0][0]:.0f}s after its first"
    seen: set[int] = set()
    revisits = first_after_warmup = 0
    captured: set[tuple[int, int]] = set()
    for t, page, version in visits:
        if t >= start:
            if int(page) in seen:
                revisits += 1
            else:
                first_after_warmup += 1
            captured.add((int(page), int(version)))
        seen.add(int(page))
    at_start, at_end = versions_at(start), versions_at(end)
    return {
        "window_s": end - start,
        "revisits": revisits,
        "ratio": revisits / (end - start) / BUDGET,
        "first_visits_after_warmup": first_after_warmup,
        "pages_seen": len(seen),
        "versions_existing": sum(e - s + 1 for s, e in zip(at_start, at_end, strict=True)),
        "versions_captured": len(captured),
    }


def test_a_real_crawl_spends_its_budget(tmp_path: Path) -> None:
    site_args = [
        "--pages", str(PAGES), "--hosts", "3", "--links", "5", "--seed", "7",
        "--change-median", "10", "--change-sigma", "1", "--latency", "0,0.05,0.2", "--crawl-delay", "0,0,0.5",
    ]  # fmt: skip
    with SiteProcess("bench.e2e_site", site_args, startup_timeout=30.0, max_seconds=SECONDS + 180) as site:
        host, port = next(iter(site.ports.items()))
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy

        def get(path: str) -> Any:
            with opener.open(f"http://{host}:{port}{path}", timeout=10) as resp:
                return json.loads(resp.read())

        result = run_crawl(
            FOLLOW,
            crawl_settings(tmp_path),
            timeout=SECONDS + 60,
            args=["-a", "start_urls=" + ",".join(site.info["start_urls"])],
        )
        result.assert_ok()
        budget = site_figures(get("/_visits")["visits"], lambda t: get(f"/_versions?at={t!r}"))
    assert budget["pages_seen"] == PAGES and budget["first_visits_after_warmup"] == 0, budget
    assert budget["revisits"] > 300, budget
    assert budget["ratio"] == pytest.approx(1.0, abs=TOLERANCE), budget
    # the crawler's own measure of its spending agrees with the site's count
    realised = result.stats["adaptive/budget/realised_per_day"]
    assert realised / (BUDGET * DAY) == pytest.approx(budget["ratio"], abs=TOLERANCE), (realised, budget)
    # revisits find versions (the budget is below the pages' change rate, so not all)
    assert 0 < budget["versions_captured"] < budget["versions_existing"], budget
    # the crawl-time estimate was sampled inside the crawl and some due sets drained
    samples = json.loads((tmp_path / "crawltime.json").read_text())
    drained = [s for s in samples if s["measured"] is not None]
    assert drained and all(s["estimate"] > 0 and s["measured"] > 0 for s in drained), samples[:5]
    assert "adaptive/hosts/max_load" in result.stats
