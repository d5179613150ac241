"""The state folder's marker, ``ADAPTIVE_STATE.json``: what wrote the folder.

It names the format, the spider, the request fingerprinter (and, for a
worker of a shared frontier, the store) and keeps the checkpoint
(:mod:`.statedir`), each of its fields checked for what a crawl writes
(:func:`read_checkpoint`).  It is only ever replaced whole (a temporary file, then
a rename), and the first one is *created* without replacing anything
(:func:`create_marker`): of two first starts, exactly one makes it.

A first start writes the marker before the database, flagged ``creating``
(:data:`CREATING`) until the database is open: a start killed in between
leaves a folder the next start recognises as its own and finishes,
instead of a database nobody claims.
"""

from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass

from .base import access_denied

FORMAT = 1
MARKER = "ADAPTIVE_STATE.json"
#: the marker's flag while its first start has not opened the database yet
CREATING = "creating"
#: the marker's entry that records what the database held (:mod:`.statedir`)
CHECKPOINT = "checkpoint"
#: the largest count a checkpoint may hold: a crawl writing a thousand
#: batches a second for thirty years stays a thousand times below it
MAX_COUNT = 10**15


class StateDirError(RuntimeError):
    """The state folder cannot be used; the message says why and what to do."""


def private_opener(path: str, flags: int) -> int:
    """``open(..., opener=private_opener)``: a new file is created ``0600``."""
    return os.open(path, flags, 0o600)


def read_marker(path: str) -> dict | None:
    """The marker at *path* (None: there is none, also where a regular file
    stands in its path: no crawl can have run there, and nothing is damaged)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except PermissionError as exc:  # the file, or its folder: not damage
        folder = os.path.dirname(path)
        raise StateDirError(access_denied(path, folder, "readable", exc)) from exc
    except (OSError, ValueError) as exc:
        raise StateDirError(f"{path} is unreadable or corrupt ({exc}); refusing to guess.") from exc
    except RecursionError:  # '[' * 100000: garbled like any other, not a traceback
        raise StateDirError(f"{path} is unreadable or corrupt (nested too deep); refusing to guess.") from None
    if not isinstance(data, dict):
        raise StateDirError(f"{path} is not a scrapy-adaptive marker; refusing to guess.")
    return data


def check_marker(where: str, marker: dict, expected: dict) -> None:
    """Refuse a state written by another spider, fingerprinter, store or a newer format.

    *where* names the state in messages: the folder, or the Redis store and
    namespace (whose identity plays the marker's part).
    """
    found = marker.get("format")
    if type(found) is not int or found < 1:
        raise StateDirError(
            f"{where} has no state format this or any scrapy-adaptive writes ({found!r}, this one reads "
            f"{FORMAT}): the marker was edited or written by other code. Restore it from a backup."
        )
    if found > FORMAT:
        raise StateDirError(
            f"{where} was written by a newer scrapy-adaptive (state format {found!r}, "
            f"this one reads {FORMAT}). Upgrade scrapy-adaptive."
        )
    if marker.get("spider") != expected["spider"]:
        raise StateDirError(
            f"{where} belongs to spider {marker.get('spider')!r}, not {expected['spider']!r}. "
            "Give each spider its own JOBDIR / ADAPTIVE_STATE_DIR (ADAPTIVE_STORE_NAMESPACE in a Redis store)."
        )
    if marker.get("store") != expected.get("store"):
        raise StateDirError(
            f"{where} was used with the store {marker.get('store') or 'LevelDB in the folder'}, this crawl "
            f"uses {expected.get('store') or 'LevelDB in the folder'}: give each store its own JOBDIR / "
            "ADAPTIVE_STATE_DIR."
        )
    if marker.get("fingerprinter") != expected["fingerprinter"]:
        raise StateDirError(
            f"{where} was written with REQUEST_FINGERPRINTER_CLASS {marker.get('fingerprinter')!r}, "
            f"this crawl uses {expected['fingerprinter']!r}: every stored URL would be orphaned. Restore the "
            "setting, or start a new state folder."
        )


@dataclass(frozen=True)
class Checkpoint:
    """What the database held when the checkpoint was written (see :mod:`.statedir`)."""

    urls: int
    visits: int
    clean: bool
    at: str
    #: the database's count of writes (None: a shared store, or a marker of an older version)
    writes: int | None = None

    def entry(self) -> dict:
        """The marker's entry for it."""
        point: dict[str, object] = {"urls": self.urls, "visits": self.visits, "clean": self.clean, "at": self.at}
        if self.writes is not None:
            point["writes"] = self.writes
        return point


def read_checkpoint(path: str, marker: dict) -> Checkpoint | None:
    """The checkpoint of *marker*, the one at *path* (None: none recorded yet).

    Each field must be what a crawl writes, exact types included: a count
    that is negative, fractional, a string or past :data:`MAX_COUNT` was
    not written by a crawl, and is refused as an edit instead of being read
    as a rollback.
    """
    if CHECKPOINT not in marker:
        return None
    point = marker[CHECKPOINT]
    problem = _checkpoint_problem(point)
    if problem is not None:
        raise StateDirError(
            f"{path} has an invalid {CHECKPOINT!r} entry ({problem}): the marker was edited or written by other "
            f"code. Restore it from a backup; or, to go on from what the database holds, delete the "
            f'"{CHECKPOINT}" entry.'
        )
    writes = point.get("writes")
    return Checkpoint(point["urls"], point["visits"], point["clean"], point["at"], writes)


def _checkpoint_problem(point: object) -> str | None:
    """What is wrong with a checkpoint entry, in words (None: nothing)."""
    if type(point) is not dict:
        return f"{_shown(point)} is not an object"
    for name in ("urls", "visits", "writes"):
        if name == "writes" and name not in point:  # written by an older version
            continue
        value = point.get(name)
        if type(value) is not int or not 0 <= value <= MAX_COUNT:
            return f"{name} is {_shown(value)}, not a whole number from 0 to {MAX_COUNT:.0e}"
    if type(point.get("clean")) is not bool:
        return f"clean is {_shown(point.get('clean'))}, not true or false"
    if type(point.get("at")) is not str:
        return f"at is {_shown(point.get('at'))}, not a time"
    return None


def _shown(value: object) -> str:
    """*value* for a message: its repr, cut short if long (a 400-digit number)."""
    text = repr(value)
    return text if len(text) <= 24 else f"{text[:12]}… ({len(text)} characters)"


def _written(path: str, data: object) -> str:
    """*data* in a new file beside *path*, synced; its name (one per process:
    two first starts never write into the same temporary file)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w", encoding="utf-8", opener=private_opener) as f:
            json.dump(data, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
    except OSError:  # a full disk: nothing half-written is left beside the marker
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return tmp


def write_marker(path: str, data: object) -> None:
    """Replace the marker at *path* whole, or any JSON file the state folder
    keeps whole (the spider's state): written ``0600`` beside it, synced,
    renamed over it; a write that fails leaves no temporary file behind."""
    tmp = _written(path, data)
    try:
        os.replace(tmp, path)
    except OSError:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def create_marker(path: str, data: dict) -> bool:
    """Make the first marker at *path*, unless one exists (False then):
    a hard link never replaces, so of two first starts one makes it."""
    tmp = _written(path, data)
    try:
        os.link(tmp, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(tmp)
    return True
