"""Settings: defaults, validation messages, and the mapping of Scrapy's own."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from scrapy_adaptive.addon import Addon
from scrapy_adaptive.downloadermiddlewares.errors import FetchErrorMiddleware
from scrapy_adaptive.settings import DEFAULTS, AdaptiveConfig, ConfigError
from scrapy_adaptive.spidermiddlewares.visit import VisitMiddleware


def config(**values: object) -> AdaptiveConfig:
    return AdaptiveConfig.from_settings(Settings(values))


def test_thesis_defaults() -> None:
    c = config()
    assert (c.delay_factor, c.min_delay, c.max_delay) == (5.0, 2.0, 5.0)
    assert (c.max_retries, c.retry_delay, c.host_valence, c.embed_hops) == (30, 900.0, 1, 0)
    assert (c.wait_default, c.wait_max) == (259_200.0, 2_419_200.0)


def test_command_line_strings_are_parsed() -> None:
    # -s NAME=value and Scrapyd's -d setting=NAME=value arrive as strings
    c = config(ADAPTIVE_MIN_DELAY="0.5", ADAPTIVE_HOST_VALENCE="3", ADAPTIVE_STATE_SYNC="True")
    assert (c.min_delay, c.host_valence, c.state_sync) == (0.5, 3, True)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"ADAPTIVE_MIN_DELAY": "abc"}, "ADAPTIVE_MIN_DELAY ('abc') must be a number of seconds."),
        ({"ADAPTIVE_HOST_VALENCE": "1.5"}, "ADAPTIVE_HOST_VALENCE ('1.5') must be an integer."),
        ({"ADAPTIVE_HOST_VALENCE": 0}, "ADAPTIVE_HOST_VALENCE (0) must be at least 1."),
        ({"ADAPTIVE_MAX_RETRIES": -1}, "ADAPTIVE_MAX_RETRIES (-1) must be 0 or more."),
        ({"ADAPTIVE_MIN_DELAY": 5, "ADAPTIVE_MAX_DELAY": 1}, "ADAPTIVE_MAX_DELAY (1.0) must not be lower than"),
        ({"ADAPTIVE_WAIT_MIN": 10, "ADAPTIVE_WAIT_MAX": 5}, "ADAPTIVE_WAIT_MAX (5.0) must not be lower than"),
        ({"ADAPTIVE_WAIT_DEFAULT": 0}, "ADAPTIVE_WAIT_DEFAULT (0.0) must be a finite number > 0."),
        ({"ADAPTIVE_DELAY_FACTOR": "nan"}, "ADAPTIVE_DELAY_FACTOR ('nan') must be a number."),
        ({"ADAPTIVE_POLITENESS_KEY": "ip"}, "ADAPTIVE_POLITENESS_KEY ('ip') must be one of host, domain, slot."),
        ({"ADAPTIVE_STATE_SYNC": "maybe"}, "ADAPTIVE_STATE_SYNC ('maybe') must be true or false."),
    ],
)
def test_bad_values_name_the_setting(values: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        config(**values)
    assert message in str(info.value)


def test_download_delay_becomes_the_minimum_delay_unless_explicit() -> None:
    assert config(DOWNLOAD_DELAY=3).min_delay == 3.0
    assert config(DOWNLOAD_DELAY=3).max_delay == 5.0
    assert config(DOWNLOAD_DELAY=8).max_delay == 8.0  # never below the minimum
    assert config(DOWNLOAD_DELAY=3, ADAPTIVE_MIN_DELAY=0.5).min_delay == 0.5


def test_concurrent_requests_per_domain_becomes_the_valence_unless_explicit() -> None:
    assert config(CONCURRENT_REQUESTS_PER_DOMAIN=4).host_valence == 4
    assert config(CONCURRENT_REQUESTS_PER_DOMAIN=4, ADAPTIVE_HOST_VALENCE=2).host_valence == 2
    # Scrapy's own default (8) is not a user choice: the thesis default stays
    settings = Settings()
    assert AdaptiveConfig.from_settings(settings).host_valence == 1


def test_defaults_table_covers_every_config_field() -> None:
    names = {"ADAPTIVE_" + f.upper() for f in AdaptiveConfig.__dataclass_fields__}
    assert names == set(DEFAULTS)


def test_addon_sets_components_at_addon_priority_and_respects_the_user() -> None:
    settings = Settings()
    settings.set("DOWNLOADER_MIDDLEWARES", {FetchErrorMiddleware: None}, "project")
    Addon().update_settings(settings)
    assert settings["SCHEDULER"] == "scrapy_adaptive.scheduler.AdaptiveScheduler"
    assert settings.getdict("SPIDER_MIDDLEWARES")[VisitMiddleware] == 10
    assert settings.getdict("DOWNLOADER_MIDDLEWARES")[FetchErrorMiddleware] is None  # user disabled it
    user = Settings()
    user.set("SCHEDULER", "my.Scheduler", "project")
    Addon().update_settings(user)
    assert user["SCHEDULER"] == "my.Scheduler"


def test_addon_disables_deltafetch() -> None:
    import scrapy_deltafetch

    for listed in ("scrapy_deltafetch.DeltaFetch", scrapy_deltafetch.DeltaFetch):
        settings = Settings()
        settings.set("SPIDER_MIDDLEWARES", {listed: 100}, "project")
        Addon().update_settings(settings)
        assert settings.getdict("SPIDER_MIDDLEWARES")[listed] is None
        assert settings.getbool("SCRAPY_ADAPTIVE_TOOK_OVER_DELTAFETCH")
