"""Finding, claiming and checking the state folder.

Layout of ``ADAPTIVE_STATE_DIR``::

    ADAPTIVE_STATE.json   what wrote this folder: format, spider, fingerprinter
    frontier.ldb/         the LevelDB database (records, queues, counters)
    crawl.log             one line per visit (rotated), when enabled

The folder is checked before anything is written: a folder of another
spider, another request fingerprinter, a newer format, or one that is not a
scrapy-adaptive folder at all is refused with a message.  Nothing is ever
reset silently.  The default is ``<JOBDIR>/adaptive``; Scrapyd gives every
job a new JOBDIR, so long crawls under Scrapyd set ``ADAPTIVE_STATE_DIR`` to
a fixed absolute path.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from dataclasses import dataclass

from .frontier.leveldb_store import LevelDBStore
from .frontier.store import StoreError

logger = logging.getLogger(__name__)

FORMAT = 1
MARKER = "ADAPTIVE_STATE.json"
DATABASE = "frontier.ldb"


class StateDirError(RuntimeError):
    """The state folder cannot be used; the message says why and what to do."""


@dataclass(frozen=True)
class StateDir:
    path: str
    temporary: bool

    @property
    def database(self) -> str:
        return os.path.join(self.path, DATABASE)

    @property
    def marker(self) -> str:
        return os.path.join(self.path, MARKER)


def resolve(state_dir: str | None, jobdir: str | None) -> StateDir:
    """Where the state lives: the setting, else ``<JOBDIR>/adaptive``, else a temp dir."""
    if state_dir:
        return StateDir(os.path.abspath(os.path.expanduser(state_dir)), temporary=False)
    if jobdir:
        return StateDir(os.path.abspath(os.path.join(jobdir, "adaptive")), temporary=False)
    path = tempfile.mkdtemp(prefix="scrapy-adaptive-")
    logger.warning(
        "Neither JOBDIR nor ADAPTIVE_STATE_DIR is set: the frontier lives in the temporary folder %s and "
        "nothing will survive this process. Run with -s JOBDIR=<folder> to keep the crawl.",
        path,
    )
    return StateDir(path, temporary=True)


def open_store(state: StateDir, *, spider: str, fingerprinter: str, sync: bool) -> LevelDBStore:
    """Check the folder, open (or create) its database, and claim it."""
    try:
        os.makedirs(state.path, exist_ok=True)
    except OSError as exc:
        raise StateDirError(f"ADAPTIVE_STATE_DIR {state.path} cannot be created: {exc}") from exc
    expected = {"format": FORMAT, "spider": spider, "fingerprinter": fingerprinter}
    marker = _read_marker(state)
    if marker is None:
        leftovers = [n for n in os.listdir(state.path) if n not in (MARKER, "crawl.log")]
        if leftovers:
            raise StateDirError(
                f"{state.path} is not a scrapy-adaptive state folder (it holds {', '.join(sorted(leftovers)[:5])} "
                f"but no {MARKER}). Refusing to write into it: choose an empty or new ADAPTIVE_STATE_DIR."
            )
    else:
        _check_marker(state, marker, expected)
        if not os.path.isdir(state.database):
            raise StateDirError(
                f"{state.path} has {MARKER} but its database {DATABASE}/ is missing: the folder is incomplete. "
                "Restore it from a backup, or remove the folder to start a new crawl."
            )
    try:
        store = LevelDBStore(state.database, sync=sync)
    except StoreError as exc:
        raise StateDirError(str(exc)) from exc
    if marker is None:
        _write_marker(state, {**expected, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    return store


def _read_marker(state: StateDir) -> dict | None:
    try:
        with open(state.marker, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise StateDirError(f"{state.marker} is unreadable or corrupt ({exc}); refusing to guess.") from exc
    if not isinstance(data, dict):
        raise StateDirError(f"{state.marker} is not a scrapy-adaptive marker; refusing to guess.")
    return data


def _check_marker(state: StateDir, marker: dict, expected: dict) -> None:
    if not isinstance(marker.get("format"), int) or marker["format"] > FORMAT:
        raise StateDirError(
            f"{state.path} was written by a newer scrapy-adaptive (state format {marker.get('format')!r}, "
            f"this one reads {FORMAT}). Upgrade scrapy-adaptive."
        )
    if marker.get("spider") != expected["spider"]:
        raise StateDirError(
            f"{state.path} belongs to spider {marker.get('spider')!r}, not {expected['spider']!r}. "
            "Give each spider its own JOBDIR / ADAPTIVE_STATE_DIR."
        )
    if marker.get("fingerprinter") != expected["fingerprinter"]:
        raise StateDirError(
            f"{state.path} was written with REQUEST_FINGERPRINTER_CLASS {marker.get('fingerprinter')!r}, "
            f"this crawl uses {expected['fingerprinter']!r}: every stored URL would be orphaned. Restore the "
            "setting, or start a new state folder."
        )


def _write_marker(state: StateDir, data: dict) -> None:
    tmp = state.marker + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, state.marker)
