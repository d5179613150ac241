"""The crawl's runtime: everything built on a state folder, assembled in one place.

:func:`assemble` opens the state folder and its store, builds the frontier
and what works on it (host capacities, the crawl log, the verdict path,
the change events) and restores the policies' saved aggregates.  The
scheduler calls it once, at open, and hands requests to what it returns;
the periodic tasks (:mod:`.tasks`) and the close read the same object.  Each
collaborator is built here and nowhere else, so a feature that needs one
more part adds a line here, not a branch in the scheduler.

What an operator sees (the console, the periodic summary) sits on a floor
above: the scheduler hands in a builder for them (:class:`OperationsBuilder`,
made by :mod:`..ops.assembly`), called once the frontier stands, so the
runtime holds them without importing them.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ..change.trust import TrustParams
from ..config.notify import notify_channels
from ..config.settings import AdaptiveConfig
from ..config.spec import ConfigError, clause, counted, plural
from ..frontier import Frontier, Politeness
from ..frontier.bring_forward import rebound
from ..frontier.capacity import HostCapacity
from ..frontier.sharing import Sharing
from ..humanize import human
from ..policies import PolicyStack, persist
from ..policies.history import DAY
from ..store.base import Store, StoreCorrupt, StoreError
from ..store.statedir import (
    SHARED_CHECKPOINT_INTERVAL,
    Checkpoints,
    SharedStore,
    StateDir,
    StateDirError,
    how_it_resumes,
    last_checkpoint,
    open_store,
    resolve,
    shared_store,
    stored_counts,
    worker_home,
    worker_name,
)
from .changelog import ChangesLog
from .changes import ChangeEvents, ChangesFeed
from .crawllog import CrawlLog
from .delivery import Delivery
from .issued_requests import IssuedRequests
from .notify import Notifier
from .schedule_entries import load_stored
from .spiderstate import Legacy, SpiderStateFile
from .verdicts import Verdicts

if TYPE_CHECKING:
    from scrapy.signalmanager import SignalManager
    from scrapy.statscollectors import StatsCollector

    from ..policies.crawl_state import CrawlWide
    from ..store.marker import Checkpoint

logger = logging.getLogger(__name__)


class Console(Protocol):
    """What ``scrapy frontier`` talks to (:class:`~..ops.console.api.FrontierConsole`)."""

    def answer(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]: ...


class Reports(Protocol):
    """The periodic summary (:class:`~..ops.reporting.Reporter`)."""

    #: set at a stop for a state fault already said: what cannot be written then is not said again
    after_fault: bool

    def due(self) -> bool: ...

    def summary(self, *, final: bool = False) -> None: ...


class OperationsBuilder(Protocol):
    """Builds the console and the summary once the frontier stands
    (:class:`~..ops.assembly.Operations`)."""

    def __call__(self, frontier: Frontier, crawl: CrawlWide, state_path: str) -> tuple[Console, Reports]: ...


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
    console: Console
    reporter: Reports
    crawl_log: CrawlLog | None
    #: where the policies' aggregates are saved (a worker of a shared frontier has its own)
    policy_key: str
    #: ``spider.state``, kept in the state folder as JSON
    spider_state: SpiderStateFile
    #: takes change events out of the outbox (None: ``ADAPTIVE_CHANGE_EVENTS`` off, no feed)
    changes: ChangeEvents | None = None
    #: the checkpoint the run before this one left (None: a new crawl): how it
    #: stopped, for the start-up line (:func:`..store.statedir.how_it_resumes`)
    previous: Checkpoint | None = None

    def opening_line(self, seconds: float) -> str:
        """The start-up line: what the frontier holds and how the run before
        this one ended (a new crawl, a clean close, or a kill)."""
        shape = self.frontier.shape(due_limit=0)
        resumes = how_it_resumes(self.previous, shared=self.frontier.sharing is not None)
        return (
            f"Adaptive frontier opened in {seconds:.2f}s: {counted(shape['urls'], 'URL')} in "
            f"{counted(shape['queues'], 'queue')}, {counted(shape['visits'], 'visit')}; {resumes} "
            f"(state: {self.state.path})"
        )

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
            frontier.fleet.leave()
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


def open_crawl_log(config: AdaptiveConfig, state: StateDir) -> CrawlLog | None:
    """The crawl log in the state folder, or None with ``ADAPTIVE_CRAWL_LOG`` off."""
    if not config.crawl_log:
        return None
    path = os.path.join(state.path, "crawl.log")
    return CrawlLog(path, config.crawl_log_max_bytes, config.crawl_log_backups)


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
    operations: OperationsBuilder,
    legacy_state: Legacy | None = None,
    signals: SignalManager | None = None,
) -> Runtime:
    """Open the state folder and build the crawl's runtime on it
    (*legacy_state*: Scrapy's pickled spider state, to migrate into it;
    *signals*: where change events are sent, with ``ADAPTIVE_CHANGE_EVENTS``;
    *operations*: builds the console and the summary on the frontier).

    Raises :class:`StateDirError` or :class:`StoreError` when the folder or
    its store must be refused; nothing is left open then.
    """
    state, remote, store = open_state(config, jobdir, spider_name, fingerprinter)
    changes: ChangeEvents | None = None
    try:  # a damaged database found while building on it: refused, nothing left open
        previous = last_checkpoint(state)  # before this run writes its own
        spider_state = SpiderStateFile.open(state, legacy_state)
        checkpoints = Checkpoints(state)
        sharing = None if remote is None else Sharing(store, worker_name(state.path), remote.lease)  # type: ignore[arg-type]
        frontier = open_frontier(store, config, stats, sharing)
        if delivery is not None:
            delivery.bind(frontier)
        # each worker's aggregates are its own (docs/shared-frontier.md)
        policy_key = persist.META_KEY if remote is None else f"{persist.META_KEY}/{worker_home(state.path)}"
        restore_policies(store, frontier, policy, policy_key)
        crawl = policy.params.crawl  # the budget's owner, which holds the capacity it is derived from
        share = None if config.budget is not None else config.capacity_share
        crawl.capacity = capacity = HostCapacity(frontier, crawl, share=share)
        capacity.all_nominal()
        crawl_log = open_crawl_log(config, state)
        if config.events_on:
            changes = change_events(config, state.path, frontier, signals, stats, on_store_error)
        verdicts = Verdicts(
            frontier,
            policy,
            issued,
            stats,
            crawl_log=crawl_log,
            delivery=delivery,
            on_store_error=on_store_error,
            on_change=on_change,
            events=config.events_on,
            gone_confirmations=config.gone_confirmations,
        )
        console, reporter = operations(frontier, crawl, state.path)
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
            previous=previous,
        )
        runtime.checkpoint(clean=False, required=True)  # a folder that cannot take it is refused
    except BaseException:
        store.close()
        if changes is not None:
            changes.close_sinks()
        raise
    return runtime


def open_state(
    config: AdaptiveConfig, jobdir: str | None, spider_name: str, fingerprinter: str
) -> tuple[StateDir, SharedStore | None, Store]:
    """The state folder, the shared store's settings (None: the folder's own
    LevelDB) and the store opened on them."""
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
    return state, remote, store


def restore_policies(store: Store, frontier: Frontier, policy: PolicyStack, policy_key: str) -> None:
    """The policies' saved aggregates, and the schedules given on the console
    (``scrapy frontier schedule``; one that no longer parses is said, not applied)."""
    persist.restore(store, policy.params.crawl.persisted(), policy_key)
    for problem in load_stored(frontier, policy.schedules):
        logger.error("%s; this schedule is not applied.", clause(problem))


def open_frontier(store: Store, config: AdaptiveConfig, stats: StatsCollector, sharing: Sharing | None) -> Frontier:
    """The frontier on *store*, loaded, with this worker's share of hosts,
    its plans within this run's wait bounds, and what a stop left unconfirmed said."""
    frontier = Frontier(
        store,
        politeness_of(config),
        history_size=config.history_size,
        trust=TrustParams(config.trust_warmup, config.trust_min_rate),
        soft404_urls=config.soft404_urls,
        sharing=sharing,
        text_diff=config.text_diff if config.events_on else 0,
        # a budget the user set is a ceiling too: planned revisits no faster than it
        revisit_ceiling=config.budget / DAY if config.budget is not None else None,
    )
    frontier.load()
    frontier.fleet.rebalance()  # a worker of a shared frontier takes its share of hosts
    _rebound(frontier, config)
    if frontier.redelivered and frontier.sharing is None:  # a shared frontier logs its own (sharing.py)
        logger.info(
            "%s had versions not confirmed delivered when the last crawl stopped; they are fetched "
            "again now so their items are produced again.",
            counted(frontier.redelivered, "URL"),
        )
        stats.set_value("adaptive/delivery/redelivered", frontier.redelivered)
    return frontier


def change_events(
    config: AdaptiveConfig,
    state_path: str,
    frontier: Frontier,
    signals: SignalManager | None,
    stats: StatsCollector,
    on_store_error: Callable[[StoreError], None],
) -> ChangeEvents:
    """The outbox's drain, with its history and the user's feed opened
    (either one unwritable refuses the start, in one line)."""
    try:
        history = ChangesLog(state_path, config.changes_log_max_bytes, config.changes_log_backups)
    except OSError as exc:
        raise StateDirError(f"The changes log in {state_path} cannot be written: {exc}.") from None
    try:
        feed = None if config.changes_feed is None else ChangesFeed(config.changes_feed)
    except ConfigError as exc:
        history.close()
        raise StateDirError(str(exc)) from None
    notify = None
    channels = notify_channels(config.notify)
    if channels:
        try:
            notify = Notifier.open(channels, state_path, stats)
        except (ConfigError, OSError) as exc:
            history.close()
            if feed is not None:
                feed.close()
            raise StateDirError(str(exc)) from None
    return ChangeEvents(
        frontier,
        feed,
        signals,
        stats,
        on_error=on_store_error,
        history=history,
        as_items=config.changes_as_items,
        notify=notify,
    )


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
