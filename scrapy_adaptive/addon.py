"""The Scrapy add-on: ``ADDONS = {"scrapy_adaptive.Addon": 0}``.

Everything is set at the ``"addon"`` priority or with ``setdefault``, so a
project can still override or disable (``None``) any component.
"""

from __future__ import annotations

from scrapy.settings import BaseSettings

from .downloadermiddlewares.errors import FetchErrorMiddleware
from .spidermiddlewares.visit import VisitMiddleware

SCHEDULER = "scrapy_adaptive.scheduler.AdaptiveScheduler"

#: outermost positions: below every Scrapy built-in (the lowest is 50)
DOWNLOADER_MIDDLEWARES = {FetchErrorMiddleware: 10}
SPIDER_MIDDLEWARES = {VisitMiddleware: 10}


class Addon:
    """Turns a Scrapy project into a continuous adaptive revisiting crawler."""

    def update_settings(self, settings: BaseSettings) -> None:
        settings.set("SCHEDULER", SCHEDULER, "addon")
        for name, components in (
            ("DOWNLOADER_MIDDLEWARES", DOWNLOADER_MIDDLEWARES),
            ("SPIDER_MIDDLEWARES", SPIDER_MIDDLEWARES),
        ):
            for cls, order in components.items():
                settings.setdefault_in_component_priority_dict(name, cls, order)
