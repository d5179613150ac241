"""Settings: the spec table, defaults, validation messages, and the mapping of Scrapy's own."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from scrapy.settings import Settings

from scrapy_adaptive.addon import Addon
from scrapy_adaptive.change.prediction import SCHEMES
from scrapy_adaptive.change.trust import TrustParams
from scrapy_adaptive.config.settings import AdaptiveConfig, unknown_settings
from scrapy_adaptive.config.spec import VALIDATOR_SCHEMES, ConfigError, Kind, SettingSpec, check_value
from scrapy_adaptive.config.table import DEFAULTS, REMOVED_SETTINGS, SETTING_SPECS, SPECS_BY_NAME
from scrapy_adaptive.frontier import Politeness
from scrapy_adaptive.integration.downloadermiddlewares.errors import FetchErrorMiddleware
from scrapy_adaptive.integration.spidermiddlewares.visit import VisitMiddleware
from scrapy_adaptive.policies.base import WaitParams

ROOT = Path(__file__).resolve().parents[3]


def config(**values: object) -> AdaptiveConfig:
    return AdaptiveConfig.from_settings(Settings(values))


def test_thesis_defaults() -> None:
    c = config()
    assert (c.delay_factor, c.min_delay, c.max_delay) == (5.0, 2.0, 5.0)
    # embeds one hop from a page come with it (a composite capture, as
    # Heritrix's preferenceEmbedHops), where the thesis left them to their own waits
    assert (c.max_retries, c.retry_delay, c.host_valence, c.embed_hops) == (30, 900.0, 1, 1)
    assert (c.wait_default, c.wait_max) == (259_200.0, 2_419_200.0)


def test_command_line_strings_are_parsed() -> None:
    # -s NAME=value and Scrapyd's -d setting=NAME=value arrive as strings
    c = config(ADAPTIVE_MIN_DELAY="0.5", ADAPTIVE_HOST_VALENCE="3", ADAPTIVE_STATE_SYNC="True")
    assert (c.min_delay, c.host_valence, c.state_sync) == (0.5, 3, True)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (
            {"ADAPTIVE_MIN_DELAY": "abc"},
            "ADAPTIVE_MIN_DELAY ('abc') must be a number of seconds (or 90s, 15m, 1h, 2d).",
        ),
        ({"ADAPTIVE_HOST_VALENCE": "1.5"}, "ADAPTIVE_HOST_VALENCE ('1.5') must be an integer."),
        ({"ADAPTIVE_HOST_VALENCE": 0}, "ADAPTIVE_HOST_VALENCE (0) must be at least 1."),
        ({"ADAPTIVE_MAX_RETRIES": -1}, "ADAPTIVE_MAX_RETRIES (-1) must be 0 or more."),
        ({"ADAPTIVE_MIN_DELAY": 5, "ADAPTIVE_MAX_DELAY": 1}, "ADAPTIVE_MAX_DELAY (1.0) must not be lower than"),
        ({"ADAPTIVE_WAIT_MIN": 10, "ADAPTIVE_WAIT_MAX": 5}, "ADAPTIVE_WAIT_MAX (5.0) must not be lower than"),
        ({"ADAPTIVE_WAIT_DEFAULT": 0}, "ADAPTIVE_WAIT_DEFAULT (0.0) must be a finite number > 0."),
        ({"ADAPTIVE_DELAY_FACTOR": "nan"}, "ADAPTIVE_DELAY_FACTOR ('nan') must be a number."),
        ({"ADAPTIVE_POLITENESS_KEY": "ip"}, "ADAPTIVE_POLITENESS_KEY ('ip') must be one of host, domain, slot."),
        ({"ADAPTIVE_STATE_SYNC": "maybe"}, "ADAPTIVE_STATE_SYNC ('maybe') must be true or false."),
        ({"ADAPTIVE_STATE_CACHE_MB": 0}, "ADAPTIVE_STATE_CACHE_MB (0) must be at least 1."),
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
    assert settings["SCHEDULER"] == "scrapy_adaptive.integration.scheduler.AdaptiveScheduler"
    assert settings.getdict("SPIDER_MIDDLEWARES")[VisitMiddleware] == 10
    assert settings.getdict("DOWNLOADER_MIDDLEWARES")[FetchErrorMiddleware] is None  # user disabled it
    user = Settings()
    user.set("SCHEDULER", "my.Scheduler", "project")
    Addon().update_settings(user)
    assert user["SCHEDULER"] == "my.Scheduler"


def test_addon_lowers_the_items_in_flight_per_response_unless_the_project_sets_them() -> None:
    """Scrapy starts CONCURRENT_ITEMS worker tasks for every response's output
    (what that costs: docs/benchmarks.md, "What Scrapy charges every page"):
    the add-on's 16 instead of 100, unless the project chose a number."""
    from scrapy_adaptive.addon import ITEMS_PER_RESPONSE

    settings = Settings()
    Addon().update_settings(settings)
    assert settings.getint("CONCURRENT_ITEMS") == ITEMS_PER_RESPONSE == 16
    for value in (100, 4):
        user = Settings()
        user.set("CONCURRENT_ITEMS", value, "project")
        Addon().update_settings(user)
        assert user.getint("CONCURRENT_ITEMS") == value


def test_addon_adds_the_warc_middleware_only_when_a_warc_folder_is_set() -> None:
    from scrapy_adaptive.integration.downloadermiddlewares.warc import WarcMiddleware

    plain = Settings()
    Addon().update_settings(plain)
    assert WarcMiddleware not in plain.getdict("DOWNLOADER_MIDDLEWARES")  # no "disabled" warning at every start
    archiving = Settings({"ADAPTIVE_WARC_DIR": "warc"})
    Addon().update_settings(archiving)
    assert archiving.getdict("DOWNLOADER_MIDDLEWARES")[WarcMiddleware] == 610


def test_addon_puts_the_json_spider_state_in_the_place_of_scrapys_and_warns_if_the_project_keeps_it() -> None:
    """Scrapy's SpiderState unpickles JOBDIR/spider.state at every start."""
    from scrapy.extensions.spiderstate import SpiderState

    from scrapy_adaptive.integration.components import SCRAPY_SPIDER_STATE
    from scrapy_adaptive.integration.spiderstate import JsonSpiderState
    from scrapy_adaptive.integration.startup import enabled_components, settings_warnings

    settings = Settings()
    Addon().update_settings(settings)
    extensions = enabled_components(settings, "EXTENSIONS")
    assert JsonSpiderState in extensions and SpiderState not in extensions
    assert not [m for m in settings_warnings(settings, AdaptiveConfig.from_settings(settings)) if "SpiderState" in m]
    user = Settings()
    user.set("EXTENSIONS", {SCRAPY_SPIDER_STATE: 0}, "project")
    Addon().update_settings(user)
    assert SpiderState in enabled_components(user, "EXTENSIONS")
    [said] = [m for m in settings_warnings(user, AdaptiveConfig.from_settings(user)) if "SpiderState" in m]
    assert "unpickles JOBDIR/spider.state" in said
    # without the add-on, Scrapy's is on by default: the warning gives the setting that swaps it, and it does
    plain = Settings()
    [said] = [m for m in settings_warnings(plain, AdaptiveConfig.from_settings(plain)) if "SpiderState" in m]
    swap = {SCRAPY_SPIDER_STATE: None, "scrapy_adaptive.JsonSpiderState": 0}
    assert 'EXTENSIONS = {"scrapy.extensions.spiderstate.SpiderState": None, "scrapy_adaptive.JsonSpiderState": 0}' in (
        said
    )
    plain.set("EXTENSIONS", swap, "project")
    extensions = enabled_components(plain, "EXTENSIONS")
    assert JsonSpiderState in extensions and SpiderState not in extensions
    assert not [m for m in settings_warnings(plain, AdaptiveConfig.from_settings(plain)) if "SpiderState" in m]


def test_addon_puts_the_refreshing_robots_middleware_in_the_place_of_scrapys() -> None:
    from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware

    from scrapy_adaptive.integration.components import SCRAPY_ROBOTS
    from scrapy_adaptive.integration.downloadermiddlewares.robots import RobotsRefreshMiddleware

    settings = Settings()
    Addon().update_settings(settings)
    mws = settings.getdict("DOWNLOADER_MIDDLEWARES")
    assert mws[SCRAPY_ROBOTS] is None and mws[RobotsRefreshMiddleware] == 100
    for listed in (SCRAPY_ROBOTS, RobotsTxtMiddleware):  # the project placed Scrapy's own: kept
        user = Settings()
        user.set("DOWNLOADER_MIDDLEWARES", {listed: 90}, "project")
        Addon().update_settings(user)
        assert user.getdict("DOWNLOADER_MIDDLEWARES")[listed] == 90
        assert RobotsRefreshMiddleware not in user.getdict("DOWNLOADER_MIDDLEWARES")


def test_addon_disables_deltafetch() -> None:
    import scrapy_deltafetch

    for listed in ("scrapy_deltafetch.DeltaFetch", scrapy_deltafetch.DeltaFetch):
        settings = Settings()
        settings.set("SPIDER_MIDDLEWARES", {listed: 100}, "project")
        Addon().update_settings(settings)
        assert settings.getdict("SPIDER_MIDDLEWARES")[listed] is None
        assert settings.getbool("SCRAPY_ADAPTIVE_TOOK_OVER_DELTAFETCH")


# -- the spec table --------------------------------------------------------


def test_the_table_and_the_config_dataclass_agree_field_by_field() -> None:
    # same names, same order, and each field typed as its spec's kind says
    config_fields = [(f.name, f.type) for f in dataclasses.fields(AdaptiveConfig)]
    assert config_fields == [(spec.attribute, spec.field_type) for spec in SETTING_SPECS]
    assert list(DEFAULTS) == [spec.name for spec in SETTING_SPECS]
    assert all(spec.name.startswith("ADAPTIVE_") and spec.doc for spec in SETTING_SPECS)


def test_every_default_passes_validation() -> None:
    for spec in SETTING_SPECS:
        check_value(spec, spec.default)
    defaults = config()
    assert {spec.name: getattr(defaults, spec.attribute) for spec in SETTING_SPECS} == DEFAULTS


def test_the_pure_dataclasses_take_their_defaults_from_the_table() -> None:
    wait = WaitParams()
    assert (wait.initial, wait.default, wait.minimum, wait.maximum) == (
        DEFAULTS["ADAPTIVE_WAIT_INITIAL"],
        DEFAULTS["ADAPTIVE_WAIT_DEFAULT"],
        DEFAULTS["ADAPTIVE_WAIT_MIN"],
        DEFAULTS["ADAPTIVE_WAIT_MAX"],
    )
    assert (wait.budget, wait.budget_window, wait.target_precision) == (
        DEFAULTS["ADAPTIVE_BUDGET"],
        DEFAULTS["ADAPTIVE_BUDGET_WINDOW"],
        DEFAULTS["ADAPTIVE_TARGET_PRECISION"],
    )
    politeness = Politeness()
    c = config()
    assert (politeness.delay_factor, politeness.min_delay, politeness.max_delay, politeness.valence) == (
        c.delay_factor,
        c.min_delay,
        c.max_delay,
        c.host_valence,
    )
    assert (politeness.retry_delay, politeness.max_retries, politeness.lease) == (c.retry_delay, c.max_retries, c.lease)
    assert (TrustParams().warmup, TrustParams().min_rate) == (c.trust_warmup, c.trust_min_rate)
    assert SCHEMES is VALIDATOR_SCHEMES


def _out_of_range(spec: SettingSpec) -> list[float]:
    """One value just past each bound of *spec*, and the infinities for floats."""
    values: list[float] = []
    if spec.at_least is not None:
        values.append(spec.at_least - 1)
    for bound in (spec.above, spec.below):
        if bound is not None:
            values.append(bound)
    if spec.at_most is not None:
        values.append(spec.at_most * 10)
    if spec.kind is not Kind.INTEGER:
        values += [math.inf, -math.inf]
    return values


NUMERIC_SPECS = [spec for spec in SETTING_SPECS if spec.kind in (Kind.SECONDS, Kind.NUMBER, Kind.INTEGER)]
BAD_NUMBERS = [(spec, value) for spec in NUMERIC_SPECS for value in _out_of_range(spec)]


@pytest.mark.parametrize(("spec", "value"), BAD_NUMBERS, ids=[f"{s.name}={v!r}" for s, v in BAD_NUMBERS])
def test_every_bound_is_enforced(spec: SettingSpec, value: float) -> None:
    with pytest.raises(ConfigError) as info:
        config(**{spec.name: value})
    shown = value if spec.kind is Kind.INTEGER else float(value)
    assert str(info.value).startswith(f"{spec.name} ({shown!r}) must be ")


@pytest.mark.parametrize("spec", NUMERIC_SPECS, ids=[s.name for s in NUMERIC_SPECS])
def test_every_bound_itself_is_allowed_when_inclusive(spec: SettingSpec) -> None:
    for bound in (spec.at_least, spec.at_most):
        if bound is not None:
            check_value(spec, int(bound) if spec.kind is Kind.INTEGER else bound)


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"ADAPTIVE_MIN_DELAY": True}, "ADAPTIVE_MIN_DELAY (True) must be a number of seconds (or 90s, 15m, 1h, 2d)."),
        ({"ADAPTIVE_HOST_VALENCE": False}, "ADAPTIVE_HOST_VALENCE (False) must be an integer."),
        ({"ADAPTIVE_BUDGET": True}, "ADAPTIVE_BUDGET (True) must be a number of revisits per day."),
        ({"ADAPTIVE_STATE_DIR": 5}, "ADAPTIVE_STATE_DIR (5) must be a folder path (a string)."),
        ({"ADAPTIVE_DELAY_FACTOR": 1e308}, "ADAPTIVE_DELAY_FACTOR (1e+308) must be at most 1000."),
        ({"ADAPTIVE_WAIT_MAX": "1e308"}, "ADAPTIVE_WAIT_MAX (1e+308) must be at most 315360000 seconds (10 years)."),
        ({"ADAPTIVE_BUDGET": 1e12}, "ADAPTIVE_BUDGET (1000000000000.0) must be at most 1000000000."),
        ({"ADAPTIVE_TRUST_MIN_RATE": 0}, "ADAPTIVE_TRUST_MIN_RATE (0.0) must be in (0, 1]."),
        ({"ADAPTIVE_UNCHANGED": 5}, "ADAPTIVE_UNCHANGED (5) must be one of skip, deliver."),
        ({"ADAPTIVE_VALIDATOR_SCHEME": "all"}, "ADAPTIVE_VALIDATOR_SCHEME ('all') must be one of etag, timestamp,"),
        ({"ADAPTIVE_WAIT_POLICY": 5}, "ADAPTIVE_WAIT_POLICY (5) must be a dotted class path"),
        ({"ADAPTIVE_CRAWL_LOG": 2}, "ADAPTIVE_CRAWL_LOG (2) must be true or false."),
        (
            {"DOWNLOAD_DELAY": -1},
            "ADAPTIVE_MIN_DELAY (-1.0) must be a finite number >= 0 (it is taken from the project's DOWNLOAD_DELAY).",
        ),
        (
            {"CONCURRENT_REQUESTS_PER_DOMAIN": 10**9},
            "ADAPTIVE_HOST_VALENCE (1000000000) must be an integer from 1 to 1000 "
            "(it is taken from the project's CONCURRENT_REQUESTS_PER_DOMAIN).",
        ),
        (
            {"ADAPTIVE_CRAWL_LOG_MAX_BYTES": "1e20"},
            "ADAPTIVE_CRAWL_LOG_MAX_BYTES (100000000000000000000) must be an integer from 1 to 1099511627776.",
        ),
        ({"ADAPTIVE_EMBED_HOPS": "1e3"}, "ADAPTIVE_EMBED_HOPS (1000) must be an integer from 0 to 10."),
        (
            {"ADAPTIVE_HISTORY_SIZE": 100000000000},
            "ADAPTIVE_HISTORY_SIZE (100000000000) must be an integer from 1 to 1000.",
        ),
    ],
)
def test_bad_types_and_absurd_magnitudes_are_refused(values: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as info:
        config(**values)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("values", "warnings"),
    [
        (
            {"ADAPTIVE_WAIT_MIN": 10, "ADAPTIVE_WAIT_INITIAL": 0.5},
            ["ADAPTIVE_WAIT_INITIAL (0.5) is below ADAPTIVE_WAIT_MIN (10): the first revisit waits 10 s."],
        ),
        (
            {"ADAPTIVE_WAIT_MAX": 7200, "ADAPTIVE_WAIT_INITIAL": 86_400},
            ["ADAPTIVE_WAIT_INITIAL (86400) is above ADAPTIVE_WAIT_MAX (7200): the first revisit waits 7200 s."],
        ),
        ({"ADAPTIVE_WAIT_MIN": 10, "ADAPTIVE_WAIT_INITIAL": 10}, []),
        ({}, []),
    ],
)
def test_an_initial_wait_outside_the_bounds_is_said_with_the_wait_used(
    values: dict[str, object], warnings: list[str]
) -> None:
    assert config(**values).warnings() == warnings


def test_a_text_diff_without_change_events_is_said_and_a_bad_cap_refused_naming_the_setting() -> None:
    assert config(ADAPTIVE_TEXT_DIFF=4096).warnings() == [
        "ADAPTIVE_TEXT_DIFF (4096) is set but no change events are made (ADAPTIVE_CHANGE_EVENTS, "
        "ADAPTIVE_CHANGES_FEED, ADAPTIVE_CHANGES_AS_ITEMS or ADAPTIVE_NOTIFY): no text is kept and no diff is made."
    ]
    assert config(ADAPTIVE_TEXT_DIFF=4096, ADAPTIVE_CHANGE_EVENTS=True).warnings() == []
    for bad in (-1, 2**21, "big"):
        with pytest.raises(ConfigError, match="^ADAPTIVE_TEXT_DIFF"):
            config(ADAPTIVE_TEXT_DIFF=bad)


def test_the_start_up_warnings_include_the_configs_own() -> None:
    settings = Settings({"ADAPTIVE_WAIT_MIN": 10, "ADAPTIVE_WAIT_INITIAL": 0.5})
    from scrapy_adaptive.integration.startup import settings_warnings

    messages = settings_warnings(settings, AdaptiveConfig.from_settings(settings))
    assert "ADAPTIVE_WAIT_INITIAL (0.5) is below ADAPTIVE_WAIT_MIN (10): the first revisit waits 10 s." in messages


def test_paths_classes_and_empty_strings_are_read_like_scrapy_reads_them(tmp_path: Path) -> None:
    from scrapy_adaptive.policies import HeritrixWaitPolicy

    c = config(ADAPTIVE_STATE_DIR=tmp_path, ADAPTIVE_WAIT_POLICY=HeritrixWaitPolicy, ADAPTIVE_UNCHANGED="")
    assert c.state_dir == str(tmp_path)
    assert c.wait_policy == "scrapy_adaptive.policies.heritrix.HeritrixWaitPolicy"
    assert c.unchanged == "skip"  # -s ADAPTIVE_UNCHANGED= means "not set"
    assert config(ADAPTIVE_STATE_DIR="").state_dir is None
    assert config(ADAPTIVE_CRAWL_LOG="false", ADAPTIVE_STATE_SYNC=1).crawl_log is False


def test_validate_holds_a_changed_config_to_the_same_rules() -> None:
    with pytest.raises(ConfigError, match=r"^ADAPTIVE_LEASE \(0\.0\) must be a finite number > 0\.$"):
        dataclasses.replace(config(), lease=0.0).validate()


# -- misspelt names --------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "closest"),
    [
        ("ADAPTIVE_MIN_DELAYY", "ADAPTIVE_MIN_DELAY"),
        ("ADAPTIVE_WAIT_MINN", "ADAPTIVE_WAIT_MIN"),
        ("ADAPTIVE_MAXDELAY", "ADAPTIVE_MAX_DELAY"),
        ("adaptive_lease", "ADAPTIVE_LEASE"),
    ],
)
def test_a_misspelt_name_is_reported_with_the_closest_setting(name: str, closest: str) -> None:
    settings = Settings({name: 3, "ADAPTIVE_LEASE": 60})
    assert unknown_settings(settings) == [
        f"{name} is not a scrapy-adaptive setting and is ignored; did you mean {closest}?"
    ]


@pytest.mark.parametrize("name", sorted(REMOVED_SETTINGS))
def test_a_removed_setting_is_named_once_with_what_took_its_place(name: str) -> None:
    """A project still setting one is told at start-up (the same warnings as a
    misspelt name's), not left believing it does something."""
    assert name not in SPECS_BY_NAME
    (message,) = unknown_settings(Settings({name: 1, "ADAPTIVE_LEASE": 60}))
    assert message.startswith(f"{name} is no longer a scrapy-adaptive setting and is ignored: ")
    assert message.endswith(". Remove it from your settings.")
    # the constant it names is there, and holds what the message says
    (path,) = re.findall(r"the constant (scrapy_adaptive[\w.]+)", message)
    module, constant = path.rsplit(".", 1)
    value = getattr(importlib.import_module(module), constant)
    assert value is True or str(value) in message or name == "ADAPTIVE_WAIT_NO_LAST_MODIFIED_FACTOR"


def test_the_removed_settings_constants_keep_their_old_defaults() -> None:
    from scrapy_adaptive.policies.base import NO_LAST_MODIFIED_FACTOR
    from scrapy_adaptive.runtime import collector

    assert (collector.FREEZE, collector.THRESHOLD, NO_LAST_MODIFIED_FACTOR) == (True, 10_000, 0.5)
    assert WaitParams().no_last_modified_factor == 0.5
    # an entry may still set it, held to a factor's bounds
    assert WaitParams().updated({"no_last_modified_factor": "1"}, "entry").no_last_modified_factor == 1.0
    with pytest.raises(ConfigError, match="'no_last_modified_factor'"):
        WaitParams().updated({"no_last_modified_factor": 0}, "entry")


def test_known_scrapy_and_internal_names_are_not_reported() -> None:
    assert unknown_settings(Settings(dict(DEFAULTS))) == []
    assert unknown_settings({"ADAPTIVE_XYZZY_PLUGH": 1}) == [
        "ADAPTIVE_XYZZY_PLUGH is not a scrapy-adaptive setting and is ignored."
    ]
    # the add-on's own marker (SCRAPY_ADAPTIVE_*) is internal, not a user setting
    settings = Settings()
    settings.set("SPIDER_MIDDLEWARES", {"scrapy_deltafetch.DeltaFetch": 100}, "project")
    Addon().update_settings(settings)
    assert settings.getbool("SCRAPY_ADAPTIVE_TOOK_OVER_DELTAFETCH")
    assert unknown_settings(settings) == []


# -- the README and purity -------------------------------------------------


def _table_script() -> Any:
    """scripts/settings_table.py, the generator kept outside the package."""
    spec = importlib.util.spec_from_file_location("settings_table", ROOT / "scripts" / "settings_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_settings_tables_are_the_generated_ones() -> None:
    script = _table_script()
    for page, make in script.PAGES.items():
        text = (ROOT / page).read_text(encoding="utf-8")
        assert make() in text, f"{page}: run python scripts/settings_table.py"
        assert script.replace_block(text, make()) == text


def test_the_readme_lists_the_settings_a_user_sets_and_the_docs_every_setting() -> None:
    """Issue 49: at most 25 settings in the README, a user holds them in
    their head; docs/settings.md has every one, and every removed one."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    docs = (ROOT / "docs" / "settings.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `(ADAPTIVE_\w+)` \|", readme, flags=re.MULTILINE))
    assert listed == {spec.name for spec in SETTING_SPECS if spec.user}
    assert 0 < len(listed) <= _table_script().README_LIMIT == 25
    for spec in SETTING_SPECS:
        row = rf"^\| (\*\*)?`{spec.name}`(\*\*)? \| {re.escape(spec.kind.value)} \|"
        assert re.search(row, docs, flags=re.MULTILINE), spec.name
    for name in REMOVED_SETTINGS:
        assert f"| `{name}` |" in docs and name not in readme
    # the README points to the rest
    assert "docs/settings.md" in readme.split("## Settings", 1)[1]


def test_the_readme_is_at_most_400_lines() -> None:
    """Issue 49: what a user needs to start, use and operate; the rest is linked."""
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 400


def test_the_table_script_refuses_more_user_settings_than_the_readme_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    script = _table_script()
    monkeypatch.setattr(script, "README_LIMIT", 3)
    with pytest.raises(ValueError, match="the README lists at most 3"):
        script.readme_table()


def test_the_table_script_checks_the_readme() -> None:
    script = ROOT / "scripts" / "settings_table.py"
    done = subprocess.run([sys.executable, str(script), "--check"], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


PURITY_CHECK = """
import importlib, sys, types
package = types.ModuleType("adaptive_settings_alone")
package.__path__ = [sys.argv[1]]
sys.modules[package.__name__] = package
module = importlib.import_module("adaptive_settings_alone.settings")
assert importlib.import_module("adaptive_settings_alone.table").DEFAULTS["ADAPTIVE_MIN_DELAY"] == 2.0
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("scrapy", "twisted", "scrapy_adaptive"))
print(loaded)
sys.exit(1 if loaded else 0)
"""


def test_the_settings_module_imports_no_scrapy() -> None:
    # Loaded from its folder under another package name, so that the package
    # __init__ (which imports the add-on, and so Scrapy, on first use) is not
    # run: this checks settings.py and the setting modules it imports
    # (spec, table, readme) alone.
    path = ROOT / "scrapy_adaptive" / "config"
    done = subprocess.run([sys.executable, "-c", PURITY_CHECK, str(path)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout + done.stderr


def test_importing_the_settings_through_the_package_loads_no_scrapy() -> None:
    code = "import sys, scrapy_adaptive.config.settings;"
    code += " sys.exit(any(m.split('.')[0] == 'scrapy' for m in sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT)
    assert done.returncode == 0, done.stderr


def test_a_seconds_setting_takes_a_duration_as_the_console_does() -> None:
    """``-s ADAPTIVE_WAIT_MIN=1h`` as ``scrapy frontier schedule --every 1h``."""
    assert config(ADAPTIVE_WAIT_MIN="90s").wait_min == 90.0
    assert config(ADAPTIVE_WAIT_MIN="15m", ADAPTIVE_WAIT_MAX="2d").wait_max == 2 * 86_400.0
    assert config(ADAPTIVE_WAIT_MIN="1h").wait_min == 3600.0
    with pytest.raises(ConfigError, match=r"ADAPTIVE_WAIT_MIN \('1 hour'\) must be a number of seconds \(or 90s"):
        config(ADAPTIVE_WAIT_MIN="1 hour")
