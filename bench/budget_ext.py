"""A Scrapy extension that checks the crawl-time estimate inside a running crawl.

Enabled by the budget benchmark with
``EXTENSIONS={"bench.budget_ext.CrawlTimeProbe": 0}`` and
``CRAWLTIME_PROBE_FILE=<path>``.  Every ``CRAWLTIME_PROBE_INTERVAL`` seconds
after ``CRAWLTIME_PROBE_START``, for each host with at least
``CRAWLTIME_PROBE_MIN_DOCS`` due URLs (and no sample of its own still
draining) it takes a *sample*:

* the set S of the host's URLs due now and not out (they sit at the head of
  its queue: anything visited from now on is due later, so it queues behind
  them);
* the crawl-time estimate for |S| URLs from the scheduler's mean fetch
  time for the host (:mod:`scrapy_adaptive.frontier.crawltime`), both under
  our politeness model and with the paper's own delay (the politeness wait
  taken as the spacing of fetch starts);
* then, from ``request_left_downloader``, when the last URL of S has been
  fetched: the measured time the host took to work through S.

It runs in the crawl process because only there can the frontier be read
(LevelDB allows one process).  The samples go to the file on
``engine_stopped``; samples that did not drain by then say so.
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
from scrapy_adaptive.frontier.crawltime import crawl_time, estimate
from scrapy_adaptive.store.keys import time_to_ms

#: due URLs read per host per sample at most (bounds each probe's work)
MAX_DOCS = 5_000


class CrawlTimeProbe:
    """Samples due sets per host and times how long each takes to drain."""

    def __init__(self, crawler: Crawler, path: str, start: float, interval: float, min_docs: int) -> None:
        self.crawler = crawler
        self.path = path
        self.start = start
        self.interval = interval
        self.min_docs = min_docs
        self.opened: float | None = None
        self.samples: list[dict[str, Any]] = []
        #: [time, planned, realised, correction, r*] of the budget allocator at each probe
        self.trace: list[list[Any]] = []
        #: host -> (its draining sample, the fingerprints not fetched yet)
        self.pending: dict[str, tuple[dict[str, Any], set[bytes]]] = {}
        self._loop: Any = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CrawlTimeProbe:
        s = crawler.settings
        path = s.get("CRAWLTIME_PROBE_FILE")
        if not path:
            raise NotConfigured("CRAWLTIME_PROBE_FILE is not set")
        probe = cls(
            crawler,
            path,
            s.getfloat("CRAWLTIME_PROBE_START", 30.0),
            s.getfloat("CRAWLTIME_PROBE_INTERVAL", 5.0),
            s.getint("CRAWLTIME_PROBE_MIN_DOCS", 2),
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
        if self.opened is None or time.time() - self.opened < self.start:
            return
        assert self.crawler.engine is not None
        scheduler: Any = self.crawler.engine.scheduler
        frontier = scheduler.frontier
        if frontier is None:
            return
        now = time.time()
        allocator = scheduler.policy.params.crawl.allocator
        if allocator is not None:
            realised = allocator.realised_rate()
            self.trace.append([now, allocator.planned_rate(), realised, allocator.correction, allocator.ratio])
        now_ms = time_to_ms(now)
        p = frontier.politeness
        for q in list(frontier.queues()):
            mean = frontier.fetch_times.mean(q.name)
            if q.name in self.pending or mean is None:
                continue
            due = set()
            for _, next_ms, fp in frontier.store.queue_entries(q.name, limit=MAX_DOCS):
                if next_ms > now_ms:
                    break
                if not frontier.leases.is_out(fp):
                    due.add(fp)
            if len(due) < self.min_docs:
                continue
            est = estimate(
                q, len(due), mean, 0.0, delay_factor=p.delay_factor, min_delay=p.min_delay, max_delay=p.max_delay
            )
            sample = {
                "host": q.name,
                "at": now,
                "docs": len(due),
                "fetch_time": mean,
                "wait": est.wait,
                "valence": q.valence,
                "estimate": est.crawl_time,
                "paper_estimate": crawl_time(len(due), mean, est.wait, q.valence),
                "measured": None,
            }
            self.samples.append(sample)
            self.pending[q.name] = (sample, due)

    def left_downloader(self, request: Request, spider: Spider) -> None:
        tag = request.meta.get(meta.FP)
        if not isinstance(tag, str) or not self.pending:
            return
        fp = bytes.fromhex(tag)
        now = time.time()
        for host, (sample, due) in list(self.pending.items()):
            due.discard(fp)
            if not due:
                sample["measured"] = now - sample["at"]
                del self.pending[host]

    def engine_stopped(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        for sample, due in self.pending.values():
            sample["left"] = len(due)
        with open(self.path, "w", encoding="utf-8") as f:
            json.dump({"samples": self.samples, "allocator": self.trace}, f, indent=1)
