"""Learned noise in a real crawl: a page with a server clock and a random
token in its text, no validators, and a real change every few requests.

Within four visits (first, second: changed, two probes) the crawler learns
the noise; from then on a visit is "changed" exactly when the real content
changed.  The page's version is a function of the server's hit count
(``/noisy/<every>/<key>``), so the expected verdict of every visit is known.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import read_records
from tests.crawlrunner import run_crawl
from tests.mockserver import MockServer

pytestmark = pytest.mark.e2e

PAGES = Path(__file__).parents[1] / "spiders" / "pages.py"
EVERY = 4


def expected(visits: int, learning: int = 4) -> list[str]:
    """The verdict of hit 1..*visits*: a new page; the first difference held
    back for a probe, and *learning* - 2 probes after it that learn the noise
    (nothing delivered for noise); then at each version step the fetch that
    finds the difference is held back and its probe delivers it."""
    verdicts = ["changed"] + ["unchanged"] * (learning - 1)
    delivered, holding = 0, False
    for hit in range(learning + 1, visits + 1):
        version = (hit - 1) // EVERY
        if holding:
            verdicts.append("changed")
            delivered, holding = version, False
        elif version != delivered:
            verdicts.append("unchanged")
            holding = True
        else:
            verdicts.append("unchanged")
    return verdicts[:visits]


def test_noise_is_learned_within_four_visits_and_real_changes_still_count(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    noisy = clean_log.url(f"/noisy/{EVERY}/shop")
    static = clean_log.url("/page/static")
    result = run_crawl(
        PAGES,
        {**adaptive_settings, "ADAPTIVE_WAIT_DEFAULT": 0.8, "ADAPTIVE_HISTORY_SIZE": 64, "CLOSESPIDER_TIMEOUT": 12},
        timeout=60,
        args=["-a", f"urls={noisy} {static}"],
    )
    result.assert_ok()
    records = read_records(tmp_state / "adaptive")
    record = records[noisy]
    hits = [e for e in clean_log.log() if e["path"] == f"/noisy/{EVERY}/shop"]
    assert record.visits == len(hits) >= 9
    assert [h[1] for h in record.history] == expected(record.visits)
    assert record.versions == expected(record.visits).count("changed")  # no version for noise
    assert record.noise is not None and len(record.noise["m"]) == 2  # the clock (with its date) and the token
    # the probes came right after the second visit (politeness, not the 0.8 s wait)
    assert hits[2]["start"] - hits[1]["end"] < 0.5 and hits[3]["start"] - hits[2]["end"] < 0.5
    # two probes learn the noise, one settles each real change; the static page is never probed
    assert result.stats["adaptive/noise/probes"] == 2 + expected(record.visits)[4:].count("changed") + (
        expected(record.visits)[-1] == "unchanged" and expected(record.visits + 1)[-1] == "changed"
    )
    assert result.stats["adaptive/noise/learned"] >= 1
    assert "m" not in (records[static].noise or {})  # sketched, nothing learned


def test_a_sibling_adopts_the_learned_noise_after_one_probe(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    """Issue 13: pages of one directory share their template, so the noise
    one of them learned (four fetches) is offered to the others, even after a
    restart (the pool is refilled from the learned page's record).  Issue 36:
    a sibling's mask judges nothing until one probe pair on the sibling shows
    the masked parts moving there too; no version is delivered for noise."""
    first, sibling = clean_log.url(f"/noisy/{EVERY}/first"), clean_log.url(f"/noisy/{EVERY}/sibling")
    settings = {**adaptive_settings, "ADAPTIVE_WAIT_DEFAULT": 0.8, "ADAPTIVE_HISTORY_SIZE": 64}
    learn = run_crawl(PAGES, {**settings, "CLOSESPIDER_TIMEOUT": 4}, timeout=60, args=["-a", f"urls={first}"])
    learn.assert_ok()
    assert learn.stats["adaptive/noise/learned"] >= 1  # the clock at once, the token by its probes
    result = run_crawl(
        PAGES, {**settings, "CLOSESPIDER_TIMEOUT": 6}, timeout=60, args=["-a", f"urls={first} {sibling}"]
    )
    result.assert_ok()
    assert result.stats["adaptive/noise/confirmed"] >= 1  # one probe proved the sibling's mask
    record = read_records(tmp_state / "adaptive")[sibling]
    assert record.noise is not None and len(record.noise["m"]) == 2
    hits = [e for e in clean_log.log() if e["path"] == f"/noisy/{EVERY}/sibling"]
    assert record.visits == len(hits) >= 5
    # its first difference held back, one probe, then each version step held and delivered by its probe
    assert [h[1] for h in record.history] == expected(record.visits, learning=3)
