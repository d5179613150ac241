"""The state folder as a place: where it is, what it was given by, and
what its messages say when it cannot be written.

The bottom of the state folder's modules: :mod:`.checkpoint` and
:mod:`.statedir` both build on it.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from .base import access_denied
from .marker import MARKER, StateDirError

#: the LevelDB database's folder, inside the state folder
DATABASE = "frontier.ldb"


@dataclass(frozen=True)
class StateDir:
    path: str
    temporary: bool
    #: what the folder was given by, for messages: ``ADAPTIVE_STATE_DIR``,
    #: ``JOBDIR <folder>`` (the state is its ``adaptive`` subfolder), or none
    source: str = "ADAPTIVE_STATE_DIR"

    @property
    def setting(self) -> str:
        """The setting that gave the folder: what a message tells the user to change."""
        return self.source.split()[0]

    @property
    def database(self) -> str:
        return os.path.join(self.path, DATABASE)

    @property
    def marker(self) -> str:
        return os.path.join(self.path, MARKER)


def unwritable(state: StateDir, exc: OSError) -> StateDirError:
    """The state folder cannot be written: a permission (the fix is its
    owner and permissions) or what the OS says."""
    if isinstance(exc, PermissionError):
        why = f"{exc} (a crawl writes its checkpoint, control socket and report there)"
        return StateDirError(access_denied(f"The state folder {state.path}", state.path, "writable", why))
    return StateDirError(f"The state folder {state.path} ({state.source}) cannot be written: {exc}")


def utc_now() -> str:
    """Now, in UTC, as the marker writes it."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
