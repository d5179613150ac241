"""AdaptiveScheduler: the Scrapy adapter around the frontier.

Scrapy asks a scheduler three things: take this request
(``enqueue_request``), give me the next one (``next_request``), is anything
left (``has_pending_requests``).  This class answers them from the
:class:`~scrapy_adaptive.frontier.Frontier`, and does the bookkeeping Scrapy
forces on it: which issued request object is which URL
(:class:`~.issued_requests.IssuedRequests`), when a download starts and ends (the
host's politeness wait counts from its end), and waking the engine when the
next URL falls due (:class:`~.engine.EngineWaker`).

At open it has the runtime assembled (:mod:`..runtime.assembly`), sends the middlewares their one
interface (:data:`~..runtime.wiring.FRONTIER_OPENED`) and starts the once-a-second tasks
(:mod:`..runtime.tasks`).

Requests that come back through ``enqueue_request`` are told apart by the
fingerprint tag issued requests carry:

* a **re-send** of an issued URL (RetryMiddleware's quick retries, or any
  middleware returning the same request): the URL goes back to its queue and
  this very request object is re-issued after the politeness wait, so
  ``retry_times`` keeps counting;
* a **redirect** (``redirect_urls`` ends with the issued URL): the issued URL
  was visited (status 3xx, rescheduled as usual) and the target is added as a
  URL of its own;
* anything else carrying the tag (a child request that copied
  ``response.meta``) is a new request; the tag is ignored.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider
from scrapy.core.scheduler import BaseScheduler
from scrapy.utils.asyncio import create_looping_call
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.python import global_object_name

from .. import meta
from ..change.difference import same_redirect
from ..config.settings import AdaptiveConfig
from ..config.spec import ConfigError
from ..frontier import AddResult, ChangeState, Frontier, Outcome, UrlRecord, Visit
from ..frontier.capacity import HostCapacity
from ..ops.assembly import Operations
from ..ops.console import control
from ..ops.console.seeds import take_seeds
from ..policies import PolicyStack
from ..runtime import collector
from ..runtime.assembly import Runtime, assemble
from ..runtime.delivery import Delivery
from ..runtime.issued_requests import MAX_FIRST_WITH_CREDENTIALS, IssuedRequests, url_identity
from ..runtime.request_hints import take_hint
from ..runtime.sink_failure import SINK_FAILED, SinkError
from ..runtime.spiderstate import Legacy, take_legacy
from ..runtime.stop_grace import StopGrace
from ..runtime.tasks import ShareBudget, Tick, build_tick
from ..runtime.verdicts import Verdicts
from ..runtime.wiring import FRONTIER_OPENED
from ..store.base import StoreCorrupt, StoreError
from ..store.keys import EMBED_DIRECTIVE
from ..store.statedir import StateDirError
from .components import REFUSAL_SETTING
from .download_signals import DownloadSignals
from .engine import EngineWaker, exit_with_error
from .metacheck import MetaCheck
from .once import OnceQueue
from .politeness import QueueKeyer
from .refused_start import Refusal, RefusingScheduler
from .serialization import (
    CREDENTIALS_LEFT_OUT,
    RequestNotStorable,
    as_first_fetch,
    carries_credentials,
    request_from_data,
    request_to_data,
)
from .startup import checked_settings, note_scrapy_queue, warn_about_settings

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector
    from twisted.internet.defer import Deferred

logger = logging.getLogger(__name__)

#: the stat each add counts, built once: every request the spider yields is an add
_ENQUEUED_STATS = {result: f"adaptive/enqueued/{result.value}" for result in AddResult}


class EnqueueError(Exception):
    """A request could not be enqueued (a request fingerprinter that raises,
    a middleware's request the frontier cannot take); the message names it."""


class AdaptiveScheduler(BaseScheduler):
    """A Scrapy scheduler that revisits every URL it knows, for ever.

    ``__init__`` takes plain values, so a test builds it without a crawl:
    ``open(spider)``, enqueue, ``next_request``, ``close``, reopen.
    ``from_crawler`` does the wiring (settings parsed once, signals).
    """

    def __init__(
        self,
        config: AdaptiveConfig,
        policy: PolicyStack,
        stats: StatsCollector,
        *,
        identity: Callable[[Request], bytes],
        jobdir: str | None = None,
        fingerprinter: str = "",
        robots_agent: str | None = None,
        crawler: Crawler | None = None,
        delivery: Delivery | None = None,
        legacy_state: Legacy | None = None,
    ) -> None:
        self.config = config
        self.policy = policy
        self.stats = stats
        self.jobdir = jobdir
        self.fingerprinter = fingerprinter
        self.crawler = crawler
        self.keyer = QueueKeyer(config.politeness_key)
        self.issued = IssuedRequests(identity)
        #: URLs (and their queues) to pull forward once their fetch out now is
        #: settled: an asked request waits behind it (:meth:`_asked`)
        self._reforce: dict[bytes, str] = {}
        #: what Scrapy's download signals tell the frontier (fetch times, Crawl-delay)
        self.download_signals = DownloadSignals(
            self.issued, self.keyer, robots_agent, self, self._arm_wake, config.wait_max
        )
        #: public meta values of the wrong kind are removed as requests enter
        self.check_meta = MetaCheck(stats)
        #: requests the frontier cannot store, fetched once (scrapy fetch, parse, shell)
        self.once = OnceQueue(config.min_delay)
        self.waker = EngineWaker(crawler)
        #: at-least-once delivery of versions (None: ADAPTIVE_DELIVERY off)
        self.delivery = delivery
        #: Scrapy's pickled spider state, unpickled on request to be migrated at open
        self.legacy_state = legacy_state
        #: merged requests are logged as Scrapy's duplicate filter logs them:
        #: every one with ``DUPEFILTER_DEBUG``, else the first only (a
        #: message per link of every page costs more than the merge itself)
        self._log_every_merge = crawler is not None and crawler.settings.getbool("DUPEFILTER_DEBUG")
        self._merge_logged = False
        #: a first fetch goes without the credentials it was made with: said once
        self._credentials_said = False
        # built by open(): the crawl's state folder and what works on it
        self.spider: Spider | None = None
        self.runtime: Runtime | None = None
        #: the once-a-second tasks (built by open())
        self.tick: Tick | None = None
        self._ticker: Any = None
        self._stopping = self._fatal_said = False
        self.refusal = Refusal(crawler)
        self.grace = StopGrace(config.stop_grace, crawler)
        #: the control socket `scrapy frontier` talks to a running crawl on
        self._control: Any = None

    # what open() built, for the signal handlers, the tests and the tools
    @property
    def frontier(self) -> Frontier | None:
        return self.runtime.frontier if self.runtime is not None else None

    @property
    def verdicts(self) -> Verdicts | None:
        return self.runtime.verdicts if self.runtime is not None else None

    @property
    def capacity(self) -> HostCapacity | None:
        return self.runtime.capacity if self.runtime is not None else None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> AdaptiveScheduler | RefusingScheduler:
        settings = crawler.settings
        try:
            if refused := settings.get(REFUSAL_SETTING):  # found by the add-on
                raise StateDirError(refused)
            config, policy, canonical = checked_settings(crawler)
            legacy = take_legacy(settings.get("JOBDIR"), migrate=config.migrate_spider_state)
        except (ConfigError, StateDirError) as exc:
            # raised here, Scrapy would fail to close the engine (traceback
            # wall); the refusal is said once, at open
            return RefusingScheduler(str(exc), crawler)
        scheduler = cls(
            config,
            policy,
            crawler.stats,  # type: ignore[arg-type]
            identity=url_identity(crawler.request_fingerprinter, canonical),  # type: ignore[arg-type]
            jobdir=settings.get("JOBDIR"),
            fingerprinter=global_object_name(type(crawler.request_fingerprinter)),
            robots_agent=settings.get("ROBOTSTXT_USER_AGENT") or settings.get("USER_AGENT"),
            crawler=crawler,
            delivery=Delivery.connected(crawler.stats, crawler.signals) if config.delivery else None,  # type: ignore[arg-type]
            legacy_state=legacy,
        )
        warn_about_settings(settings, config)
        note_scrapy_queue(settings.get("JOBDIR"))
        scheduler.download_signals.connect(crawler.signals)
        crawler.signals.connect(lambda sink, error: scheduler._fatal(error), SINK_FAILED, weak=False)  # stop at once
        return scheduler

    # -- life cycle ---------------------------------------------------------

    def open(self, spider: Spider) -> Deferred[None] | None:
        self.spider = spider
        started = time.monotonic()
        try:
            self.runtime = runtime = assemble(
                self.config,
                self.policy,
                self.stats,
                self.issued,
                jobdir=self.jobdir,
                spider_name=spider.name,
                fingerprinter=self.fingerprinter,
                delivery=self.delivery,
                on_store_error=self._fatal,
                on_change=self._arm_wake,
                operations=Operations(self.config, self.stats, self.policy.schedules, self._where, self._seed),
                legacy_state=self.legacy_state,
                signals=self.crawler.signals if self.crawler is not None else None,
            )
        except (StateDirError, StoreError) as exc:
            self.refusal.refuse(str(exc))
            return None
        collector.tune()
        crawl = self.policy.params.crawl
        ShareBudget(runtime, crawl, self.config.budget).run()
        if seeded := take_seeds(runtime.state.path, self._seed):
            listed = ", ".join(f"{s['url']} ({s['result']})" for s in seeded)
            logger.info("Seeds given while the crawl was stopped: %s", listed)
        if not runtime.state.temporary and self.crawler is not None:  # a crawl, with a running reactor
            self._control = control.serve(runtime.state.path, runtime.console.answer)
        if self.crawler is not None:  # the components that hand verdicts to the frontier
            self.crawler.signals.send_catch_log(
                FRONTIER_OPENED,
                services=runtime.verdicts,
                console=runtime.console,
                spider_state=runtime.spider_state,
                changes=runtime.changes,
            )
        logger.info("%s", runtime.opening_line(time.monotonic() - started))
        self.tick = tick = build_tick(
            runtime,
            config=self.config,
            policy_crawl=crawl,
            issued=self.issued,
            grace=self.grace,
            delivery=self.delivery,
            stats=self.stats,
            wake=self._arm_wake,
            on_store_error=self._fatal,
            schedules=self.policy.schedules,
        )
        self._ticker = create_looping_call(tick)
        self._ticker.start(1.0, now=False)
        return None

    def _where(self, url: str) -> tuple[str, bytes]:
        """Where the frontier keeps *url*'s record: its queue and fingerprint."""
        request = Request(url)
        return self.keyer.key(request), self.issued.identity(request)

    def _seed(self, urls: list[str]) -> list[dict[str, Any]]:
        """Seeds from `scrapy frontier seed`: requests for the spider's default callback."""
        assert self.frontier is not None
        results = []
        for url in urls:
            try:
                request = Request(url)
            except ValueError as exc:
                results.append({"url": url, "result": f"refused: {exc}"})
                continue
            known = self.frontier.get_record(*self._where(url)) is not None
            added = self.enqueue_request(request)
            results.append({"url": url, "result": "known" if known else "queued" if added else "refused"})
        return results

    def close(self, reason: str) -> Deferred[None] | None:
        self._stopping = True
        self.waker.stop()
        if self._ticker is not None and self._ticker.running:
            self._ticker.stop()
        runtime = self.runtime
        if self.delivery is not None and runtime is not None:
            try:
                self.delivery.close()
            except StoreError as exc:
                self._fatal(exc)
        if self._control is not None:
            control.stop(self._control)
            self._control = None
        if runtime is not None:
            try:
                runtime.close(self.policy.params.crawl)
            except StoreCorrupt as exc:  # found by the final summary: closed all the same, said once
                self._fatal(exc, closing=True)
            notify = runtime.changes.notify if runtime.changes is not None else None
            # the last messages, out before the engine stops (bounded); a
            # temporary state folder is gone already, its queues with it
            if notify is not None and not runtime.state.temporary:
                from twisted.internet import reactor

                return notify.finish(reactor)
        return None

    def has_pending_requests(self) -> bool:
        runtime = self.runtime
        return runtime is not None and (bool(self.once.waiting) or runtime.frontier.has_pending())

    # -- enqueue ----------------------------------------------------------------

    def enqueue_request(self, request: Request) -> bool:
        assert self.runtime is not None, "enqueue_request() before open()"
        try:
            self.check_meta(request)
            issued_fp = self.issued.fp_of(request)
            if issued_fp is not None:
                issued = self.issued.get(issued_fp)
                if issued is not None and self.issued.redirected_from(request, issued):
                    if self.issued.identity(request) == issued_fp and request.url != issued.url:
                        # another spelling of the same URL (ADAPTIVE_CANONICAL,
                        # www. to bare host): fetched as this very visit
                        return self._resent(issued_fp, request)
                    self._redirected(issued, request)
                    # the target is a URL of its own; the dont_filter a
                    # revisit's redirect inherits must not pull a known target
                    # forward, but a request the spider asked for goes on to
                    # its callback wherever it is sent, as in Scrapy
                    return self._add(request, force=None if issued.meta.get(meta.ASKED) else False)
                if self.issued.identity(request) == issued_fp:
                    return self._resent(issued_fp, request)
            return self._add(request)
        except StoreError as exc:
            self._fatal(exc)
            return False
        except Exception as exc:
            self.stats.inc_value("adaptive/errors/enqueue")
            logger.debug("Enqueueing %r failed", request, exc_info=True)
            # as with Scrapy's own scheduler, the error goes back to whatever
            # enqueued (the engine says "Error while processing requests from
            # start()", the scraper names the callback): one exception that
            # names the request, its cause's traceback at the debug level
            raise EnqueueError(f"{request!r} could not be enqueued: {type(exc).__name__}: {exc}") from None

    def _add(self, request: Request, force: bool | None = None) -> bool:
        assert self.runtime is not None and self.spider is not None
        frontier = self.runtime.frontier  # (every link a page yields comes here)
        fp = self.issued.identity(request)
        queue = self.keyer.key(request)
        spider = self.spider
        hops = request.meta.get(meta.EMBED_HOPS) or 0
        directive = EMBED_DIRECTIVE if 0 < hops <= self.config.embed_hops else 0
        try:
            result = frontier.add(
                fp,
                request.url,
                queue,
                # only for a new URL
                lambda: request_to_data(request, spider, credentials=self.config.store_credentials),
                directive=directive,
                force=request.dont_filter if force is None else force,
                with_page=request.meta.get(meta.PAGE_CHANGED) is True,
                priority=request.priority,
            )
        except RequestNotStorable as exc:
            self.stats.inc_value("adaptive/enqueued/refused")
            if not self.once.add(fp, request):
                return False
            logger.warning("%s; it is fetched this once, never revisited, and the crawl goes on.", exc)
            self._arm_wake()
            return True
        self.stats.inc_value(_ENQUEUED_STATS[result])
        if result is AddResult.NEW:
            self._hold_first(fp, queue, request)
            if self.capacity is not None:
                self.capacity.met(queue)  # a new host counts in the capacity budget from its first URL
        asked = result is not AddResult.NEW and request.dont_filter and force is not False
        if asked:
            self._asked(fp, queue, request)
        if meta.HINT in request.meta:
            take_hint(frontier, self.policy.hint_wait, self.stats, queue, fp, request, new=result is AddResult.NEW)
        if result is not AddResult.DUPLICATE:
            self._arm_wake()
        if result is AddResult.DUPLICATE and not asked:
            # merged into its URL's record, fetched at the URL's own time: to
            # Scrapy a request not scheduled (request_dropped), as its
            # duplicate filter's would be (and counted as its are)
            self.stats.inc_value("dupefilter/filtered")
            if self._log_every_merge:
                logger.debug("Merged into the record of its URL, not fetched now: %(request)s", {"request": request})
            elif not self._merge_logged:
                logger.debug(
                    "Merged into the record of its URL, not fetched now: %(request)s - no more merges will be "
                    "shown (see DUPEFILTER_DEBUG to show all)",
                    {"request": request},
                )
                self._merge_logged = True
            return False
        return True

    def _hold_first(self, fp: bytes, queue: str, request: Request) -> None:
        """Keep *request*, which made its URL known, for the URL's first fetch
        (:meth:`IssuedRequests.hold_first`); in a fleet, only for a host this
        worker issues (another's fetches its URLs from the store)."""
        assert self.frontier is not None
        if not self.frontier.fleet.issues(queue):
            return

        def credentials() -> bool:
            return not self.config.store_credentials and carries_credentials(request)

        if not self.issued.hold_first(fp, request, credentials=credentials) and not self._credentials_said:
            self._credentials_said = True
            logger.warning(
                "%s waits with %s others for a first fetch; its cookies and Authorization, Proxy-Authorization "
                "or Cookie headers are not kept in memory past that many, nor stored (ADAPTIVE_STORE_CREDENTIALS): "
                "its first fetch goes without them, as will others' (said once).",
                request,
                f"{MAX_FIRST_WITH_CREDENTIALS:,}",
            )

    def _asked(self, fp: bytes, queue: str, request: Request) -> None:
        """The spider asked for a URL it already has (``dont_filter``): the
        next fetch goes out as *request* itself, to its own callback with its
        own ``cb_kwargs`` and meta, delivered whatever the page's change
        state.  The URL's record, and the request stored for its revisits,
        stay as they are."""
        assert self.frontier is not None
        if not self.issued.ask(fp, request):
            self.stats.inc_value("adaptive/enqueued/asked_over_limit")
            return
        self.stats.inc_value("adaptive/enqueued/asked")
        if self.frontier.lent(fp) is not None:
            # out now: the verdict's wait would undo the pull forward
            self._reforce[fp] = queue

    def _force_asked(self) -> None:
        """Make the URLs due again whose asked requests wait behind a fetch
        that was out when they came."""
        assert self.frontier is not None and self.spider is not None
        spider = self.spider
        for fp, queue in list(self._reforce.items()):
            if self.frontier.lent(fp) is not None:
                continue
            del self._reforce[fp]
            waiting = self.issued.asked(fp)
            if waiting is None:
                continue
            self.frontier.add(
                fp,
                waiting.url,
                queue,
                lambda waiting=waiting: request_to_data(waiting, spider, credentials=self.config.store_credentials),  # type: ignore[misc]
                force=True,
                priority=waiting.priority,
            )

    def _resent(self, fp: bytes, request: Request) -> bool:
        """The issued request came back unchanged (a quick retry): re-issue it."""
        assert self.frontier is not None
        self.issued.resend(fp, request)
        self.frontier.downloads.requeue(fp)
        self.stats.inc_value("adaptive/resent")
        self._arm_wake()
        return True

    def _redirected(self, issued: Request, request: Request) -> None:
        """The issued URL answered with a redirect: that was its visit."""
        assert self.verdicts is not None
        reasons = request.meta.get("redirect_reasons") or []
        status = reasons[-1] if reasons and isinstance(reasons[-1], int) else None
        reason = f"redirect to {request.url}"
        # the same redirect as last time is a visit that found no change (the
        # policy backs off); another target, or the first, says nothing of the
        # page's own content, which the record keeps the digest of
        same = same_redirect(self.verdicts.record(issued) or {}, status, reason)
        change = ChangeState.UNCHANGED if same else ChangeState.UNKNOWN
        visit = Visit(Outcome.VISITED, status=status, reason=reason, change=change, location=request.url)
        self.verdicts.commit(issued, visit)
        self.stats.inc_value("adaptive/redirects")

    # -- next ---------------------------------------------------------------------

    def next_request(self) -> Request | None:
        runtime = self.runtime  # read once: the engine polls this several times per fetch
        if runtime is None or self._stopping:
            return None
        frontier = runtime.frontier
        if self.once.waiting:  # not the frontier's: no record, no verdict
            once = self.once.take(time.time())
            if once is not None:
                return once
        try:
            if self._reforce:
                self._force_asked()
            while True:
                out = frontier.next()
                if out is None:
                    self._arm_wake()
                    return None
                # a URL's first fetch is the request that made it known, as
                # in Scrapy's queue order: requests asked again for it before
                # then wait behind it
                tried = bool(out.record.visits or out.record.failures)
                held, first, more = self.issued.take_for_issue(out.fp, tried=tried)
                request = as_first_fetch(held) if first else held
                request = request or self._rebuild(out.fp, out.record, first=not tried)
                if request is None:
                    continue
                if more:
                    self._reforce[out.fp] = out.record.queue  # another asked request waits behind this one
                # the public read-only view (for the user's middlewares); ours ask the frontier
                lease = frontier.lent(out.fp)
                request.meta[meta.RECORD] = lease.view if lease is not None else out.record.view()
                if self.config.politeness_key == "slot":
                    request.meta["download_slot"] = out.record.queue
                self.issued.add(out.fp, request)
                self.stats.inc_value("adaptive/issued")
                return request
        except StoreError as exc:
            self._fatal(exc)
        except Exception:
            # Scrapy only logs exceptions raised here; keep the crawl going.
            logger.exception("scrapy-adaptive failed to hand out the next request")
            self.stats.inc_value("adaptive/errors/next_request")
        return None

    def _rebuild(self, fp: bytes, record: UrlRecord, *, first: bool = False) -> Request | None:
        """The stored request of *record*; *first*: for the URL's first fetch
        (the spider's own object was not kept: a restart since, or too many
        waiting), which goes without the credentials the store left out."""
        assert self.spider is not None and self.verdicts is not None
        if first and record.request.get(CREDENTIALS_LEFT_OUT) and not self._credentials_said:
            self._credentials_said = True
            logger.warning(
                "%s is fetched for the first time from the state folder, without the cookies and the "
                "Authorization, Proxy-Authorization or Cookie headers it was made with (the state folder "
                "does not keep them: ADAPTIVE_STORE_CREDENTIALS); nor will other such requests be (said once).",
                record.url,
            )
        try:
            return request_from_data(record.request, self.spider)
        except Exception as exc:
            logger.error(
                "Cannot rebuild the stored request for %s (%s: %s); it is retried later, the record is kept.",
                record.url,
                type(exc).__name__,
                exc,
            )
            self.stats.inc_value("adaptive/errors/unloadable")
            self.verdicts.settle(fp, Visit(Outcome.RETRY, reason=f"unloadable: {exc}", queue=record.queue))
            return None

    # -- timers ------------------------------------------------------------------------

    def _arm_wake(self) -> None:
        """Make sure the engine asks us again when the next queue is ready."""
        runtime = self.runtime  # read once: this runs after every add and issue
        if runtime is not None and not self._stopping:
            ready = runtime.frontier.next_ready_time()
            if self.once.waiting and (once := self.once.ready_at()) is not None:  # a one-off request may go sooner
                ready = once if ready is None else min(ready, once)
            self.waker.wake_at(ready)

    def _fatal(self, exc: StoreError, *, closing: bool = False) -> None:
        """The state cannot be written or read: stop rather than lose history (a failed batch was not
        applied: LevelDB batches are atomic); *closing*: found as the crawl closes, said all the same."""
        if self.runtime is not None:
            self.runtime.checkpoints.stop()
        stopping, self._stopping = self._stopping, True
        # a failure found at the close (a sink's last flush, the final summary's read) is still said
        if self._fatal_said or (stopping and not closing and not isinstance(exc, SinkError)):
            return
        self._fatal_said = True
        resume = "" if isinstance(exc, StoreCorrupt) else "; the state on disk is consistent and the crawl can resume"
        logger.critical("%s. Stopping the crawl%s.", exc, resume)
        self.stats.set_value("adaptive/fatal", str(exc))
        if self.crawler is not None and self.crawler.engine is not None:
            exit_with_error(self.crawler)
            if not stopping and not closing:
                deferred_from_coro(self.crawler.engine.close_spider_async(reason="adaptive_state_error"))
