"""Progress of a crawl that never ends: hourly counts and recent rates.

A continuous crawl has no "percent done"; what tells its health is how fast
it works (visits, new versions and bytes the validators saved, per hour),
whether its backlog of due URLs grows or shrinks, and when the next URL is
due.  :class:`Progress` keeps both views, small and bounded:

* ``hours``: per wall-clock hour, the visits, versions and bytes saved in
  it, the backlog (URLs due) and revisit budget last seen in it, and the
  seconds of it the crawl was observed running, for at most
  :data:`MAX_HOURS` hours.  Saved in the frontier's meta (``progress``)
  at every summary, so the HTML report's "per hour" charts span restarts.
* ``samples``: the summaries of the last hour (in memory), for the rates
  the periodic summary logs, once they span :data:`MIN_SPAN`: a rate per
  hour drawn from a few seconds (the first summaries after a restart) says
  more about when the summaries fell than about the crawl.

Pure: no Scrapy; the reporter feeds it cumulative counters.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from typing import Any

logger = logging.getLogger(__name__)

#: the frontier meta key the hourly series is stored under
META_KEY = "progress"
HOUR = 3600.0
#: hours kept (two weeks)
MAX_HOURS = 24 * 14
#: the shortest span of this process's samples rated per hour
MIN_SPAN = 60.0
#: columns of an hourly bucket
VISITS, VERSIONS, BYTES_SAVED, DUE, BUDGET, SECONDS = range(6)
COLUMNS = 6


def _empty() -> list[float]:
    return [0.0] * COLUMNS


class Progress:
    """Hourly series and recent rates from cumulative counters."""

    def __init__(self, hours: dict[int, list[float]] | None = None) -> None:
        #: hour number (epoch seconds // 3600) -> [visits, versions, bytes saved, due, budget/h, seconds run]
        self.hours: dict[int, list[float]] = dict(hours or {})
        #: (time, visits, versions, bytes saved, due) of recent observations
        self.samples: deque[tuple[float, float, float, float, int]] = deque(maxlen=720)
        self._last: tuple[float, float, float] | None = None
        self._last_t: float | None = None

    def observe(
        self,
        now: float,
        *,
        visits: int,
        versions: int,
        bytes_saved: float,
        due: int,
        budget_per_hour: float | None = None,
    ) -> None:
        """Fold in the cumulative counters at *now*.

        The first observation of a process only sets the baseline: the
        counters of the crawl before it are not this hour's work.  A counter
        that went down (a process's stats start at 0) counts from zero.
        """
        current = (float(visits), float(versions), float(bytes_saved))
        bucket = self.hours.setdefault(int(now // HOUR), _empty())
        if self._last is not None:
            for column, (new, old) in enumerate(zip(current, self._last, strict=True)):
                bucket[column] += new - old if new >= old else new
        if self._last_t is not None:
            bucket[SECONDS] += min(max(0.0, now - self._last_t), HOUR)
        bucket[DUE] = due
        bucket[BUDGET] = round(budget_per_hour, 2) if budget_per_hour is not None else 0.0
        self._last = current
        self._last_t = now
        self.samples.append((now, *current, due))
        while self.samples and self.samples[0][0] < now - HOUR:
            self.samples.popleft()
        for hour in sorted(self.hours)[:-MAX_HOURS]:
            del self.hours[hour]

    def observed(self) -> float:
        """Seconds the recent samples span (0 before two samples)."""
        return self.samples[-1][0] - self.samples[0][0] if len(self.samples) > 1 else 0.0

    def rates(self) -> dict[str, Any] | None:
        """Per hour over the recent samples (up to the last hour), and the
        backlog's change over the same span; None while they span less than
        :data:`MIN_SPAN`."""
        span = self.observed()
        if span < MIN_SPAN:
            return None
        first, last = self.samples[0], self.samples[-1]
        per_hour = HOUR / span

        def rate(i: int) -> float:
            delta = last[i] - first[i]
            return max(delta, 0.0) * per_hour

        return {
            "span": span,
            "visits": rate(1),
            "versions": rate(2),
            "bytes_saved": rate(3),
            "due": last[4],
            "due_change": last[4] - first[4],
        }

    def series(self) -> list[tuple[int, list[float]]]:
        """The hourly buckets, oldest first, with the hours between filled with zeros."""
        if not self.hours:
            return []
        first, last = min(self.hours), max(self.hours)
        first = max(first, last - MAX_HOURS + 1)
        return [(h, self.hours.get(h, _empty())) for h in range(first, last + 1)]

    def stored_rates(self, hours: int = 24) -> dict[str, Any] | None:
        """Per hour over the last *hours* stored buckets (a stopped crawl's
        rates), counting only the time the crawl ran in them: a crawl that
        ran for two minutes is not averaged over the whole hour."""
        if not self.hours:
            return None
        last = [v for _, v in sorted(self.hours.items())[-hours:]]
        seconds = sum(v[SECONDS] for v in last)
        if seconds <= 0:  # nothing timed (one summary, or a series kept before the seconds were)
            seconds = len(last) * HOUR
        per_hour = HOUR / seconds
        return {
            "span": seconds,
            "visits": sum(v[VISITS] for v in last) * per_hour,
            "versions": sum(v[VERSIONS] for v in last) * per_hour,
            "bytes_saved": sum(v[BYTES_SAVED] for v in last) * per_hour,
            "due": int(last[-1][DUE]),
            "due_change": int(last[-1][DUE] - last[0][DUE]),
        }

    def to_bytes(self) -> bytes:
        return json.dumps({str(h): v for h, v in sorted(self.hours.items())}, separators=(",", ":")).encode()

    @classmethod
    def from_bytes(cls, raw: bytes | None) -> Progress:
        """The stored series; an unreadable one starts afresh (it is a report,
        not state), with one warning: the hourly charts lose their past."""
        if not raw:
            return cls()
        try:
            data = json.loads(raw)
            hours = {int(h): [float(x) for x in v][:COLUMNS] for h, v in data.items()}
            hours = {h: v + [0.0] * (COLUMNS - len(v)) for h, v in hours.items()}
        except (ValueError, TypeError, AttributeError) as exc:
            logger.warning(
                "The hourly progress series (key m/%s of the state database) is unreadable (%s: %s); it starts "
                "afresh, and the report's hourly charts begin now.",
                META_KEY,
                type(exc).__name__,
                exc,
            )
            return cls()
        return cls(hours)
