"""Keep a SQLite copy of what changed: an example for data teams.

Enable it in ``settings.py``::

    ADAPTIVE_CHANGE_EVENTS = True
    EXTENSIONS = {"demo_project.changes_sqlite.ChangesToSQLite": 500}
    CHANGES_SQLITE = "changes.sqlite3"

Every change event lands in the ``changes`` table (with its text diff, when
``ADAPTIVE_TEXT_DIFF`` makes one), and the ``pages`` table holds each
URL's state as downstream should see it: ``gone = 1`` marks a page deleted
(its items too), ``moved_to`` where it went.  In items mode
(``ADAPTIVE_DIGEST_RULES`` with the ``items`` rule) the ``field_changes``
table holds one row per item and field that changed, with the old and the
new value of the fields the rule keeps (``values``), so a team asks
questions of the data, not of the pages: :data:`PRICES_FELL_TODAY`.

Events come at least once (again after a crash), so each is inserted once
by its key (URL, kind, time), its fields with it, in one transaction, and a
page's state only moves forward in time.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from scrapy.crawler import Crawler

import scrapy_adaptive

SCHEMA = """
CREATE TABLE IF NOT EXISTS changes (
    url TEXT NOT NULL, kind TEXT NOT NULL, time REAL NOT NULL, version INTEGER,
    status INTEGER, previous_time REAL, location TEXT, text_diff TEXT,
    PRIMARY KEY (url, kind, time)
);
CREATE TABLE IF NOT EXISTS pages (
    url TEXT PRIMARY KEY, gone INTEGER NOT NULL DEFAULT 0, version INTEGER,
    moved_to TEXT, updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS field_changes (
    url TEXT NOT NULL, time REAL NOT NULL, item TEXT NOT NULL, field TEXT NOT NULL,
    old, new,
    PRIMARY KEY (url, time, item, field)
);
CREATE INDEX IF NOT EXISTS field_changes_by_field ON field_changes (field, time);
"""

#: the question a shop's data team asks each morning: which prices fell
#: today, by how much (the values are as the items held them: text or numbers)
PRICES_FELL_TODAY = """
SELECT url, item, old, new, CAST(old AS REAL) - CAST(new AS REAL) AS fell_by
FROM field_changes
WHERE field = 'price' AND time >= CAST(strftime('%s', 'now', 'start of day') AS REAL)
  AND CAST(new AS REAL) < CAST(old AS REAL)
ORDER BY fell_by DESC
"""


def _value(value: Any) -> Any:
    """A value as SQLite keeps it: text and numbers as they are, anything else as JSON."""
    if value is None or isinstance(value, str | int | float):
        return value
    return json.dumps(value, ensure_ascii=False)


def field_rows(event: dict[str, Any]) -> list[tuple[Any, ...]]:
    """The ``field_changes`` rows of an items-mode event: one per changed
    field of each changed item (old and new are NULL for a field whose
    values the rule does not keep)."""
    fields = event.get("fields") or {}
    rows = []
    for entry in fields.get("changed") or ():
        values = entry.get("values") or {}
        for name in entry.get("fields") or ():
            old, new = values.get(name) or (None, None)
            rows.append((event["url"], event["time"], str(entry["item"]), name, _value(old), _value(new)))
    return rows


class ChangesToSQLite:
    """Writes each change event to SQLite, in one transaction per event."""

    def __init__(self, path: str) -> None:
        self.db = sqlite3.connect(path)
        self.db.executescript(SCHEMA)
        columns = {row[1] for row in self.db.execute("PRAGMA table_info(changes)")}
        if "text_diff" not in columns:  # a database this example made before it kept diffs
            self.db.execute("ALTER TABLE changes ADD COLUMN text_diff TEXT")

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> ChangesToSQLite:
        extension = cls(crawler.settings.get("CHANGES_SQLITE", "changes.sqlite3"))
        crawler.signals.connect(extension.change_event, scrapy_adaptive.CHANGE_EVENT)
        crawler.signals.connect(extension.close, signal="spider_closed")
        return extension

    def change_event(self, event: dict[str, Any]) -> None:
        with self.db:  # one transaction: the event, its fields and the page's state together
            inserted = self.db.execute(
                "INSERT OR IGNORE INTO changes VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    event.get(k)
                    for k in ("url", "kind", "time", "version", "status", "previous_time", "location", "text_diff")
                ],
            ).rowcount
            if not inserted:
                return  # delivered again after a restart: already applied
            self.db.executemany("INSERT OR IGNORE INTO field_changes VALUES (?, ?, ?, ?, ?, ?)", field_rows(event))
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
