"""The schedules kept in the state folder: those given on the console, and
the visits each one forced.

The console writes the entries (``scrapy frontier schedule``), the crawl
loads them at open and counts what they force; both read them here, so one
reader says what an unreadable entry is, and a fleet's workers sum their
counts in one key.
"""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from ..config.spec import ConfigError, clause
from ..policies.schedules import Schedule, Schedules

if TYPE_CHECKING:
    from ..frontier import Frontier

logger = logging.getLogger(__name__)

#: the frontier meta key of the schedules given on the console
STORE_KEY = "schedules"
#: the frontier meta key of the visits each schedule forced (written by the crawl)
FORCED_KEY = "schedules-forced"


def stored_entries(frontier: Frontier) -> list[dict[str, Any]]:
    """The schedules given on the console, as entries (each has its name).

    ValueError, naming the key, when they cannot be read: the console then
    refuses to write them (a new schedule would replace the unreadable ones
    and lose them) until the key is repaired or removed.
    """
    raw = frontier.notes.read(STORE_KEY)
    try:
        doc = json.loads(raw) if raw else []
    except ValueError as exc:
        raise ValueError(f"the state folder's schedules (key m/{STORE_KEY}) are unreadable: {exc}") from None
    if not isinstance(doc, list) or not all(isinstance(e, dict) and isinstance(e.get("name"), str) for e in doc):
        raise ValueError(f"the state folder's schedules (key m/{STORE_KEY}) are not a list of named schedules")
    return doc


def store_entries(frontier: Frontier, entries: list[dict[str, Any]]) -> None:
    """Keep *entries* as the schedules given on the console (one write)."""
    frontier.notes.write(STORE_KEY, json.dumps(entries).encode())


def load_stored(frontier: Frontier, schedules: Schedules) -> list[str]:
    """Add the state folder's schedules to *schedules*; the problems, in words
    (an entry written by another version that no longer parses is skipped;
    unreadable ones are all skipped, and left as they are)."""
    problems = []
    try:
        entries = stored_entries(frontier)
    except ValueError as exc:
        return [f"{clause(exc)}; they are left as they are, for a repair"]
    for entry in entries:
        try:
            schedules.add(Schedule.parse(entry, f"schedule {entry['name']!r} (state folder)"))
        except ConfigError as exc:
            problems.append(str(exc))
    return problems


def forced_counts(frontier: Frontier, *, said: bool = False) -> dict[str, int]:
    """The visits each schedule forced, summed over a fleet's workers
    (written by the crawl: :func:`add_forced`).  Unreadable, they count
    from zero again (the next write replaces them); *said*: with one
    warning, as the crawl opens."""
    raw = frontier.notes.read(FORCED_KEY)
    try:
        doc = json.loads(raw) if raw else {}
    except ValueError as exc:
        doc = exc
    if not isinstance(doc, dict):
        if said:
            logger.warning(
                "The state folder's counts of visits the schedules forced (key m/%s) cannot be read (%s); "
                "they count from zero again.",
                FORCED_KEY,
                doc if isinstance(doc, ValueError) else f"a JSON {type(doc).__name__}, not an object",
            )
        return {}
    return {k: v for k, v in doc.items() if isinstance(v, int)}


def add_forced(frontier: Frontier, added: dict[str, int]) -> None:
    """Add *added* (schedule name -> visits forced since the last call) to
    the stored counts, so the workers of a fleet sharing one store sum
    theirs (one small write)."""
    stored = forced_counts(frontier)
    for name, count in added.items():
        stored[name] = stored.get(name, 0) + count
    frontier.notes.write(FORCED_KEY, json.dumps(stored, sort_keys=True).encode())
