"""scrapy-adaptive: continuous, adaptive revisiting for Scrapy projects.

Enable it with one line in ``settings.py``::

    ADDONS = {"scrapy_adaptive.Addon": 0}

Without the add-on, its components are listed by their short names
(``scrapy_adaptive.AdaptiveScheduler``, ``scrapy_adaptive.VisitMiddleware``,
...).  Each is imported on first use, so the pure parts of the package
(``scrapy_adaptive.frontier``, ``.policies``, ``.change``) can be imported
without loading Scrapy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .version import __version__ as __version__

if TYPE_CHECKING:
    from .addon import Addon
    from .change.events import ChangeEvent
    from .integration.downloadermiddlewares.compression import DecompressionVerdictMiddleware
    from .integration.downloadermiddlewares.errors import (
        FetchErrorMiddleware,
        RedirectGuardMiddleware,
        SettlingDownloader,
    )
    from .integration.downloadermiddlewares.robots import RobotsRefreshMiddleware
    from .integration.downloadermiddlewares.validators import ValidatorsMiddleware
    from .integration.downloadermiddlewares.warc import WarcMiddleware
    from .integration.feedfile import DurableFileFeedStorage
    from .integration.scheduler import AdaptiveScheduler
    from .integration.spidermiddlewares.sitemaps import SitemapsMiddleware
    from .integration.spidermiddlewares.visit import VisitMiddleware
    from .integration.spiderstate import JsonSpiderState
    from .runtime.changes import CHANGE_EVENT
    from .runtime.delivery import SINK_CLOSED, SINK_OPENED
    from .runtime.sink_failure import SINK_FAILED, SinkError

#: the public names, each by the module that defines it (imported when named)
_HOMES = {
    "Addon": ".addon",
    "AdaptiveScheduler": ".integration.scheduler",
    "FetchErrorMiddleware": ".integration.downloadermiddlewares.errors",
    "RedirectGuardMiddleware": ".integration.downloadermiddlewares.errors",
    "SettlingDownloader": ".integration.downloadermiddlewares.errors",
    "ValidatorsMiddleware": ".integration.downloadermiddlewares.validators",
    "RobotsRefreshMiddleware": ".integration.downloadermiddlewares.robots",
    "DecompressionVerdictMiddleware": ".integration.downloadermiddlewares.compression",
    "WarcMiddleware": ".integration.downloadermiddlewares.warc",
    "VisitMiddleware": ".integration.spidermiddlewares.visit",
    "SitemapsMiddleware": ".integration.spidermiddlewares.sitemaps",
    "DurableFileFeedStorage": ".integration.feedfile",
    "JsonSpiderState": ".integration.spiderstate",
    # the signals a durable sink of the user's sends (docs/delivery.md)
    "SINK_OPENED": ".runtime.delivery",
    "SINK_CLOSED": ".runtime.delivery",
    "SINK_FAILED": ".runtime.sink_failure",
    "SinkError": ".runtime.sink_failure",
    # sent once per change event; the item the pipelines get with ADAPTIVE_CHANGES_AS_ITEMS (docs/changes.md)
    "CHANGE_EVENT": ".runtime.changes",
    "ChangeEvent": ".change.events",
}

__all__ = [
    "CHANGE_EVENT",
    "AdaptiveScheduler",
    "Addon",
    "ChangeEvent",
    "DecompressionVerdictMiddleware",
    "DurableFileFeedStorage",
    "FetchErrorMiddleware",
    "JsonSpiderState",
    "RedirectGuardMiddleware",
    "RobotsRefreshMiddleware",
    "SINK_CLOSED",
    "SINK_FAILED",
    "SINK_OPENED",
    "SettlingDownloader",
    "SinkError",
    "SitemapsMiddleware",
    "ValidatorsMiddleware",
    "VisitMiddleware",
    "WarcMiddleware",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home, __name__), name)
