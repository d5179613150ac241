"""Delivery end to end: a ``kill -9`` while items wait in a pipeline loses
no version (issue 10, item 1), with real crawls against the mock server."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.conftest import read_state
from tests.crawlrunner import read_jsonl, run_crawl, start_crawl, wait_for_log
from tests.mockserver import MockServer

pytestmark = pytest.mark.e2e

VERSIONS = Path(__file__).parents[1] / "spiders" / "versions.py"
PIPELINE = {"tests.spiders.versions.SlowPipeline": 100}


def test_a_kill_while_items_wait_in_a_pipeline_loses_no_version(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path, tmp_path: Path
) -> None:
    """The pages never change again after their first fetch and answer 304
    to their ETag: a version the frontier recorded but whose item was lost
    would never come back.  Killed while the first items sit in a slow
    pipeline, the crawl fetches them again after the restart."""
    server = clean_log
    pages = [f"/changes/100000/dlv-{i}" for i in range(4)]
    start = server.url("/changes/100000/dlv-index?links=" + ",".join(pages))
    items_file = tmp_path / "pipeline.jsonl"
    feed = tmp_path / "feed.jsonl"
    settings = {
        **adaptive_settings,
        "ITEM_PIPELINES": PIPELINE,
        "VERSIONS_PIPELINE_FILE": str(items_file),
        "VERSIONS_PIPELINE_DELAY": 30,
        "ADAPTIVE_WAIT_DEFAULT": 0.5,
    }
    proc = start_crawl(VERSIONS, settings, args=["-a", f"start_urls={start}", "-o", f"{feed}:jsonlines"])
    with proc:
        wait_for_log(proc, r"Frontier: 5 URLs .* ([5-9]|\d\d+) visits", timeout=40)
        time.sleep(1.5)  # a few confirmation ticks: nothing may be confirmed yet
        proc.kill_group()
    records, pending = read_state(tmp_state / "adaptive")
    assert len(records) == 5 and all(r.visits >= 1 for r in records.values())
    assert sum(r.versions for r in records.values()) == 0  # no item was durable
    assert pending == set(records) and not items_file.exists()

    resumed = run_crawl(
        VERSIONS,
        {**settings, "VERSIONS_PIPELINE_DELAY": 0, "CLOSESPIDER_TIMEOUT": 4},
        timeout=60,
        args=["-a", f"start_urls={start}", "-o", f"{feed}:jsonlines"],
    )
    resumed.assert_ok()
    assert "5 URLs had versions not confirmed delivered" in resumed.log
    records, pending = read_state(tmp_state / "adaptive")
    assert pending == set()
    delivered = read_jsonl(items_file)
    in_feed = read_jsonl(feed)
    for url, record in records.items():
        assert record.versions == 1, (url, record.versions)  # one version, counted once
        assert record.payload_digest in {i["payload"] for i in delivered if i["url"] == url}, url
        assert record.payload_digest in {i["payload"] for i in in_feed if i["url"] == url}, url
    assert resumed.stats["adaptive/delivery/confirmed"] == 5
