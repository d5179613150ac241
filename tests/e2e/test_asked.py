"""Issue 47: a request for a URL the frontier already knows keeps what it
carries.  A spider's second request for a known URL (``dont_filter=True``,
another callback, ``cb_kwargs`` and meta) is fetched and delivered once to
its own callback, as plain Scrapy does, even though the page did not
change; the URL keeps one record, and its revisits go to the request stored
first (``parse``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import read_records
from tests.crawlrunner import run_crawl
from tests.mockserver import MockServer

pytestmark = pytest.mark.e2e

ASKED = Path(__file__).parents[1] / "spiders" / "asked.py"


def test_a_second_request_for_a_known_url_goes_to_its_own_callback_with_its_own_kwargs_and_meta(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    url = clean_log.url("/page/asked-static")
    result = run_crawl(
        ASKED,
        {**adaptive_settings, "ADAPTIVE_WAIT_DEFAULT": 0.5, "CLOSESPIDER_TIMEOUT": 4},
        timeout=60,
        args=["-a", f"url={url}"],
        collect_items=True,
    )
    result.assert_ok(allow_errors=False)
    second = [i for i in result.items if i["cb"] == "parse2"]
    assert second == [{"cb": "parse2", "k": 1, "tag": "second", "change": "unchanged"}]
    # the first visit went to parse; the unchanged revisits after it to nothing
    assert [i for i in result.items if i["cb"] == "parse"] == [{"cb": "parse", "tag": "first"}]
    [record] = read_records(tmp_state / "adaptive").values()
    assert record.visits >= 3 and record.request.get("callback") in (None, "parse")  # one record, stored as first
    hits = [e for e in clean_log.log() if e["path"] == "/page/asked-static"]
    assert len(hits) == record.visits
    assert result.stats["adaptive/enqueued/asked"] == 1
