"""The hallway a revisit walks: calls and modules of the add-on per revisit, on a real crawl.

What matters in the package's structure is not how long its modules are
but how far one visit travels through them: every call and every module
entered is work per fetch and a place a reader must follow.  This test
crawls one page of the demo site that never changes (honest validators)
with the default wait policy, so after the first visits every fetch is an
unchanged revisit, most answered 304, profiles the add-on's part of each
of 20 revisits inside the crawl (:class:`tests.spiders.walk.WalkProfile`:
from one response to the next, the scheduler's polls included), and holds
the median revisit's calls and modules under a ceiling.

The ceilings are today's walk with a margin, a tripwire for review, not a
goal: a change that lengthens the walk by more must say why or take
something else out.  Measured 2026-11-29: 491–493 calls through 60
modules in the morning, 453–476 through 61 in the evening (the record's
view a plain dict made once per fetch, the verdict judged in one call
into change/, the allocator re-solving at most once a second; a
verification fetch, about one revisit in five, 575–610), down from 920
through 61 at 8c8e821 (the allocator re-solved its plan at every fetch
of a small crawl); 2026-11-30: 384–388 through 60 (hand-offs and
repeated reads off the path; a verification fetch 509–540), then 331–332
through 58 (pass-throughs, stores and reads a visit did not need: see
CHANGES.md), then 332 through 60 (the judge's stages each in its module,
entered once: what a difference means, change/difference.py, and what
the callback sees, integration/spidermiddlewares/callback.py, are
modules of their own). The goal of the "one visit, one path" work was at most 350.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.crawlrunner import run_crawl
from testsite.demo import DemoSiteProcess

pytestmark = pytest.mark.e2e

PAGES = Path(__file__).parents[1] / "spiders" / "pages.py"

#: calls into scrapy_adaptive in the median revisit's walk, at most
CALLS_PER_REVISIT = 380
#: modules of scrapy_adaptive the median revisit's walk enters, at most
MODULES = 62


def test_an_unchanged_revisit_walks_a_bounded_path(adaptive_settings: dict[str, object], tmp_path: Path) -> None:
    walk = tmp_path / "walk.json"
    with DemoSiteProcess(speed=40.0) as site:
        url = site.url.rstrip("/") + "/docs/page-01.html"
        # the default policy and its stack, waits of a fraction of a second,
        # no summary (nor its report) inside the profiled revisits
        base = {k: v for k, v in adaptive_settings.items() if k != "ADAPTIVE_WAIT_POLICIES"}
        settings = {
            **base,
            "ADAPTIVE_WAIT_POLICY": "scrapy_adaptive.policies.UnionWaitPolicy",
            "ADAPTIVE_LOG_INTERVAL": 60.0,
            "LOG_LEVEL": "INFO",
            "ADAPTIVE_WAIT_MIN": 0.05,
            "ADAPTIVE_WAIT_INITIAL": 0.05,
            "ADAPTIVE_WAIT_MAX": 0.2,
            "ADAPTIVE_TRUST_WARMUP": 1,
            "EXTENSIONS": {"tests.spiders.walk.WalkProfile": 0},
            "WALK_SKIP": 8,
            "WALK_COUNT": 20,
            "WALK_FILE": str(walk),
            "CLOSESPIDER_TIMEOUT": 6,
        }
        result = run_crawl(PAGES, settings, timeout=90, args=["-a", "urls=" + url, "-a", "meta={}", "-a", "embeds=0"])
    result.assert_ok()
    walks = json.loads(walk.read_text())
    assert len(walks) == 20, walks
    assert result.stats.get("adaptive/validators/conditional_sent", 0) >= 10, result.stats
    # the median walk: a periodic task lands in one interval only
    median = sorted(walks, key=lambda w: w["calls"])[len(walks) // 2]
    assert median["calls"] <= CALLS_PER_REVISIT, median
    modules = sorted(len(w["modules"]) for w in walks)[len(walks) // 2]
    assert modules <= MODULES, (modules, median["modules"])
