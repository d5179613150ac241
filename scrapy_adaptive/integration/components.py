"""The components the add-on installs and the scheduler cannot record a visit
without, and the flags the add-on leaves the scheduler in the settings.

Kept in the adapter (not in :mod:`..addon`) so the scheduler's start-up
checks read them without importing the add-on above it.
"""

from __future__ import annotations

from typing import Any

from .downloadermiddlewares.errors import FetchErrorMiddleware, RedirectGuardMiddleware
from .downloadermiddlewares.validators import ValidatorsMiddleware
from .downloadermiddlewares.warc import WarcMiddleware
from .spidermiddlewares.sitemaps import SitemapsMiddleware
from .spidermiddlewares.visit import VisitMiddleware

SCHEDULER = "scrapy_adaptive.integration.scheduler.AdaptiveScheduler"
#: Scrapy's downloader, and ours (the add-on sets ``DOWNLOADER`` to it unless the project chose another)
SCRAPY_DOWNLOADER = "scrapy.core.downloader.Downloader"
DOWNLOADER = "scrapy_adaptive.integration.downloadermiddlewares.errors.SettlingDownloader"
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


DELTAFETCH_MESSAGE = (
    "scrapy-adaptive takes over scrapy-deltafetch's role: DeltaFetch is disabled, because it would drop "
    "every revisit of a page that produced items. Unchanged pages are kept from your callbacks instead "
    "(ADAPTIVE_UNCHANGED); the deltafetch_key and deltafetch_enabled meta keys are honoured. Remove "
    "DeltaFetch from SPIDER_MIDDLEWARES to silence this message."
)
