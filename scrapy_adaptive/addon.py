"""The Scrapy add-on: ``ADDONS = {"scrapy_adaptive.Addon": 0}``.

Everything is set at the ``"addon"`` priority or with ``setdefault``, so a
project can still override or disable (``None``) any component.

Projects migrating from scrapy-deltafetch often still list its middleware.
DeltaFetch drops every request for a page that already produced items, which
would block every revisit (and version 2.1 fails on Scrapy 2.19).  Skipping
unchanged pages is its job done better, so the add-on switches DeltaFetch off
and says so; its ``deltafetch_key`` (the identity of a page) and
``deltafetch_enabled=False`` (no skipping for that request) meta keys are
honoured by the scheduler and the visit middleware.

Scrapy's ``SpiderState`` extension unpickles ``JOBDIR/spider.state`` at
every start, so whoever can write the job folder could run code in the
crawl; the add-on puts :class:`~.integration.spiderstate.JsonSpiderState`
in its place (``spider.state`` as JSON in the state folder).
"""

from __future__ import annotations

from typing import Any

from scrapy.settings import SETTINGS_PRIORITIES, BaseSettings
from scrapy.utils.misc import load_object

from .config.spec import ConfigError, parse_value
from .config.table import SPECS_BY_NAME
from .integration.components import (
    DOWNLOADER,
    DOWNLOADER_MIDDLEWARES,
    REFUSAL_SETTING,
    SCHEDULER,
    SCRAPY_DOWNLOADER,
    SCRAPY_ROBOTS,
    SCRAPY_SPIDER_STATE,
    SPIDER_MIDDLEWARES,
    TOOK_OVER_SETTING,
    WARC_MIDDLEWARE,
    is_deltafetch,
)
from .integration.downloadermiddlewares.compression import SCRAPY_COMPRESSION, DecompressionVerdictMiddleware
from .integration.downloadermiddlewares.robots import RobotsRefreshMiddleware
from .integration.engine import EVENT_ITEM_PROCESSOR, SCRAPY_ITEM_PROCESSOR, redact_overridden_settings
from .integration.feedfile import DURABLE_FILE_STORAGE
from .integration.spiderstate import JsonSpiderState
from .runtime.stop_grace import wrap_download_handlers
from .store.statedir import StateDirError, make_jobdir


def loads(key: Any, cls: type) -> bool:
    """Is component *key* (a class or an import path) *cls*?  A path that
    does not load is not; Scrapy says so when it builds the list."""
    if not isinstance(key, str):
        return key is cls
    try:
        return load_object(key) is cls
    except (ImportError, AttributeError, NameError, ValueError):
        return False


def replace_scrapy_component(
    settings: BaseSettings, path: str, name: str, ours: type, order: int, setting: str = "DOWNLOADER_MIDDLEWARES"
) -> None:
    """Put *ours* in the place of Scrapy's component *path* in *setting*
    (at its order in the setting's ``_BASE``), unless the project placed
    Scrapy's (by path or class, named *name*) or ours itself (by class, or
    by any path that loads it: ``scrapy_adaptive.RobotsRefreshMiddleware``
    as well as the long one, as Scrapy's own ``setdefault`` compares)."""
    components = settings.getdict(setting)
    if path in components or any(
        (isinstance(key, type) and key.__name__ == name) or loads(key, ours) for key in components
    ):
        return
    components[path] = None
    components[ours] = settings.getdict(f"{setting}_BASE").get(path, order)
    priority = max(settings.getpriority(setting) or 0, SETTINGS_PRIORITIES["addon"])
    settings.set(setting, components, priority)


#: ``CONCURRENT_ITEMS`` unless the project sets it.  Scrapy (2.14 on) starts
#: that many worker tasks for every response's callback output, however
#: little it holds (``scrapy.utils.asyncio._parallel_asyncio``; the Twisted
#: path starts as many cooperative tasks): at Scrapy's 100 that is about
#: 0.35 ms of CPU a response, a sixth of a small page's crawl and more than
#: the add-on's own work on it; at 16, 0.07 ms.  Only what waits in an
#: asynchronous item pipeline runs in parallel per response, and 16 items
#: of one page in flight at once keep such a pipeline busy (docs/benchmarks.md,
#: "What Scrapy charges every page").
ITEMS_PER_RESPONSE = 16


class Addon:
    """Turns a Scrapy project into a continuous adaptive revisiting crawler."""

    def update_settings(self, settings: BaseSettings) -> None:
        settings.set("SCHEDULER", SCHEDULER, "addon")
        settings.set("CONCURRENT_ITEMS", ITEMS_PER_RESPONSE, "addon")  # a project's own value wins
        self._settling_downloader(settings)
        downloader = dict(DOWNLOADER_MIDDLEWARES)
        if settings.get("ADAPTIVE_WARC_DIR"):
            downloader.update(WARC_MIDDLEWARE)
        for name, components in (
            ("DOWNLOADER_MIDDLEWARES", downloader),
            ("SPIDER_MIDDLEWARES", SPIDER_MIDDLEWARES),
        ):
            for cls, order in components.items():
                settings.setdefault_in_component_priority_dict(name, cls, order)
        # so a stop need not wait for a hung download (ADAPTIVE_STOP_GRACE)
        wrap_download_handlers(settings)
        self._take_over_deltafetch(settings)
        self._durable_file_feeds(settings)
        self._refreshing_robots(settings)
        self._decompression_verdicts(settings)
        # Scrapy logs the overridden settings after the add-ons: no password in clear
        redact_overridden_settings(settings)
        self._json_spider_state(settings)
        self._private_jobdir(settings)
        self._events_as_items(settings)

    @staticmethod
    def _settling_downloader(settings: BaseSettings) -> None:
        """:class:`~.integration.downloadermiddlewares.errors.SettlingDownloader`
        in the place of Scrapy's downloader, so that what a middleware's
        ``process_response`` raises settles the URL at once; a downloader the
        project chose stays (such a URL then waits for its lease)."""
        if loads(settings.get("DOWNLOADER"), load_object(SCRAPY_DOWNLOADER)):
            priority = max(settings.getpriority("DOWNLOADER") or 0, SETTINGS_PRIORITIES["addon"])
            settings.set("DOWNLOADER", DOWNLOADER, priority)

    @staticmethod
    def _private_jobdir(settings: BaseSettings) -> None:
        """Make a missing JOBDIR ``0700`` before any Scrapy component makes
        it ``0755``; one that cannot be made is refused by the scheduler."""
        jobdir = settings.get("JOBDIR")
        if not jobdir:
            return
        try:
            make_jobdir(jobdir)
        except StateDirError as exc:
            settings.set(REFUSAL_SETTING, str(exc), "addon")

    @staticmethod
    def _events_as_items(settings: BaseSettings) -> None:
        """With ``ADAPTIVE_CHANGES_AS_ITEMS``, Scrapy's item processor is
        one that also takes change events; a processor the project set
        stays (the scheduler refuses it unless it is a subclass of ours)."""
        try:  # read as the table reads it: a value of any type is the scheduler's one-line refusal
            wanted = parse_value(SPECS_BY_NAME["ADAPTIVE_CHANGES_AS_ITEMS"], settings.get("ADAPTIVE_CHANGES_AS_ITEMS"))
        except ConfigError:
            return
        if wanted and settings.get("ITEM_PROCESSOR") == SCRAPY_ITEM_PROCESSOR:
            priority = max(settings.getpriority("ITEM_PROCESSOR") or 0, SETTINGS_PRIORITIES["addon"])
            settings.set("ITEM_PROCESSOR", EVENT_ITEM_PROCESSOR, priority)

    @staticmethod
    def _json_spider_state(settings: BaseSettings) -> None:
        """:class:`JsonSpiderState` in the place of Scrapy's ``SpiderState``:
        nothing of the job folder is unpickled."""
        replace_scrapy_component(settings, SCRAPY_SPIDER_STATE, "SpiderState", JsonSpiderState, 0, "EXTENSIONS")

    @staticmethod
    def _refreshing_robots(settings: BaseSettings) -> None:
        """:class:`RobotsRefreshMiddleware` in the place of Scrapy's."""
        replace_scrapy_component(settings, SCRAPY_ROBOTS, "RobotsTxtMiddleware", RobotsRefreshMiddleware, 100)

    @staticmethod
    def _decompression_verdicts(settings: BaseSettings) -> None:
        """:class:`DecompressionVerdictMiddleware` in the place of Scrapy's."""
        replace_scrapy_component(
            settings, SCRAPY_COMPRESSION, "HttpCompressionMiddleware", DecompressionVerdictMiddleware, 590
        )

    @staticmethod
    def _durable_file_feeds(settings: BaseSettings) -> None:
        """``-o items.jsonl`` flushed and fsynced before versions are
        confirmed (:mod:`.delivery`); a storage the project chose stays."""
        storages = settings.getdict("FEED_STORAGES")
        if all(scheme in storages for scheme in ("", "file")):
            return
        for scheme in ("", "file"):
            storages.setdefault(scheme, DURABLE_FILE_STORAGE)
        priority = max(settings.getpriority("FEED_STORAGES") or 0, SETTINGS_PRIORITIES["addon"])
        settings.set("FEED_STORAGES", storages, priority)

    @staticmethod
    def _take_over_deltafetch(settings: BaseSettings) -> None:
        spider_mws = settings.getdict("SPIDER_MIDDLEWARES")
        found = [key for key, order in spider_mws.items() if order is not None and is_deltafetch(key)]
        if not found:
            return
        for key in found:
            spider_mws[key] = None
        settings.set("SPIDER_MIDDLEWARES", spider_mws, settings.getpriority("SPIDER_MIDDLEWARES") or 0)
        # said by the scheduler at start-up, once logging goes to LOG_FILE too
        settings.set(TOOK_OVER_SETTING, True, "addon")
