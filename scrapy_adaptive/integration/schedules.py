"""The crawl's side of curated schedules (:mod:`..policies.schedules`).

The overlay bounds every wait decided while a window is open, but a URL
visited before the window (or before the schedule existed) may be planned
weeks away.  :class:`OpenSchedules`, a task of the once-a-second tick,
notices each schedule becoming open (at start-up too) and has the frontier
bring its URLs forward to within one ``every`` of now, spread over it (by
fingerprint, a uniform hash) so that opening a window on a host is not a
burst its politeness must absorb.  It also keeps the per-schedule count of
forced revisits in the state folder, so the report can say what a schedule
took from the rest of the crawl across restarts.
"""

from __future__ import annotations

import json
import logging
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..frontier.advance import bring_forward
from ..model import UrlRecord
from ..ops.console.schedules import FORCED_KEY, forced_counts
from ..policies.history import url_host
from ..policies.schedules import OPEN, Schedule, Schedules
from ..store.base import Batch
from ..store.keys import time_to_ms

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

    from ..frontier.frontier import Frontier

logger = logging.getLogger(__name__)

def spread_plan(schedule: Schedule, now: float) -> Callable[[UrlRecord], float | None]:
    """When each of *schedule*'s URLs planned later than one ceiling from
    *now* should be visited: within that ceiling, each at its own fraction
    of it (a CRC of its URL: stable across runs, no hash seed)."""
    ceiling = schedule.ceiling or 0.0
    horizon_ms = time_to_ms(now + ceiling)

    def plan(record: UrlRecord) -> float | None:
        if record.next_ms <= horizon_ms:
            return None
        if not schedule.matches(record.url, url_host(record.url), record.content_type):
            return None
        return now + ceiling * zlib.crc32(record.url.encode("utf-8", "surrogatepass")) / 2**32

    return plan


class OpenSchedules:
    """Bring a schedule's URLs forward when its window opens; count and
    save the revisits schedules forced."""

    def __init__(
        self,
        frontier: Frontier,
        schedules: Schedules,
        stats: StatsCollector,
        wake: Callable[[], None],
    ) -> None:
        self.frontier = frontier
        self.schedules = schedules
        self.stats = stats
        self.wake = wake
        #: names of the schedules seen open (a window opening is acted on once)
        self.opened: set[str] = set()
        schedules.restore_forced(forced_counts(frontier.store))
        self._saved = dict(schedules.forced)

    def run(self) -> None:
        now = self.frontier.clock()
        self.opened &= {s.name for s in self.schedules}  # removed, then added again: a new opening
        for schedule in list(self.schedules):
            if schedule.state(now) != OPEN:
                if schedule.name in self.opened:
                    self.opened.discard(schedule.name)
                    logger.info("Schedule %s is closed: its URLs are the wait policy's again.", schedule.name)
                continue
            if schedule.name in self.opened:
                continue
            self.opened.add(schedule.name)
            moved = bring_forward(self.frontier, spread_plan(schedule, now)) if schedule.ceiling else 0
            self.stats.inc_value("adaptive/schedules/opened")
            logger.info(
                "Schedule %s is open: %d URLs brought forward to within %gs.",
                schedule.name,
                moved,
                schedule.ceiling or 0,
            )
            if moved:
                self.wake()
        self.save()

    def save(self) -> None:
        """The forced counts, written when they moved (one small meta write)."""
        forced = self.schedules.forced
        if forced == self._saved:
            return
        for name, count in forced.items():
            self.stats.set_value(f"adaptive/schedules/forced/{name}", count)
        self.frontier.store.write(Batch(meta={FORCED_KEY: json.dumps(forced, sort_keys=True).encode()}))
        self._saved = dict(forced)
