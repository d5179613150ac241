"""A file of lines kept by size: the crawl log and the changes log.

A crawl that never ends appends to these for months, so neither may grow
without end.  :class:`RotatingFile` appends whole lines to ``path``; when
the next append would take it past *max_bytes*, ``path`` becomes
``path.1``, ``path.1`` becomes ``path.2`` and so on up to *backups*, the
oldest is deleted, and a new ``path`` is started.  The files together hold
at most about ``(backups + 1) × max_bytes``; :func:`rotated_files` lists
them newest first for a reader.

Each append is written through to the OS at once (a ``kill -9`` loses
none of it; ``tail -f`` sees it); :meth:`RotatingFile.sync` makes it
durable against a power loss too.  Errors are the caller's: an
:class:`OSError` leaves the file as it was before the append, or with the
append in part (a half line, which a reader skips).
"""

from __future__ import annotations

import os
from typing import BinaryIO

from ..store.statedir import private_opener

#: backups a reader looks for at most (a folder with more was not rotated by us)
MAX_BACKUPS = 1000


class RotatingFile:
    """Appends lines to *path*, rotated at *max_bytes*, keeping *backups* old files."""

    def __init__(self, path: str, max_bytes: int, backups: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self.backups = backups
        self._file: BinaryIO | None = None
        self._size = 0

    def append(self, data: bytes) -> None:
        """Append *data* (whole lines), rotating first when it would take
        the file past its size; written through to the OS.  Raises OSError."""
        if self._file is None:
            self._file = open(self.path, "ab", opener=private_opener)  # noqa: SIM115 - closed by close()
            self._size = self._file.tell()
        if self._size > 0 and self._size + len(data) > self.max_bytes:
            self._rotate()
        assert self._file is not None
        self._file.write(data)
        self._file.flush()
        self._size += len(data)

    def sync(self) -> None:
        """Make what was appended durable (fsync). Raises OSError."""
        if self._file is not None:
            os.fsync(self._file.fileno())

    def _rotate(self) -> None:
        assert self._file is not None
        self._file.close()
        self._file = None
        if self.backups > 0:
            for i in range(self.backups - 1, 0, -1):
                older = f"{self.path}.{i}"
                if os.path.exists(older):
                    os.replace(older, f"{self.path}.{i + 1}")
            os.replace(self.path, f"{self.path}.1")
        else:
            os.remove(self.path)
        self._file = open(self.path, "ab", opener=private_opener)  # noqa: SIM115 - closed by close()
        self._size = 0

    def close(self) -> None:
        if self._file is not None:
            try:
                self._file.close()
            finally:
                self._file = None


def rotated_files(path: str) -> list[str]:
    """The files of a rotated *path* that exist, newest first: ``path``,
    ``path.1``, ``path.2``... (``path`` itself may be missing for a moment,
    between a rotation's rename and the new file)."""
    files = [path] if os.path.exists(path) else []
    for i in range(1, MAX_BACKUPS + 1):
        older = f"{path}.{i}"
        if not os.path.exists(older):
            break
        files.append(older)
    return files
