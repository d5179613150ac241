"""The short public names: ``scrapy_adaptive.AdaptiveScheduler`` and the
other components a project lists without the add-on."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_every_short_name_loads_the_class_at_its_long_path() -> None:
    from scrapy.utils.misc import load_object

    import scrapy_adaptive

    assert sorted(scrapy_adaptive.__all__) == sorted(scrapy_adaptive._HOMES)
    for name in scrapy_adaptive.__all__:
        obj = load_object(f"scrapy_adaptive.{name}")
        home = importlib.import_module(scrapy_adaptive._HOMES[name], "scrapy_adaptive")
        assert getattr(home, name) is obj  # the long path README once gave still works
        if isinstance(obj, type):
            assert obj.__name__ == name and obj.__module__ == home.__name__
    with pytest.raises(AttributeError, match="NoSuchMiddleware"):
        scrapy_adaptive.NoSuchMiddleware  # noqa: B018


def test_every_component_the_addon_installs_has_a_short_name() -> None:
    from scrapy.settings import Settings
    from scrapy.utils.misc import load_object

    import scrapy_adaptive
    from scrapy_adaptive.addon import Addon

    settings = Settings({"ADAPTIVE_WARC_DIR": "warc", "ROBOTSTXT_OBEY": True})
    Addon().update_settings(settings)
    installed = {
        load_object(settings["SCHEDULER"]),
        load_object(settings["DOWNLOADER"]),
        load_object(settings.getdict("FEED_STORAGES")["file"]),
    }
    for setting in ("DOWNLOADER_MIDDLEWARES", "SPIDER_MIDDLEWARES", "EXTENSIONS"):
        installed |= {
            component
            for component, order in settings.getdict(setting).items()
            if isinstance(component, type) and order is not None
        }
    short = {getattr(scrapy_adaptive, name) for name in scrapy_adaptive.__all__}
    assert installed - short == set()


def test_the_short_names_satisfy_the_scheduler_without_the_addon() -> None:
    from scrapy.settings import Settings

    from scrapy_adaptive.config.settings import AdaptiveConfig
    from scrapy_adaptive.integration.startup import require_components

    settings = Settings()
    settings.setdict(
        {
            "SCHEDULER": "scrapy_adaptive.AdaptiveScheduler",
            "DOWNLOADER_MIDDLEWARES": {
                "scrapy_adaptive.FetchErrorMiddleware": 10,
                "scrapy_adaptive.ValidatorsMiddleware": 580,
                "scrapy_adaptive.RedirectGuardMiddleware": 605,
                "scrapy_adaptive.WarcMiddleware": 610,
            },
            "SPIDER_MIDDLEWARES": {"scrapy_adaptive.VisitMiddleware": 10, "scrapy_adaptive.SitemapsMiddleware": 20},
            "ADAPTIVE_WARC_DIR": "warc",
        },
        priority="project",
    )
    require_components(settings, AdaptiveConfig.from_settings(settings))


@pytest.mark.parametrize(
    ("setting", "name", "order"),
    [
        ("DOWNLOADER_MIDDLEWARES", "scrapy_adaptive.RobotsRefreshMiddleware", 100),
        ("DOWNLOADER_MIDDLEWARES", "scrapy_adaptive.DecompressionVerdictMiddleware", 590),
        (
            "DOWNLOADER_MIDDLEWARES",
            "scrapy_adaptive.integration.downloadermiddlewares.robots.RobotsRefreshMiddleware",
            100,
        ),
        ("EXTENSIONS", "scrapy_adaptive.JsonSpiderState", 0),
    ],
)
def test_a_replacement_the_project_lists_by_name_is_not_added_twice_by_the_addon(
    setting: str, name: str, order: int
) -> None:
    from scrapy.settings import Settings
    from scrapy.utils.conf import build_component_list
    from scrapy.utils.misc import load_object

    from scrapy_adaptive.addon import Addon

    settings = Settings({"ROBOTSTXT_OBEY": True})
    settings.set(setting, {name: order}, "project")
    Addon().update_settings(settings)
    loaded = [load_object(c) for c in build_component_list(settings.getwithbase(setting))]
    assert loaded.count(load_object(name)) == 1


@pytest.mark.parametrize(
    ("project", "installed"),
    [
        (None, "scrapy_adaptive.SettlingDownloader"),
        ("scrapy.core.downloader.Downloader", "scrapy_adaptive.SettlingDownloader"),
        ("myproject.downloader.MyDownloader", "myproject.downloader.MyDownloader"),
    ],
)
def test_the_addon_settles_with_its_downloader_unless_the_project_chose_one(
    project: str | None, installed: str
) -> None:
    from scrapy.settings import Settings
    from scrapy.utils.misc import load_object

    from scrapy_adaptive.addon import Addon

    settings = Settings()
    if project is not None:
        settings.set("DOWNLOADER", project, "project")
    Addon().update_settings(settings)
    chosen = settings["DOWNLOADER"]
    assert chosen == installed if installed.startswith("myproject") else load_object(chosen) is load_object(installed)


def test_naming_the_package_loads_no_scrapy() -> None:
    code = (
        "import sys, scrapy_adaptive; scrapy_adaptive.__version__; "
        "sys.exit(any(m.split('.')[0] in ('scrapy', 'twisted') for m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-500:]
