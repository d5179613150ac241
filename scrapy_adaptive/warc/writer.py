"""WARC output: every fetch archived, unchanged visits as ``revisit`` records.

``ADAPTIVE_WARC_DIR`` switches it on (``pip install scrapy-adaptive[warc]``,
for warcio).  :class:`WarcMiddleware` sits among the downloader middlewares
at 610, between ``RedirectMiddleware`` (600) and ``CookiesMiddleware``
(700), so it sees every HTTP transaction (redirect hops and retried errors
included) with the body **as sent**: before ``HttpCompressionMiddleware``
(590) decodes it, so ``Content-Encoding`` and the stored bytes agree.  The
HTTP client has already removed the chunked transfer coding, so
``Transfer-Encoding`` is left out of the stored headers (a replay tool would
otherwise try to de-chunk a plain body).  Request records hold the
credentials a request carried (``Authorization``, ``Proxy-Authorization``,
``Cookie``) as ``REDACTED`` unless ``ADAPTIVE_WARC_KEEP_CREDENTIALS``, and
WARC files are created ``0600`` (the folder ``0700``), like the state folder.

**Which record.**  The writer decides by the archive's own content, not by
the change verdict (a digest rule may call a page with a new clock
unchanged, but its bytes are new and the archive never claims bytes it did
not see):

* a body whose payload digest (SHA-1, base32, as warcio writes it) differs
  from the URL's last archived capture: ``request`` + ``response``; it
  becomes the URL's capture;
* a body identical to the capture: ``request`` + ``revisit``, profile
  ``identical-payload-digest``;
* a 304, or a download stopped after its headers (a mid-fetch abort): the
  headers as a ``revisit``, profile ``server-not-modified`` (the server's
  validators said "not modified"), never a truncated ``response``; a 304's
  revisit holds the capture's status and headers as the 304 updates them
  (:func:`~.capture.updated_by_304`), so that replay serves the page.

An embed fetched for a page's capture (:attr:`.HttpExchange.pages`) gets,
after its request record, one ``metadata`` record per such page: concurrent
to its response or revisit, ``application/warc-fields`` with ``via`` (the
page, as Heritrix names where a URL was found), ``page-capture`` (the page
record's WARC-Date) and ``seconds-after-page`` (docs/warc.md).

A revisit's ``WARC-Refers-To`` / ``-Target-URI`` / ``-Date`` and
``WARC-Payload-Digest`` are the capture's: a revisit never refers to
another revisit and never carries the digest of an empty body.  Without a
capture of the URL in this folder (WARC output switched on mid-crawl) a
304 or an abort is not archived (``adaptive/warc/revisit_without_capture``).

**The capture index lives in the WARC folder** (``.adaptive-warc.ldb``),
not in the frontier's record: it describes these files (which capture each
URL has *here*, and how far the last file is known durable), the revisits
written here must refer to captures that are here, and a new state folder
with an old WARC folder still deduplicates against what is archived.  It is
also keyed by the URL the archive knows (the response's), and the digest
is of the body as sent, neither of which is the frontier's.

**Durability** (:mod:`.delivery`).  The writer is a durable sink: every
record is written when its response comes back from the downloader, before
the visit's verdict is committed, and :meth:`WarcWriter.make_durable`
(flush + fsync) runs before the versions whose items are through are
confirmed; so a version the frontier counts has its capture in the archive.
Captures enter the index only after they are durable, so a kill can never
leave the index naming a capture that is not in the files (at worst a
capture is written twice).  Each file holds whole gzip members, one per
record; at open the last file is checked from its last durable offset and
a record cut by a kill is cut off (records before it are kept).
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import time
import zlib
from collections.abc import Callable
from datetime import UTC, datetime
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from ..change.digest import payload_digest
from ..config.spec import ConfigError, counted
from ..runtime.sink_failure import SinkError, sink_error
from ..store.marker import private_opener
from .capture import Capture, HttpExchange, updated_by_304
from .digests import INDEX, DigestIndex

if TYPE_CHECKING:
    from .fleetdigests import FleetDigestIndex

logger = logging.getLogger(__name__)

NOT_MODIFIED_PROFILE = "http://netpreserve.org/warc/1.1/revisit/server-not-modified"
IDENTICAL_PROFILE = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest"
#: stored headers the archive must not keep (see the module docstring)
DROPPED_RESPONSE_HEADERS = frozenset({b"transfer-encoding"})
DROPPED_REQUEST_HEADERS = frozenset({b"proxy-authorization"})
PREFIX_PATTERN = re.compile(r"[A-Za-z0-9._-]+")
EXTRA_MESSAGE = "ADAPTIVE_WARC_DIR is set but warcio is not installed: pip install scrapy-adaptive[warc]"


class WarcError(RuntimeError):
    """The WARC folder cannot be used; the message names it and says why."""


def warc_date(stamp: float) -> str:
    """A WARC/1.1 date (microseconds) for a POSIX time."""
    return datetime.fromtimestamp(stamp, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def complete_members_end(file: io.BufferedIOBase, start: int) -> int:
    """The end of the last whole gzip member at or after *start*.

    Every record is one member, so a member that does not end (a kill mid
    write) or fails its CRC marks where the file must be cut.
    """
    file.seek(start)
    good = start
    position = start
    inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
    pending = b""
    while True:
        chunk = pending or file.read(1 << 20)
        pending = b""
        if not chunk:
            return good
        try:
            inflater.decompress(chunk)
        except zlib.error:
            return good
        if inflater.eof:
            rest = inflater.unused_data
            position += len(chunk) - len(rest)
            good = position
            inflater = zlib.decompressobj(zlib.MAX_WBITS | 16)
            pending = rest
        else:
            position += len(chunk)


class WarcWriter:
    """Writes WARC/1.1 files with a per-URL capture index; a durable sink."""

    def __init__(
        self,
        folder: str,
        *,
        prefix: str = "adaptive",
        max_size: int = 2**30,
        info: dict[str, str] | None = None,
        clock: Callable[[], float] = time.time,
        dedup_across_urls: bool = False,
        digest_index_size: int = 1_000_000,
        fleet_digests: FleetDigestIndex | None = None,
    ) -> None:
        if not PREFIX_PATTERN.fullmatch(prefix):
            raise ConfigError(f"ADAPTIVE_WARC_PREFIX ({prefix!r}) must be letters, digits, '.', '_' or '-'.")
        self.folder = os.path.abspath(os.path.expanduser(folder))
        self.prefix = prefix
        self.max_size = max_size
        self.info = dict(info or {})
        self.clock = clock
        self.dedup_across_urls = dedup_across_urls
        self.digest_index_size = digest_index_size
        self.index: Any = None  # plyvel.DB, opened by open()
        #: payload digest -> first capture under any URL (ADAPTIVE_WARC_DEDUP_ACROSS_URLS):
        #: the folder's own, or the fleet's in Redis (*fleet_digests*, closed with the writer)
        self.digests: DigestIndex | FleetDigestIndex | None = None
        self.fleet_digests = fleet_digests
        self._warc: Any = None  # warcio's WARCWriter (builds records), made by open()
        self.file: io.BufferedWriter | None = None
        self.filename: str | None = None
        self.serial = 0
        #: the other URL the last archived body was first captured under (None: not a cross-URL duplicate)
        self.duplicate_of: str | None = None
        #: captures written but not durable yet (enter the index at make_durable)
        self._pending: dict[str, Capture] = {}
        self._dirty = False
        #: record counts by type, and files opened, for the stats
        self.counts: dict[str, int] = {}
        #: the first write error: nothing more is written, indexed or confirmed
        self.failure: SinkError | None = None
        #: told of that error once (the middleware stops the crawl)
        self.on_failure: Callable[[SinkError], None] | None = None

    # -- life cycle -------------------------------------------------------------

    def open(self) -> None:
        """Create the folder, open the index, repair the last file, start a new one."""
        import plyvel
        from warcio.warcwriter import WARCWriter

        try:
            os.makedirs(self.folder, mode=0o700, exist_ok=True)
            self.index = plyvel.DB(os.path.join(self.folder, INDEX), create_if_missing=True)
        except (OSError, plyvel.Error) as exc:
            raise WarcError(f"ADAPTIVE_WARC_DIR {self.folder} cannot be used: {exc}") from exc
        self._warc = WARCWriter(None, gzip=True, warc_version="1.1")
        try:
            if self.dedup_across_urls:
                self.digests = self.fleet_digests or DigestIndex(self.index, self.digest_index_size)
            self._repair_last_file()
            self._new_file()
        except (OSError, plyvel.Error) as exc:
            self.close()
            raise WarcError(str(self.failure or self._failed(exc))) from None

    def close(self) -> None:
        if self.file is not None and self.failure is not None:
            self.file.raw.close()  # type: ignore[attr-defined]  # nothing more is written: the buffer is dropped
            self.file = None
        if self.file is not None:
            self._close_file()
        if self.index is not None:
            self.index.close()
            self.index = None
            self.digests = None
        if self.fleet_digests is not None:
            self.fleet_digests.close()
            self.fleet_digests = None

    def _repair_last_file(self) -> None:
        raw = self.index.get(b"f")
        if raw is None:
            return
        name, durable = json.loads(raw)
        path = os.path.join(self.folder, name)
        try:
            with open(path, "r+b") as file:
                size = file.seek(0, os.SEEK_END)
                end = complete_members_end(file, durable) if size > durable else size
                if end < size:
                    file.truncate(end)
                    os.fsync(file.fileno())
                    logger.warning(
                        "Cut a record left half-written by a stopped crawl (%s) off %s.",
                        counted(size - end, "byte"),
                        path,
                    )
        except FileNotFoundError:
            pass

    def _new_file(self) -> None:
        stamp = datetime.fromtimestamp(self.clock(), UTC).strftime("%Y%m%d%H%M%S%f")[:17]
        for _ in range(1000):
            name = f"{self.prefix}-{stamp}-{self.serial:05d}.warc.gz"
            self.serial += 1
            try:
                # request records may hold what identifies a session: private to this user
                self.file = open(os.path.join(self.folder, name), "xb", opener=private_opener)  # noqa: SIM115
                break
            except FileExistsError:
                continue
        else:
            raise WarcError(f"ADAPTIVE_WARC_DIR {self.folder}: no free file name for {self.prefix}-{stamp}")
        self.filename = name
        # the repair at the next open starts from here
        self.index.put(b"f", json.dumps([name, 0]).encode())
        _fsync_folder(self.folder)
        record = self._warc.create_warcinfo_record(name, {"format": "WARC File Format 1.1", **self.info})
        self._write(record)
        self.counts["files"] = self.counts.get("files", 0) + 1

    def _close_file(self) -> None:
        assert self.file is not None
        self.make_durable()
        self.file.close()
        self.file = None

    # -- the durable sink ---------------------------------------------------------

    def make_durable(self) -> bool:
        """Flush and fsync the current file, then index the captures it holds.

        False once a write failed: the versions stay unconfirmed and are
        delivered (and archived) again after a restart.
        """
        import plyvel

        if self.failure is not None:
            return False
        if self.file is None or not self._dirty:
            return True
        try:
            self.file.flush()
            os.fsync(self.file.fileno())
            with self.index.write_batch() as batch:
                for uri, capture in self._pending.items():
                    batch.put(b"c/" + uri.encode(), capture.to_json())
                batch.put(b"f", json.dumps([self.filename, self.file.tell()]).encode())
                if self.digests is not None:
                    self.digests.write(batch)
            if self.digests is not None:
                self.digests.evict()
        except (OSError, plyvel.Error) as exc:
            self._failed(exc)
            return False
        self._dirty = False
        self._pending.clear()
        return True

    def _failed(self, exc: BaseException) -> SinkError:
        """The folder cannot be written: said once, the writer stops."""
        if self.failure is None:
            path = os.path.join(self.folder, self.filename or INDEX)
            self.failure = sink_error("WARC file", path, exc)
            if self.on_failure is not None:
                self.on_failure(self.failure)
        return self.failure

    # -- records ------------------------------------------------------------------

    def capture_of(self, uri: str) -> Capture | None:
        """The URL's last archived response (written in this folder)."""
        capture = self._pending.get(uri)
        if capture is not None:
            return capture
        raw = self.index.get(b"c/" + uri.encode())
        return Capture.from_json(raw) if raw is not None else None

    def archive(self, exchange: HttpExchange) -> str | None:
        """Write the records of one HTTP transaction; returns the record type
        written (``response``, ``revisit``) or None when nothing could be.

        Raises :class:`SinkError` once the folder cannot be written.
        """
        import plyvel

        if self.failure is not None:
            raise self.failure
        assert self.file is not None, "open() first"
        try:
            return self._archive(exchange)
        except (OSError, plyvel.Error) as exc:
            raise self._failed(exc) from None

    def _archive(self, exchange: HttpExchange) -> str | None:
        from warcio.statusandheaders import StatusAndHeaders

        date = warc_date(exchange.fetched)
        capture = self.capture_of(exchange.url)
        digest = None if exchange.headers_only else payload_digest(exchange.body)
        self.duplicate_of = None
        elsewhere = None
        if self.digests is not None and digest and exchange.body and (capture is None or capture.digest != digest):
            elsewhere = self.digests.lookup(digest)  # archived before, maybe under another URL
            if elsewhere is not None:
                capture = elsewhere
        if exchange.headers_only or (capture is not None and digest == capture.digest and exchange.body):
            if capture is None:
                self.counts["revisit_without_capture"] = self.counts.get("revisit_without_capture", 0) + 1
                return None
            profile = NOT_MODIFIED_PROFILE if exchange.headers_only else IDENTICAL_PROFILE
            if profile == IDENTICAL_PROFILE and capture.uri != exchange.url:
                self.duplicate_of = capture.uri  # the body was first archived under that URL
            kind = "revisit"
        else:
            kind = "response"
        status_line = f"{exchange.status} {_reason(exchange.status)}".strip()
        http = StatusAndHeaders(status_line, exchange.response_headers, protocol=exchange.protocol)
        if kind == "revisit" and exchange.status == 304:
            assert capture is not None
            line, protocol, headers = updated_by_304(capture, exchange)
            http = StatusAndHeaders(line, headers, protocol=protocol)
        headers = {"WARC-Date": date}
        if kind == "revisit":
            assert capture is not None
            record = self._warc.create_revisit_record(
                exchange.url, capture.digest, capture.uri, capture.date, http_headers=http, warc_headers_dict=headers
            )
            record.rec_headers.replace_header("WARC-Profile", profile)
            record.rec_headers.add_header("WARC-Refers-To", capture.record_id)
        else:
            record = self._warc.create_warc_record(
                exchange.url,
                "response",
                payload=io.BytesIO(exchange.body),
                length=len(exchange.body),
                http_headers=http,
                warc_headers_dict=headers,
            )
        record_id = record.rec_headers.get_header("WARC-Record-ID")
        # the response (or revisit) first, then the request that refers to it
        # (as Heritrix writes them): a kill between the two leaves no request
        # pointing at a record the repair at the next open cut off
        self._write(record)
        self._write(self._request_record(exchange, date, record_id))
        for page, captured in exchange.pages:
            self._write(self._via_record(exchange, date, record_id, page, captured))
        if exchange.body and (kind == "response" or elsewhere is not None):
            # a response, or a revisit of a body first archived elsewhere: the URL's
            # capture from now on (with its own status and headers, for its 304s)
            first = elsewhere or Capture(exchange.url, date, record_id, digest or "")
            self._pending[exchange.url] = Capture(
                first.uri,
                first.date,
                first.record_id,
                digest or "",
                status_line,
                exchange.protocol,
                tuple(exchange.response_headers),
            )
            if kind == "response" and self.digests is not None:
                self.digests.add(Capture(exchange.url, date, record_id, digest or ""))
        if self.duplicate_of is not None:
            self.counts["dedup_across_urls"] = self.counts.get("dedup_across_urls", 0) + 1
        self.counts[kind] = self.counts.get(kind, 0) + 1
        if self.file is not None and self.file.tell() >= self.max_size:
            self._close_file()
            self._new_file()
        return kind

    def _request_record(self, exchange: HttpExchange, date: str, concurrent_to: str) -> Any:
        from urllib.parse import urlsplit

        from warcio.statusandheaders import StatusAndHeaders

        parts = urlsplit(exchange.url)
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        headers = list(exchange.request_headers)
        if not any(name.lower() == "host" for name, _ in headers):
            headers.insert(0, ("Host", parts.netloc))
        http = StatusAndHeaders(f"{exchange.method} {target} HTTP/1.1", headers, is_http_request=True)
        self.counts["request"] = self.counts.get("request", 0) + 1
        return self._warc.create_warc_record(
            exchange.url,
            "request",
            payload=io.BytesIO(exchange.request_body),
            length=len(exchange.request_body),
            http_headers=http,
            warc_headers_dict={"WARC-Date": date, "WARC-Concurrent-To": concurrent_to},
        )

    def _via_record(self, exchange: HttpExchange, date: str, concurrent_to: str, page: str, captured: float) -> Any:
        """The ``metadata`` record of an embed fetched for a page's capture:
        the page (``via``, as Heritrix names the URL a URL was found on), the
        WARC-Date of the page's records and how many seconds after it the
        embed was fetched (see docs/warc.md)."""
        fields = (
            f"via: {page}\r\n"
            f"page-capture: {warc_date(captured)}\r\n"
            f"seconds-after-page: {exchange.fetched - captured:.3f}\r\n"
        ).encode()
        self.counts["metadata"] = self.counts.get("metadata", 0) + 1
        return self._warc.create_warc_record(
            exchange.url,
            "metadata",
            payload=io.BytesIO(fields),
            length=len(fields),
            warc_content_type="application/warc-fields",
            warc_headers_dict={"WARC-Date": date, "WARC-Concurrent-To": concurrent_to},
        )

    def _write(self, record: Any) -> None:
        assert self.file is not None
        self._warc.out = self.file
        self._warc.write_record(record)
        self._dirty = True


def _reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


def _fsync_folder(folder: str) -> None:
    """Make a new file's directory entry durable."""
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
