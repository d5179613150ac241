"""The scheduler's once-a-second tick, as a list of small tasks.

Each task does one job and can be built and run alone in a test: take a
fleet's share of hosts, hold a worker to its share of the budget, confirm
delivered versions, abandon what a stopping engine will not finish, take
back URLs whose lease lapsed, write a checkpoint, report.  :class:`Tick`
runs them in order; a state-store failure stops the crawl (the caller's
``on_store_error``), anything else is logged and the next tick runs again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from ..model import Outcome, Visit
from ..policies import persist
from ..store.base import StoreError
from .schedule_opening import OpenSchedules

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

    from ..config.settings import AdaptiveConfig
    from ..policies.crawl_state import CrawlWide
    from ..policies.schedules import Schedules
    from ..runtime.delivery import Delivery
    from ..runtime.issued_requests import IssuedRequests
    from ..runtime.stop_grace import StopGrace
    from .assembly import Runtime

logger = logging.getLogger(__name__)


class Task(Protocol):
    def run(self) -> None: ...


class Rebalance:
    """A worker of a shared frontier takes and gives back hosts."""

    def __init__(self, runtime: Runtime, stats: StatsCollector, wake: Callable[[], None]) -> None:
        self.frontier = runtime.frontier
        self.stats = stats
        self.wake = wake

    def run(self) -> None:
        if self.frontier.fleet.rebalance():
            self.wake()
        if self.frontier.redelivered:  # a shared frontier takes back versions of stopped workers
            self.stats.set_value("adaptive/delivery/redelivered", self.frontier.redelivered)


class ShareBudget:
    """In a fleet, each worker spends its share of ``ADAPTIVE_BUDGET``
    (:meth:`.CrawlWide.share_fleet`) and issues no more revisits than it
    (:meth:`.Frontier.set_revisit_ceiling`): re-read at every tick, as
    workers come and go."""

    def __init__(self, runtime: Runtime, crawl: CrawlWide, budget_per_day: float | None) -> None:
        self.frontier = runtime.frontier
        self.sharing = runtime.frontier.sharing
        self.crawl = crawl
        self.budget_per_day = budget_per_day

    def run(self) -> None:
        if self.sharing is not None:
            share = self.crawl.share_fleet(self.budget_per_day, self.sharing.workers)
            if share is not None:
                self.frontier.set_revisit_ceiling(share)  # the ceiling too: this worker's share of the revisits


class FlushDelivery:
    """Make the durable sinks durable and confirm the versions they hold."""

    def __init__(self, delivery: Delivery) -> None:
        self.delivery = delivery

    def run(self) -> None:
        self.delivery.flush()


class AbandonOnStop:
    """Once the engine is stopping, count what will not be finished."""

    def __init__(self, grace: StopGrace, stats: StatsCollector) -> None:
        self.grace = grace
        self.stats = stats

    def run(self) -> None:
        abandoned = self.grace.tick()
        if abandoned:
            self.stats.inc_value("adaptive/abandoned", abandoned)


class LapsedLeases:
    """An issued URL that got no verdict within its lease is a retry, counted.

    Its download is over (a running one never lapses), so something
    between the downloader and our middlewares swallowed the outcome: a
    middleware that replaced or dropped the request, an exception in a
    ``process_response`` under a ``DOWNLOADER`` of the project's own (the
    add-on's settles it at once).  Counted as a retry,
    the URL is tried again after ``ADAPTIVE_RETRY_DELAY`` and marked failed
    after ``ADAPTIVE_MAX_RETRIES``, like any other error.  Once the engine
    stops, a URL without a verdict was abandoned (due on restart), not lost.
    """

    def __init__(
        self,
        runtime: Runtime,
        issued: IssuedRequests,
        grace: StopGrace,
        stats: StatsCollector,
        lease: float,
    ) -> None:
        self.frontier = runtime.frontier
        self.verdicts = runtime.verdicts
        self.issued = issued
        self.grace = grace
        self.stats = stats
        self.lease = lease

    def run(self) -> None:
        if self.grace.stop_seen is not None:
            return
        for fp in self.frontier.downloads.lapsed():
            self.lapsed(fp)

    def lapsed(self, fp: bytes) -> None:
        request = self.issued.get(fp)
        url = request.url if request is not None else fp.hex()
        reason = f"no verdict within ADAPTIVE_LEASE ({self.lease:g}s)"
        logger.warning("%s: %s; counted as a retry.", url, reason)
        self.stats.inc_value("adaptive/leases_expired")
        # the request object may be gone (the frontier lent the URL all the same)
        self.verdicts.settle(fp, Visit(Outcome.RETRY, reason=reason), request)


class Checkpoint:
    """Record in the state folder's checkpoint what the database now holds
    (after the tick's confirmations): a log later cut short of it is seen."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime

    def run(self) -> None:
        self.runtime.checkpoint(clean=False)


class Report:
    """The periodic summary, and the policies' aggregates saved with it."""

    def __init__(self, runtime: Runtime, crawl: CrawlWide) -> None:
        self.runtime = runtime
        self.crawl = crawl

    def run(self) -> None:
        if self.runtime.reporter.due():
            self.runtime.summary()
            persist.save(self.runtime.store, self.crawl.persisted(), self.runtime.policy_key)


class Tick:
    """Runs its tasks in order, once per call."""

    def __init__(self, tasks: Sequence[Task], on_store_error: Callable[[StoreError], None]) -> None:
        self.tasks = list(tasks)
        self.on_store_error = on_store_error

    def __call__(self) -> None:
        try:
            for task in self.tasks:
                task.run()
        except StoreError as exc:
            self.on_store_error(exc)
        except Exception:
            logger.exception("scrapy-adaptive periodic task failed")


def build_tick(
    runtime: Runtime,
    *,
    config: AdaptiveConfig,
    policy_crawl: CrawlWide,
    issued: IssuedRequests,
    grace: StopGrace,
    delivery: Delivery | None,
    stats: StatsCollector,
    wake: Callable[[], None],
    on_store_error: Callable[[StoreError], None],
    schedules: Schedules | None = None,
) -> Tick:
    """The tick of one crawl, its tasks in the order they must run."""
    tasks: list[Task] = [Rebalance(runtime, stats, wake), ShareBudget(runtime, policy_crawl, config.budget)]
    if delivery is not None:
        tasks.append(FlushDelivery(delivery))
    if runtime.changes is not None:  # change events out of the outbox, to the feed and the signal
        tasks.append(runtime.changes)
    tasks += [
        AbandonOnStop(grace, stats),
        LapsedLeases(runtime, issued, grace, stats, config.lease),
    ]
    if schedules is not None:
        tasks.append(OpenSchedules(runtime.frontier, schedules, stats, wake))
    tasks += [
        Checkpoint(runtime),
        Report(runtime, policy_crawl),
    ]
    return Tick(tasks, on_store_error)
