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
   to the frontier in one write (``Frontier.outbox.confirm``).

A restart makes every URL still pending due again, judged against the
digest last delivered and without validators, so its items come again
(``Frontier.load``).  Delivery is at least once: a version may be delivered
twice (killed after the feed was written, before the confirmation).

**Durable sinks** are anything that buffers items: :class:`DurableSink`
(one method) announced with the :data:`SINK_OPENED` / :data:`SINK_CLOSED`
signals.  :class:`~.feedfile.DurableFileFeedStorage` (installed by the
add-on for ``-o file`` feeds) is one; a WARC writer or a pipeline that batches its
writes is another: send ``crawler.signals.send_catch_log(SINK_OPENED,
sink=self)`` when it opens and :data:`SINK_CLOSED` after its last write is
durable.  A sink that cannot write sends :data:`~.sink_failure.SINK_FAILED`:
nothing more is confirmed and the crawl stops (:mod:`.sink_failure`).
"""

from __future__ import annotations

import logging
import weakref
from typing import TYPE_CHECKING, Protocol

from .. import meta
from .sink_failure import SINK_FAILED, SinkError

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.http import Response
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


#: why a ticket failed (the suffix of the ``adaptive/delivery/failed/...`` stat)
PIPELINE = "pipeline"
CALLBACK = "callback"


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
        #: why the version cannot be confirmed: "" (it can), PIPELINE or CALLBACK
        self.failed = ""

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

    def callback_failed(self) -> None:
        """The callback raised: what it yielded may be part of the page's items
        only, so the version is not confirmed (it comes again after a restart,
        once the callback can be fixed)."""
        self.failed = self.failed or CALLBACK
        self.output_done()

    def item_settled(self, *, ok: bool) -> None:
        self.settled += 1
        if not ok:
            self.failed = self.failed or PIPELINE
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
        #: a sink that cannot write: nothing more is confirmed, the crawl stops
        self.failure: SinkError | None = None
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
        signals.connect(delivery.sink_failed, SINK_FAILED)
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
            self.stats.inc_value(f"adaptive/delivery/failed/{ticket.failed}")
            logger.warning(
                "%s of %s: its version is not confirmed and is delivered again after a restart.",
                "The callback raised on the response" if ticket.failed == CALLBACK else "An item failed in a pipeline",
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

    def sink_failed(self, sink: DurableSink, error: SinkError) -> None:
        """A sink cannot write: the first failure is the one reported."""
        if self.failure is None:
            self.failure = error

    # -- group commit ------------------------------------------------------------

    def flush(self) -> int:
        """Make every sink durable, then confirm the tickets complete before.

        Returns the versions confirmed (0 while a sink cannot be made
        durable).  Store errors, and a sink that failed, propagate: the
        caller stops the crawl.
        """
        if self.failure is not None:
            raise self.failure
        if not self._complete or self.frontier is None:
            return 0
        ready, self._complete = self._complete, []
        if not all([sink.make_durable() for sink in list(self.sinks)]):
            self._complete = ready + self._complete
            return 0
        try:
            counted = self.frontier.outbox.confirm([(t.fp, t.digest) for t in ready])
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
        try:
            self.flush()
        finally:
            self._forget()

    def _forget(self) -> None:
        left = self.waiting
        if left:
            self.stats.set_value("adaptive/delivery/unconfirmed_at_close", left)
            logger.info(
                "%d changed pages were not confirmed delivered; they are delivered again at the next start.", left
            )
        self._open.clear()
        self._complete.clear()
