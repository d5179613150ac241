"""AdaptiveScheduler: the thin Scrapy adapter around the frontier.

Scrapy asks a scheduler three things: take this request
(``enqueue_request``), give me the next one (``next_request``), is anything
left (``has_pending_requests``).  This class answers them from the
:class:`~scrapy_adaptive.frontier.Frontier` and does the bookkeeping Scrapy
cannot: which issued request is which URL, when a fetch ended (to start the
host's politeness wait), what became of it (the verdicts the middlewares
send to :meth:`AdaptiveScheduler.commit`), and waking the engine when the
next URL falls due.

Requests that come back through ``enqueue_request`` are told apart by the
``adaptive_fp`` tag we put in ``meta`` when issuing:

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

import hashlib
import json
import logging
import math
import os
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import Request, Spider, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.utils.asyncio import CallLaterResult, call_later, create_looping_call
from scrapy.utils.defer import deferred_from_coro
from scrapy.utils.httpobj import urlparse_cached
from scrapy.utils.python import global_object_name

from .addon import DELTAFETCH_MESSAGE, TOOK_OVER_SETTING, is_deltafetch
from .change.trust import Trust, TrustParams
from .crawllog import CrawlLog
from .engine import EngineWaker
from .frontier import AddResult, ChangeState, Frontier, Outcome, Politeness, UrlRecord, Visit
from .frontier.crawltime import FetchTimes, capacity, estimate_hosts
from .frontier.store import Batch, StoreError
from .hints import META_HINT, count_settled, take_hint
from .matching import media_type
from .policies import PolicyStack, load_wait_policy, persist
from .politeness import QueueKeyer, parse_crawl_delay
from .serialization import RequestNotStorable, request_from_data, request_to_data
from .settings import AdaptiveConfig
from .statedir import StateDir, open_store, resolve

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from twisted.internet.defer import Deferred

logger = logging.getLogger(__name__)

META_FP = "adaptive_fp"
META_RECORD = "adaptive_record"
META_OVERDUE = "adaptive_overdue"
META_EMBED_HOPS = "adaptive_embed_hops"
META_WAIT_POLICY = "adaptive_wait_policy"


class AdaptiveScheduler(BaseScheduler):
    """A Scrapy scheduler that revisits every URL it knows, for ever."""

    def __init__(self, crawler: Crawler, config: AdaptiveConfig, policy: PolicyStack) -> None:
        self.crawler = crawler
        self.config = config
        self.policy = policy
        self.stats = crawler.stats
        self.keyer = QueueKeyer(config.politeness_key)
        self.waker = EngineWaker(crawler)
        self.frontier: Frontier | None = None
        self.state: StateDir | None = None
        self.spider: Spider | None = None
        self._fingerprinter = crawler.request_fingerprinter
        self.crawl_log: CrawlLog | None = None
        #: fp -> the request object issued for it, while it is out
        self._issued: dict[bytes, Request] = {}
        #: fp -> when its download started (request_reached_downloader)
        self._fetch_started: dict[bytes, float] = {}
        #: fp -> a re-sent request to issue instead of rebuilding from the store
        self._resend: dict[bytes, Request] = {}
        #: mean fetch duration per queue, for the crawl-time estimate
        self.fetch_times = FetchTimes()
        self._wake_timer: CallLaterResult | None = None
        self._wake_at = math.inf
        self._ticker: Any = None
        self._last_log = 0.0
        self._stopping = False

    def _fingerprint(self, request: Request) -> bytes:
        """The URL's identity: Scrapy's request fingerprint, or the page
        identity a project migrating from scrapy-deltafetch set in
        ``meta["deltafetch_key"]`` (requests sharing a key share a record)."""
        key = request.meta.get("deltafetch_key")
        if key is not None:
            return hashlib.sha1(b"deltafetch_key:" + str(key).encode("utf-8")).digest()
        return self._fingerprinter.fingerprint(request)  # type: ignore[union-attr]

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> AdaptiveScheduler:
        config = AdaptiveConfig.from_settings(crawler.settings)
        scheduler = cls(crawler, config, load_wait_policy(config))
        scheduler._warn_about_settings()
        crawler.signals.connect(scheduler._on_reached_downloader, signals.request_reached_downloader)
        crawler.signals.connect(scheduler._on_left_downloader, signals.request_left_downloader)
        crawler.signals.connect(scheduler._on_response_received, signals.response_received)
        return scheduler

    def _warn_about_settings(self) -> None:
        settings = self.crawler.settings
        if settings.getbool(TOOK_OVER_SETTING):
            logger.warning(DELTAFETCH_MESSAGE)
        elif any(is_deltafetch(k) and v is not None for k, v in settings.getdict("SPIDER_MIDDLEWARES").items()):
            logger.warning(
                "scrapy-deltafetch's DeltaFetch is enabled: it drops every request for a page that produced items "
                "before, so those pages are never revisited. Use ADDONS = {'scrapy_adaptive.Addon': 0}, which "
                "disables it, or remove it from SPIDER_MIDDLEWARES."
            )
        if settings.getbool("HTTPCACHE_ENABLED"):
            logger.warning(
                "HTTPCACHE_ENABLED: Scrapy's HTTP cache answers revisits from its stored copy, so changes are not "
                "seen until the copy expires, and its conditional requests fight scrapy-adaptive's. Disable it for "
                "adaptive crawls."
            )
        if settings.getbool("AUTOTHROTTLE_ENABLED"):
            logger.warning(
                "AUTOTHROTTLE_ENABLED: AutoThrottle's delays apply in the downloader on top of the frontier's "
                "politeness (ADAPTIVE_DELAY_FACTOR × fetch time, clamped to ADAPTIVE_MIN_DELAY..MAX_DELAY), "
                "which already adapts to slow hosts. Disable one of them unless you want both."
            )
        per_domain = settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN")
        if self.config.host_valence > per_domain:
            logger.warning(
                "ADAPTIVE_HOST_VALENCE (%d) is above CONCURRENT_REQUESTS_PER_DOMAIN (%d): the downloader will "
                "hold the extra requests back.",
                self.config.host_valence,
                per_domain,
            )

    # -- life cycle ---------------------------------------------------------

    def open(self, spider: Spider) -> Deferred[None] | None:
        self.spider = spider
        started = time.monotonic()
        self.state = resolve(self.config.state_dir, self.crawler.settings.get("JOBDIR"))
        store = open_store(
            self.state,
            spider=spider.name,
            fingerprinter=global_object_name(type(self.crawler.request_fingerprinter)),
            sync=self.config.state_sync,
        )
        c = self.config
        self.frontier = Frontier(
            store,
            Politeness(
                delay_factor=c.delay_factor,
                min_delay=c.min_delay,
                max_delay=c.max_delay,
                valence=c.host_valence,
                retry_delay=c.retry_delay,
                max_retries=c.max_retries,
                lease=c.lease,
            ),
            history_size=c.history_size,
        )
        self.frontier.load()
        self._restore_policy_state()
        for queue in self.frontier.queues():
            self._cap_host(queue.name, queue.crawl_delay)
        if c.crawl_log:
            path = os.path.join(self.state.path, "crawl.log")
            self.crawl_log = CrawlLog(path, c.crawl_log_max_bytes, c.crawl_log_backups)
        shape = self.frontier.shape(due_limit=0)
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

    def close(self, reason: str) -> Deferred[None] | None:
        self._stopping = True
        if self._ticker is not None and self._ticker.running:
            self._ticker.stop()
        if self._wake_timer is not None:
            self._wake_timer.cancel()
        if self.frontier is not None:
            self._log_shape(final=True)
            self._report_validators(final=True)
            self._save_policy_state()
            self.frontier.store.close()
        if self.crawl_log is not None:
            self.crawl_log.close()
        return None

    def has_pending_requests(self) -> bool:
        return self.frontier is not None and self.frontier.has_pending()

    # -- enqueue ----------------------------------------------------------------

    def enqueue_request(self, request: Request) -> bool:
        assert self.frontier is not None and self.spider is not None
        try:
            issued_fp = self._issued_fp(request)
            if issued_fp is not None:
                issued = self._issued[issued_fp]
                redirect_urls = request.meta.get("redirect_urls") or []
                if redirect_urls and redirect_urls[-1] == issued.url:
                    self._redirected(issued_fp, request)
                    # the target is a URL of its own; the inherited
                    # dont_filter must not pull a known target forward
                    return self._add(request, force=False)
                if self._fingerprint(request) == issued_fp:
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
        fp = self._fingerprint(request)
        spider = self.spider
        hops = request.meta.get(META_EMBED_HOPS) or 0
        directive = 1 if 0 < hops <= self.config.embed_hops else 0
        try:
            result = self.frontier.add(
                fp,
                request.url,
                self.keyer.key(request),
                lambda: request_to_data(request, spider),  # only for a new URL
                directive=directive,
                force=request.dont_filter if force is None else force,
            )
        except RequestNotStorable as exc:
            logger.error("%s; the request is dropped, the crawl goes on.", exc)
            self.stats.inc_value("adaptive/enqueued/refused")
            return False
        self.stats.inc_value(f"adaptive/enqueued/{result.value}")
        if META_HINT in request.meta:
            take_hint(self.frontier, self.policy.hint_wait, self.stats, fp, request, new=result is AddResult.NEW)
        if result is not AddResult.DUPLICATE:
            self._arm_wake()
        # A known URL is not "dropped": it is in the frontier, just not new.
        return True

    def _resent(self, fp: bytes, request: Request) -> bool:
        """The issued request came back unchanged (a quick retry): re-issue it."""
        assert self.frontier is not None
        self._issued.pop(fp, None)
        self._resend[fp] = request
        self.frontier.requeue(fp)
        self.stats.inc_value("adaptive/resent")
        self._arm_wake()
        return True

    def _redirected(self, fp: bytes, request: Request) -> None:
        """The issued URL answered with a redirect: that was its visit."""
        reasons = request.meta.get("redirect_reasons") or []
        status = reasons[-1] if reasons and isinstance(reasons[-1], int) else None
        issued = self._issued[fp]
        self.commit(issued, Visit(Outcome.VISITED, status=status, reason=f"redirect to {request.url}"))
        self.stats.inc_value("adaptive/redirects")

    # -- next ---------------------------------------------------------------------

    def next_request(self) -> Request | None:
        if self.frontier is None or self._stopping:
            return None
        try:
            while True:
                issued = self.frontier.next()
                if issued is None:
                    self._arm_wake()
                    return None
                request = self._resend.pop(issued.fp, None) or self._rebuild(issued.fp, issued.record)
                if request is None:
                    continue
                request.meta[META_FP] = issued.fp.hex()
                request.meta[META_RECORD] = issued.record.snapshot()
                request.meta[META_OVERDUE] = issued.overdue
                if self.config.politeness_key == "slot":
                    request.meta["download_slot"] = issued.record.queue
                self._issued[issued.fp] = request
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
            self.frontier.update(fp, Visit(Outcome.RETRY, reason=f"unloadable: {exc}"))
            return None

    # -- verdicts ---------------------------------------------------------------------

    def _issued_fp(self, request: Request) -> bytes | None:
        tag = request.meta.get(META_FP)
        if not isinstance(tag, str):
            return None
        try:
            fp = bytes.fromhex(tag)
        except ValueError:
            return None
        issued = self._issued.get(fp)
        if issued is None:
            return None
        if issued is request or self._fingerprint(request) == fp:
            return fp
        redirect_urls = request.meta.get("redirect_urls") or []
        if redirect_urls and redirect_urls[-1] == issued.url:
            return fp
        return None

    def commit(self, request: Request, visit: Visit) -> UrlRecord | None:
        """Fold a verdict on an issued request into its URL's record.

        Called by the middlewares (and for redirects by the scheduler).  The
        wait policy fills in ``visit.wait`` when the verdict has none.
        Returns the updated record, or None if the request was not ours.
        """
        fp = self._issued_fp(request)
        if fp is None or self.frontier is None:
            return None
        self._issued.pop(fp, None)
        started = self._fetch_started.pop(fp, None)
        if visit.duration is None and started is not None:
            visit.duration = max(0.0, time.time() - started)
        if visit.url is None:
            visit.url = request.url
        if visit.fetched is None:
            visit.fetched = time.time()
        if visit.overdue is None:
            visit.overdue = request.meta.get(META_OVERDUE)
        if visit.outcome is Outcome.VISITED:
            self._note_validation(fp, request, visit)
        if visit.outcome is Outcome.VISITED and visit.wait is None:
            overrides = request.meta.get(META_WAIT_POLICY)
            policy = self.policy.with_overrides(overrides) if isinstance(overrides, dict) else self.policy
            visit.wait = policy.next_wait(request.meta.get(META_RECORD) or {}, visit)
        try:
            record = self.frontier.update(fp, visit)
        except StoreError as exc:
            self._fatal(exc)
            return None
        if record is not None:
            self._count(record, visit)
            count_settled(self.stats, request.meta.get(META_RECORD), visit)
            if self.crawl_log is not None:
                self.crawl_log.write(record, visit)
            if visit.outcome is Outcome.RETRY and record.outcome == Outcome.RETRY.value:
                logger.debug("Will retry %s in %.0fs: %s", record.url, self.config.retry_delay, visit.reason)
            elif record.outcome in (Outcome.FAILED.value, Outcome.DISREGARDED.value):
                logger.info(
                    "%s %s: %s; it stays known but is not visited again.",
                    record.outcome.capitalize(),
                    record.url,
                    record.reason,
                )
        self._arm_wake()
        return record

    def decide_verification(self, request: Request, params: TrustParams) -> bool:
        """Whether this fetch verifies its host's validators (a full download
        despite them) or acts on them; the decision is counted at once in
        the host's trust record, which the frontier owns and persists."""
        if self.frontier is None:
            return True
        fp = self._issued_fp(request)
        queue = (self.frontier.out_queue(fp) if fp is not None else None) or self.keyer.key(request)
        trust = Trust.from_dict(self.frontier.queue_trust(queue))
        verify = trust.decide(params)
        self.frontier.set_queue_trust(queue, trust.to_dict())
        return verify

    def _note_validation(self, fp: bytes, request: Request, visit: Visit) -> None:
        """Fold what the validators did into the host's trust record."""
        assert self.frontier is not None
        validation = request.meta.get("adaptive_validation")
        if validation not in ("verified", "trusted"):
            return
        visit.validation = validation
        visit.prediction = request.meta.get("adaptive_prediction")
        queue = self.frontier.out_queue(fp)
        if queue is None:
            return
        trust = Trust.from_dict(self.frontier.queue_trust(queue))
        if validation == "verified" and visit.change is not ChangeState.UNKNOWN:
            if trust.observe_verified(visit.prediction, visit.change.value):
                self.stats.inc_value("adaptive/validators/lies")
                logger.warning(
                    "%s: the validators said 'no change' but the content changed; %s is back to full downloads "
                    "until it proves reliable again.",
                    request.url,
                    queue,
                )
            visit.host_trust = trust.to_dict()

    @property
    def allocator(self) -> Any:
        """The budgeted policies' shared rate allocator, if one is in use."""
        return self.policy.params.shared.get("rate_allocator")

    def _cap_host(self, queue: str, crawl_delay: float | None) -> None:
        """Tell a budgeted policy how often politeness lets *queue* be fetched:
        valence fetches per max(min delay, Crawl-delay)."""
        allocator = self.allocator
        if allocator is None:
            return
        interval = max(self.config.min_delay, crawl_delay or 0.0, 1e-3)
        allocator.set_host_cap(queue, self.config.host_valence / interval)

    def _refresh_caps(self) -> None:
        """Tighten the budget's host caps with measured fetch times.

        A slot's politeness wait counts from the *end* of its fetch, so a
        queue starts at most valence fetches per (fetch time + wait), fewer
        than the nominal valence per delay of :meth:`_cap_host`.  A slow host
        capped nominally would be planned visits it cannot make, and the
        budget would go unspent.
        """
        allocator = self.allocator
        if allocator is None or self.frontier is None:
            return
        c = self.config
        for q in self.frontier.queues():
            fetch_time = self.fetch_times.mean(q.name)
            if fetch_time is not None:
                cap = capacity(q, fetch_time, delay_factor=c.delay_factor, min_delay=c.min_delay, max_delay=c.max_delay)
                allocator.set_host_cap(q.name, cap)

    def _count(self, record: UrlRecord, visit: Visit) -> None:
        inc = self.stats.inc_value
        inc(f"adaptive/outcome/{record.outcome}")
        if record.outcome != Outcome.VISITED.value:
            return
        kind = media_type(visit.content_type).split("/", 1)[0]
        kind = kind if kind in ("text", "image") else "other"
        inc("adaptive/visits")
        inc(f"adaptive/visits/{kind}")
        inc(f"adaptive/change/{visit.change.value}")
        inc(f"adaptive/change/{visit.change.value}/{kind}")
        if visit.change is ChangeState.CHANGED:
            inc("adaptive/versions")

    # -- signals ----------------------------------------------------------------------

    def _on_reached_downloader(self, request: Request, spider: Spider) -> None:
        fp = self._issued_fp(request)
        if fp is not None:
            self._fetch_started[fp] = time.time()

    def _on_left_downloader(self, request: Request, spider: Spider) -> None:
        fp = self._issued_fp(request)
        if fp is None or self.frontier is None:
            return
        started = self._fetch_started.get(fp)
        duration = time.time() - started if started is not None else 0.0
        queue = self.frontier.out_queue(fp)
        if started is not None and queue is not None:
            self.fetch_times.add(queue, duration)
        self.frontier.fetch_ended(fp, duration)
        self._arm_wake()

    def _on_response_received(self, response: Response, request: Request, spider: Spider) -> None:
        if self.frontier is None or not request.meta.get("dont_obey_robotstxt"):
            return
        if urlsplit(request.url).path != "/robots.txt" or response.status != 200:
            return
        agent = self.crawler.settings.get("ROBOTSTXT_USER_AGENT") or self.crawler.settings.get("USER_AGENT")
        delay = parse_crawl_delay(response.body, agent)
        if delay is not None:
            queue = self.keyer.key(request)
            self.frontier.set_crawl_delay(queue, delay)
            self._cap_host(queue, delay)
            logger.info("Honouring robots.txt Crawl-delay of %.1fs for %s", delay, urlparse_cached(request).netloc)

    # -- timers ------------------------------------------------------------------------

    def _arm_wake(self) -> None:
        """Make sure the engine asks us again when the next queue is ready."""
        if self.frontier is None or self._stopping:
            return
        ready = self.frontier.next_ready_time()
        if ready is None:
            return
        now = time.time()
        if ready <= now:
            self.waker.wake()
            return
        if ready >= self._wake_at:
            return
        if self._wake_timer is not None:
            self._wake_timer.cancel()
        self._wake_at = ready
        self._wake_timer = call_later(ready - now + 0.005, self._wake)

    def _wake(self) -> None:
        self._wake_timer = None
        self._wake_at = math.inf
        if not self._stopping:
            self.waker.wake()

    def _tick(self) -> None:
        """Once a second: return expired leases, and log now and then."""
        if self.frontier is None:
            return
        try:
            expired = self.frontier.expire_leases()
            for fp in expired:
                request = self._issued.pop(fp, None)
                self._fetch_started.pop(fp, None)
                logger.warning(
                    "%s was out for more than ADAPTIVE_LEASE (%.1fs) without a verdict; it is back in its queue.",
                    request.url if request is not None else fp.hex(),
                    self.config.lease,
                )
                self.stats.inc_value("adaptive/leases_expired")
            if expired:
                self._arm_wake()
            if time.time() - self._last_log >= self.config.log_interval:
                self._log_shape()
                self._report_validators()
                self._save_policy_state()
        except StoreError as exc:
            self._fatal(exc)
        except Exception:
            logger.exception("scrapy-adaptive periodic task failed")

    def _log_shape(self, final: bool = False) -> None:
        assert self.frontier is not None
        self._last_log = time.time()
        shape = self.frontier.shape()
        for name in ("urls", "queues", "ready", "snoozed", "busy", "out", "due", "visits", "versions", "never"):
            self.stats.set_value(f"adaptive/frontier/{name}", shape[name])

        def secs(value: float | None) -> str:
            return "-" if value is None else f"{value:.1f}s"

        self._refresh_caps()
        self._log_budget()
        self._log_crawl_times()
        logger.info(
            "Frontier%s: %d URLs (%d never) in %d queues: %d ready, %d snoozed, %d busy; %d out; %s%d due now; "
            "overdue p50 %s p95 %s; %d visits, %d versions",
            " at close" if final else "",
            shape["urls"],
            shape["never"],
            shape["queues"],
            shape["ready"],
            shape["snoozed"],
            shape["busy"],
            shape["out"],
            ">" if shape["due_capped"] else "",
            shape["due"],
            secs(shape["overdue_p50"]),
            secs(shape["overdue_p95"]),
            shape["visits"],
            shape["versions"],
        )

    def _log_budget(self) -> None:
        """With a budgeted policy: the budget, what is spent, and the hosts
        whose politeness keeps their URLs from the visits they need."""
        allocator = self.allocator
        if allocator is None:
            return
        realised = allocator.realised_rate()
        capped = allocator.capped_hosts()
        # without ADAPTIVE_BUDGET the plan follows the target precision: report what it plans
        budget = allocator.budget if allocator.budget is not None else allocator.planned_rate()
        self.stats.set_value("adaptive/budget/per_day", round(budget * 86_400, 1))
        if realised is not None:
            self.stats.set_value("adaptive/budget/realised_per_day", round(realised * 86_400, 1))
        self.stats.set_value("adaptive/budget/capped_hosts", len(capped))
        worst = sorted(capped.items(), key=lambda kv: -kv[1])[:5]
        logger.info(
            "Budget: %.0f revisits/day%s, spending %s; %d hosts chronically overdue (politeness caps their visits)%s",
            budget * 86_400,
            "" if allocator.budget is not None else " planned (no ADAPTIVE_BUDGET)",
            "-" if realised is None else f"{realised * 86_400:.0f}/day",
            len(capped),
            (": " + ", ".join(f"{h} ({r:.1f}x too rare)" for h, r in worst)) if worst else "",
        )

    def _log_crawl_times(self) -> None:
        """Per host, how long one pass over the URLs due before the next
        summary takes (Umbrich et al.'s crawl-time estimate under our
        politeness): a host that needs longer than that falls further behind
        at every summary, whatever the wait policy asks of it."""
        assert self.frontier is not None
        c = self.config
        rows = estimate_hosts(
            self.frontier.queues(),
            self.frontier.store,
            self.fetch_times,
            now=time.time(),
            horizon=c.log_interval,
            delay_factor=c.delay_factor,
            min_delay=c.min_delay,
            max_delay=c.max_delay,
        )
        behind = [r for r in rows if r.overdue]
        self.stats.set_value("adaptive/hosts/with_due", len(rows))
        self.stats.set_value("adaptive/hosts/overdue", len(behind))
        self.stats.set_value("adaptive/hosts/max_load", round(rows[0].load, 2) if rows else 0.0)
        if behind:
            logger.info(
                "Hosts: %d of %d cannot get through the URLs due within %.0fs: %s",
                len(behind),
                len(rows),
                c.log_interval,
                ", ".join(
                    f"{r.queue} ({r.docs} due, one pass {r.crawl_time:.0f}s = {r.load:.1f}x; "
                    f"fetch {r.fetch_time:.2f}s + wait {r.wait:.2f}s, {r.threads:.2f} threads)"
                    for r in behind[:5]
                ),
            )

    def _restore_policy_state(self) -> None:
        """Continue the budget and the learned priors of the last run (see
        :mod:`.policies.persist`); a state that cannot be read is reported
        and the crawl starts them afresh (the URL records are untouched)."""
        assert self.frontier is not None
        raw = self.frontier.store.get_meta(persist.META_KEY)
        if raw is None:
            return
        try:
            restored = persist.restore_shared(self.policy.params.shared, raw)
        except ValueError as exc:
            logger.warning("The saved policy state is unreadable (%s); the budget and priors start afresh.", exc)
            return
        if restored:
            logger.info("Policy state restored: %s", ", ".join(restored))

    def _save_policy_state(self) -> None:
        """Store the policies' shared aggregates with the frontier (atomic)."""
        if self.frontier is None:
            return
        raw = persist.dump_shared(self.policy.params.shared)
        if raw is None:
            return
        try:
            self.frontier.store.write(Batch(meta={persist.META_KEY: raw}))
        except StoreError as exc:
            # the records are intact; only the aggregates are older on restart
            logger.error("Cannot save the policy state (%s): a restart will relearn it.", exc)

    def _report_validators(self, final: bool = False) -> None:
        """Per host, how far its validators proved right (Clausen's
        reliability and usefulness), in ``validators-report.json`` in the
        state folder; a summary line in the log at close."""
        assert self.frontier is not None and self.state is not None
        params = TrustParams(self.config.trust_warmup, self.config.trust_min_rate)
        trusts = {host: Trust.from_dict(data) for host, data in sorted(self.frontier.trust_report().items())}
        report: dict[str, dict[str, Any]] = {}
        for host, trust in trusts.items():
            report[host] = {
                **trust.to_dict(),
                "reliability": trust.reliability,
                "usefulness": trust.usefulness,
                "verify_rate": trust.verify_rate(params),
            }
        if not report:
            return
        path = os.path.join(self.state.path, "validators-report.json")
        try:
            with open(path + ".tmp", "w", encoding="utf-8") as f:
                json.dump(report, f, indent=1, sort_keys=True)
            os.replace(path + ".tmp", path)
        except OSError as exc:
            logger.warning("Cannot write %s: %s", path, exc)
        if final:
            lies = sum(t.lies for t in trusts.values())
            trusted = sum(1 for t in trusts.values() if t.verify_rate(params) < 1)
            logger.info(
                "Validators: %d hosts scored, %d trusted, %d lies caught (per host: %s)",
                len(report),
                trusted,
                lies,
                path,
            )

    def _fatal(self, exc: StoreError) -> None:
        """The state cannot be written: stop rather than lose history.

        The failed batch was not applied (LevelDB batches are atomic), so the
        store still holds the previous, consistent state.
        """
        if self._stopping:
            return
        self._stopping = True
        logger.critical("%s. Stopping the crawl; the state on disk is consistent and the crawl can resume.", exc)
        self.stats.set_value("adaptive/fatal", str(exc))
        engine = self.crawler.engine
        if engine is not None:
            deferred_from_coro(engine.close_spider_async(reason="adaptive_state_error"))
