"""The one adapter around a private part of Scrapy's engine.

Scrapy has no public way to ask the engine to poll the scheduler at a given
time: it polls after each download, each ``engine.crawl()`` and on a 5 s
heartbeat.  A URL due at 12:00:00.3 on a free host would wait for the
heartbeat.  :class:`EngineWaker` calls ``engine._slot.nextcall.schedule()``
(with *no* delay: a delayed ``CallLaterOnce.schedule`` makes the engine
ignore every other wake-up until it fires).  ``tests/test_engine_adapter.py``
pins this behaviour, so a Scrapy upgrade that moves it fails loudly there.
"""

from __future__ import annotations

import logging

from scrapy.crawler import Crawler

logger = logging.getLogger(__name__)


class EngineWaker:
    """Ask the engine to call ``next_request()`` soon."""

    def __init__(self, crawler: Crawler) -> None:
        self._crawler = crawler
        self._warned = False

    def wake(self) -> bool:
        """Return False when the engine cannot be reached (then the 5 s
        heartbeat still drives the crawl, only less promptly)."""
        engine = self._crawler.engine
        slot = getattr(engine, "_slot", None)
        nextcall = getattr(slot, "nextcall", None)
        schedule = getattr(nextcall, "schedule", None)
        if schedule is None:
            if not self._warned and engine is not None and getattr(engine, "running", False):
                logger.warning(
                    "scrapy-adaptive cannot wake Scrapy's engine (engine._slot.nextcall is gone in this Scrapy "
                    "version); due URLs wait for the engine's 5 s heartbeat."
                )
                self._warned = True
            return False
        schedule()
        return True


def find_scheduler(crawler: Crawler) -> object | None:
    """The running scheduler, through the public ``engine.scheduler``
    (Scrapy ≥ 2.19) or the older public ``engine.slot.scheduler``."""
    engine = crawler.engine
    if engine is None:
        return None
    scheduler = getattr(engine, "scheduler", None)
    if scheduler is None:
        scheduler = getattr(getattr(engine, "slot", None), "scheduler", None)
    return scheduler
