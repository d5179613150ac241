"""pytest plugin for Scrapy's own tests: the add-on on every crawler, and each test's outcome recorded.

Loaded with ``-p adaptive_compat`` into the pytest that runs Scrapy's test
files (:mod:`tests.compat.run` starts it, with this folder on
``PYTHONPATH``: Scrapy's tests are a package called ``tests`` too, so this
module cannot be imported as ``tests.compat...`` there).  All the harness's
patching of Scrapy (and of the add-on's scheduler) is in this one module.

``ADAPTIVE_COMPAT_MODE=addon`` switches the add-on on: every
:class:`scrapy.crawler.Crawler` gets, when its settings are applied
(``Crawler._apply_settings``, which ``get_crawler``, ``CrawlerRunner``,
``CrawlerProcess`` and their async variants all go through, before the
add-ons are loaded):

* ``scrapy_adaptive.Addon`` in ``ADDONS``,
* a fresh ``ADAPTIVE_STATE_DIR`` of its own (below ``ADAPTIVE_COMPAT_STATE_ROOT``),
  so no two crawlers share a frontier and no test sees an earlier one's URLs,
* Scrapy's defaults of ``DOWNLOAD_DELAY`` (0) and ``CONCURRENT_REQUESTS_PER_DOMAIN``
  (8) stated as if by the project, when the test sets neither: the add-on then takes
  its politeness from them (``ADAPTIVE_MIN_DELAY`` 0, valence 8), as it does for a project
  that sets them.  Without this every test would wait out the add-on's 2 s
  default delay per URL: what is compared is behaviour, not the pace
  (``ADAPTIVE_COMPAT_POLITENESS=addon`` keeps the add-on's own defaults),
* :class:`CloseWhenNothingDue` in ``EXTENSIONS``: the add-on revisits for ever, so
  its scheduler always has pending requests and Scrapy would never see the
  spider idle.  The extension makes the scheduler's ``has_pending_requests``
  answer False once nothing is due within :data:`HORIZON` seconds; Scrapy's
  engine then does the rest as for any crawl (the ``spider_idle`` signal,
  ``DontCloseSpider``, the reason ``finished``).

Whatever the mode, each test's outcome goes to the JSON-lines file
``ADAPTIVE_COMPAT_RESULTS`` as it is known (a run cut by its hard timeout
still leaves what it finished).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.settings import SETTINGS_PRIORITIES

ADDON = "scrapy_adaptive.Addon"
#: the extension's import path (this module is imported under its own name)
CLOSER = f"{__name__}.CloseWhenNothingDue"
#: a URL due further ahead than this (seconds) does not keep the crawl open
HORIZON = 3.0
#: Scrapy's defaults the add-on takes its politeness from when "set by the project"
SCRAPY_PACE = ("DOWNLOAD_DELAY", "CONCURRENT_REQUESTS_PER_DOMAIN")


def _addon_mode() -> bool:
    return os.environ.get("ADAPTIVE_COMPAT_MODE") == "addon"


class CloseWhenNothingDue:
    """Lets an add-on crawl end when nothing is due soon, as a plain crawl ends when nothing is left.

    Only a harness rule: the product never ends a crawl by itself.  The
    scheduler's ``has_pending_requests`` is wrapped on this one scheduler
    object: still pending while a one-off request waits, an asked
    (``dont_filter``) request waits behind a fetch, or the frontier's next
    ready time is within :data:`HORIZON`; otherwise not.  Downloads in
    progress and a busy scraper keep the spider open through Scrapy's own
    idle check (``ExecutionEngine.spider_is_idle``).
    """

    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler
        crawler.signals.connect(self.spider_opened, signal=signals.spider_opened)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> CloseWhenNothingDue:
        return cls(crawler)

    def spider_opened(self, spider: Any) -> None:
        engine = self.crawler.engine
        scheduler = engine.scheduler if engine is not None else None
        if getattr(scheduler, "frontier", None) is None:
            return  # the test chose another scheduler (or the add-on refused the start)
        pending = scheduler.has_pending_requests

        def has_pending_requests() -> bool:
            if not pending():
                return False
            if len(scheduler.once) or getattr(scheduler, "_reforce", None):
                return True
            frontier = scheduler.frontier
            if frontier is None:
                return False
            ready = frontier.next_ready_time()
            return ready is not None and ready - frontier.clock() <= HORIZON

        scheduler.has_pending_requests = has_pending_requests


def _switch_on(settings: Any) -> None:
    """Put the add-on, a fresh state folder and the closing rule into a crawler's settings."""
    project = SETTINGS_PRIORITIES["project"]
    addons = settings.getdict("ADDONS")
    addons.setdefault(ADDON, 0)
    settings.set("ADDONS", addons, max(settings.getpriority("ADDONS") or 0, project))
    extensions = settings.getdict("EXTENSIONS")
    extensions.setdefault(CLOSER, 0)
    settings.set("EXTENSIONS", extensions, max(settings.getpriority("EXTENSIONS") or 0, project))
    if not settings.get("ADAPTIVE_STATE_DIR"):
        root = os.environ.get("ADAPTIVE_COMPAT_STATE_ROOT") or None
        settings.set("ADAPTIVE_STATE_DIR", tempfile.mkdtemp(prefix="state-", dir=root), project)
    if os.environ.get("ADAPTIVE_COMPAT_POLITENESS") != "addon":
        for name in SCRAPY_PACE:
            if not settings.getpriority(name):
                settings.set(name, settings.get(name), project)


_apply_settings = Crawler._apply_settings


def _apply_settings_with_addon(self: Crawler) -> None:
    if not self.settings.frozen:
        _switch_on(self.settings)
    _apply_settings(self)


def pytest_configure(config: pytest.Config) -> None:
    if _addon_mode():
        Crawler._apply_settings = _apply_settings_with_addon  # type: ignore[method-assign]


def pytest_unconfigure(config: pytest.Config) -> None:
    Crawler._apply_settings = _apply_settings  # type: ignore[method-assign]


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Append one JSON line per phase that decides a test's outcome (run by
    the xdist controller, or the only process without xdist)."""
    path = os.environ.get("ADAPTIVE_COMPAT_RESULTS")
    if not path or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    if report.when != "call" and report.passed:
        return
    line = {"nodeid": report.nodeid, "when": report.when, "outcome": report.outcome}
    if report.failed:
        line["text"] = report.longreprtext[-4000:]
    elif report.skipped:
        line["text"] = str(report.longrepr)[-300:]
    with Path(path).open("a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")
