"""What a LevelDB failure is, in one line that says what to do.

plyvel raises the same few exception types for a full disk, a read-only
mount, a lock held by another crawl, a lost ``CURRENT`` file and a damaged
table; the OS's and LevelDB's own words tell them apart.
"""

from __future__ import annotations

import os

from .base import StoreCorrupt, StoreError, StoreInUse, access_denied


def _reason(exc: BaseException) -> str:
    """plyvel's messages are bytes; show them as text."""
    arg = exc.args[0] if exc.args else exc
    return arg.decode("utf-8", "replace") if isinstance(arg, bytes) else str(arg)


def damaged(path: str, exc: BaseException, done: str, *, reading: bool = True) -> str:
    """The one message for a damaged database: what LevelDB says, the table
    file (LevelDB names it when it is cut short; a database of one table
    names it too, for a damage found *reading* records: at open it may be
    the MANIFEST's), that *done*, and how to recover."""
    reason = _reason(exc)
    if reading and ".ldb" not in reason and ".sst" not in reason:
        tables = [name for name in _names(path) if name.endswith((".ldb", ".sst"))]
        if len(tables) == 1:
            reason += f", in {os.path.join(path, tables[0])}"
    return (
        f"The state database in {path} is damaged ({reason}). {done}. To recover, restore the folder from a "
        f'backup, or stop every crawl on it, keep a copy and repair it in place with: python -c "import plyvel; '
        f"plyvel.repair_db('{path}')\" (what the damaged part held is lost; docs/state-folder.md)"
    )


def _names(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


def open_error(path: str, exc: BaseException) -> StoreError:
    """One message per way an open fails, each saying what it really is.

    The OS's words are matched, not the word "lock": a read-only disk fails
    on the ``LOCK`` file too, and is not another crawl.
    """
    reason = _reason(exc)
    low = reason.lower()
    if "read-only file system" in low:
        return StoreError(
            f"The state folder {path} is on a read-only file system ({reason}). A crawl writes its state: "
            "mount it read-write, or give this crawl another ADAPTIVE_STATE_DIR / JOBDIR."
        )
    if "permission denied" in low:
        return StoreError(access_denied(f"The state database in {path}", path, "readable and writable", reason))
    if "no space left" in low:
        return StoreError(f"The disk holding the state folder {path} is full ({reason}). Free space and restart.")
    if "already held" in low or "temporarily unavailable" in low:
        return StoreInUse(
            f"The state folder {path} is in use by another crawl (its LevelDB lock is held). "
            "Stop the other crawl, or give this one its own ADAPTIVE_STATE_DIR / JOBDIR."
        )
    if "does not exist" in low:
        return StoreError(
            f"The state database in {path} has lost its CURRENT file or its tables ({reason}). Nothing was "
            "changed and no new database was created over it: restore the folder from a backup, or try "
            "plyvel.repair_db() on a copy."
        )
    return StoreError(f"Cannot open the state database in {path}: {reason}")


def read_error(path: str, exc: BaseException) -> StoreError:
    """A failed read as the one message it stands for: a file this user
    may not read (not damage: no repair), else a damaged table."""
    reason = _reason(exc)
    if "permission denied" in reason.lower():
        return StoreError(access_denied(f"The state database in {path}", path, "readable", reason))
    return StoreCorrupt(damaged(path, exc, "No record in it was changed"))


def write_error(path: str, exc: BaseException) -> StoreError:
    """A failed write: a full disk (free space, run again: nothing the
    database acknowledged is lost), or what LevelDB says."""
    reason = _reason(exc)
    if "no space left" in reason.lower():
        return StoreError(
            f"The disk holding the state folder {path} is full ({reason}). Free space, then run the "
            "crawl again: it resumes from the last write that succeeded"
        )
    return StoreError(f"Writing to the state database in {path} failed: {reason}")
