"""Issue 46's shapes in a real crawl: data where a visible-text judge never
looks (JSON-LD, a meta, the title, a link, an image), a repeated label, a
visitor counter beside the availability, a coarse clock and a related-items
list of varying length, each page also carrying a CSRF token and a server
clock, with no validators; and a page whose ETag follows its data while a
clock moves in its body (its ETag must never be judged a liar).

Each page's data changes every four requests (``/shape/<kind>/4/<key>``);
probes are requests too, so the server's own hit log says which versions
were served.  Every version served must be delivered exactly once (the last
one may still be held back for its probe when the crawl closes), and
nothing else: no version for noise, none lost to a mask.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import read_records
from tests.crawlrunner import run_crawl
from tests.mockserver import MockServer

pytestmark = pytest.mark.e2e

VERSIONS = Path(__file__).parents[1] / "spiders" / "versions.py"
EVERY = 4
SHAPES = ("jsonld", "meta", "title", "href", "img", "label", "counter", "coarse", "list", "etag")


def test_every_shape_delivers_each_version_once_and_nothing_for_noise(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path, tmp_path: Path
) -> None:
    paths = {shape: f"/shape/{shape}/{EVERY}/e2e" for shape in SHAPES}
    items_file = tmp_path / "items.jsonl"
    result = run_crawl(
        VERSIONS,
        {
            **adaptive_settings,
            "ADAPTIVE_WAIT_DEFAULT": 0.8,
            "ADAPTIVE_HISTORY_SIZE": 64,
            "CLOSESPIDER_TIMEOUT": 10,
            "DEPTH_LIMIT": 0,
        },
        timeout=60,
        args=["-a", "start_urls=" + ",".join(clean_log.url(p) for p in paths.values()), "-o", str(items_file)],
    )
    result.assert_ok()
    items = [json.loads(line) for line in items_file.read_text().splitlines()]
    records = read_records(tmp_state / "adaptive")
    hits = [e["path"] for e in clean_log.log()]
    for shape, path in paths.items():
        url = clean_log.url(path)
        served = len({(k - 1) // EVERY for k in range(1, hits.count(path) + 1)})
        delivered = [i for i in items if i["url"] == url]
        record = records[url]
        history = [h[1] for h in record.history]
        assert served >= 2, (shape, hits.count(path))
        assert served - 1 <= len(delivered) <= served, (shape, served, len(delivered), history)
        assert record.versions == len(delivered), (shape, history)
        assert len({i["payload"] for i in delivered}) == len(delivered)  # no duplicate delivery
        if shape != "etag":  # (its revisits are mostly 304s: nothing to learn from)
            assert "m" in (record.noise or {}) or "g" in (record.noise or {}), (shape, record.noise)
    assert result.stats.get("adaptive/noise/learned", 0) >= len(SHAPES) - 1
    # the honest ETag beside a clock is never taken for a liar
    assert result.stats.get("adaptive/validators/lies", 0) == 0
