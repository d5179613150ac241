"""The adapters around the parts of Scrapy it has no public way to do.

Scrapy has no public way to ask the engine to poll the scheduler at a given
time: it polls after each download, each ``engine.crawl()`` and on a 5 s
heartbeat.  A URL due at 12:00:00.3 on a free host would wait for the
heartbeat.  :class:`EngineWaker` calls ``engine._slot.nextcall.schedule()``
(with *no* delay: a delayed ``CallLaterOnce.schedule`` makes the engine
ignore every other wake-up until it fires).  ``tests/e2e/test_engine_adapter.py``
pins this behaviour, so a Scrapy upgrade that moves it fails loudly there.

Nor can a component make ``scrapy crawl`` exit with an error: the commands
exit 1 only when the crawler process's ``bootstrap_failed`` is set, which
happens when a crawl raises (and raising from a scheduler leaves a wall of
tracebacks: "Scraper close failure", "Engine slot not assigned") or when the
crawler has no ``spider`` once its crawl is over.  :func:`exit_with_error`
takes the second route once the spider is closed, so the crawl still
closes cleanly; the e2e tests of refusals (``tests/e2e/test_guards.py``) pin
the exit code.

Nor can a component tell Scrapy to log a download error without its
traceback: a fetch that failed and that no errback handled is logged by
Scrapy's scraper (the logger ``scrapy.core.scraper``) with the traceback of
Scrapy's download machinery, some sixty lines for a timeout.
:func:`say_in_one_line` notes the reason on such an exception (a network
failure, a body the server got wrong) and puts a logging filter on that
logger: a record whose exception carries the note loses its traceback and
says the reason instead.  ``tests/e2e/test_guards.py`` pins it.

Nor can an add-on keep Scrapy from printing secrets: once the add-ons have
run, the crawler logs every setting that differs from Scrapy's defaults
("Overridden settings", logger ``scrapy.crawler``), ``HTTPAUTH_PASS``,
``AWS_SECRET_ACCESS_KEY`` and the other passwords and tokens in clear.
:func:`redact_overridden_settings` (called by the add-on) puts a filter on
that logger that rewrites this one record with those values shown as
``REDACTED``; ``tests/e2e/test_secrets.py`` pins it.

Nor can a component hand an item to the item pipelines from outside a
callback (a change event with ``ADAPTIVE_CHANGES_AS_ITEMS``): the pipelines
belong to the scraper's item processor, and the pipelines close before the
scheduler does.  Scrapy builds that processor from its ``ITEM_PROCESSOR``
setting, so the add-on sets it to :class:`ChangeEventProcessor`, Scrapy's
``ItemPipelineManager`` that also takes the events: it is given the drain
(:class:`~..runtime.changes.ChangeEvents`) with ``FRONTIER_OPENED``, joins
it once its pipelines are open, and hands the last events over before they
close.  ``tests/e2e/test_engine_adapter.py`` pins the order it relies on
(the scheduler opens before the item processor, which closes before the
scheduler) and that a processor built from ``ITEM_PROCESSOR`` is the one
the spider's items go through.
"""

from __future__ import annotations

import logging
import math
import pprint
import re
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from scrapy import signals
from scrapy.pipelines import ItemPipelineManager
from scrapy.settings import overridden_settings
from scrapy.utils.asyncio import CallLaterResult, call_later
from scrapy.utils.defer import deferred_from_coro, maybe_deferred_to_future

from ..runtime.wiring import FRONTIER_OPENED

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Self

    from scrapy.crawler import Crawler
    from scrapy.settings import BaseSettings
    from twisted.internet.defer import Deferred

    from ..change.events import ChangeEvent
    from ..runtime.changes import ChangeEvents, PipelineOutcome

logger = logging.getLogger(__name__)

#: the logger Scrapy logs a failed download with ("Error downloading <GET ...>")
SCRAPER_LOGGER = "scrapy.core.scraper"
#: how the note :func:`say_in_one_line` adds to an exception starts
DOWNLOAD_ERROR_NOTE = "scrapy-adaptive: "
#: the logger and the message of Scrapy's "Overridden settings" line
CRAWLER_LOGGER = "scrapy.crawler"
OVERRIDDEN_MESSAGE = "Overridden settings:\n%(settings)s"
#: a setting whose value is a secret, by a word of its name: HTTPAUTH_PASS,
#: FTP_PASSWORD, MAIL_PASS, TELNETCONSOLE_PASSWORD, AWS_SECRET_ACCESS_KEY,
#: AWS_SESSION_TOKEN (not FTP_PASSIVE_MODE)
SECRET_SETTING = re.compile(r"(?:^|_)(?:PASS|PASSWORD|SECRET|TOKEN)(?:_|$)")
REDACTED = "REDACTED"
#: Scrapy's item processor, and ours (the add-on sets ``ITEM_PROCESSOR`` to it with ``ADAPTIVE_CHANGES_AS_ITEMS``)
SCRAPY_ITEM_PROCESSOR = "scrapy.pipelines.ItemPipelineManager"
EVENT_ITEM_PROCESSOR = "scrapy_adaptive.integration.engine.ChangeEventProcessor"
#: batches handed to the pipelines when they close, at most (the drain's limit each)
LAST_BATCHES = 100


class EngineWaker:
    """Ask the engine to call ``next_request()`` soon, or at a given time.

    One timer at a time, for the earliest time asked: the frontier's next
    ready queue.  Timers use ``scrapy.utils.asyncio.call_later``, which works
    with and without Twisted's reactor.
    """

    def __init__(self, crawler: Crawler | None) -> None:
        self._crawler = crawler
        self._warned = False
        self._timer: CallLaterResult | None = None
        self._timer_at = math.inf
        self._stopped = False

    def wake_at(self, ready: float | None) -> None:
        """Wake the engine at *ready* (epoch seconds; None: nothing to wait for)."""
        if ready is None or self._stopped:
            return
        now = time.time()
        if ready <= now:
            self.wake()
            return
        if ready >= self._timer_at:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = ready
        self._timer = call_later(ready - now + 0.005, self._fire)

    def _fire(self) -> None:
        self._timer = None
        self._timer_at = math.inf
        if not self._stopped:
            self.wake()

    def stop(self) -> None:
        """No more wake-ups (the crawl is closing)."""
        self._stopped = True
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def wake(self) -> bool:
        """Return False when the engine cannot be reached (then the 5 s
        heartbeat still drives the crawl, only less promptly)."""
        engine = self._crawler.engine if self._crawler is not None else None
        slot = getattr(engine, "_slot", None)
        nextcall = getattr(slot, "nextcall", None)
        schedule = getattr(nextcall, "schedule", None)
        if schedule is None:
            if not self._warned and engine is not None and getattr(engine, "running", False):
                logger.warning(
                    "scrapy-adaptive cannot wake Scrapy's engine (engine._slot.nextcall is gone in this Scrapy "
                    "version); due URLs wait for the engine's 5 s heartbeat."
                )
                self._warned = True
            return False
        schedule()
        return True


def exit_with_error(crawler: Crawler) -> None:
    """Make the Scrapy command that runs *crawler* exit with code 1.

    Once the spider is closed (connected now, this handler runs after the
    ``spider_closed`` handlers connected before it: feed exports, pipelines),
    the crawler's ``spider`` is cleared: Scrapy's crawler process then counts
    the crawl as failed and ``scrapy crawl`` exits 1.
    """

    def clear_spider() -> None:
        crawler.spider = None

    crawler.signals.connect(clear_spider, signals.spider_closed, weak=False)


class _OneLineDownloadErrors(logging.Filter):
    """Drops the traceback of a network failure and says its reason instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        exception = record.exc_info[1] if record.exc_info else None
        notes = getattr(exception, "__notes__", None) or ()
        reason = next((n[len(DOWNLOAD_ERROR_NOTE) :] for n in notes if n.startswith(DOWNLOAD_ERROR_NOTE)), None)
        if reason is not None:
            record.msg, record.args = f"{record.getMessage()}: {reason}", ()
            record.exc_info = record.exc_text = None
        return True


_ONE_LINE = _OneLineDownloadErrors()


def say_in_one_line(exception: BaseException, reason: str) -> None:
    """If Scrapy logs the failed download *exception*, it says *reason* in one line.

    For failures that are the server's or the network's doing, where a
    traceback shows only Scrapy's download machinery.  The reason travels
    as a note on the exception (an errback that prints the traceback shows
    it too); the filter holds no state and stays for the life of the process.
    """
    exception.add_note(f"{DOWNLOAD_ERROR_NOTE}{reason}")
    logging.getLogger(SCRAPER_LOGGER).addFilter(_ONE_LINE)


class _RedactedOverriddenSettings(logging.Filter):
    """Rewrites the "Overridden settings" record of one crawler's *settings*."""

    def __init__(self, settings: BaseSettings) -> None:
        super().__init__()
        self.settings = settings

    def filter(self, record: logging.LogRecord) -> bool:
        if record.msg != OVERRIDDEN_MESSAGE or not isinstance(record.args, Mapping):
            return True
        shown = dict(overridden_settings(self.settings))
        if record.args.get("settings") != pprint.pformat(shown):
            return True  # another crawler's line (several crawlers in one process)
        redacted = {name: REDACTED if value and SECRET_SETTING.search(name) else value for name, value in shown.items()}
        record.args = {"settings": pprint.pformat(redacted)}
        logging.getLogger(CRAWLER_LOGGER).removeFilter(self)
        return True


def redact_overridden_settings(settings: BaseSettings) -> None:
    """Have the crawler of *settings* log its overridden settings with every
    password, secret key and token as ``REDACTED`` (once; call it while the
    add-ons run, before the crawler logs them)."""
    logging.getLogger(CRAWLER_LOGGER).addFilter(_RedactedOverriddenSettings(settings))


class ChangeEventProcessor(ItemPipelineManager):
    """Scrapy's item pipelines, which also take the crawl's change events.

    The spider's items go through as with Scrapy's own manager.  Change
    events go through the same pipelines (``process_item``, in order), one
    batch at a time, outside Scrapy's item path: no ``item_scraped`` signal,
    so they are neither exported to ``FEEDS`` nor counted in
    ``item_scraped_count``, and Scrapy logs neither "Scraped from" nor
    "Dropped" for them (the drain counts them, ``adaptive/events/items/``).
    """

    def __init__(self, *middlewares: object, crawler: Crawler | None = None) -> None:
        super().__init__(*middlewares, crawler=crawler)
        self._changes: ChangeEvents | None = None
        self._batch: Deferred[None] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        processor = super().from_crawler(crawler)
        crawler.signals.connect(processor._frontier_opened, FRONTIER_OPENED)
        return processor

    def _frontier_opened(self, changes: ChangeEvents | None = None) -> None:
        self._changes = changes if changes is not None and changes.as_items else None

    async def open_spider_async(self) -> None:
        await super().open_spider_async()
        if self._changes is not None:
            self._changes.attach(self)

    async def close_spider_async(self) -> None:
        """The last events through the pipelines (a bounded number of
        batches; the rest wait in the state), then close them."""
        changes = self._changes
        try:
            if changes is not None and changes.pipelines is self:
                for _ in range(LAST_BATCHES):
                    await self._batch_through()
                    if changes.drain() < changes.limit:
                        break
                await self._batch_through()
        finally:
            if changes is not None:
                changes.detach()
            await super().close_spider_async()

    def process(self, events: list[ChangeEvent], done: Callable[[list[PipelineOutcome]], None]) -> None:
        """Hand *events* to the pipelines (see :class:`~..runtime.changes.EventPipelines`)."""
        self._batch = deferred_from_coro(self._process(events, done))

    async def _process(self, events: list[ChangeEvent], done: Callable[[list[PipelineOutcome]], None]) -> None:
        outcomes: list[PipelineOutcome] = []
        for event in events:
            try:
                await self.process_item_async(event)
            except Exception as exc:  # DropItem too: the drain tells them apart
                outcomes.append(exc)
            else:
                outcomes.append(None)
        done(outcomes)

    async def _batch_through(self) -> None:
        batch, self._batch = self._batch, None
        if batch is not None:
            await maybe_deferred_to_future(batch)
