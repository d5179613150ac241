"""docs/politeness.md's settings for a project without the add-on enable what
the add-on does.

The list once named only the verdict middlewares: a project that copied it
kept Scrapy's SpiderState (a start-up warning, and a refused start once its
spider used ``self.state``), Scrapy's robots.txt middleware that never
refreshes, and a feed storage that is not fsynced before a version counts.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from scrapy.settings import Settings
from scrapy.utils.misc import load_object

from scrapy_adaptive.addon import Addon
from scrapy_adaptive.config.settings import AdaptiveConfig
from scrapy_adaptive.integration.startup import enabled_components, require_components, settings_warnings

ROOT = Path(__file__).resolve().parents[2]


def documented_settings() -> dict[str, Any]:
    """The ``settings.py`` lines of the doc's "Without the add-on" section, run."""
    section = (ROOT / "docs" / "politeness.md").read_text(encoding="utf-8").split("## Without the add-on", 1)[1]
    [block] = re.findall(r"```python\n(.*?)```", section, re.S)
    values: dict[str, Any] = {}
    exec(compile(block, "docs/politeness.md", "exec"), {}, values)  # the doc's own text, nothing else
    return values


def test_the_documented_settings_enable_what_the_add_on_does_without_a_warning() -> None:
    documented = Settings({"ROBOTSTXT_OBEY": True})
    documented.setdict(documented_settings(), "project")
    with_addon = Settings({"ROBOTSTXT_OBEY": True})
    Addon().update_settings(with_addon)
    for name in ("DOWNLOADER_MIDDLEWARES", "SPIDER_MIDDLEWARES", "EXTENSIONS"):
        assert enabled_components(documented, name) == enabled_components(with_addon, name), name
    for scheme in ("", "file"):
        ours = load_object(with_addon.getdict("FEED_STORAGES")[scheme])
        assert load_object(documented.getdict("FEED_STORAGES")[scheme]) is ours
    for name in ("SCHEDULER", "DOWNLOADER"):
        assert load_object(documented[name]) is load_object(with_addon[name]), name
    assert documented.getint("CONCURRENT_ITEMS") == with_addon.getint("CONCURRENT_ITEMS")
    config = AdaptiveConfig.from_settings(documented)
    require_components(documented, config)  # not refused
    assert settings_warnings(documented, config) == []
