"""What an operator sees of a crawl, built on its runtime: the console and the periodic summary.

The runtime (:mod:`..runtime.assembly`) builds the frontier and what works
on it; it calls :class:`Operations`, which the scheduler hands it, once the
frontier stands.  Both parts share one :class:`~.progress.Progress` (restored
from the state folder) and one view of where the revisit budget comes from
(:func:`pace_of`), so the console's report and the summary line say the same.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .console.schedule_command import ScheduleConsole
from .pace import Pace
from .progress import META_KEY as PROGRESS_KEY
from .progress import Progress
from .reporting import Reporter

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

    from ..config.settings import AdaptiveConfig
    from ..frontier import Frontier
    from ..policies.crawl_state import CrawlWide
    from ..policies.schedules import Schedules

#: seconds in a day: the budget is said per day
DAY = 86_400.0


@dataclass(frozen=True)
class Operations:
    """Builds the console and the reporter of one crawl (a
    :class:`~..runtime.assembly.OperationsBuilder`)."""

    config: AdaptiveConfig
    stats: StatsCollector
    schedules: Schedules
    #: a URL's queue and fingerprint (the console's ``url`` and ``forget``)
    identity: Callable[[str], tuple[str, bytes]]
    #: seeds given on the console, as the spider's requests
    seeder: Callable[[list[str]], list[dict[str, Any]]]

    def __call__(self, frontier: Frontier, crawl: CrawlWide, state_path: str) -> tuple[ScheduleConsole, Reporter]:
        allocator = crawl.allocator
        pace = pace_of(self.config, crawl)
        progress = Progress.from_bytes(frontier.notes.read(PROGRESS_KEY))
        console = ScheduleConsole(
            frontier,
            schedules=self.schedules,
            progress=progress,
            budget_per_day=self.config.budget,
            identity=self.identity,
            seeder=self.seeder,
            pace=pace,
            state_path=state_path,
        )
        reporter = Reporter(
            frontier,
            self.stats,
            allocator=allocator,
            state_path=state_path,
            interval=self.config.log_interval,
            progress=progress,
            console=console,
            pace=pace,
        )
        return console, reporter


def pace_of(config: AdaptiveConfig, crawl: CrawlWide) -> Callable[[], Pace]:
    """Where the crawl's revisit budget comes from, asked at every summary of
    the budget's owner (*crawl*): ``ADAPTIVE_BUDGET``, a share of the
    politeness capacity, or (a policy without a budget) the target precision."""
    allocator, capacity = crawl.allocator, crawl.capacity
    assert capacity is not None, "the crawl's capacity is set when its frontier opens"

    def pace() -> Pace:
        configured = config.budget  # a worker of a fleet spends its share (CrawlWide.share_fleet)
        if configured is not None and allocator is not None and allocator.budget:
            configured = allocator.budget * DAY
        derived = capacity.derived and capacity.budget is not None
        return Pace.chosen(
            config.wait_min,
            config.wait_max,
            configured=configured,
            capacity=capacity.budget * DAY if derived else None,  # type: ignore[operator]
            capacity_per_day=capacity.total() * DAY if derived else None,
            share=capacity.share,
            precision_binds=allocator is not None and allocator.floor_binds(),
            planned=None if allocator is None else allocator.planned_rate() * DAY,
        )

    return pace
