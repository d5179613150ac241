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

from .integration.downloadermiddlewares.compression import SCRAPY_COMPRESSION, DecompressionVerdictMiddleware
from .integration.downloadermiddlewares.errors import FetchErrorMiddleware, RedirectGuardMiddleware
from .integration.downloadermiddlewares.robots import RobotsRefreshMiddleware
from .integration.downloadermiddlewares.validators import ValidatorsMiddleware
from .integration.engine import redact_overridden_settings
from .integration.feedfile import DURABLE_FILE_STORAGE
from .integration.spidermiddlewares.sitemaps import SitemapsMiddleware
from .integration.spidermiddlewares.visit import VisitMiddleware
from .integration.spiderstate import JsonSpiderState
from .integration.stopgrace import wrap_download_handlers
from .store.statedir import StateDirError, make_jobdir
from .warc.middleware import WarcMiddleware

SCHEDULER = "scrapy_adaptive.integration.scheduler.AdaptiveScheduler"
#: internal flag the add-on leaves for the scheduler's start-up messages
TOOK_OVER_SETTING = "SCRAPY_ADAPTIVE_TOOK_OVER_DELTAFETCH"
#: internal: why the add-on found the crawl cannot start, refused by the
#: scheduler in one line (raised from ``update_settings`` it would be a
#: traceback)
REFUSAL_SETTING = "SCRAPY_ADAPTIVE_REFUSAL"

#: the evaluators that must see final outcomes sit outermost, below every
#: Scrapy built-in (the lowest is 50); the validators sit among the
#: downloader's own (next to HttpCompressionMiddleware, 590); the WARC
#: writer (off unless ADAPTIVE_WARC_DIR) sees bodies as sent and redirect
#: hops (between RedirectMiddleware, 600, and CookiesMiddleware, 700); the
#: redirect guard sees a 3xx just before RedirectMiddleware does
DOWNLOADER_MIDDLEWARES = {FetchErrorMiddleware: 10, ValidatorsMiddleware: 580, RedirectGuardMiddleware: 605}
#: added only with ``ADAPTIVE_WARC_DIR``: a default is not worth a "disabled" warning at every start
WARC_MIDDLEWARE = {WarcMiddleware: 610}
#: the sitemaps middleware reads its responses after the visit was judged
SPIDER_MIDDLEWARES = {VisitMiddleware: 10, SitemapsMiddleware: 20}
#: what the scheduler cannot record a visit without, by setting: the verdicts
#: on responses and on failed fetches, conditional requests, and the WARC
#: writer when ``ADAPTIVE_WARC_DIR`` asks for captures; a crawl without one
#: of them is refused at start (it would crawl and keep nothing)
VERDICT_COMPONENTS = {"DOWNLOADER_MIDDLEWARES": tuple(DOWNLOADER_MIDDLEWARES), "SPIDER_MIDDLEWARES": (VisitMiddleware,)}
#: Scrapy's robots.txt middleware, replaced by one whose copies age
SCRAPY_ROBOTS = "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware"
#: Scrapy's extension that unpickles ``JOBDIR/spider.state``, replaced by one keeping JSON in the state folder
SCRAPY_SPIDER_STATE = "scrapy.extensions.spiderstate.SpiderState"


def is_deltafetch(component: Any) -> bool:
    """True for scrapy-deltafetch's middleware, as a class or an import path
    (checked by name, so the package need not be importable)."""
    if isinstance(component, str):
        return component.startswith("scrapy_deltafetch.") and component.rsplit(".", 1)[-1] == "DeltaFetch"
    return getattr(component, "__module__", "").startswith("scrapy_deltafetch") and (
        getattr(component, "__name__", "") == "DeltaFetch"
    )


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


class Addon:
    """Turns a Scrapy project into a continuous adaptive revisiting crawler."""

    def update_settings(self, settings: BaseSettings) -> None:
        settings.set("SCHEDULER", SCHEDULER, "addon")
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


DELTAFETCH_MESSAGE = (
    "scrapy-adaptive takes over scrapy-deltafetch's role: DeltaFetch is disabled, because it would drop "
    "every revisit of a page that produced items. Unchanged pages are kept from your callbacks instead "
    "(ADAPTIVE_UNCHANGED); the deltafetch_key and deltafetch_enabled meta keys are honoured. Remove "
    "DeltaFetch from SPIDER_MIDDLEWARES to silence this message."
)
