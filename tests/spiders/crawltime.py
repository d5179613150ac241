"""An extension that checks the crawl-time estimate inside a running crawl.

Enabled with ``EXTENSIONS={"tests.spiders.crawltime.CrawlTimeProbe": 0}`` and
``CRAWLTIME_PROBE_FILE=<path>``.  Every ``CRAWLTIME_PROBE_INTERVAL`` seconds
after ``CRAWLTIME_PROBE_START`` it takes, for each host with at least two
due URLs and no sample of its own still draining, a *sample*: the set of the
host's URLs due now and not out (they head its queue, so anything visited
later queues behind them), the estimate of the time to fetch them
(:func:`scrapy_adaptive.frontier.crawltime.estimate`, from the scheduler's
mean fetch time for the host), and, once the last of them has left the
downloader, the time the host took.  It runs in the crawl because only there
can the frontier be read (LevelDB allows one process); the samples go to the
file on ``engine_stopped``.
"""

from __future__ import annotations

import json
import time
from typing import Any

from scrapy import Request, Spider, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.utils.asyncio import create_looping_call

from scrapy_adaptive import meta
from scrapy_adaptive.frontier.crawltime import estimate
from scrapy_adaptive.store.keys import time_to_ms

#: due URLs read per host per sample at most
MAX_DOCS = 5_000


class CrawlTimeProbe:
    """Samples due sets per host and times how long each takes to drain."""

    def __init__(self, crawler: Crawler, path: str, start: float, interval: float) -> None:
        self.crawler = crawler
        self.path = path
        self.start = start
        self.interval = interval
        self.opened = 0.0
        self.samples: list[dict[str, Any]] = []
        #: host -> (its draining sample, the fingerprints not fetched yet)
        self.pending: dict[str, tuple[dict[str, Any], set[bytes]]] = {}
        self._loop: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlTimeProbe:
        s = crawler.settings
        if not s.get("CRAWLTIME_PROBE_FILE"):
            raise NotConfigured("CRAWLTIME_PROBE_FILE is not set")
        probe = cls(
            crawler,
            s.get("CRAWLTIME_PROBE_FILE"),
            s.getfloat("CRAWLTIME_PROBE_START", 1.0),
            s.getfloat("CRAWLTIME_PROBE_INTERVAL", 2.0),
        )
        crawler.signals.connect(probe.spider_opened, signals.spider_opened)
        crawler.signals.connect(probe.left_downloader, signals.request_left_downloader)
        crawler.signals.connect(probe.engine_stopped, signals.engine_stopped)
        return probe

    def spider_opened(self, spider: Spider) -> None:
        self.opened = time.time()
        self._loop = create_looping_call(self.probe)
        self._loop.start(self.interval, now=False)

    def probe(self) -> None:
        now = time.time()
        assert self.crawler.engine is not None
        frontier = getattr(self.crawler.engine.scheduler, "frontier", None)
        if now - self.opened < self.start or frontier is None:
            return
        p = frontier.politeness
        for q in list(frontier.queues()):
            mean = frontier.fetch_times.mean(q.name)
            if q.name in self.pending or mean is None:
                continue
            due = set()
            try:
                for _, next_ms, fp in frontier.store.queue_entries(q.name, limit=MAX_DOCS):
                    if next_ms > time_to_ms(now):
                        break
                    if frontier.lent(fp) is None:
                        due.add(fp)
            except RuntimeError:
                # the crawl is closing: the scheduler closed the store before
                # engine_stopped, which stops this loop, and a tick fell between
                return
            if len(due) < 2:
                continue
            est = estimate(
                q, len(due), mean, 0.0, delay_factor=p.delay_factor, min_delay=p.min_delay, max_delay=p.max_delay
            )
            sample = {"host": q.name, "at": now, "docs": len(due), "estimate": est.crawl_time, "measured": None}
            self.samples.append(sample)
            self.pending[q.name] = (sample, due)

    def left_downloader(self, request: Request, spider: Spider) -> None:
        tag = request.meta.get(meta.FP)
        if not isinstance(tag, str) or not self.pending:
            return
        fp = bytes.fromhex(tag)
        for host, (sample, due) in list(self.pending.items()):
            due.discard(fp)
            if not due:
                sample["measured"] = time.time() - sample["at"]
                del self.pending[host]

    def engine_stopped(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump(self.samples, f, indent=1)
