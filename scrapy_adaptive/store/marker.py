"""The state folder's marker, ``ADAPTIVE_STATE.json``: what wrote the folder.

It names the format, the spider, the request fingerprinter (and, for a
worker of a shared frontier, the store) and keeps the checkpoint
(:mod:`.statedir`).  It is only ever replaced whole (a temporary file, then
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

FORMAT = 1
MARKER = "ADAPTIVE_STATE.json"
#: the marker's flag while its first start has not opened the database yet
CREATING = "creating"


class StateDirError(RuntimeError):
    """The state folder cannot be used; the message says why and what to do."""


def private_opener(path: str, flags: int) -> int:
    """``open(..., opener=private_opener)``: a new file is created ``0600``."""
    return os.open(path, flags, 0o600)


def read_marker(path: str) -> dict | None:
    """The marker at *path* (None: there is none)."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise StateDirError(f"{path} is unreadable or corrupt ({exc}); refusing to guess.") from exc
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
