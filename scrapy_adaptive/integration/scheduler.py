"""AdaptiveScheduler: the Scrapy adapter around the frontier.

Scrapy asks a scheduler three things: take this request
(``enqueue_request``), give me the next one (``next_request``), is anything
left (``has_pending_requests``).  This class answers them from the
:class:`~scrapy_adaptive.frontier.Frontier`, and does the bookkeeping Scrapy
forces on it: which issued request object is which URL
(:class:`~.issued.IssuedRequests`), when a download starts and ends (the
host's politeness wait counts from its end), and waking the engine when the
next URL falls due (:class:`~.engine.EngineWaker`).

At open it hands the middlewares the one interface they use,
:class:`~.verdicts.FrontierServices`: their verdicts go through
:class:`~.verdicts.Verdicts` to the wait policy and the frontier.  Reports
(:mod:`.reporting`), host capacities for budgeted policies
(:mod:`.capacity`), the policies' saved aggregates (:mod:`.policies.persist`)
and start-up warnings (:mod:`.startup`) live in modules of their own.

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
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy import Request, Spider, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.utils.asyncio import create_looping_call
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.python import global_object_name

from .. import meta
from ..change.rules import DigestRules
from ..change.trust import TrustParams
from ..config.settings import AdaptiveConfig, ConfigError
from ..frontier import AddResult, Frontier, Outcome, Politeness, UrlRecord, Visit
from ..frontier.canonical import Canonical
from ..frontier.sharing import Sharing
from ..hosts.capacity import HostCapacity
from ..ops.console import control
from ..ops.console.api import FrontierConsole, take_seeds
from ..ops.crawllog import CrawlLog
from ..ops.progress import META_KEY as PROGRESS_KEY
from ..ops.progress import Progress
from ..ops.reporting import Reporter
from ..policies import PolicyStack, load_wait_policy, persist
from ..policies.history import DAY
from ..store.base import StoreCorrupt, StoreError
from ..store.statedir import (
    Checkpoints,
    StateDir,
    StateDirError,
    open_store,
    resolve,
    shared_store,
    stored_counts,
    worker_home,
    worker_name,
)
from ..warc.writer import WarcMiddleware
from .delivery import Delivery
from .downloadermiddlewares.errors import FetchErrorMiddleware
from .downloadermiddlewares.robots import RobotsRefreshMiddleware
from .downloadermiddlewares.validators import ValidatorsMiddleware
from .engine import EngineWaker, exit_with_error
from .issued import IssuedRequests, url_identity
from .politeness import QueueKeyer, parse_crawl_delay
from .refusal import Refusal, RefusingScheduler
from .request_hints import take_hint
from .serialization import RequestNotStorable, request_from_data, request_to_data
from .spidermiddlewares.sitemaps import SitemapsMiddleware
from .spidermiddlewares.visit import VisitMiddleware
from .startup import remove_empty_spider_state, warn_about_settings
from .stopgrace import StopGrace
from .verdicts import Verdicts

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector
    from twisted.internet.defer import Deferred

logger = logging.getLogger(__name__)

#: the stat each add counts, built once: every request the spider yields is an add
_ENQUEUED_STATS = {result: f"adaptive/enqueued/{result.value}" for result in AddResult}


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
    ) -> None:
        self.config = config
        self.policy = policy
        self.stats = stats
        self.jobdir = jobdir
        self.fingerprinter = fingerprinter
        self.robots_agent = robots_agent
        self.crawler = crawler
        self.keyer = QueueKeyer(config.politeness_key)
        self.issued = IssuedRequests(identity)
        self.waker = EngineWaker(crawler)
        #: at-least-once delivery of versions (None: ADAPTIVE_DELIVERY off)
        self.delivery = delivery
        # built by open(): the crawl's state folder and what works on it
        self.spider: Spider | None = None
        self.state: StateDir | None = None
        self.frontier: Frontier | None = None
        self.verdicts: Verdicts | None = None
        self.reporter: Reporter | None = None
        self.capacity: HostCapacity | None = None
        self.crawl_log: CrawlLog | None = None
        self._ticker: Any = None
        self._stopping = False
        #: where the policies' aggregates are saved (a worker of a shared frontier has its own)
        self._policy_key = persist.META_KEY
        self.refusal = Refusal(crawler)
        self.grace = StopGrace(config.stop_grace, crawler)
        #: the state folder marker's checkpoint (built by open())
        self.checkpoints: Checkpoints | None = None
        #: what `scrapy frontier` talks to, and the socket it listens on (built by open())
        self.console: FrontierConsole | None = None
        self._control: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> AdaptiveScheduler | RefusingScheduler:
        settings = crawler.settings
        try:
            config = AdaptiveConfig.from_settings(settings)
            policy = load_wait_policy(config)
            canonical = Canonical.from_setting(config.canonical)
            # built again by the visit middleware at open: checked here, so a
            # bad rule is refused before anything of the JOBDIR is opened
            DigestRules.from_settings(config.digest_rules, config.digest_default, config.digest_max_size)
        except ConfigError as exc:
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
        )
        warn_about_settings(settings, config)
        remove_empty_spider_state(settings.get("JOBDIR"))
        crawler.signals.connect(scheduler._on_reached_downloader, signals.request_reached_downloader)
        crawler.signals.connect(scheduler._on_left_downloader, signals.request_left_downloader)
        crawler.signals.connect(scheduler._on_response_received, signals.response_received)
        return scheduler

    # -- life cycle ---------------------------------------------------------

    def open(self, spider: Spider) -> Deferred[None] | None:
        self.spider = spider
        started = time.monotonic()
        config = self.config
        try:
            self.state = resolve(config.state_dir, self.jobdir)
            remote = shared_store(config, spider.name)
            store = open_store(
                self.state,
                spider=spider.name,
                fingerprinter=self.fingerprinter,
                sync=config.state_sync,
                shared=remote,
            )
            self.checkpoints = Checkpoints(self.state)
        except (StateDirError, StoreError) as exc:
            self.refusal.refuse(str(exc))
            return None
        politeness = Politeness(
            delay_factor=config.delay_factor,
            min_delay=config.min_delay,
            max_delay=config.max_delay,
            valence=config.host_valence,
            retry_delay=config.retry_delay,
            max_retries=config.max_retries,
            lease=config.lease,
        )
        self.frontier = frontier = Frontier(
            store,
            politeness,
            history_size=config.history_size,
            trust=TrustParams(config.trust_warmup, config.trust_min_rate),
            soft404_urls=config.soft404_urls,
            sharing=None if remote is None else Sharing(store, worker_name(self.state.path), remote.lease),  # type: ignore[arg-type]
        )
        try:
            frontier.load()
            frontier.rebalance()  # a worker of a shared frontier takes its share of hosts
        except StoreError as exc:
            store.close()
            self.frontier = None
            self.refusal.refuse(str(exc))
            return None
        self._checkpoint(clean=False)
        if frontier.redelivered and frontier.sharing is None:  # a shared frontier logs its own (sharing.py)
            logger.info(
                "%d URLs had versions not confirmed delivered when the last crawl stopped; they are fetched "
                "again now so their items are produced again.",
                frontier.redelivered,
            )
            self.stats.set_value("adaptive/delivery/redelivered", frontier.redelivered)
        if self.delivery is not None:
            self.delivery.bind(frontier)
        shared = self.policy.params.shared
        if remote is not None:  # each worker's aggregates are its own (docs/shared-frontier.md)
            self._policy_key = f"{persist.META_KEY}/{worker_home(self.state.path)}"
        persist.restore(store, shared, self._policy_key)
        allocator = shared.get("rate_allocator")
        self.capacity = HostCapacity(frontier, allocator)
        self.capacity.all_nominal()
        self._share_budget()
        if config.crawl_log:
            path = os.path.join(self.state.path, "crawl.log")
            self.crawl_log = CrawlLog(path, config.crawl_log_max_bytes, config.crawl_log_backups)
        self.verdicts = Verdicts(
            frontier,
            self.policy,
            self.issued,
            self.stats,
            crawl_log=self.crawl_log,
            delivery=self.delivery,
            on_store_error=self._fatal,
            on_change=self._arm_wake,
        )
        self._open_console(store)
        self._bind_middlewares()
        shape = frontier.shape(due_limit=0)
        logger.info(
            "Adaptive frontier opened in %.2fs: %d URLs in %d queues (state: %s)",
            time.monotonic() - started,
            shape["urls"],
            shape["queues"],
            self.state.path,
        )
        self._ticker = create_looping_call(self._tick)
        self._ticker.start(1.0, now=False)
        return None

    def _open_console(self, store: Any) -> None:
        """The summary's reporter and the console: seeds left while the crawl
        was stopped are added, and a control socket serves `scrapy frontier`."""
        assert self.frontier is not None and self.state is not None
        progress = Progress.from_bytes(store.get_meta(PROGRESS_KEY))
        self.console = FrontierConsole(
            self.frontier,
            progress=progress,
            budget_per_day=self.config.budget,
            identity=self._where,
            seeder=self._seed,
        )
        self.reporter = Reporter(
            self.frontier,
            self.stats,
            allocator=self.policy.params.shared.get("rate_allocator"),
            state_path=self.state.path,
            interval=self.config.log_interval,
            progress=progress,
            console=self.console,
        )
        seeded = take_seeds(self.state.path, self._seed)
        if seeded:
            logger.info(
                "Seeds given while the crawl was stopped: %s", ", ".join(f"{s['url']} ({s['result']})" for s in seeded)
            )
        if not self.state.temporary and self.crawler is not None:  # a crawl, with a running reactor
            self._control = control.serve(self.state.path, self.console.answer)

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

    def _bind_middlewares(self) -> None:
        """Hand our middlewares the frontier's services and their settings."""
        if self.crawler is None or self.verdicts is None:
            return
        for mw in (
            self.crawler.get_downloader_middleware(ValidatorsMiddleware),
            self.crawler.get_downloader_middleware(FetchErrorMiddleware),
            self.crawler.get_downloader_middleware(WarcMiddleware),
            self.crawler.get_downloader_middleware(RobotsRefreshMiddleware),
            self.crawler.get_spider_middleware(VisitMiddleware),
            self.crawler.get_spider_middleware(SitemapsMiddleware),
        ):
            if mw is not None:
                mw.bind(self.verdicts, self.config)

    def close(self, reason: str) -> Deferred[None] | None:
        self._stopping = True
        self.waker.stop()
        if self._ticker is not None and self._ticker.running:
            self._ticker.stop()
        if self.delivery is not None and self.frontier is not None:
            try:
                self.delivery.close()
            except StoreError as exc:
                self._fatal(exc)
        if self._control is not None:
            control.stop(self._control)
            self._control = None
        if self.frontier is not None:
            try:
                self._summary(final=True)
            except StoreError as exc:  # a store gone at the stop: what it acknowledged is kept
                logger.error("The final frontier summary could not be read: %s", exc)
            persist.save(self.frontier.store, self.policy.params.shared, self._policy_key)
            try:
                self.frontier.leave()
            except StoreError as exc:  # the leases lapse by themselves
                logger.warning("Could not give back the host leases (%s); other workers wait for them to lapse.", exc)
            shared = self.frontier.sharing is not None
            if shared:  # the store's sums are read: while it is open
                self._checkpoint(clean=True)
            self.frontier.store.close()
            if not shared:  # "clean" once the database is closed (synced)
                self._checkpoint(clean=True)
        if self.crawl_log is not None:
            self.crawl_log.close()
        return None

    def has_pending_requests(self) -> bool:
        return self.frontier is not None and self.frontier.has_pending()

    # -- enqueue ----------------------------------------------------------------

    def enqueue_request(self, request: Request) -> bool:
        assert self.frontier is not None, "enqueue_request() before open()"
        try:
            issued_fp = self.issued.fp_of(request)
            if issued_fp is not None:
                issued = self.issued.get(issued_fp)
                if issued is not None and self.issued.redirected_from(request, issued):
                    if self.issued.identity(request) == issued_fp and request.url != issued.url:
                        # another spelling of the same URL (ADAPTIVE_CANONICAL,
                        # www. to bare host): fetched as this very visit
                        return self._resent(issued_fp, request)
                    self._redirected(issued, request)
                    # the target is a URL of its own; the inherited
                    # dont_filter must not pull a known target forward
                    return self._add(request, force=False)
                if self.issued.identity(request) == issued_fp:
                    return self._resent(issued_fp, request)
            return self._add(request)
        except StoreError as exc:
            self._fatal(exc)
            return False
        except Exception:
            logger.exception("scrapy-adaptive could not enqueue %r", request)
            self.stats.inc_value("adaptive/errors/enqueue")
            return False

    def _add(self, request: Request, force: bool | None = None) -> bool:
        assert self.frontier is not None and self.spider is not None
        fp = self.issued.identity(request)
        queue = self.keyer.key(request)
        spider = self.spider
        hops = request.meta.get(meta.EMBED_HOPS) or 0
        directive = 1 if 0 < hops <= self.config.embed_hops else 0
        try:
            result = self.frontier.add(
                fp,
                request.url,
                queue,
                # only for a new URL
                lambda: request_to_data(request, spider, credentials=self.config.store_credentials),
                directive=directive,
                force=request.dont_filter if force is None else force,
            )
        except RequestNotStorable as exc:
            logger.error("%s; the request is dropped, the crawl goes on.", exc)
            self.stats.inc_value("adaptive/enqueued/refused")
            return False
        self.stats.inc_value(_ENQUEUED_STATS[result])
        if meta.HINT in request.meta:
            take_hint(self.frontier, self.policy.hint_wait, self.stats, queue, fp, request, new=result is AddResult.NEW)
        if result is not AddResult.DUPLICATE:
            self._arm_wake()
        # A known URL is not "dropped": it is in the frontier, just not new.
        return True

    def _resent(self, fp: bytes, request: Request) -> bool:
        """The issued request came back unchanged (a quick retry): re-issue it."""
        assert self.frontier is not None
        self.issued.resend(fp, request)
        self.frontier.requeue(fp)
        self.stats.inc_value("adaptive/resent")
        self._arm_wake()
        return True

    def _redirected(self, issued: Request, request: Request) -> None:
        """The issued URL answered with a redirect: that was its visit."""
        assert self.verdicts is not None
        reasons = request.meta.get("redirect_reasons") or []
        status = reasons[-1] if reasons and isinstance(reasons[-1], int) else None
        self.verdicts.commit(issued, Visit(Outcome.VISITED, status=status, reason=f"redirect to {request.url}"))
        self.stats.inc_value("adaptive/redirects")

    # -- next ---------------------------------------------------------------------

    def next_request(self) -> Request | None:
        if self.frontier is None or self._stopping:
            return None
        try:
            while True:
                out = self.frontier.next()
                if out is None:
                    self._arm_wake()
                    return None
                request = self.issued.take_resend(out.fp) or self._rebuild(out.fp, out.record)
                if request is None:
                    continue
                request.meta[meta.RECORD] = out.record.snapshot()
                request.meta[meta.OVERDUE] = out.overdue
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

    def _rebuild(self, fp: bytes, record: UrlRecord) -> Request | None:
        assert self.spider is not None and self.frontier is not None
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
            self.frontier.update(fp, Visit(Outcome.RETRY, reason=f"unloadable: {exc}", queue=record.queue))
            return None

    # -- signals ----------------------------------------------------------------------

    def _on_reached_downloader(self, request: Request, spider: Spider) -> None:
        fp = self.issued.fp_of(request)
        if fp is not None and self.frontier is not None:
            self.frontier.fetch_started(fp)

    def _on_left_downloader(self, request: Request, spider: Spider) -> None:
        fp = self.issued.fp_of(request)
        if fp is None or self.frontier is None:
            return
        self.frontier.fetch_ended(fp)
        self._arm_wake()

    def _on_response_received(self, response: Response, request: Request, spider: Spider) -> None:
        """Honour a robots.txt ``Crawl-delay`` (persisted with the host)."""
        if self.frontier is None or not request.meta.get("dont_obey_robotstxt"):
            return
        if urlparse_cached(request).path != "/robots.txt" or response.status != 200:
            return
        delay = parse_crawl_delay(response.body, self.robots_agent)
        queue = self.keyer.key(request)
        if delay is None:  # none, or no longer (robots.txt is fetched again: ADAPTIVE_ROBOTS_REFRESH)
            self.frontier.set_crawl_delay(queue, None)
        elif self.capacity is not None:
            self.frontier.set_crawl_delay(queue, delay)
            self.capacity.nominal(queue, delay)
            logger.info("Honouring robots.txt Crawl-delay of %.1fs for %s", delay, urlparse_cached(request).netloc)

    # -- timers ------------------------------------------------------------------------

    def _arm_wake(self) -> None:
        """Make sure the engine asks us again when the next queue is ready."""
        if self.frontier is not None and not self._stopping:
            self.waker.wake_at(self.frontier.next_ready_time())

    def _tick(self) -> None:
        """Once a second: confirm delivered versions (one write), return
        expired leases, and report now and then."""
        if self.frontier is None or self.reporter is None:
            return
        try:
            if self.frontier.rebalance():
                self._arm_wake()
            if self.frontier.redelivered:  # a shared frontier takes back versions of stopped workers
                self.stats.set_value("adaptive/delivery/redelivered", self.frontier.redelivered)
            self._share_budget()
            if self.delivery is not None:
                self.delivery.flush()
            abandoned = self.grace.tick()
            if abandoned:
                self.stats.inc_value("adaptive/abandoned", abandoned)
            # once the engine stops, a URL without a verdict was abandoned
            # (due on restart), not lost in a middleware
            for fp in self.frontier.lapsed_leases() if self.grace.stop_seen is None else ():
                self._lapsed(fp)
            if self.checkpoints is not None and self.checkpoints.due():
                self._checkpoint(clean=False)
            if self.reporter.due():
                self._summary()
                persist.save(self.frontier.store, self.policy.params.shared, self._policy_key)
        except StoreError as exc:
            self._fatal(exc)
        except Exception:
            logger.exception("scrapy-adaptive periodic task failed")

    def _share_budget(self) -> None:
        """In a fleet, ``ADAPTIVE_BUDGET`` is the fleet's: each worker spends
        its share (budget / live workers) on the hosts it holds, which are
        about that share of the URLs."""
        sharing = self.frontier.sharing if self.frontier is not None else None
        allocator = self.policy.params.shared.get("rate_allocator")
        if sharing is None or allocator is None or self.config.budget is None:
            return
        share = self.config.budget / DAY / sharing.workers
        if allocator.budget != share:
            allocator.set_budget(share)

    def _lapsed(self, fp: bytes) -> None:
        """An issued URL got no verdict within its lease: a retry, counted.

        Its download is over (a running one never lapses), so something
        between the downloader and our middlewares swallowed the outcome: an
        exception in another middleware's ``process_response`` (a bad gzip
        body in HttpCompressionMiddleware), a spider middleware before ours,
        a middleware that replaced or dropped the request.  Counted as a
        retry, the URL is tried again after ``ADAPTIVE_RETRY_DELAY`` and marked
        failed after ``ADAPTIVE_MAX_RETRIES``, like any other error.
        """
        assert self.frontier is not None and self.verdicts is not None
        request = self.issued.get(fp)
        url = request.url if request is not None else fp.hex()
        reason = f"no verdict within ADAPTIVE_LEASE ({self.config.lease:g}s)"
        logger.warning("%s: %s; counted as a retry.", url, reason)
        self.stats.inc_value("adaptive/leases_expired")
        visit = Visit(Outcome.RETRY, reason=reason, queue=self.frontier.out_queue(fp))
        if request is not None:
            self.verdicts.commit(request, visit)
        else:  # the frontier lent it, the request object is gone
            self.frontier.update(fp, visit)
            self._arm_wake()

    def _summary(self, *, final: bool = False) -> None:
        assert self.reporter is not None and self.capacity is not None
        self.capacity.measured()
        self.reporter.summary(final=final)

    def _checkpoint(self, *, clean: bool) -> None:
        """Record the counts that only ever grow in the state folder's marker."""
        if self.checkpoints is not None and self.frontier is not None:
            frontier = self.frontier
            if frontier.sharing is not None:
                # other workers count too: the store's sums, not this worker's view
                try:
                    self.checkpoints.write(**stored_counts(frontier.store), clean=clean)
                except StateDirError as exc:
                    logger.warning("Cannot read the counts for the checkpoint: %s", exc)
                return
            urls = frontier.url_count + frontier.quarantined_count + frontier.forgotten_count
            self.checkpoints.write(urls=urls, visits=frontier.visit_count, clean=clean)

    def _fatal(self, exc: StoreError) -> None:
        """The state cannot be written: stop rather than lose history.

        The failed batch was not applied (LevelDB batches are atomic), so the
        store still holds the previous, consistent state.
        """
        if self.checkpoints is not None:
            self.checkpoints.stop()
        if self._stopping:
            return
        self._stopping = True
        if isinstance(exc, StoreCorrupt):
            logger.critical("%s. Stopping the crawl.", exc)
        else:
            logger.critical("%s. Stopping the crawl; the state on disk is consistent and the crawl can resume.", exc)
        self.stats.set_value("adaptive/fatal", str(exc))
        engine = self.crawler.engine if self.crawler is not None else None
        if engine is not None:
            assert self.crawler is not None
            exit_with_error(self.crawler)
            deferred_from_coro(engine.close_spider_async(reason="adaptive_state_error"))
