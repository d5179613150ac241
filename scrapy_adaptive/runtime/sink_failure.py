"""A durable sink that cannot write: one message, the crawl stopped, nothing lost.

A feed file or a WARC file on a full disk (or one that fails with any other
I/O error) used to be reported by Scrapy at every item and every response,
with a traceback each, while the crawl ran on, counting versions whose
items or records were never written.  A sink that fails now says so once
(:data:`SINK_FAILED`, with a :class:`SinkError` naming its file): the
scheduler stops the crawl at once, as for a state-store failure (one
CRITICAL line, exit code 1), and :class:`~.delivery.Delivery` confirms
nothing more (its next flush raises the error).  The versions not confirmed stay
pending and are delivered again at the next start, once there is room.
"""

from __future__ import annotations

import errno
import io
import logging
import os
from collections.abc import Callable

from ..config.spec import counted
from ..store.base import StoreError

logger = logging.getLogger(__name__)

#: signal sent by a durable sink that cannot write any more (``sink``, ``error``)
SINK_FAILED = object()


class SinkError(StoreError):
    """A durable sink cannot write; the message names its file and says why."""


#: what a run after a failed sink delivers again, said by its message
PAGES_AGAIN = "the pages whose output was not written are delivered again"
EVENTS_AGAIN = "the change events not written wait in the state and are delivered then"


def sink_error(what: str, path: str, exc: BaseException, again: str = PAGES_AGAIN) -> SinkError:
    """The one message for a failed write to *what* (``feed file``, ``WARC
    file``) at *path*: a full disk says so and how to go on (*again*: what
    the next run delivers)."""
    first = exc.args[0] if exc.args else None
    # plyvel's errors (the WARC folder's index) carry bytes
    reason = first.decode("utf-8", "replace") if isinstance(first, bytes) else str(exc) or type(exc).__name__
    if getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or "no space left" in reason.lower():
        return SinkError(
            f"The disk holding the {what} {path} is full ({reason}). Free space, then run the crawl again: {again}"
        )
    return SinkError(f"Writing the {what} {path} failed ({reason}). Fix it, then run the crawl again: {again}")


class GuardedFile(io.BufferedWriter):
    """A buffered file whose first write error is reported, not raised.

    Scrapy's feed exporter writes from a signal handler: an error raised
    there is logged with a traceback at every item and the crawl goes on.
    Here the first error calls *on_error* once and every later write is
    dropped (the items in it belong to versions that will not be
    confirmed, so they are delivered again); closing does not try again.
    """

    def __init__(self, path: str, mode: str, on_error: Callable[[OSError], None]) -> None:
        super().__init__(io.FileIO(path, mode.replace("b", "")))
        self.on_error = on_error
        #: the first write error (None while the file is sound)
        self.error: OSError | None = None

    def _failed(self, exc: OSError) -> None:
        if self.error is None:
            self.error = exc
            self.on_error(exc)

    def write(self, data: bytes) -> int:  # type: ignore[override]
        if self.error is None:
            try:
                return super().write(data)
            except OSError as exc:
                self._failed(exc)
        return len(data)

    def flush(self) -> None:
        if self.error is None and not self.closed:
            try:
                super().flush()
            except OSError as exc:
                self._failed(exc)

    def close(self) -> None:
        if self.closed:
            return
        self.flush()
        if self.error is not None:
            self.raw.close()  # the buffer is dropped: its versions are delivered again
        else:
            super().close()


def drop_partial_line(path: str) -> None:
    """Cut a half-written last line off a feed file before appending to it.

    A killed crawl can leave one: its buffer was written out by the OS
    mid-item.  Everything after the last durable point is the items of
    versions not confirmed, which are delivered again; the half line would
    otherwise swallow the first item appended after it.
    """
    try:
        with open(path, "r+b") as file:
            size = file.seek(0, os.SEEK_END)
            if size == 0:
                return
            start = max(0, size - 65536)
            while True:
                file.seek(start)
                tail = file.read(size - start)
                if tail.endswith(b"\n"):
                    return
                cut = tail.rfind(b"\n")
                if cut != -1 or start == 0:
                    file.truncate(start + cut + 1)
                    logger.warning(
                        "Cut a half-written last line (%s) off %s.", counted(size - start - cut - 1, "byte"), path
                    )
                    return
                start = max(0, start - 65536)
    except FileNotFoundError:
        return
