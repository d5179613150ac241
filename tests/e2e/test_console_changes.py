"""``scrapy frontier changes``, ``url`` and ``report`` on a running and a
stopped crawl that made change events, and the WARC of its gone pages
(issue 39, items 3 and 4).

One real crawl of a scripted local site (a price that changes, pages that
answer 404 and 410, one that moves), with events, the changes feed and a
WARC folder; then the console, run as a user types it, must list exactly
the feed's events from the state folder's history, filter them, refuse
bad options in one line, and the WARC must hold each gone page's 404 or
410 as a capture of its own, which the revisits of the later identical
answers refer to (a replay at the time of ``gone`` shows the 404).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.crawlrunner import finish_crawl, start_crawl
from tests.e2e.test_change_events import PAGES, ScriptedSite, page, serving
from tests.e2e.test_damaged_state import frontier

warcio = pytest.importorskip("warcio")
from warcio.archiveiterator import ArchiveIterator  # noqa: E402

pytestmark = pytest.mark.e2e

SAMPLE = Path(__file__).parents[2] / "sample_project"

SCRIPTS: dict[str, list[tuple[int, str]]] = {
    "/p/price.html": [page("Price 10 EUR"), page("Price 11 EUR")],
    "/p/gone404.html": [page("Kettle")] + [(404, "Not found")],
    "/p/gone410.html": [page("Toaster")] + [(410, "Gone")],
    "/p/moved.html": [page("Blender")] + [(301, "/new/blender.html")],
    "/new/blender.html": [page("Blender, new home")],
}


@pytest.fixture
def site() -> Iterator[tuple[ScriptedSite, str]]:
    scripted = ScriptedSite(SCRIPTS)
    with serving(scripted) as base:
        yield scripted, base


def history_kinds(path: Path) -> list[str]:
    """The kinds of the events in the history so far (a line being written is skipped)."""
    if not path.exists():
        return []
    kinds = []
    for line in path.read_text().splitlines():
        try:
            kinds.append(json.loads(line)["kind"])
        except ValueError:
            continue
    return kinds


def warc_records(folder: Path) -> list[dict[str, Any]]:
    records = []
    for path in sorted(folder.glob("*.warc.gz")):
        with open(path, "rb") as file:
            for record in ArchiveIterator(file):
                if record.rec_type in ("response", "revisit"):
                    records.append(
                        {
                            "type": record.rec_type,
                            "id": record.rec_headers.get_header("WARC-Record-ID"),
                            "uri": record.rec_headers.get_header("WARC-Target-URI"),
                            "refers_to": record.rec_headers.get_header("WARC-Refers-To"),
                            "status": int(record.http_headers.get_statuscode()),
                        }
                    )
    return records


def test_the_console_lists_a_stopped_crawls_events_and_the_warc_keeps_its_gone_answers(
    site: tuple[ScriptedSite, str], adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    scripted, base = site
    feed = tmp_state / "changes.jsonl"
    warc_dir = tmp_state / "warc"
    state = Path(str(adaptive_settings["ADAPTIVE_STATE_DIR"]))
    urls = [base + path for path in SCRIPTS if path.startswith("/p/")]
    proc = start_crawl(
        PAGES,
        {
            **adaptive_settings,
            "ROBOTSTXT_OBEY": False,
            "RETRY_ENABLED": False,
            "ADAPTIVE_WAIT_DEFAULT": 0.5,
            "ADAPTIVE_CHANGES_FEED": str(feed),
            "ADAPTIVE_WARC_DIR": str(warc_dir),
            "CLOSESPIDER_TIMEOUT": 60,
        },
        args=["-a", "urls=" + " ".join(urls)],
    )
    with proc:
        # running: answered over the control socket (the folder is locked)
        history = state / "changes.log"
        deadline = time.monotonic() + 30
        while history_kinds(history).count("gone") < 2:
            assert proc.poll() is None and time.monotonic() < deadline, proc.log_text()[-3000:]
            time.sleep(0.2)
        running = frontier(state, "changes", "--kind", "gone", "--json")
        assert proc.poll() is None, "the crawl stopped before it was asked"
        assert running.returncode == 0, running.stderr
        gone = json.loads(running.stdout)["changes"]["events"]
        assert sorted(e["url"].removeprefix(base) for e in gone) == ["/p/gone404.html", "/p/gone410.html"]
        proc.signal_group()  # a clean stop
        result = finish_crawl(proc, timeout=60)
    result.assert_ok()
    fed = [json.loads(line) for line in feed.read_text().splitlines()]
    kinds = {(e["url"].removeprefix(base), e["kind"]) for e in fed}
    assert {("/p/gone404.html", "gone"), ("/p/gone410.html", "gone"), ("/p/moved.html", "moved")} <= kinds, kinds
    assert ("/p/price.html", "changed") in kinds

    # every event, newest first, once: the feed's, from the state folder's history
    listed = frontier(state, "changes", "--json", "--limit", "1000")
    assert listed.returncode == 0, listed.stderr
    answer = json.loads(listed.stdout)["changes"]
    key = lambda e: (e["url"], e["kind"], e["time"])  # noqa: E731
    assert sorted(map(key, answer["events"])) == sorted(map(key, fed)) and answer["more"] is False
    times = [e["time"] for e in answer["events"]]
    assert times == sorted(times, reverse=True) and answer["pending"] == 0

    text = frontier(state, "changes", "--kind", "gone", "--url", r"410\.html$", "--since", "1h")
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].startswith("1 change event in the last 1.0h; of kind gone; of URLs matching"), lines
    assert lines[1].split()[2:4] == ["gone", "410"] and lines[1].endswith(base + "/p/gone410.html")

    bad = frontier(state, "changes", "--kind", "deleted")
    assert bad.returncode == 2 and bad.stdout == "" and bad.stderr.count("\n") == 1, bad.stderr
    assert "--kind 'deleted' is not a change event kind: use new, changed, gone, back, moved." in bad.stderr

    one = frontier(state, "url", base + "/p/gone404.html")
    assert one.returncode == 0, one.stderr
    at = one.stdout.splitlines().index("change events, newest first:")
    assert [line.split()[2] for line in one.stdout.splitlines()[at + 1 : at + 3]] == ["gone", "new"]

    html = tmp_state / "report.html"
    report = frontier(state, "report", "--html", str(html))
    assert report.returncode == 0, report.stderr
    assert "gone pages per host:\n        2  127.0.0.1" in report.stdout, report.stdout
    page_html = html.read_text()
    assert "<h2>Gone pages per host</h2>" in page_html and "<td>127.0.0.1</td><td>2</td>" in page_html

    # the WARC: each gone page's 404 / 410 is a capture (a response record),
    # and the later identical answers refer to it, not to the page's 200
    records = warc_records(warc_dir)
    by_id = {r["id"]: r for r in records}
    for path, status in (("/p/gone404.html", 404), ("/p/gone410.html", 410)):
        mine = [r for r in records if r["uri"] == base + path]
        answers = [r for r in mine if r["status"] == status]
        assert len(answers) >= 2 and answers[0]["type"] == "response", mine  # at least the two that said gone
        for r in answers[1:]:
            assert r["type"] == "revisit" and by_id[r["refers_to"]]["status"] == status, r
