"""Keep a SQLite copy of what changed: an example for data teams.

Enable it in ``settings.py``::

    ADAPTIVE_CHANGE_EVENTS = True
    EXTENSIONS = {"demo_project.changes_sqlite.ChangesToSQLite": 500}
    CHANGES_SQLITE = "changes.sqlite3"

Every change event lands in the ``changes`` table, and the ``pages`` table
holds each URL's state as downstream should see it: ``gone = 1`` marks a
page deleted (its items too), ``moved_to`` where it went.  Events come at
least once (again after a crash), so each is inserted once by its key
(URL, kind, time) and a page's state only moves forward in time.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from scrapy.crawler import Crawler

import scrapy_adaptive

SCHEMA = """
CREATE TABLE IF NOT EXISTS changes (
    url TEXT NOT NULL, kind TEXT NOT NULL, time REAL NOT NULL, version INTEGER,
    status INTEGER, previous_time REAL, location TEXT,
    PRIMARY KEY (url, kind, time)
);
CREATE TABLE IF NOT EXISTS pages (
    url TEXT PRIMARY KEY, gone INTEGER NOT NULL DEFAULT 0, version INTEGER,
    moved_to TEXT, updated REAL NOT NULL
);
"""


class ChangesToSQLite:
    """Writes each change event to SQLite, in one transaction per event."""

    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path)
        self.db.executescript(SCHEMA)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ChangesToSQLite:
        extension = cls(crawler.settings.get("CHANGES_SQLITE", "changes.sqlite3"))
        crawler.signals.connect(extension.change_event, scrapy_adaptive.CHANGE_EVENT)
        crawler.signals.connect(extension.close, signal="spider_closed")
        return extension

    def change_event(self, event: dict[str, Any]) -> None:
        with self.db:  # one transaction: the event and the page's state together
            inserted = self.db.execute(
                "INSERT OR IGNORE INTO changes VALUES (?, ?, ?, ?, ?, ?, ?)",
                [event[k] for k in ("url", "kind", "time", "version", "status", "previous_time", "location")],
            ).rowcount
            if not inserted:
                return  # delivered again after a restart: already applied
            gone = 1 if event["kind"] == "gone" else 0
            moved_to = event["location"] if event["kind"] == "moved" else None
            self.db.execute(
                "INSERT INTO pages VALUES (?, ?, ?, ?, ?) ON CONFLICT(url) DO UPDATE SET gone = excluded.gone, "
                "version = excluded.version, moved_to = excluded.moved_to, updated = excluded.updated "
                "WHERE excluded.updated >= pages.updated",
                (event["url"], gone, event["version"], moved_to, event["time"]),
            )

    def close(self) -> None:
        self.db.close()
