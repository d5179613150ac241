"""At-least-once delivery: a version the frontier counts is in the user's store.

The frontier records a changed visit the moment it is judged, but its items
reach the user's store later: through the item pipelines, then a feed
exporter's buffered file.  A ``kill -9`` in between used to lose them for
good, because after the restart the page answered 304 / unchanged.  So a
changed visit is committed as *pending delivery* (``Frontier.update(...,
deliver=True)``, in the same atomic write as the verdict) and counted as a
version only once it is confirmed here:

1. :meth:`Delivery.open` gives the visit a :class:`Ticket` (in the request's
   private meta) when :class:`~.verdicts.Verdicts` commits a changed verdict;
2. the visit middleware counts every item the callback yields for that
   response (:meth:`Ticket.item_yielded`) and says when the output ended
   (:meth:`Ticket.output_done`);
3. Scrapy's ``item_scraped`` / ``item_dropped`` signals say each item has
   passed the pipelines (a pipeline is durable when ``process_item``
   returns); ``item_error`` fails the ticket: the version stays pending;
4. once a second (:meth:`Delivery.flush`, the scheduler's tick, and at
   close) every registered **durable sink** is made durable (the feed file
   flushed and fsynced), then every ticket complete before that is confirmed
   to the frontier in one write (``Frontier.confirm``).

A restart makes every URL still pending due again, judged against the
digest last delivered and without validators, so its items come again
(``Frontier.load``).  Delivery is at least once: a version may be delivered
twice (killed after the feed was written, before the confirmation).

**Durable sinks** are anything that buffers items: :class:`DurableSink`
(one method) announced with the :data:`SINK_OPENED` / :data:`SINK_CLOSED`
signals.  :class:`DurableFileFeedStorage` (installed by the add-on for
``-o file`` feeds) is one; a WARC writer or a pipeline that batches its
writes is another: send ``crawler.signals.send_catch_log(SINK_OPENED,
sink=self)`` when it opens and :data:`SINK_CLOSED` after its last write is
durable.
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any, Protocol

from scrapy.exporters import CsvItemExporter, JsonLinesItemExporter
from scrapy.extensions.feedexport import FileFeedStorage

from .. import meta

if TYPE_CHECKING:
    from scrapy import Request, Spider
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.settings import BaseSettings
    from scrapy.signalmanager import SignalManager
    from scrapy.statscollectors import StatsCollector

    from ..frontier import Frontier

logger = logging.getLogger(__name__)

#: signal sent by a durable sink when it opens (argument: ``sink``)
SINK_OPENED = object()
#: signal sent by a durable sink once its last write is durable (``sink``)
SINK_CLOSED = object()


class DurableSink(Protocol):
    """Where items go that must be made durable before versions count."""

    def make_durable(self) -> bool:
        """Make everything written so far durable (flush, fsync).

        Return False when that is impossible right now (a compressor holding
        data back until the end): no version is confirmed until the sink
        closes, and a kill before then re-delivers them.
        """


class Ticket:
    """One changed visit's items on their way to the user's store."""

    __slots__ = ("delivery", "_request", "url", "fp", "digest", "yielded", "settled", "done", "failed")

    def __init__(self, delivery: Delivery, request: Request, fp: bytes, digest: str | None) -> None:
        self.delivery = delivery
        # Weak: the ticket sits in the request's meta, and a strong reference
        # back would make every changed visit's request (its meta, headers,
        # callback) a reference cycle, left for the cyclic garbage collector
        # instead of being freed when the visit is done; at hundreds of
        # pages a second those collections cost more than the tickets.
        self._request = weakref.ref(request)
        self.url = request.url
        self.fp = fp
        self.digest = digest
        self.yielded = 0  #: items the callback produced
        self.settled = 0  #: items through the pipelines (scraped or dropped)
        self.done = False  #: the callback's output has ended
        self.failed = False  #: an item failed in a pipeline

    @property
    def request(self) -> Request | None:
        """The request of the changed visit (None once it is gone)."""
        return self._request()

    @property
    def complete(self) -> bool:
        return self.done and self.settled >= self.yielded and not self.failed

    def item_yielded(self) -> None:
        self.yielded += 1

    def output_done(self) -> None:
        self.done = True
        self.delivery.check(self)

    def item_settled(self, *, ok: bool) -> None:
        self.settled += 1
        self.failed = self.failed or not ok
        self.delivery.check(self)


def ticket_of(response: Response | None) -> Ticket | None:
    """The delivery ticket of the request *response* answers, if it has one.

    Checked by identity: a child request that copied ``response.meta``
    carries its parent's ticket, which is not its own.
    """
    request = response.request if response is not None else None
    if request is None:
        return None
    ticket = request.meta.get(meta.DELIVERY)
    return ticket if isinstance(ticket, Ticket) and ticket.request is request else None


class Delivery:
    """Tracks tickets and sinks; confirms complete tickets in group commits."""

    def __init__(self, stats: StatsCollector) -> None:
        self.stats = stats
        #: the frontier that counts confirmed versions (bound at open)
        self.frontier: Frontier | None = None
        self.sinks: list[DurableSink] = []
        self._open: set[Ticket] = set()
        self._complete: list[Ticket] = []

    @classmethod
    def connected(cls, stats: StatsCollector, signals: SignalManager) -> Delivery:
        """A delivery listening to the crawl's item and sink signals."""
        from scrapy import signals as scrapy_signals

        delivery = cls(stats)
        signals.connect(delivery.item_scraped, scrapy_signals.item_scraped)
        signals.connect(delivery.item_dropped, scrapy_signals.item_dropped)
        signals.connect(delivery.item_error, scrapy_signals.item_error)
        signals.connect(delivery.sink_opened, SINK_OPENED)
        signals.connect(delivery.sink_closed, SINK_CLOSED)
        return delivery

    def bind(self, frontier: Frontier) -> None:
        self.frontier = frontier

    # -- tickets ---------------------------------------------------------------

    def open(self, request: Request, fp: bytes, digest: str | None) -> Ticket:
        """A changed visit was committed pending delivery: track its items."""
        ticket = Ticket(self, request, fp, digest)
        request.meta[meta.DELIVERY] = ticket
        self._open.add(ticket)
        self.stats.inc_value("adaptive/delivery/pending")
        return ticket

    def check(self, ticket: Ticket) -> None:
        """Move a ticket on once all its items are through."""
        if ticket not in self._open:
            return
        if ticket.failed:
            self._open.discard(ticket)
            self.stats.inc_value("adaptive/delivery/failed")
            logger.warning(
                "An item of %s failed in a pipeline: its version is not confirmed and is delivered again "
                "after a restart.",
                ticket.url,
            )
        elif ticket.complete:
            self._open.discard(ticket)
            self._complete.append(ticket)

    # Scrapy's item signals (only the arguments used are declared)

    def item_scraped(self, response: Response | None = None) -> None:
        if (ticket := ticket_of(response)) is not None:
            ticket.item_settled(ok=True)

    def item_dropped(self, response: Response | None = None) -> None:
        if (ticket := ticket_of(response)) is not None:
            ticket.item_settled(ok=True)  # the user's pipeline decided: delivered as wanted

    def item_error(self, response: Response | None = None) -> None:
        if (ticket := ticket_of(response)) is not None:
            ticket.item_settled(ok=False)

    # -- sinks -----------------------------------------------------------------

    def sink_opened(self, sink: DurableSink) -> None:
        if sink not in self.sinks:
            self.sinks.append(sink)

    def sink_closed(self, sink: DurableSink) -> None:
        if sink in self.sinks:
            self.sinks.remove(sink)

    # -- group commit ------------------------------------------------------------

    def flush(self) -> int:
        """Make every sink durable, then confirm the tickets complete before.

        Returns the versions confirmed (0 while a sink cannot be made
        durable).  Store errors propagate: the caller stops the crawl.
        """
        if not self._complete or self.frontier is None:
            return 0
        ready, self._complete = self._complete, []
        if not all([sink.make_durable() for sink in list(self.sinks)]):
            self._complete = ready + self._complete
            return 0
        try:
            counted = self.frontier.confirm([(t.fp, t.digest) for t in ready])
        except Exception:
            self._complete = ready + self._complete
            raise
        self.stats.inc_value("adaptive/delivery/confirmed", counted)
        return counted

    @property
    def waiting(self) -> int:
        """Tickets not confirmed yet (items in flight, or held by a sink)."""
        return len(self._open) + len(self._complete)

    def close(self) -> None:
        """Confirm what can be; what cannot is delivered again after a restart."""
        self.flush()
        left = self.waiting
        if left:
            self.stats.set_value("adaptive/delivery/unconfirmed_at_close", left)
            logger.info(
                "%d changed pages were not confirmed delivered; they are delivered again at the next start.", left
            )
        self._open.clear()
        self._complete.clear()


#: feed formats with one item per line: every name Scrapy gives its
#: JSON-lines and CSV exporters (FEED_EXPORTERS_BASE)
LINE_FORMATS = frozenset({"jsonl", "jsonlines", "jl", "csv"})
#: the ``csv`` kind of :func:`line_kind` (a header line, then one item per line)
CSV = "csv"
#: the other kind: one item per line, nothing else
LINES = "lines"
#: where the feed options keep the user's own ``include_headers_line`` (the
#: storage of every batch of a feed shares one options dict, and rewrites
#: the exporter's value in it at each open)
HEADERS_OPTION = "scrapy_adaptive.include_headers_line"


def line_kind(feed_format: Any, exporters: Mapping[str, Any] | None = None) -> str | None:
    """:data:`CSV` or :data:`LINES` for a format whose exporter writes one item
    per line, None for any other (JSON, XML...).

    Judged by the exporter class the format names in *exporters* (Scrapy's
    ``FEED_EXPORTERS_BASE`` and the project's ``FEED_EXPORTERS``), so a
    project's own name for a JSON-lines or CSV exporter counts too; without
    them, by Scrapy's names (:data:`LINE_FORMATS`).
    """
    exporter: Any = None
    if exporters is not None and isinstance(feed_format, str):
        exporter = exporters.get(feed_format)
        if isinstance(exporter, str):
            from scrapy.utils.misc import load_object

            try:
                exporter = load_object(exporter)
            except (ImportError, AttributeError, NameError, ValueError):
                exporter = None
    if not isinstance(exporter, type):
        if feed_format not in LINE_FORMATS:
            return None
        return CSV if feed_format == "csv" else LINES
    if issubclass(exporter, CsvItemExporter):
        return CSV
    if issubclass(exporter, JsonLinesItemExporter):
        return LINES
    return None


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
                    logger.warning("Cut a half-written last line (%d bytes) off %s.", size - start - cut - 1, path)
                    return
                start = max(0, start - 65536)
    except FileNotFoundError:
        return


class DurableFileFeedStorage(FileFeedStorage):
    """Scrapy's file feed storage, made a :class:`DurableSink`.

    The add-on installs it for plain paths and ``file://`` URIs
    (``FEED_STORAGES``), so ``-o items.jsonl`` is flushed and fsynced before
    the versions whose items it holds are confirmed.  With a
    ``postprocessing`` option (gzip, ...) the compressor holds data back
    until the feed is closed: versions are confirmed only then.  Appending
    to a line format (JSON lines, CSV), a half-written last line left by a
    killed crawl is cut off first, and a CSV file that already has lines
    gets no second header: a continuous crawl appends at every start.
    """

    def __init__(
        self,
        uri: str,
        *,
        feed_options: dict[str, Any] | None = None,
        signals: SignalManager | None = None,
        exporters: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(uri, feed_options=feed_options)
        self.signals = signals
        self.file: IO[bytes] | None = None
        #: the options Scrapy builds this feed's exporter with, after open()
        self.feed_options = feed_options if feed_options is not None else {}
        #: a postprocessing chain buffers compressed data until it closes
        self.holds_back = bool(self.feed_options.get("postprocessing"))
        #: one item per line (CSV, LINES or None): a killed crawl's half-written last line can go
        self.line_kind = line_kind(self.feed_options.get("format"), exporters)
        self.line_format = self.line_kind is not None

    @classmethod
    def from_crawler(
        cls, crawler: Crawler, uri: str, *, feed_options: dict[str, Any] | None = None
    ) -> DurableFileFeedStorage:
        settings = crawler.settings
        exporters = {**settings.getdict("FEED_EXPORTERS_BASE"), **settings.getdict("FEED_EXPORTERS")}
        return cls(uri, feed_options=feed_options, signals=crawler.signals, exporters=exporters)

    def open(self, spider: Spider) -> IO[bytes]:
        if self.write_mode == "ab" and self.line_format:
            drop_partial_line(self.path)
        if self.line_kind == CSV:
            self._header_once()
        self.file = super().open(spider)
        if self.signals is not None:
            self.signals.send_catch_log(SINK_OPENED, sink=self)
        return self.file

    def _header_once(self) -> None:
        """A CSV header only at the top of the file: not when appending to a
        file that already has lines (Scrapy's exporter writes one at every
        start).  Set in the options the exporter is built from, just before
        Scrapy builds it."""
        kwargs = self.feed_options.setdefault("item_export_kwargs", {})
        wanted = self.feed_options.setdefault(HEADERS_OPTION, kwargs.get("include_headers_line", True))
        try:
            has_lines = self.write_mode == "ab" and os.path.getsize(self.path) > 0
        except OSError:
            has_lines = False
        kwargs["include_headers_line"] = bool(wanted) and not has_lines

    def make_durable(self) -> bool:
        if self.file is None or self.file.closed:
            return True
        if self.holds_back:
            return False
        self.file.flush()
        os.fsync(self.file.fileno())
        return True

    def store(self, file: IO[bytes]) -> None:
        try:
            if not file.closed:
                file.flush()
                os.fsync(file.fileno())
                file.close()
        finally:
            self.file = None
            if self.signals is not None:
                self.signals.send_catch_log(SINK_CLOSED, sink=self)


DURABLE_FILE_STORAGE = f"{DurableFileFeedStorage.__module__}.{DurableFileFeedStorage.__qualname__}"


def feed_warnings(settings: BaseSettings) -> list[str]:
    """What a user's ``FEEDS`` lose across a kill or a restart, as messages."""
    from scrapy.utils.misc import load_object

    messages = []
    storages = {**settings.getdict("FEED_STORAGES_BASE"), **settings.getdict("FEED_STORAGES")}
    for uri, options in settings.getdict("FEEDS").items():
        uri = str(uri)
        scheme = uri.split(":", 1)[0] if "://" in uri or uri.startswith("file:") else ""
        path = storages.get(scheme) or storages.get("file")
        try:
            cls = load_object(path) if isinstance(path, str) else path
        except (ImportError, AttributeError, ValueError):
            continue
        durable = isinstance(cls, type) and issubclass(cls, DurableFileFeedStorage)
        if not durable:
            messages.append(
                f"Feed {uri}: its storage ({getattr(cls, '__name__', cls)}) is not a durable sink, so "
                "scrapy-adaptive cannot know when its items are stored (S3, GCS, FTP store a file at close or "
                "every FEED_EXPORT_BATCH_ITEM_COUNT items): versions are confirmed when their items have passed "
                "the pipelines, and a killed crawl loses the items not stored yet."
            )
        elif (options or {}).get("overwrite"):
            messages.append(
                f"Feed {uri} is overwritten at every start (-O, overwrite=True): items delivered by earlier runs "
                "of this continuous crawl are gone from it. Use -o (append) to keep every version."
            )
    return messages
