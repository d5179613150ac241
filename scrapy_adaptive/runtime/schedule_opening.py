"""The crawl's side of curated schedules (:mod:`..policies.schedules`).

The overlay bounds every wait decided while a window is open, but a URL
visited before the window (or before the schedule existed) may be planned
weeks away.  :class:`OpenSchedules`, a task of the once-a-second tick,
notices each schedule becoming open (at start-up too) and has the frontier
bring its URLs forward to within one ``every`` of now, spread over it (by
fingerprint, a uniform hash) so that opening a window on a host is not a
burst its politeness must absorb.  It also keeps the per-schedule count of
forced revisits in the state folder, so the report can say what a schedule
took from the rest of the crawl across restarts, and, every
:data:`SYNC_TICKS` ticks, takes the schedules a console gave another worker
of a fleet.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..config.spec import ConfigError, clause, counted
from ..frontier.bring_forward import bring_forward
from ..model import UrlRecord
from ..policies.history import url_host
from ..policies.schedules import OPEN, Schedule, Schedules
from ..store.keys import time_to_ms
from .schedule_entries import add_forced, forced_counts, stored_entries

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

    from ..frontier.frontier import Frontier

logger = logging.getLogger(__name__)

#: ticks (seconds) between two reads of the state folder's schedules
SYNC_TICKS = 10


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
        schedules.restore_forced(forced_counts(frontier, said=True))
        self._saved = dict(schedules.forced)
        #: the state folder's schedules cannot be read (said once: by the
        #: assembly when it loaded them, or here if they became so since)
        self._unreadable = False
        #: the names of the state folder's schedules this worker applies
        self.stored = set(self._entries(said=True))
        self._ticks = 0

    def _entries(self, *, said: bool = False) -> dict[str, dict[str, Any]]:
        """The state folder's schedules by name; none while they cannot be
        read (they are left for a repair, the crawl goes on)."""
        try:
            entries = {e["name"]: e for e in stored_entries(self.frontier)}
        except ValueError as exc:
            if not (said or self._unreadable):
                logger.error("%s; the schedules kept in the state folder are not applied.", clause(exc))
            self._unreadable = True
            return {}
        self._unreadable = False
        return entries

    def run(self) -> None:
        self._ticks += 1
        if self._ticks % SYNC_TICKS == 0:
            self.sync()
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
                "Schedule %s is open: %s brought forward to within %gs.",
                schedule.name,
                counted(moved, "URL"),
                schedule.ceiling or 0,
            )
            if moved:
                self.wake()
        self.save()

    def sync(self) -> None:
        """Take the schedules another worker's console added or removed.

        The console changes the state folder's list and the schedules of the
        crawl it asked; in a fleet sharing one store the other workers see
        the change here, within :data:`SYNC_TICKS` seconds.
        """
        entries = self._entries()
        if self._unreadable:  # keep what is applied until they can be read again
            return
        for name in self.stored - entries.keys():
            self.schedules.remove(name)
        for name, entry in entries.items():
            if self.schedules.get(name) is None:
                try:
                    self.schedules.add(Schedule.parse(entry, f"schedule {name!r} (state folder)"))
                except ConfigError as exc:
                    logger.error("%s; this schedule is not applied.", clause(exc))
        self.stored = set(entries)

    def save(self) -> None:
        """The forced counts, written when they moved (one small meta write).

        What this worker added since its last write is added to the stored
        counts, so the workers of a fleet sharing one store sum theirs.
        """
        forced = self.schedules.forced
        if forced == self._saved:
            return
        for name, count in forced.items():
            self.stats.set_value(f"adaptive/schedules/forced/{name}", count)
        add_forced(self.frontier, {name: count - self._saved.get(name, 0) for name, count in forced.items()})
        self._saved = dict(forced)
