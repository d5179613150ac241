"""The crawl's runtime: everything built on a state folder, assembled in one place.

:func:`assemble` opens the state folder and its store, builds the frontier
and what works on it (host capacities, the crawl log, the verdict path, the
console and the reporter) and restores the policies' saved aggregates.  The
scheduler calls it once, at open, and hands requests to what it returns;
the periodic tasks (:mod:`.tasks`) and the close read the same object.  Each
collaborator is built here and nowhere else, so a feature that needs one
more part adds a line here, not a branch in the scheduler.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..change.trust import TrustParams
from ..config.settings import AdaptiveConfig
from ..config.spec import ConfigError, clause, counted, plural
from ..frontier import Frontier, Politeness
from ..frontier.advance import rebound
from ..frontier.capacity import HostCapacity
from ..frontier.sharing import Sharing
from ..ops.console.api import FrontierConsole
from ..ops.console.schedule_command import ScheduleConsole, load_stored
from ..ops.humanize import human
from ..ops.pace import CAPACITY, CONFIGURED, PRECISION, Pace
from ..ops.progress import META_KEY as PROGRESS_KEY
from ..ops.progress import Progress
from ..ops.reporting import Reporter
from ..policies import PolicyStack, persist
from ..runtime.changelog import ChangesLog
from ..runtime.changes import ChangeEvents, ChangesFeed
from ..runtime.crawllog import CrawlLog
from ..runtime.delivery import Delivery
from ..runtime.issued import IssuedRequests
from ..runtime.verdicts import Verdicts
from ..store.base import Store, StoreCorrupt, StoreError
from ..store.statedir import (
    SHARED_CHECKPOINT_INTERVAL,
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
from .spiderstate import Legacy, SpiderStateFile

if TYPE_CHECKING:
    from scrapy.signalmanager import SignalManager
    from scrapy.statscollectors import StatsCollector

    from ..policies.allocator import RateAllocator
    from ..policies.crawlwide import CrawlWide
    from ..policies.schedules import Schedules

logger = logging.getLogger(__name__)


@dataclass
class Runtime:
    """What one crawl works with, from open to close."""

    state: StateDir
    #: the state folder's database, opened and closed here: the frontier's
    #: URLs and the policies' aggregates are kept in it, and the checkpoint
    #: counts its writes
    store: Store
    frontier: Frontier
    checkpoints: Checkpoints
    capacity: HostCapacity
    verdicts: Verdicts
    console: FrontierConsole
    reporter: Reporter
    crawl_log: CrawlLog | None
    #: where the policies' aggregates are saved (a worker of a shared frontier has its own)
    policy_key: str
    #: ``spider.state``, kept in the state folder as JSON
    spider_state: SpiderStateFile
    #: takes change events out of the outbox (None: ``ADAPTIVE_CHANGE_EVENTS`` off, no feed)
    changes: ChangeEvents | None = None

    def checkpoint(self, *, clean: bool, required: bool = False) -> None:
        """Record the counts that only ever grow in the state folder's marker
        (written only when one moved; *required* at open: :class:`Checkpoints`)."""
        frontier = self.frontier
        if frontier.sharing is not None:
            # other workers count too: the store's sums, not this worker's view, read every so often
            if not (clean or required or self.checkpoints.due(SHARED_CHECKPOINT_INTERVAL)):
                return
            try:
                counts = stored_counts(self.store)
            except StateDirError as exc:
                logger.warning("Cannot read the counts for the checkpoint: %s", exc)
                return
            self.checkpoints.write(**counts, clean=clean, required=required)
            return
        now = frontier.counts()
        urls = now.urls + now.quarantined + now.forgotten
        self.checkpoints.write(urls=urls, visits=now.visits, writes=self.store.writes, clean=clean, required=required)

    def close(self, crawl: CrawlWide) -> None:
        """The last summary, the policies' aggregates saved, the host leases
        given back, the store closed and the clean checkpoint written.

        Raises :class:`StoreCorrupt` once all that is done if the final
        summary found the database damaged (a short crawl meets a damaged
        block first there): the crawl must not end as if all were well.
        """
        frontier = self.frontier
        damaged: StoreCorrupt | None = None
        if self.changes is not None:
            try:
                self.changes.close()  # what the outbox holds now, out before the stop
            except StoreError as exc:
                if not self.checkpoints.stopped:
                    logger.error("The last change events could not be delivered (%s); they are at the next start.", exc)
        # stopped for a state fault already said (a full disk): what cannot be written now repeats it
        self.reporter.after_fault = self.checkpoints.stopped
        try:
            self.summary(final=True)
        except StoreCorrupt as exc:
            if not self.checkpoints.stopped:  # else the crawl was stopped for it, and said why
                damaged = exc
        except StoreError as exc:  # a store gone at the stop: what it acknowledged is kept
            if not self.checkpoints.stopped:
                logger.error("The final frontier summary could not be read: %s", exc)
        persist.save(self.store, crawl.persisted(), self.policy_key, after_fault=self.checkpoints.stopped)
        try:
            frontier.leave()
        except StoreError as exc:  # the leases lapse by themselves
            logger.warning("Could not give back the host leases (%s); other workers wait for them to lapse.", exc)
        shared = frontier.sharing is not None
        if shared:  # the store's sums are read: while it is open
            self.checkpoint(clean=True)
        self.store.close()
        if not shared:  # "clean" once the database is closed (synced)
            self.checkpoint(clean=True)
        if self.crawl_log is not None:
            self.crawl_log.close()
        if self.state.temporary:
            remove_temporary(self.state.path)
        if damaged is not None:
            raise damaged

    def summary(self, *, final: bool = False) -> None:
        """The periodic summary line, host capacities measured first."""
        self.capacity.measured()
        self.reporter.summary(final=final)


def remove_temporary(path: str) -> None:
    """A crawl without JOBDIR keeps nothing (it said so at start): its
    temporary state folder goes with it, not left to fill the temp folder."""
    try:
        shutil.rmtree(path)
    except OSError as exc:
        logger.warning("The temporary state folder %s could not be removed: %s", path, exc)


def politeness_of(config: AdaptiveConfig) -> Politeness:
    return Politeness(
        delay_factor=config.delay_factor,
        min_delay=config.min_delay,
        max_delay=config.max_delay,
        valence=config.host_valence,
        retry_delay=config.retry_delay,
        max_retries=config.max_retries,
        lease=config.lease,
    )


def assemble(
    config: AdaptiveConfig,
    policy: PolicyStack,
    stats: StatsCollector,
    issued: IssuedRequests,
    *,
    jobdir: str | None,
    spider_name: str,
    fingerprinter: str,
    delivery: Delivery | None,
    on_store_error: Callable[[StoreError], None],
    on_change: Callable[[], None],
    identity: Callable[[str], tuple[str, bytes]],
    seeder: Callable[[list[str]], list[dict[str, Any]]],
    legacy_state: Legacy | None = None,
    signals: SignalManager | None = None,
) -> Runtime:
    """Open the state folder and build the crawl's runtime on it
    (*legacy_state*: Scrapy's pickled spider state, to migrate into it;
    *signals*: where change events are sent, with ``ADAPTIVE_CHANGE_EVENTS``).

    Raises :class:`StateDirError` or :class:`StoreError` when the folder or
    its store must be refused; nothing is left open then.
    """
    state = resolve(config.state_dir, jobdir)
    remote = shared_store(config, spider_name)
    store = open_store(
        state,
        spider=spider_name,
        fingerprinter=fingerprinter,
        sync=config.state_sync,
        cache_mb=config.state_cache_mb,
        shared=remote,
    )
    changes: ChangeEvents | None = None
    try:  # a damaged database found while building on it: refused, nothing left open
        spider_state = SpiderStateFile.open(state, legacy_state)
        checkpoints = Checkpoints(state)
        sharing = None if remote is None else Sharing(store, worker_name(state.path), remote.lease)  # type: ignore[arg-type]
        frontier = Frontier(
            store,
            politeness_of(config),
            history_size=config.history_size,
            trust=TrustParams(config.trust_warmup, config.trust_min_rate),
            soft404_urls=config.soft404_urls,
            sharing=sharing,
        )
        frontier.load()
        frontier.rebalance()  # a worker of a shared frontier takes its share of hosts
        _rebound(frontier, config)
        if frontier.redelivered and frontier.sharing is None:  # a shared frontier logs its own (sharing.py)
            logger.info(
                "%s had versions not confirmed delivered when the last crawl stopped; they are fetched "
                "again now so their items are produced again.",
                counted(frontier.redelivered, "URL"),
            )
            stats.set_value("adaptive/delivery/redelivered", frontier.redelivered)
        if delivery is not None:
            delivery.bind(frontier)
        # each worker's aggregates are its own (docs/shared-frontier.md)
        policy_key = persist.META_KEY if remote is None else f"{persist.META_KEY}/{worker_home(state.path)}"
        persist.restore(store, policy.params.crawl.persisted(), policy_key)
        for problem in load_stored(frontier, policy.schedules):  # given on the console (scrapy frontier schedule)
            logger.error("%s; this schedule is not applied.", clause(problem))
        allocator: RateAllocator | None = policy.params.crawl.allocator
        share = None if config.budget is not None else config.capacity_share
        capacity = HostCapacity(frontier, allocator, crawl=policy.params.crawl, share=share)
        capacity.all_nominal()
        crawl_log = None
        if config.crawl_log:
            path = os.path.join(state.path, "crawl.log")
            crawl_log = CrawlLog(path, config.crawl_log_max_bytes, config.crawl_log_backups)
        events_on = config.events_on
        if events_on:
            try:
                history = ChangesLog(state.path, config.changes_log_max_bytes, config.changes_log_backups)
            except OSError as exc:
                raise StateDirError(f"The changes log in {state.path} cannot be written: {exc}.") from None
            try:
                feed = None if config.changes_feed is None else ChangesFeed(config.changes_feed)
            except ConfigError as exc:
                raise StateDirError(str(exc)) from None
            changes = ChangeEvents(
                frontier,
                feed,
                signals,
                stats,
                on_error=on_store_error,
                history=history,
                as_items=config.changes_as_items,
            )
        verdicts = Verdicts(
            frontier,
            policy,
            issued,
            stats,
            crawl_log=crawl_log,
            delivery=delivery,
            on_store_error=on_store_error,
            on_change=on_change,
            events=events_on,
            gone_confirmations=config.gone_confirmations,
        )
        pace = pace_of(config, capacity, allocator)
        console, reporter = _operations(
            config, frontier, stats, allocator, pace, state.path, identity, seeder, policy.schedules
        )
        runtime = Runtime(
            state=state,
            store=store,
            frontier=frontier,
            checkpoints=checkpoints,
            capacity=capacity,
            verdicts=verdicts,
            console=console,
            reporter=reporter,
            crawl_log=crawl_log,
            policy_key=policy_key,
            spider_state=spider_state,
            changes=changes,
        )
        runtime.checkpoint(clean=False, required=True)  # a folder that cannot take it is refused
    except BaseException:
        store.close()
        if changes is not None:
            for sink in (changes.feed, changes.history):
                if sink is not None:
                    sink.close()
        raise
    return runtime


def _rebound(frontier: Frontier, config: AdaptiveConfig) -> None:
    """Plans made under a wider ADAPTIVE_WAIT_MIN / MAX than this run's are brought within it."""
    moved, old = rebound(frontier, config.wait_min, config.wait_max)
    if old is None:
        return
    bounds = (("ADAPTIVE_WAIT_MIN", config.wait_min, old[0]), ("ADAPTIVE_WAIT_MAX", config.wait_max, old[1]))
    changes = [f"{name} is {human(new)} (was {human(was)})" for name, new, was in bounds if new != was]
    logger.info(
        "%s since the last run: %d %s planned under the old bounds brought forward; every URL's wait follows "
        "the new bounds from its next visit.",
        " and ".join(changes),
        moved,
        plural(moved, "visit"),
    )


def pace_of(config: AdaptiveConfig, capacity: HostCapacity, allocator: RateAllocator | None) -> Callable[[], Pace]:
    """Where the crawl's revisit budget comes from, asked at every summary:
    ``ADAPTIVE_BUDGET``, a share of the politeness capacity, or (a policy
    without a budget) the target precision."""
    day = 86_400.0

    def pace() -> Pace:
        low, high = config.wait_min, config.wait_max
        if config.budget is not None:  # a worker of a fleet spends its share (tasks.ShareBudget)
            budget = allocator.budget * day if allocator is not None and allocator.budget else config.budget
            return Pace(budget, CONFIGURED, wait_min=low, wait_max=high)
        if capacity.derived and capacity.budget is not None:
            return Pace(
                capacity.budget * day,
                CAPACITY,
                capacity_per_day=capacity.total() * day,
                share=capacity.share,
                precision_binds=allocator is not None and allocator.floor_binds(),
                wait_min=low,
                wait_max=high,
            )
        planned = None if allocator is None else allocator.planned_rate() * day
        return Pace(planned, PRECISION, wait_min=low, wait_max=high)

    return pace


def _operations(
    config: AdaptiveConfig,
    frontier: Frontier,
    stats: StatsCollector,
    allocator: RateAllocator | None,
    pace: Callable[[], Pace],
    state_path: str,
    identity: Callable[[str], tuple[str, bytes]],
    seeder: Callable[[list[str]], list[dict[str, Any]]],
    schedules: Schedules,
) -> tuple[FrontierConsole, Reporter]:
    """What `scrapy frontier` talks to, and the periodic summary."""
    progress = Progress.from_bytes(frontier.meta(PROGRESS_KEY))
    console = ScheduleConsole(
        frontier,
        schedules=schedules,
        progress=progress,
        budget_per_day=config.budget,
        identity=identity,
        seeder=seeder,
        pace=pace,
        state_path=state_path,
    )
    reporter = Reporter(
        frontier,
        stats,
        allocator=allocator,
        state_path=state_path,
        interval=config.log_interval,
        progress=progress,
        console=console,
        pace=pace,
    )
    return console, reporter
