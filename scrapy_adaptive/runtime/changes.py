"""Change events leave the state: to the changes feed and as a signal.

The frontier writes each change event (:mod:`..change.events`) to its
outbox in the same atomic write as the visit that made it.  Once a second
:class:`ChangeEvents` takes the oldest ones out: it appends them to the
state folder's history (``changes.log``, :mod:`.changelog`, which the
console reads) and to the changes feed (``ADAPTIVE_CHANGES_FEED``),
flushes and fsyncs both, sends each
as the :data:`CHANGE_EVENT` signal, and only then deletes them from the
outbox, in one write.  A kill at any moment loses none: what was not
deleted is delivered again at the next start (at least once; a consumer
that must not see one twice keys it by URL, kind and time).  A feed or a
history that cannot be written (a full disk) stops the crawl like a full state store
(:mod:`.sink_failure`), and the events wait in the outbox.
"""

from __future__ import annotations

import csv
import io
import logging
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..change.events import FIELDS, read_event
from ..config.spec import ConfigError
from .changelog import ChangesLog, json_line
from .sink_failure import drop_partial_line, sink_error

if TYPE_CHECKING:
    from scrapy.signalmanager import SignalManager
    from scrapy.statscollectors import StatsCollector

    from ..frontier import Frontier
    from ..store.base import StoreError

logger = logging.getLogger(__name__)

#: sent once per change event, with ``event`` (a dict of
#: :data:`~..change.events.FIELDS`): connect a pipeline or an extension to it
#: (``crawler.signals.connect(handler, scrapy_adaptive.CHANGE_EVENT)``)
CHANGE_EVENT = object()

#: events taken out of the outbox per drain (the rest wait a second)
DRAIN_LIMIT = 1000

#: the feed formats, by file name ending
FORMATS = {".jsonl": "jsonlines", ".jl": "jsonlines", ".jsonlines": "jsonlines", ".csv": "csv"}


def feed_format(path: str) -> str:
    """The format of the changes feed at *path*, by its ending; one that
    cannot be appended to line by line (JSON arrays, XML) is refused."""
    ending = os.path.splitext(path)[1].lower()
    found = FORMATS.get(ending)
    if found is None:
        raise ConfigError(
            f"ADAPTIVE_CHANGES_FEED ({path!r}) must end in .jsonl, .jl or .csv: the changes feed is appended to, "
            "one event per line, across restarts."
        )
    return found


class ChangesFeed:
    """The changes feed file: one event per line, appended, made durable per drain."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.format = feed_format(path)
        folder = os.path.dirname(os.path.abspath(path))
        if not os.path.isdir(folder):
            raise ConfigError(f"ADAPTIVE_CHANGES_FEED ({path!r}): the folder {folder} does not exist.")
        drop_partial_line(path)  # a kill mid-write: the events in it are still in the outbox
        try:
            self._file = open(path, "ab")  # noqa: SIM115 - held open for the crawl, closed by close()
        except OSError as exc:
            raise ConfigError(f"ADAPTIVE_CHANGES_FEED ({path!r}) cannot be opened for writing: {exc}.") from None
        if self.format == "csv" and self._file.tell() == 0:
            self._file.write(self._csv([list(FIELDS)]))

    @staticmethod
    def _csv(rows: list[list[Any]]) -> bytes:
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(rows)
        return text.getvalue().encode("utf-8")

    def write(self, events: list[dict[str, Any]]) -> None:
        """Append *events* and make them durable (flush and fsync): raises
        a :class:`~.sink_failure.SinkError` naming the file when it cannot."""
        if self.format == "csv":
            data = self._csv([[_cell(event[name]) for name in FIELDS] for event in events])
        else:
            data = b"".join(json_line(event) for event in events)
        try:
            self._file.write(data)
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as exc:
            raise sink_error("changes feed", self.path, exc) from None

    def close(self) -> None:
        try:
            self._file.close()
        except OSError:
            pass  # what was not made durable is still in the outbox


def _cell(value: Any) -> Any:
    return "" if value is None else value


class ChangeEvents:
    """Drains the frontier's outbox of change events, once a second."""

    def __init__(
        self,
        frontier: Frontier,
        feed: ChangesFeed | None,
        signals: SignalManager | None,
        stats: StatsCollector,
        *,
        on_error: Callable[[StoreError], None],
        limit: int = DRAIN_LIMIT,
        history: ChangesLog | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.frontier = frontier
        self.feed = feed
        #: the state folder's ``changes.log``, which the console reads
        self.history = history
        self.clock = clock
        self.signals = signals
        self.stats = stats
        self.on_error = on_error
        self.limit = limit
        #: the feed failed: nothing more leaves the outbox in this run
        self.stopped = False

    def run(self) -> None:
        self.drain()

    def drain(self) -> int:
        """Deliver the oldest events; returns how many left the outbox."""
        if self.stopped:
            return 0
        rows = self.frontier.events(self.limit)
        if not rows:
            return 0
        events, garbled = [], []
        for queue, key, raw in rows:
            event = read_event(raw)
            if event is None:
                garbled.append((queue, key))
                logger.error(
                    "A change event in the outbox is garbled (%r); it cannot be delivered and is removed.", raw[:64]
                )
            else:
                events.append(event)
        try:  # the history, then the feed: both durable before the outbox lets go
            if events and self.history is not None:
                self.history.write(events, self.clock())
            if events and self.feed is not None:
                self.feed.write(events)
        except Exception as exc:  # a SinkError: said once, the crawl stops, the events wait
            self.stopped = True
            self.on_error(exc)  # type: ignore[arg-type]
            return 0
        if self.signals is not None:
            for event in events:
                self.signals.send_catch_log(CHANGE_EVENT, event=event)
        self.frontier.events_delivered([(queue, key) for queue, key, _ in rows])
        self.stats.inc_value("adaptive/events/delivered", len(events))
        if garbled:
            self.stats.inc_value("adaptive/events/garbled", len(garbled))
        return len(rows)

    def close(self) -> None:
        """Deliver what is left (bounded), then close the feed."""
        try:
            for _ in range(100):
                if self.drain() < self.limit:
                    break
        finally:
            self.close_sinks()

    def close_sinks(self) -> None:
        """Close the feed and the history without delivering (a start refused after they opened)."""
        for sink in (self.feed, self.history):
            if sink is not None:
                sink.close()
