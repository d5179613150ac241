"""``spider.state`` kept as JSON in the state folder, in the place of Scrapy's SpiderState.

Scrapy's ``SpiderState`` extension pickles ``spider.state`` into
``JOBDIR/spider.state`` at close and unpickles that file at the next start:
whoever can write the job folder runs code in the crawl.  The add-on puts
:class:`JsonSpiderState` in its place, so nothing of the job folder is ever
unpickled (the extension: :class:`~..integration.spiderstate.JsonSpiderState`):

* the state lives in the state folder as ``spider-state.json`` (``0600``,
  replaced whole: a temporary file, fsync, rename), is read when the
  frontier opens (a file that is not a JSON object is refused then, in one
  line) and
  written at close, after the spider's own ``closed()``, only when it
  changed;
* a value JSON cannot hold is named in one line and left out; every other
  key is kept.  Tuples come back as lists, keys as strings: what JSON holds.
  A ``spider.state`` that is not a dict is not saved (said in one line);
* a ``JOBDIR/spider.state`` (from a run without the add-on, or planted) is
  refused at start in one line, unless ``ADAPTIVE_MIGRATE_SPIDER_STATE``
  asks to migrate it: it is unpickled that once, its JSON written, and the
  old file renamed to ``spider.state.migrated``, which is never read.  An
  empty one (what refused starts of earlier versions left), or one holding
  ``{}`` as SpiderState pickles it for a spider that never used its state
  (recognised by its bytes), holds nothing: it is removed, and said.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pickle
from dataclasses import dataclass
from typing import Any

from ..store.marker import write_marker
from ..store.statedir import StateDir, StateDirError

logger = logging.getLogger(__name__)

#: the spider's state, in the state folder
STATE_FILE = "spider-state.json"
#: Scrapy's pickled state, in the JOBDIR
LEGACY_FILE = "spider.state"
#: where a migrated legacy file is moved, never to be read again
MIGRATED_FILE = "spider.state.migrated"
#: the setting that asks for it (config.table)
MIGRATE_SETTING = "ADAPTIVE_MIGRATE_SPIDER_STATE"
#: ``{}`` pickled at every protocol: what SpiderState leaves for a spider that
#: never uses its state (protocol 4 in Scrapy today).  Recognised by its bytes,
#: never unpickled: such a file holds nothing to refuse or migrate.
EMPTY_PICKLES = frozenset(pickle.dumps({}, protocol=protocol) for protocol in range(pickle.HIGHEST_PROTOCOL + 1))


@dataclass(frozen=True)
class Legacy:
    """A ``JOBDIR/spider.state`` unpickled on request, to be migrated once the state folder is open."""

    path: str
    value: Any


def take_legacy(jobdir: str | None, *, migrate: bool) -> Legacy | None:
    """Check ``JOBDIR/spider.state`` before anything is opened.

    Refused (:class:`StateDirError`) unless *migrate*; then unpickled, and
    refused if that fails.  None: there is none (an empty one is removed).
    """
    if not jobdir:
        return None
    path = os.path.join(jobdir, LEGACY_FILE)
    try:
        size = os.path.getsize(path)
    except OSError:
        return None
    if size == 0:
        _remove_empty(path, "was empty (an interrupted write, or a refused start of an earlier scrapy-adaptive)")
        return None
    if size <= max(map(len, EMPTY_PICKLES)) and _read_bytes(path) in EMPTY_PICKLES:
        _remove_empty(path, "held an empty state ({} pickled by Scrapy's SpiderState, read as bytes, not unpickled)")
        return None
    if not migrate:
        raise StateDirError(
            f"{path} is a spider state left for Scrapy's SpiderState (a pickle) and is not read: unpickling a file "
            f"of the job folder runs whatever code it holds. If the file is yours, set {MIGRATE_SETTING} = True "
            "for one start to move it into the state folder as JSON; otherwise delete it."
        )
    try:
        with open(path, "rb") as f:
            value = pickle.load(f)  # noqa: S301 - asked for by the setting, this once
    except Exception as exc:  # unpickling raises anything the stream asks for
        raise StateDirError(
            f"{path} cannot be migrated ({type(exc).__name__}: {exc}): nothing was changed. Restore it from a "
            "backup, or delete it to start the spider with an empty state."
        ) from None
    return Legacy(path, value)


def _read_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None  # the refusal that follows names the file


def _remove_empty(path: str, why: str) -> None:
    """Remove *path*, which holds nothing, and say so once."""
    with contextlib.suppress(OSError):
        os.unlink(path)
        logger.warning("%s %s: removed; the spider's state is kept in the state folder, as JSON.", path, why)


class SpiderStateFile:
    """The state folder's ``spider-state.json``: read at open, written when it changed."""

    def __init__(self, path: str | None, value: Any, text: str) -> None:
        #: None: a temporary state folder, nothing is kept
        self.path = path
        self.value = value
        self._text = text

    @classmethod
    def open(cls, state: StateDir, legacy: Legacy | None = None) -> SpiderStateFile:
        """The spider's state in *state* (migrated from *legacy* first).

        Raises :class:`StateDirError` for a file that cannot be read or a
        migration that cannot be written.
        """
        if state.temporary:
            return cls(None, {}, "")
        path = os.path.join(state.path, STATE_FILE)
        if legacy is not None:
            return cls._migrate(path, legacy)
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
            value = json.loads(text)
            if not isinstance(value, dict):  # spider.state is a dict (Scrapy's SpiderState makes it one)
                raise ValueError(f"it holds a {type(value).__name__}, not a JSON object")
        except FileNotFoundError:
            return cls(path, {}, _dumps({}))
        except (OSError, ValueError, RecursionError) as exc:  # RecursionError: '[' * 100000
            why = "nested too deep" if isinstance(exc, RecursionError) else exc
            raise StateDirError(
                f"The spider's state {path} cannot be read ({why}). Restore it from a backup, or delete it to start "
                "the spider with an empty state."
            ) from None
        return cls(path, value, _dumps(value))

    @classmethod
    def _migrate(cls, path: str, legacy: Legacy) -> SpiderStateFile:
        kept, left_out = _json_part(legacy.value)
        if kept is None:
            raise StateDirError(
                f"{legacy.path} cannot be migrated: its state ({type(legacy.value).__name__}) cannot be kept as "
                "JSON. Nothing was changed; delete it to start the spider with an empty state."
            )
        replaced = os.path.exists(path)
        moved = os.path.join(os.path.dirname(legacy.path), MIGRATED_FILE)
        try:
            write_marker(path, kept)
            os.replace(legacy.path, moved)
        except OSError as exc:
            raise StateDirError(f"{legacy.path} cannot be migrated to {path}: {exc}") from None
        logger.warning(
            "Migrated %s (pickled by Scrapy's SpiderState) to %s%s%s; the old file is now %s and is never read "
            "(delete it, and %s from the settings).",
            legacy.path,
            path,
            ", replacing the state kept there" if replaced else "",
            f", leaving out {left_out}, which JSON cannot hold" if left_out else "",
            moved,
            MIGRATE_SETTING,
        )
        return cls(path, kept, _dumps(kept))

    def save(self, value: Any) -> None:
        """Write *value* if it changed: a value JSON cannot hold is named and left out, the rest is kept."""
        if self.path is None:
            return
        kept, left_out = _json_part(value)
        if left_out:
            logger.error(
                "%s cannot be kept as JSON: not saved; %s",
                left_out,
                f"{self.path} keeps the state saved before."
                if kept is None
                else f"the other keys are, in {self.path}.",
            )
        if kept is None or _dumps(kept) == self._text:
            return
        try:
            write_marker(self.path, kept)
        except OSError as exc:
            logger.error(
                "The spider's state could not be saved to %s (%s); the file keeps the state saved before.",
                self.path,
                exc,
            )
            return
        self._text = _dumps(kept)


def _dumps(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _json_part(value: Any) -> tuple[Any, str]:
    """What of *value* JSON can hold, and what it cannot, named (empty: all
    of it).  Each key is tried alone, so one bad value costs that key only;
    a value that is not a dict is not kept at all (None): the file holds a
    JSON object, and one that does not is refused at the next start."""
    if not isinstance(value, dict):
        return None, f"spider.state (a {type(value).__name__}: it must be a dict)"
    kept, bad = {}, []
    for key, item in value.items():
        try:
            _dumps({key: item})
        except (TypeError, ValueError) as exc:
            bad.append(f"spider.state[{key!r}] ({exc})")
        else:
            kept[key] = item
    return kept, ", ".join(bad)
