"""Profile the add-on's part of a crawl's revisits (the revisit-walk test).

``WalkProfile`` profiles each interval between two received responses with
its own :class:`cProfile.Profile`, from the ``WALK_SKIP``-th response (the
first visits and the trust warm-up are behind) for ``WALK_COUNT`` of them,
and writes to ``WALK_FILE`` per interval the calls made into
``scrapy_adaptive`` and the modules of the package they entered.  One
interval is one revisit's walk, the scheduler's polls until the next one
included; a periodic task (a summary, a state save) lands in one interval
only, so the median interval is the revisit's.
"""

from __future__ import annotations

import cProfile
import json
import pstats
from pathlib import Path
from typing import Any

from scrapy import signals
from scrapy.crawler import Crawler

PACKAGE = "/scrapy_adaptive/"


class WalkProfile:
    def __init__(self, skip: int, count: int, path: Path) -> None:
        self.skip = skip
        self.count = count
        self.path = path
        self.seen = 0
        self.profile: cProfile.Profile | None = None
        self.walks: list[dict[str, Any]] = []

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> WalkProfile:
        settings = crawler.settings
        ext = cls(settings.getint("WALK_SKIP", 5), settings.getint("WALK_COUNT", 20), Path(settings["WALK_FILE"]))
        crawler.signals.connect(ext.response_received, signals.response_received)
        crawler.signals.connect(ext.spider_closed, signals.spider_closed)
        return ext

    def response_received(self, **_: Any) -> None:
        self.seen += 1
        if self.profile is not None:
            self.profile.disable()
            self.walks.append(self._walk(self.profile))
            self.profile = None
        if self.skip <= self.seen < self.skip + self.count:
            self.profile = cProfile.Profile()
            self.profile.enable()

    @staticmethod
    def _walk(profile: cProfile.Profile) -> dict[str, Any]:
        stats: dict[Any, Any] = pstats.Stats(profile).stats  # type: ignore[attr-defined]
        ours = {k: v for k, v in stats.items() if PACKAGE in k[0]}
        return {
            "calls": sum(v[1] for v in ours.values()),
            "modules": sorted({k[0].split(PACKAGE, 1)[1] for k in ours}),
            # where the calls go, for a reader of a failed check
            "busiest": [
                (f"{k[0].split(PACKAGE, 1)[1]}:{k[2]}", v[1])
                for k, v in sorted(ours.items(), key=lambda kv: -kv[1][1])[:15]
            ],
        }

    def spider_closed(self, **_: Any) -> None:
        if self.profile is not None:
            self.profile.disable()  # the crawl ended inside an interval: not a whole one
        self.path.write_text(json.dumps(self.walks))
