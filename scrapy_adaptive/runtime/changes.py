"""Change events leave the state: to the changes feed, as a signal, as items.

The frontier writes each change event (:mod:`..change.events`) to its
outbox in the same atomic write as the visit that made it, or, for a
version awaiting the delivery of its items, in the write that confirms it
(:meth:`~..frontier.pending.PendingVersions.hold`).  Once a second
:class:`ChangeEvents` takes the oldest ones out: it appends them to the
state folder's history (``changes.log``, :mod:`.changelog`, which the
console reads), to the changes feed (``ADAPTIVE_CHANGES_FEED``) and to
the spools of the notification channels (``ADAPTIVE_NOTIFY``, :mod:`.notify`),
flushes and fsyncs them, sends each
as the :data:`CHANGE_EVENT` signal, and only then deletes them from the
outbox, in one write.  A kill at any moment loses none: what was not
deleted is delivered again at the next start (at least once; a consumer
that must not see one twice keys it by URL, kind and time).  A feed or a
history that cannot be written (a full disk) stops the crawl like a full state store
(:mod:`.sink_failure`), and the events wait in the outbox.

With ``ADAPTIVE_CHANGES_AS_ITEMS`` each event also goes through the
project's item pipelines as a :class:`~..change.events.ChangeEvent` (the
engine adapter hands them over: Scrapy has no public way to feed the
pipelines from outside a callback), after the signal and before the delete:
the outbox lets an event go only once the pipelines are done with it.  A
``DropItem`` is done with it.  Any other exception is said in one line and
the event stays in the outbox, set aside for the rest of the run (a pipeline
that fails on it would fail again a second later, and it must not hold up
the events behind it), and is delivered again at the next start, to the
history, the feed and the signal too: what happens to a version whose item
a pipeline failed on (it stays pending, :mod:`.delivery`).  The pipelines
open after the scheduler and close before it, so events wait until the
pipelines are attached, and those left when they close wait for the next start.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import os
import time
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from scrapy.exceptions import DropItem

from ..change.events import FIELDS, ChangeEvent, read_event
from ..config.spec import ConfigError
from .changelog import ChangesLog, json_line
from .sink_failure import EVENTS_AGAIN, drop_partial_line, sink_error

if TYPE_CHECKING:
    from scrapy.signalmanager import SignalManager
    from scrapy.statscollectors import StatsCollector

    from ..frontier import Frontier
    from ..store.base import StoreError
    from .notify import Notifier

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
            missing = "is not a folder" if os.path.exists(folder) else "does not exist"
            raise ConfigError(f"ADAPTIVE_CHANGES_FEED ({path!r}): the folder {folder} {missing}.")
        try:
            drop_partial_line(path)  # a kill mid-write: the events in it are still in the outbox
            self._file = open(path, "ab")  # noqa: SIM115 - held open for the crawl, closed by close()
        except OSError as exc:
            raise ConfigError(f"ADAPTIVE_CHANGES_FEED ({path!r}) cannot be opened for writing: {exc}.") from None
        #: a CSV feed's columns: :data:`FIELDS`, or those of the header the file began with
        self.columns = list(FIELDS)
        if self.format == "csv" and self._file.tell() == 0:
            self._file.write(self._csv([self.columns]))
        elif self.format == "csv":
            self.columns = self._header(path)

    @staticmethod
    def _header(path: str) -> list[str]:
        """The columns of a CSV feed begun by an earlier version (fields are
        only ever added, at the end): its rows go on under its header, and
        the fields it lacks are said once, with how to get them."""
        with open(path, encoding="utf-8", errors="replace") as file:
            header = next(csv.reader([file.readline(1 << 16)]), [])
        columns = [name for name in header if name in FIELDS]
        if not columns:
            return list(FIELDS)  # no header of ours: the rows as they are now
        missing = [name for name in FIELDS if name not in columns]
        if missing:
            logger.warning(
                "ADAPTIVE_CHANGES_FEED (%r) was begun without the column%s %s: its events go on without %s "
                "(a new file gets every column).",
                path,
                "s" if len(missing) > 1 else "",
                ", ".join(missing),
                "them" if len(missing) > 1 else "it",
            )
        return columns

    @staticmethod
    def _csv(rows: list[list[Any]]) -> bytes:
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerows(rows)
        return text.getvalue().encode("utf-8")

    def write(self, events: list[dict[str, Any]]) -> None:
        """Append *events* and make them durable (flush and fsync): raises
        a :class:`~.sink_failure.SinkError` naming the file when it cannot."""
        if self.format == "csv":
            data = self._csv([[_cell(event.get(name)) for name in self.columns] for event in events])
        else:
            data = b"".join(json_line(event) for event in events)
        try:
            self._file.write(data)
            self._file.flush()
            os.fsync(self._file.fileno())
        except OSError as exc:
            raise sink_error("changes feed", self.path, exc, EVENTS_AGAIN) from None

    def close(self) -> None:
        try:
            self._file.close()
        except OSError:
            pass  # what was not made durable is still in the outbox


def _cell(value: Any) -> Any:
    """One CSV cell: a structured value (items mode's ``fields``, any dict or
    list) as JSON, so a consumer reads it back with ``json.loads`` (the csv
    module would write its Python repr); None as an empty cell."""
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return value


#: what the pipelines did with one event: None (passed it on), the
#: ``DropItem`` or the exception a pipeline raised
PipelineOutcome = BaseException | None


class EventSink(Protocol):
    """Where the drain writes events before it takes them out of the outbox:
    the changes feed (:class:`ChangesFeed`), the notifications' spools
    (:class:`~.notify.Notifier`)."""

    def write(self, events: list[dict[str, Any]]) -> None:
        """Make *events* durable, or raise a :class:`~.sink_failure.SinkError`
        naming the file (the crawl stops, the events wait in the outbox)."""

    def close(self) -> None: ...


class EventPipelines(Protocol):
    """The project's item pipelines, as the drain sees them
    (:class:`~..integration.engine.ChangeEventProcessor`)."""

    def process(self, events: list[ChangeEvent], done: Callable[[list[PipelineOutcome]], None]) -> None:
        """Hand *events* to the pipelines one after the other; once the last
        is through, call *done* with each one's :data:`PipelineOutcome`, in order."""


def where_raised(exc: BaseException) -> str:
    """``ValueError: no price, at pipelines.py:12 in process_item``: the
    exception and the innermost line that raised it, for a one-line error."""
    frames = traceback.extract_tb(exc.__traceback__)
    said = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if not frames:
        return said
    frame = frames[-1]
    return f"{said}, at {os.path.basename(frame.filename)}:{frame.lineno} in {frame.name}"


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
        as_items: bool = False,
        notify: Notifier | None = None,
    ) -> None:
        self.frontier = frontier
        self.feed = feed
        #: ``ADAPTIVE_NOTIFY``: each channel's spool takes its events, durably, like the feed
        self.notify = notify
        #: the durable sinks written before the outbox lets events go, after the history
        self.sinks: list[EventSink] = [sink for sink in (feed, notify) if sink is not None]
        #: the state folder's ``changes.log``, which the console reads
        self.history = history
        self.clock = clock
        self.signals = signals
        self.stats = stats
        self.on_error = on_error
        self.limit = limit
        #: the feed failed: nothing more leaves the outbox in this run
        self.stopped = False
        #: ``ADAPTIVE_CHANGES_AS_ITEMS``: nothing leaves the outbox but through the pipelines
        self.as_items = as_items
        #: the item pipelines, while they are open (:meth:`attach`)
        self.pipelines: EventPipelines | None = None
        #: a batch is in the pipelines: no other is read until it is through
        self.busy = False
        #: events a pipeline failed on, kept in the outbox for the next start: ``(queue, key)``
        self.held: set[tuple[str, bytes]] = set()

    def attach(self, pipelines: EventPipelines) -> None:
        """The item pipelines are open: events go through them from now on."""
        self.pipelines = pipelines

    def detach(self) -> None:
        """The item pipelines close: what is left waits for the next start."""
        self.pipelines = None

    def run(self) -> None:
        self.drain()
        if self.notify is not None:  # what the channels' spools hold, when due
            self.notify.run()

    def drain(self) -> int:
        """Deliver the oldest events; returns how many left the outbox (or,
        as items, went into the pipelines)."""
        if self.stopped or self.busy or (self.as_items and self.pipelines is None):
            return 0
        rows = self.frontier.outbox.events(self.limit + len(self.held))
        if self.held:
            rows = [row for row in rows if (row[0], row[1]) not in self.held][: self.limit]
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
                events.append((queue, key, event))
        said = [event for _, _, event in events]
        try:  # the history, then the feed and the notifications' spools: durable before the outbox lets go
            if said and self.history is not None:
                self.history.write(said, self.clock())
            for sink in self.sinks if said else ():
                sink.write(said)
        except Exception as exc:  # a SinkError: said once, the crawl stops, the events wait
            self.stopped = True
            self.on_error(exc)  # type: ignore[arg-type]
            return 0
        if self.signals is not None:
            for event in said:
                self.signals.send_catch_log(CHANGE_EVENT, event=event)
        if garbled:
            self.stats.inc_value("adaptive/events/garbled", len(garbled))
        if self.pipelines is None:
            self._delivered([(queue, key) for queue, key, _ in rows], len(said))
            return len(rows)
        self.busy = True
        items = [ChangeEvent(**event) for event in said]
        self.pipelines.process(items, lambda outcomes: self._through_pipelines(events, garbled, outcomes))
        return len(rows)

    def _through_pipelines(
        self,
        events: list[tuple[str, bytes, dict[str, Any]]],
        garbled: list[tuple[str, bytes]],
        outcomes: list[PipelineOutcome],
    ) -> None:
        """The pipelines are done with a batch: the events they passed on or
        dropped leave the outbox, those they failed on stay for the next start."""
        self.busy = False
        done = list(garbled)
        for (queue, key, event), outcome in zip(events, outcomes, strict=True):
            if outcome is None or isinstance(outcome, DropItem):
                done.append((queue, key))
                self.stats.inc_value("adaptive/events/items/" + ("passed" if outcome is None else "dropped"))
                continue
            self.held.add((queue, key))
            self.stats.inc_value("adaptive/events/items/failed")
            logger.error(
                "An item pipeline failed on the change event %s of %s (%s); the event stays in the state and is "
                "delivered again at the next start.",
                event["kind"],
                event["url"],
                where_raised(outcome),
            )
        try:
            self._delivered(done, len(done) - len(garbled))
        except Exception as exc:  # a StoreError (the tick is not there to catch it): the crawl stops, the events wait
            self.stopped = True
            self.on_error(exc)  # type: ignore[arg-type]

    def _delivered(self, keys: list[tuple[str, bytes]], events: int) -> None:
        self.frontier.outbox.events_delivered(keys)
        self.stats.inc_value("adaptive/events/delivered", events)

    def close(self) -> None:
        """Deliver what is left (bounded; as items, nothing: the pipelines
        closed already and what is left waits for the next start), then
        close the feed."""
        try:
            for _ in range(100):
                if self.drain() < self.limit:
                    break
        finally:
            self.close_sinks()

    def close_sinks(self) -> None:
        """Close the sinks and the history without delivering (a start refused after they opened)."""
        for sink in [*self.sinks, self.history]:
            if sink is not None:
                sink.close()
