"""Change events end to end (issue 39): a real crawl of a local site whose
pages change one field, disappear (404, 410, a redirect to the home page),
come back, move, and fail once with a 503.

Each path answers a script, one entry per request (the last one repeated),
so what the crawl must say is known whatever the timing: every real
transition exactly once in a clean run, none from a single 5xx, and the
same events in the changes feed, in the signal (the sample project's
SQLite example, real SQLite), in the project's item pipelines
(``ADAPTIVE_CHANGES_AS_ITEMS``) and in the stats.
"""

from __future__ import annotations

import http.server
import importlib.util
import json
import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.crawlrunner import run_crawl
from tests.e2e.test_damaged_state import frontier

pytestmark = pytest.mark.e2e

PAGES = Path(__file__).parents[1] / "spiders" / "pages.py"
#: writes the change events it gets to EVENTS_PIPELINE_FILE
EVENTS_PIPELINE = {"tests.spiders.pages.EventsPipeline": 300}
SAMPLE = Path(__file__).parents[2] / "sample_project"


def page(text: str) -> tuple[int, str]:
    return 200, f"<html><body><h1>Shop</h1><p>{text}</p></body></html>"


#: path -> the answers to its requests in turn: (status, body or a redirect's Location)
SCRIPTS: dict[str, list[tuple[int, str]]] = {
    "/p/price.html": [page("Price 10 EUR")] * 2 + [page("Price 11 EUR")] * 2 + [page("Price 12 EUR")],
    "/p/gone404.html": [page("Kettle")] * 2 + [(404, "Not found")] * 3 + [page("Kettle, back")],
    "/p/gone410.html": [page("Toaster")] + [(410, "Gone")],
    "/p/home.html": [page("Mixer")] + [(301, "/")],
    "/p/moved.html": [page("Blender")] + [(301, "/new/blender.html")],
    "/p/flaky.html": [page("Fridge")] + [(503, "Busy")] + [page("Fridge")],
    "/": [page("Home")],
    "/new/blender.html": [page("Blender, new home")],
}

#: the events each URL must make, in order (confirmations: 2)
EXPECTED = {
    "/p/price.html": ["new", "changed", "changed"],
    "/p/gone404.html": ["new", "gone", "back"],
    "/p/gone410.html": ["new", "gone"],
    "/p/home.html": ["new", "gone"],
    "/p/moved.html": ["new", "moved"],
    "/p/flaky.html": ["new"],
    "/": ["new"],
    "/new/blender.html": ["new"],
}


class ScriptedSite:
    def __init__(self, scripts: dict[str, list[tuple[int, str]]] | None = None) -> None:
        self.scripts = SCRIPTS if scripts is None else scripts
        self.requests: dict[str, int] = {}
        self.lock = threading.Lock()

    def answer(self, path: str) -> tuple[int, str]:
        with self.lock:
            n = self.requests.get(path, 0)
            self.requests[path] = n + 1
        script = self.scripts.get(path, [(404, "Not found")])
        return script[min(n, len(script) - 1)]

    def handler(self) -> type[http.server.BaseHTTPRequestHandler]:
        site = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                status, text = site.answer(self.path)
                body = b"" if status in (301, 308) else text.encode()
                self.send_response(status)
                if status in (301, 308):
                    self.send_header("Location", text)
                self.send_header("Content-Type", "text/html")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


@contextmanager
def serving(scripted: ScriptedSite) -> Iterator[str]:
    """*scripted* served on a free loopback port: its base URL."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), scripted.handler())
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def site() -> Iterator[tuple[ScriptedSite, str]]:
    scripted = ScriptedSite()
    with serving(scripted) as base:
        yield scripted, base


def test_every_transition_is_said_once_in_the_feed_the_signal_and_the_pipelines(
    site: tuple[ScriptedSite, str], adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    scripted, base = site
    feed = tmp_state / "changes.jsonl"
    database = tmp_state / "changes.sqlite3"
    piped = tmp_state / "pipeline.jsonl"
    urls = [base + path for path in SCRIPTS if path.startswith("/p/")]
    result = run_crawl(
        PAGES,
        {
            **adaptive_settings,
            "ROBOTSTXT_OBEY": False,
            "RETRY_ENABLED": False,
            "ADAPTIVE_WAIT_DEFAULT": 0.6,
            "ADAPTIVE_CHANGES_FEED": str(feed),
            "EXTENSIONS": {"demo_project.changes_sqlite.ChangesToSQLite": 500},
            "CHANGES_SQLITE": str(database),
            "ADAPTIVE_CHANGES_AS_ITEMS": True,
            "ITEM_PIPELINES": EVENTS_PIPELINE,
            "EVENTS_PIPELINE_FILE": str(piped),
            "CLOSESPIDER_TIMEOUT": 9,
        },
        timeout=60,
        env={"PYTHONPATH": os.pathsep.join([str(SAMPLE), os.environ.get("PYTHONPATH", "")])},
        args=["-a", "urls=" + " ".join(urls)],
        collect_items=True,
    )
    result.assert_ok()
    for path, script in SCRIPTS.items():  # every answer of every script was served
        assert scripted.requests.get(path, 0) >= len(script) + 1, (path, scripted.requests)
    events = [json.loads(line) for line in feed.read_text().splitlines()]
    said: dict[str, list[str]] = {}
    for event in events:
        said.setdefault(event["url"].removeprefix(base), []).append(event["kind"])
    assert said == EXPECTED
    by_kind = {kind: sum(k == kind for kinds in EXPECTED.values() for k in kinds) for kind in ("new", "gone")}
    assert result.stats["adaptive/events/new"] == by_kind["new"] and result.stats["adaptive/events/gone"] == 3
    assert result.stats["adaptive/events/delivered"] == len(events)
    # the pipelines got each event once, as a ChangeEvent, while they were open
    assert [json.loads(line) for line in piped.read_text().splitlines()] == events
    assert result.stats["adaptive/events/items/passed"] == len(events)
    # not the spider's scraped items: not in its feed, not counted as scraped
    assert result.items and not any("kind" in item for item in result.items)
    assert result.stats["item_scraped_count"] == len(result.items)
    gone = next(e for e in events if e["kind"] == "gone" and e["url"].endswith("/gone404.html"))
    # a 404 is no version (issue 46; the archive still keeps it as a capture of
    # its own): the gone page's last version is its one content
    assert gone["status"] == 404 and gone["version"] == 1 and gone["previous_time"] < gone["time"]
    assert gone["digest"] == gone["previous_digest"]  # the record keeps the page's capture
    moved = next(e for e in events if e["kind"] == "moved")
    assert moved["location"] == base + "/new/blender.html" and moved["status"] == 301
    # the signal's consumer: the sample project's SQLite example
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT count(*) FROM changes").fetchone()[0] == len(events)
        state = {url.removeprefix(base): (gone, moved_to) for url, gone, moved_to in db.execute(
            "SELECT url, gone, moved_to FROM pages")}  # fmt: skip
    assert state["/p/gone410.html"] == (1, None) and state["/p/home.html"] == (1, None)
    assert state["/p/gone404.html"] == (0, None)  # back
    assert state["/p/moved.html"] == (0, base + "/new/blender.html")


def sample_module(name: str) -> Any:
    """A module of the sample project, read from its file (the project is not on this process's path)."""
    spec = importlib.util.spec_from_file_location(name, SAMPLE / "demo_project" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def product(name: str, price: str) -> tuple[int, str]:
    return 200, (
        f"<html><body><h1>{name}</h1><p>In stock</p><p>Price {price} EUR</p>"
        f'<span itemprop="price" content="{price}"></span><script>var seen = "{price}";</script></body></html>'
    )


#: items-mode pages: a kettle whose price rises then whose name changes, a toaster whose price falls
PRODUCTS = {
    "/items/kettle.html": (
        [product("Kettle", "10.00")] * 2 + [product("Kettle", "11.50")] * 2 + [product("Blue kettle", "11.50")]
    ),
    "/items/toaster.html": [product("Toaster", "25.00")] * 2 + [product("Toaster", "19.99")],
}


def test_a_changed_event_names_the_fields_that_changed_and_diffs_the_visible_text(
    site: tuple[ScriptedSite, str], adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    """Items mode: the event names the field that changed, with its old and
    new values for a field the rule lists in ``values``; with
    ``ADAPTIVE_TEXT_DIFF`` it carries the diff of the page's visible text
    (not its script's); the sample project's SQLite example keeps each
    field's values and answers "which prices fell today"; ``scrapy frontier
    changes`` shows both under each event."""
    scripted, base = site
    SCRIPTS.update(PRODUCTS)
    feed = tmp_state / "changes.jsonl"
    database = tmp_state / "changes.sqlite3"
    rule = {"url": "/items/", "rule": "items", "fields": ["name", "price"], "key": "url", "values": ["price"]}
    try:
        result = run_crawl(
            PAGES,
            {
                **adaptive_settings,
                "ROBOTSTXT_OBEY": False,
                "ADAPTIVE_WAIT_DEFAULT": 0.5,
                "ADAPTIVE_CHANGES_FEED": str(feed),
                "ADAPTIVE_DIGEST_RULES": [rule],
                "ADAPTIVE_TEXT_DIFF": 4096,
                "EXTENSIONS": {"demo_project.changes_sqlite.ChangesToSQLite": 500},
                "CHANGES_SQLITE": str(database),
                "CLOSESPIDER_TIMEOUT": 6,
            },
            timeout=60,
            env={"PYTHONPATH": os.pathsep.join([str(SAMPLE), os.environ.get("PYTHONPATH", "")])},
            args=["-a", "urls=" + " ".join(base + path for path in PRODUCTS)],
        )
    finally:
        for path in PRODUCTS:
            del SCRIPTS[path]
    result.assert_ok()
    events = [json.loads(line) for line in feed.read_text().splitlines()]
    url = base + "/items/kettle.html"
    kettle = [e for e in events if e["url"] == url]
    assert [e["kind"] for e in kettle] == ["new", "changed", "changed"]
    assert kettle[0]["fields"] is None and kettle[0]["text_diff"] is None  # nothing to compare with
    assert kettle[1]["fields"] == {
        "changed": [{"item": "#" + kettle[1]["fields"]["changed"][0]["item"][1:], "fields": ["price"],
                     "values": {"price": ["10.00", "11.50"]}}],
        "added": [],
        "removed": [],
    }  # fmt: skip
    assert kettle[1]["text_diff"] == "@@ -2,2 +2,2 @@\n In stock\n-Price 10.00 EUR\n+Price 11.50 EUR"
    assert kettle[2]["fields"]["changed"][0]["fields"] == ["name"]
    assert kettle[2]["text_diff"] == "@@ -1,2 +1,2 @@\n-Kettle\n+Blue kettle\n In stock"
    # the SQLite example: every field's values, and the query a data team runs
    with sqlite3.connect(database) as db:
        fell = db.execute(sample_module("changes_sqlite").PRICES_FELL_TODAY).fetchall()
        fields = db.execute("SELECT url, field, old, new FROM field_changes ORDER BY time").fetchall()
        diffs = db.execute("SELECT count(*) FROM changes WHERE text_diff LIKE '%+Price 19.99 EUR%'").fetchone()[0]
    toaster = base + "/items/toaster.html"
    assert [(u, old, new) for u, _, old, new, _ in fell] == [(toaster, "25.00", "19.99")]  # the kettle rose
    assert (url, "price", "10.00", "11.50") in fields and (url, "name", None, None) in fields and diffs == 1
    # the console shows both under each event
    listed = frontier(Path(str(adaptive_settings["ADAPTIVE_STATE_DIR"])), "changes", "--url", "kettle")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.endswith(url) and " v2 " in line)
    assert lines[at + 1 : at + 4] == [
        "      item " + kettle[1]["fields"]["changed"][0]["item"] + ": price 10.00 → 11.50",
        "      -Price 10.00 EUR",
        "      +Price 11.50 EUR",
    ], lines


def test_an_event_a_pipeline_fails_on_is_said_in_one_line_and_delivered_again_at_the_next_start(
    adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    """``ADAPTIVE_CHANGES_AS_ITEMS``: a ``DropItem`` is the pipelines done
    with the event; an exception leaves it in the state, said once, and the
    next start delivers it again (to the feed too: at least once)."""
    scripted = ScriptedSite({f"/p/{name}.html": [page(name)] for name in ("kept", "failed", "dropped")})
    feed = tmp_state / "changes.jsonl"
    piped = tmp_state / "pipeline.jsonl"
    settings = {
        **adaptive_settings,
        "ROBOTSTXT_OBEY": False,
        "ADAPTIVE_WAIT_DEFAULT": 600,  # one visit each: the second run makes no event of its own
        "ADAPTIVE_CHANGES_FEED": str(feed),
        "ADAPTIVE_CHANGES_AS_ITEMS": True,
        "ITEM_PIPELINES": EVENTS_PIPELINE,
        "EVENTS_PIPELINE_FILE": str(piped),
        "EVENTS_PIPELINE_DROP": "/dropped.html",
        "CLOSESPIDER_TIMEOUT": 1.5,
    }
    with serving(scripted) as base:
        args = ["-a", "urls=" + " ".join(base + path for path in scripted.scripts)]
        first = run_crawl(PAGES, {**settings, "EVENTS_PIPELINE_FAIL": "/failed.html"}, timeout=60, args=args)
        first.assert_ok(allow_errors=True)
        errors = [line for line in first.log.splitlines() if " ERROR: " in line]
        assert len(errors) == 1 and "Traceback" not in first.log, errors
        assert f"change event new of {base}/p/failed.html (ValueError: no room for new, at pages.py:" in errors[0]
        assert "delivered again at the next start" in errors[0]
        stats = first.stats
        assert (stats["adaptive/events/items/passed"], stats["adaptive/events/items/dropped"]) == (1, 1)
        assert stats["adaptive/events/items/failed"] == 1 and stats["adaptive/events/delivered"] == 2
        assert [json.loads(line)["url"] for line in piped.read_text().splitlines()] == [base + "/p/kept.html"]
        second = run_crawl(PAGES, {**settings, "CLOSESPIDER_TIMEOUT": 0.5}, timeout=60, args=args)
    second.assert_ok()
    assert sum(scripted.requests.values()) == 3  # the second run fetched nothing: the event came from the state
    assert [json.loads(line)["url"] for line in piped.read_text().splitlines()] == [
        base + "/p/kept.html",
        base + "/p/failed.html",
    ]
    in_feed = [json.loads(line)["url"].removeprefix(base) for line in feed.read_text().splitlines()]
    assert sorted(in_feed) == ["/p/dropped.html", "/p/failed.html", "/p/failed.html", "/p/kept.html"]
    assert second.stats["adaptive/events/items/passed"] == 1
