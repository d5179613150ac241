"""URLs out of the frontier: issued, being downloaded, awaiting a verdict.

An issued URL is *out* until its verdict comes (:meth:`Frontier.update`) or
its lease lapses.  The downloader's signals mark when its fetch started and
ended: the end starts the host slot's politeness wait at once (before the
verdict), and a URL being downloaded never lapses.

:class:`Leases` is the one holder of what is out; the frontier's other
parts ask it (``lent``, ``is_out``) rather than keep their own list.  The
crawl sees it as :class:`Downloads` (``Frontier.downloads``): the signals of
a download's life, and the URLs whose lease ran out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Protocol

from ..model import RecordView, UrlRecord
from .crawltime import FetchTimes
from .queues import QueueBook


@dataclass
class Lease:
    queue: str
    issued: float
    lease_until: float
    overdue: float
    #: the record as issued, kept up to date by add(): update() needs no read
    record: UrlRecord
    #: when the downloader took it, and how long its fetch took
    fetch_started: float | None = None
    duration: float | None = None
    #: when its request went out on the network, if the download handler said
    #: (the downloader may hold a request for its own delay before that)
    sent: float | None = None
    #: the downloader holds it (between fetch_started and fetch_ended): its
    #: lease cannot run out, the host is busy with it
    in_flight: bool = False

    @cached_property
    def view(self) -> RecordView:
        """The record as issued (or as an add while out left it), read-only:
        made once for the fetch's readers (the scheduler's request meta, the
        downloader's and spider's middlewares), at the first read (a frontier
        read by no crawl, as in its benchmark, makes none); then a plain
        attribute of the lease."""
        return self.record.view()

    def renew(self, record: UrlRecord) -> None:
        """The URL's record is now *record* (an add while out, a failed write undone)."""
        self.record = record
        self.__dict__.pop("view", None)  # made again at the next read


class Downloads(Protocol):
    """A download's life between ``Frontier.next()`` and ``Frontier.update()``,
    as the crawl tells it (``Frontier.downloads``)."""

    def fetch_started(self, fp: bytes) -> None:
        """The downloader took out URL *fp*: its fetch time counts from now,
        and its lease cannot lapse while the download runs."""

    def request_sent(self, fp: bytes, latency: float) -> None:
        """*fp*'s response headers came *latency* seconds after its request
        went out: its fetch time counts from then."""

    def fetch_ended(self, fp: bytes, duration: float | None = None) -> None:
        """The download of *fp* is over: its host's politeness wait starts now,
        not at the verdict; its fetch took *duration* seconds (None: measured)."""

    def requeue(self, fp: bytes) -> bool:
        """Give out URL *fp* back unchanged (a quick retry re-sends it): due
        again after the politeness wait.  False if it was not out."""

    def lapsed(self) -> list[bytes]:
        """The URLs out for longer than the lease and not being downloaded:
        the crawl gives each its verdict (a retry)."""


class Leases:
    """The out URLs of a frontier (:class:`Downloads` to the crawl)."""

    def __init__(self, book: QueueBook, clock: Callable[[], float], fetch_times: FetchTimes) -> None:
        self.book = book
        self.clock = clock
        self.fetch_times = fetch_times
        self._out: dict[bytes, Lease] = {}
        #: what is out for a fingerprint: its queue, how overdue it was issued,
        #: and its record as issued (the one copy; requests carry the
        #: fingerprint).  The table's own lookup: asked several times per fetch
        self.lent: Callable[[bytes], Lease | None] = self._out.get

    def __len__(self) -> int:
        return len(self._out)

    def __bool__(self) -> bool:
        return bool(self._out)

    def __contains__(self, fp: bytes) -> bool:
        return fp in self._out

    def lend(self, fp: bytes, lease: Lease) -> None:
        self._out[fp] = lease

    def take(self, fp: bytes) -> Lease | None:
        """End *fp*'s lease (its verdict came, or it was forgotten)."""
        return self._out.pop(fp, None)

    def is_out(self, fp: bytes) -> bool:
        return fp in self._out

    def out_queue(self, fp: bytes) -> str | None:
        out = self._out.get(fp)
        return out.queue if out else None

    def fetch_started(self, fp: bytes) -> None:
        """The downloader took *fp*: its fetch time counts from now."""
        out = self._out.get(fp)
        if out is not None:
            out.fetch_started = self.clock()
            out.sent = None
            out.in_flight = True

    def request_sent(self, fp: bytes, latency: float) -> None:
        """The response headers of *fp* came *latency* seconds after its request
        went out: its fetch time counts from then, not from when the downloader
        took it (a request can wait in the downloader's slot, for Scrapy's own
        ``DOWNLOAD_DELAY`` and its jitter, or behind the host's robots.txt)."""
        out = self._out.get(fp)
        if out is not None and out.in_flight:
            out.sent = self.clock() - max(0.0, latency)

    def fetch_ended(self, fp: bytes, duration: float | None = None) -> None:
        """The download of *fp* is over: start its slot's politeness wait.

        Called as soon as the downloader lets go of the request, before the
        verdict, so the host's wait is counted from the end of the fetch.
        Without a *duration* it is measured from :meth:`request_sent`, or else
        from :meth:`fetch_started`.
        """
        out = self._out.get(fp)
        if out is None:
            return
        if out.in_flight and out.fetch_started is not None:
            # the lease counts the time out of the downloader only
            out.lease_until += max(0.0, self.clock() - out.fetch_started)
        out.in_flight = False
        started = out.sent if out.sent is not None else out.fetch_started
        if duration is None and started is not None:
            duration = max(0.0, self.clock() - started)
        if duration is not None:
            out.duration = duration
            self.fetch_times.add(out.queue, duration)
        q = self.book.get(out.queue)
        if q.release_slot(fp, self.clock() + self.book.rest_after(q, duration or 0.0)):
            self.book.schedule(q)

    def requeue(self, fp: bytes) -> bool:
        """Give an out URL back to its queue unchanged (lease end, re-send).

        Its queue entry never moved, so it is due again at once, after the
        slot's politeness wait.
        """
        out = self._out.pop(fp, None)
        if out is None:
            return False
        q = self.book.get(out.queue)
        if q.out.get(fp) is not None:
            q.release_slot(fp, self.clock() + self.book.politeness.min_delay)
        q.out.pop(fp, None)
        entry = (out.record.directive, out.record.next_ms, fp)
        self.book.moved(q, entry, entry)
        self.book.schedule(q)
        return True

    def lapsed(self) -> list[bytes]:
        """URLs out for longer than the lease and not being downloaded.

        A download still running is never taken back, however long it takes
        (the downloader's own ``DOWNLOAD_TIMEOUT`` ends it): issuing the URL
        again would put two fetches on a host that allows one.  The time in
        the downloader does not count against the lease either, so a short
        lease cannot take back a response on its way to the verdict after a
        long download: any lease works with any ``DOWNLOAD_TIMEOUT``.
        """
        now = self.clock()
        return [fp for fp, out in self._out.items() if out.lease_until <= now and not out.in_flight]

    def expire_leases(self) -> list[bytes]:
        """Requeue the :meth:`lapsed` unchanged; return them."""
        return [fp for fp in self.lapsed() if self.requeue(fp)]
