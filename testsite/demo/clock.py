"""Clocks for the demo site: real time, or time a test controls through a file.

The site never calls :func:`time.time` directly; it asks an injected clock (any
zero-argument callable returning Unix seconds).  In-process users pass a
lambda.  A demo site running in a *subprocess* cannot receive a lambda, so
``--clock-file`` makes it read "now" from a file the test rewrites: time then
only moves when the test says so, which makes schedule tests exact and fast.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = ["Clock", "FileClock", "write_clock_file"]

#: Anything returning the current time in Unix seconds.
Clock = Callable[[], float]


class FileClock:
    """A clock whose current time is the float stored in ``path``.

    The file is re-read on every call.  If it is momentarily unreadable or
    malformed the last good value is returned, so a writer that does not
    replace the file atomically cannot make the server fail a request; a
    clock that has never had a good value raises ``ValueError``.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._last: float | None = None

    def __call__(self) -> float:
        try:
            self._last = float(self.path.read_text(encoding="ascii").strip())
        except (OSError, ValueError):
            if self._last is None:
                raise ValueError(f"clock file {self.path} holds no time") from None
        return self._last

    def __repr__(self) -> str:
        return f"FileClock({str(self.path)!r})"


def write_clock_file(path: str | os.PathLike[str], now: float) -> None:
    """Atomically set a :class:`FileClock`'s time (write a temp file, rename).

    ``repr`` keeps full float precision so the reader sees exactly ``now``.
    """
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=".clock-", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(repr(float(now)))
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
