"""Change hints in a real crawl: a sitemap's lastmod brings a page forward,
a source whose hints are false loses trust, a bad lastmod is reported."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from scrapy_adaptive.frontier import Frontier
from scrapy_adaptive.frontier.hints import Hint
from scrapy_adaptive.policies.hint_decisions import precision
from scrapy_adaptive.store.leveldb import LevelDBStore
from tests.crawlrunner import SPIDERS_DIR, run_crawl
from tests.e2e.test_console import SAMPLE, _env
from tests.mockserver import MockServer

pytestmark = pytest.mark.e2e

SPIDER = SPIDERS_DIR / "sitemap.py"
ANNOUNCED_AT = 6  #: the news sitemap announces its change at this hit


def hint_report(state: Path) -> dict[str, dict[str, list[float]]]:
    store = LevelDBStore(str(state / "frontier.ldb"))
    try:
        frontier = Frontier(store)
        frontier.load()
        return frontier.hosts.hint_report()
    finally:
        store.close()


def test_sitemap_lastmod_brings_a_page_forward_and_a_lying_source_loses_trust(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    server = clean_log
    news = "/changes/1/hint-news"  # new content at every fetch
    quiet = "/changes/1/hint-quiet"
    sitemaps = [
        (server.url(f"/sitemap/news?urls={news}&fresh_from={ANNOUNCED_AT}"), "sitemap"),
        (server.url(f"/sitemap/quiet?urls={quiet}"), "sitemap"),
        (server.url("/sitemap/liar?urls=/page/liar-a,/page/liar-b&lie=1&bad=/page/liar-bad"), "liar"),
    ]
    settings = {
        **adaptive_settings,
        # pages are due far in the future: only a hint can bring them back
        "ADAPTIVE_WAIT_POLICY": "scrapy_adaptive.policies.PrecisionWaitPolicy",
        "ADAPTIVE_WAIT_MIN": 600.0,
        "ADAPTIVE_WAIT_MAX": 3600.0,
        "CLOSESPIDER_TIMEOUT": 14,
        # the liar stamps every hit: noise learning would learn its lastmods
        # as noise and stop reading its hints; here its trust is under test
        "ADAPTIVE_NOISE_LEARNING": False,
    }
    result = run_crawl(
        SPIDER,
        settings,
        timeout=90,
        args=["-a", "sitemaps=" + " ".join(f"{u} {s}" for u, s in sitemaps), "-a", "every=0.5"],
    )
    result.assert_ok()
    stats = result.stats
    log = server.log()

    def fetches(path: str) -> list[float]:
        return [e["start"] for e in log if e["path"] == path and e["status"] == 200]

    # the announced page came back soon after the sitemap said it changed
    announced = [e for e in log if e["path"] == "/sitemap/news"][ANNOUNCED_AT - 1]["end"]
    news_fetches = fetches(news)
    assert len(news_fetches) == 2, news_fetches
    assert 0 < news_fetches[1] - announced < 3.0
    assert stats["adaptive/hints/confirmed/sitemap"] == 1
    # the page its sitemap never announced was not revisited
    assert len(fetches(quiet)) == 1

    # the liar's hints were acted on, refuted, and acted on less and less
    liar_hints = 2 * len([e for e in log if e["path"] == "/sitemap/liar"])
    refuted = stats["adaptive/hints/refuted/liar"]
    assert refuted >= 3 and "adaptive/hints/confirmed/liar" not in stats
    assert len(fetches("/page/liar-a")) + len(fetches("/page/liar-b")) - 2 == refuted
    assert refuted < liar_hints / 2, (refuted, liar_hints)
    report = hint_report(tmp_state / "adaptive")
    [host] = report
    learned = {s: precision(Hint("", None, s, trust=tuple(c))) for s, c in report[host].items()}  # type: ignore[arg-type]
    assert learned["liar"] < 0.25 < learned["sitemap"], learned

    # a malformed lastmod is named with the meta key and the URL; the crawl goes on
    bad_url = server.url("/page/liar-bad")
    assert f"meta['adaptive_hint'] of {bad_url}: 'modified' ('garbage')" in result.log
    assert stats["adaptive/hints/ignored/invalid"] >= 1
    assert stats["adaptive/hints/received"] == stats["adaptive/hints/acted"] + stats["adaptive/hints/ignored"]

    # what each source earned is in the report (text, JSON, HTML), `frontier url` and `export`
    console = ["-m", "scrapy", "frontier"]
    state = ["--state-dir", str(tmp_state / "adaptive")]

    def frontier(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, *console, *args, *state],
            cwd=SAMPLE,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    text = frontier("report")
    liar = f"liar: 0 confirmed, {refuted:g} refuted"
    assert "change hints, what each sitemap or feed earned" in text and liar in text, text[-1500:]
    assert re.search(rf"{liar} \(.*\), precision 0\.[01]\d\n", text) and "sitemap: 1 confirmed" in text
    page = tmp_state / "report.html"
    answer = json.loads(frontier("report", "--json", "--html", str(page)).split("\nHTML report written")[0])
    sources = {row["source"]: row for row in answer["report"]["hints"]["sources"]}
    assert sources["liar"]["refuted"] == refuted
    assert sources["liar"]["precision"] == pytest.approx(learned["liar"], abs=0.01)
    assert "Change hints: what each sitemap or feed earned" in page.read_text()
    assert f"<td>liar</td><td>all</td><td>0</td><td>{refuted:g}</td>" in page.read_text()
    about = frontier("url", server.url("/page/liar-a"))
    assert f"change hints on {host}" in about and liar in about, about
    exported = [json.loads(line) for line in frontier("export").splitlines()]
    liar_a = next(r for r in exported if r["url"] == server.url("/page/liar-a"))
    assert {r["source"]: r["refuted"] for r in liar_a["hint_sources"]}["liar"] == refuted
