"""A Scrapy extension that writes a crawl's stats and timings to a JSON file.

Enabled by the e2e benchmark with ``EXTENSIONS={"bench.e2e_ext.BenchStats": 0}``
and ``BENCH_STATS_FILE=<path>``.  Parsing the "Dumping Scrapy stats" log
line would work too, but it is a ``pprint`` of Python objects (datetimes)
meant for people; a file written from the ``spider_closed`` signal is exact.

Besides the stats it records, on the monotonic clock, when the first and the
last response arrived and how many there were, so the benchmark can report
a steady-state rate that leaves out start-up and shutdown, and the CPU
seconds the crawl process spent from open to close: on a shared machine
wall-clock rates swing with the neighbours' load, CPU time per page much
less.  It also times the garbage collector's runs (``gc.callbacks``): the
seconds a crawl spends collecting, which a per-page CPU figure hides.
"""

from __future__ import annotations

import datetime
import gc
import json
import resource
import time
from typing import Any

from scrapy import Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured


def _jsonable(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return value.isoformat()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


class BenchStats:
    """Dump ``crawler.stats`` plus response timings to ``BENCH_STATS_FILE``."""

    def __init__(self, crawler: Crawler, path: str) -> None:
        self.crawler = crawler
        self.path = path
        self.first: float | None = None
        self.last: float | None = None
        self.responses = 0
        self.opened: float | None = None
        self.closed: float | None = None
        #: the crawl process's CPU seconds (time.process_time) at open and close
        self.cpu_opened: float | None = None
        self.cpu_closed: float | None = None
        self.reason: str | None = None
        #: seconds in the garbage collector and collections, by generation
        self.gc_seconds = [0.0, 0.0, 0.0]
        self.gc_runs = [0, 0, 0]
        self._gc_started = 0.0
        gc.callbacks.append(self._collecting)

    def _collecting(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
            return
        generation = info["generation"]
        self.gc_seconds[generation] += time.perf_counter() - self._gc_started
        self.gc_runs[generation] += 1

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> BenchStats:
        path = crawler.settings.get("BENCH_STATS_FILE")
        if not path:
            raise NotConfigured("BENCH_STATS_FILE is not set")
        ext = cls(crawler, path)
        crawler.signals.connect(ext.spider_opened, signals.spider_opened)
        crawler.signals.connect(ext.response_received, signals.response_received)
        crawler.signals.connect(ext.spider_closed, signals.spider_closed)
        crawler.signals.connect(ext.engine_stopped, signals.engine_stopped)
        return ext

    def spider_opened(self, spider: Spider) -> None:
        self.opened = time.monotonic()
        self.cpu_opened = time.process_time()

    def response_received(self, **kwargs: Any) -> None:
        now = time.monotonic()
        if self.first is None:
            self.first = now
        self.last = now
        self.responses += 1

    def spider_closed(self, spider: Spider, reason: str) -> None:
        self.reason = reason
        self.closed = time.monotonic()
        self.cpu_closed = time.process_time()

    def engine_stopped(self) -> None:
        """Write the file last, once CoreStats has set ``finish_time``."""
        assert self.crawler.stats is not None
        stats = {k: _jsonable(v) for k, v in self.crawler.stats.get_stats().items()}

        def span(a: float | None, b: float | None) -> float | None:
            return None if a is None or b is None else b - a

        timings = {
            "reason": self.reason,
            "responses": self.responses,
            "first_response_after_open_s": span(self.opened, self.first),
            "first_to_last_response_s": span(self.first, self.last),
            "open_to_close_s": span(self.opened, self.closed),
            "cpu_open_to_close_s": span(self.cpu_opened, self.cpu_closed),
            "gc_s": sum(self.gc_seconds),
            "gc_s_by_generation": self.gc_seconds,
            "gc_runs_by_generation": self.gc_runs,
            # the crawl process's peak resident memory (Linux reports KiB)
            "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump({"stats": stats, "timings": timings}, f, indent=1)
