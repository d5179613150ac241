"""The history of change events: ``changes.log`` in the state folder.

The changes feed is the user's and may be anywhere (or absent: the signal
alone); the console needs a history it can always find, of a running crawl
or a stopped one.  So the drain (:class:`.changes.ChangeEvents`) also
appends every event it delivers here, one JSON object per line, the
feed's fields plus ``delivered`` (when the event left the outbox), flushed
and fsynced *before* the events are taken out of the outbox: at least
once, like the feed.  A line half-written by a kill is cut off at the next
start (its event is still in the outbox, and written again).

Bounded: rotated at ``ADAPTIVE_CHANGES_LOG_MAX_BYTES``, keeping
``ADAPTIVE_CHANGES_LOG_BACKUPS`` old files (:mod:`.rotation`); the oldest
events leave with the oldest file (the changes feed keeps them all).

:func:`read_history` reads it newest first, a block at a time from the end
of each file, so the newest events cost a read of the file's end, not of
the whole history, and :func:`history_start` tells how far back it reaches.
``delivered`` rises line after line (events leave the outbox in order, and
an event's time is never after its delivery), which is what lets a reader
stop early without missing an event.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Iterator
from typing import Any

from ..change.events import event_of
from .rotation import RotatingFile, rotated_files
from .sink_failure import EVENTS_AGAIN, drop_partial_line, sink_error

#: the history's file name in the state folder
CHANGES_LOG = "changes.log"
#: bytes read from a file's end at a time
BLOCK = 1 << 16


def history_path(state_path: str) -> str:
    return os.path.join(state_path, CHANGES_LOG)


def json_line(data: dict[str, Any]) -> bytes:
    """One JSON object as the feed and the history write it (compact,
    UTF-8 as is: :func:`url_needle` depends on it)."""
    return json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"


def url_needle(url: str) -> bytes:
    """The bytes every history line of *url* holds (:func:`json_line`
    writes them so): lines of other URLs are skipped without being decoded."""
    return b'"url":' + json.dumps(url, ensure_ascii=False).encode("utf-8") + b","


class ChangesLog:
    """Appends delivered events to the state folder's ``changes.log``."""

    def __init__(self, state_path: str, max_bytes: int, backups: int) -> None:
        self.path = history_path(state_path)
        drop_partial_line(self.path)  # a kill mid-write: those events are still in the outbox
        self._file = RotatingFile(self.path, max_bytes, backups)

    def write(self, events: list[dict[str, Any]], delivered: float) -> None:
        """Append *events* and make them durable; a :class:`~.sink_failure.SinkError`
        naming the file when it cannot (the events then stay in the outbox)."""
        stamp = round(delivered, 3)
        data = b"".join(json_line({**event, "delivered": stamp}) for event in events)
        try:
            self._file.append(data)
            self._file.sync()
        except OSError as exc:
            raise sink_error("changes log", self.path, exc, EVENTS_AGAIN) from None

    def close(self) -> None:
        try:
            self._file.close()
        except OSError:
            pass  # each drain was made durable before its events left the outbox


def reversed_lines(path: str) -> Iterator[bytes]:
    """The lines of *path*, last first, read a block at a time from its end
    (a half-written last line comes out as it is: the caller skips it)."""
    try:
        file = open(path, "rb")  # noqa: SIM115 - closed below, also when the caller stops early
    except FileNotFoundError:  # rotated away since it was listed
        return
    with file:
        position = file.seek(0, os.SEEK_END)
        rest = b""
        while position > 0:
            step = min(BLOCK, position)
            position -= step
            file.seek(position)
            lines = (file.read(step) + rest).split(b"\n")
            rest = lines[0]
            for line in reversed(lines[1:]):
                if line:
                    yield line
        if rest:
            yield rest


def read_history(
    state_path: str, *, url: str | None = None, kinds: Collection[str] | None = None
) -> Iterator[dict[str, Any]]:
    """The events of the history, the last delivered first, each with its
    ``delivered`` time (a reader stops where it has read far enough back).
    With *url*, only that URL's; with *kinds*, only those kinds (the lines
    of others are skipped without being decoded).  Lines that are not
    events are skipped."""
    needle = None if url is None else url_needle(url)
    kind_needles = None if kinds is None else [b'"kind":' + json.dumps(kind).encode() for kind in kinds]
    for path in rotated_files(history_path(state_path)):
        for line in reversed_lines(path):
            if needle is not None and needle not in line:
                continue
            if kind_needles is not None and not any(k in line for k in kind_needles):
                continue
            try:
                data = json.loads(line)
            except ValueError:
                continue
            event = event_of(data)
            delivered = data.get("delivered") if isinstance(data, dict) else None
            if event is None or not isinstance(delivered, (int, float)):
                continue
            if url is not None and event["url"] != url:
                continue
            event["delivered"] = delivered
            yield event


def history_start(state_path: str) -> float | None:
    """When the oldest event the history still holds was delivered (None: no history)."""
    files = rotated_files(history_path(state_path))
    for path in reversed(files):
        try:
            with open(path, "rb") as file:
                for line in file:
                    try:
                        delivered = json.loads(line).get("delivered")
                    except (ValueError, AttributeError):
                        continue
                    if isinstance(delivered, (int, float)):
                        return float(delivered)
        except FileNotFoundError:  # rotated away since it was listed
            continue
    return None
