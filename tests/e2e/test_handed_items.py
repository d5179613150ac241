"""A request carrying an item in ``cb_kwargs`` and a set in ``meta`` (the
way spiders hand data from one callback to the next) is kept by the state
folder and revisited: each changed visit of the page calls its callback
with the item as it was made, as a plain Scrapy crawl with a JOBDIR would
(its pickle keeps them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.crawlrunner import run_crawl
from tests.mockserver import MockServer

pytestmark = pytest.mark.e2e

HANDED = Path(__file__).parents[1] / "spiders" / "handed.py"


def test_an_item_handed_in_cb_kwargs_comes_back_at_every_changed_revisit(
    clean_log: MockServer, adaptive_settings: dict[str, object]
) -> None:
    url = clean_log.url("/changes/1/handed")  # a new version at every hit
    settings = {**adaptive_settings, "ADAPTIVE_WAIT_DEFAULT": 0.5, "ADAPTIVE_MIN_DELAY": 0, "CLOSESPIDER_TIMEOUT": 4}
    result = run_crawl(HANDED, settings, timeout=60, args=["-a", f"url={url}"], collect_items=True)
    result.assert_ok(allow_errors=False)
    assert "cannot be stored" not in result.text
    handed = [i for i in result.items if i.get("type") == "Listing"]
    assert len(handed) >= 3  # the first fetch and at least two revisits
    assert all(i == {"type": "Listing", "price": "19.90", "listed": "2026-11-29", "seen": ["a"]} for i in handed)
    assert result.stats.get("adaptive/enqueued/refused") is None
