"""The feed file as a durable sink: ``-o items.jsonl`` flushed and fsynced
before the versions whose items it holds are confirmed (see :mod:`.delivery`),
repaired after a kill, and stopped cleanly when its disk is full."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import IO, TYPE_CHECKING, Any

from scrapy.exporters import CsvItemExporter, JsonLinesItemExporter
from scrapy.extensions.feedexport import FileFeedStorage

from ..runtime.delivery import SINK_CLOSED, SINK_OPENED
from ..runtime.sink_failure import SINK_FAILED, GuardedFile, drop_partial_line, sink_error

if TYPE_CHECKING:
    from scrapy import Spider
    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from scrapy.signalmanager import SignalManager

logger = logging.getLogger(__name__)


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
        #: a write failed (said once with SINK_FAILED): nothing more is confirmed
        self.failed = False
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
        try:
            if self.write_mode == "ab" and self.line_format:
                drop_partial_line(self.path)
            if self.line_kind == CSV:
                self._header_once()
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            self.file = GuardedFile(self.path, self.write_mode, self._write_failed)
        except OSError as exc:
            # a folder of the feed's name, a path under a file, no room: said
            # once like a failed write (the crawl stops, nothing is confirmed),
            # not a traceback at every item while versions are counted
            self._write_failed(exc)
            self.file = GuardedFile(os.devnull, "wb", self._write_failed)
            self.file.error = exc  # drops what the exporter writes
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

    def _write_failed(self, exc: OSError) -> None:
        """The file cannot be written: said once, and nothing more is confirmed."""
        if self.failed:
            return
        self.failed = True
        if self.signals is not None:
            self.signals.send_catch_log(SINK_FAILED, sink=self, error=sink_error("feed file", self.path, exc))

    def make_durable(self) -> bool:
        if self.file is None or self.file.closed:
            return True
        if self.holds_back or self.failed:
            return False
        return self._sync(self.file)

    def _sync(self, file: IO[bytes]) -> bool:
        file.flush()  # a GuardedFile reports its own error
        if self.failed:
            return False
        try:
            os.fsync(file.fileno())
        except OSError as exc:
            self._write_failed(exc)
            return False
        return True

    def store(self, file: IO[bytes]) -> None:
        try:
            if not file.closed:
                self._sync(file)
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
