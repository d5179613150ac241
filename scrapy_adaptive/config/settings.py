"""The typed configuration: :class:`AdaptiveConfig`, from Scrapy's settings.

Every ``ADAPTIVE_*`` setting is described once, in
:data:`~scrapy_adaptive.config.table.SETTING_SPECS` (the machinery is in
:mod:`~scrapy_adaptive.config.spec`).  Everything else is generated from
that table, so a setting cannot be documented with one default and run with
another:

* :data:`DEFAULTS`, which the pure dataclasses (``WaitParams``,
  ``Politeness``, ``TrustParams``) take their field defaults from;
* the parsing and per-value checks of :meth:`AdaptiveConfig.from_settings`,
  and the wording of their :class:`ConfigError` messages;
* the settings tables of the README and docs/settings.md (``python scripts/settings_table.py``,
  outside the package);
* the warnings for misspelt names (:func:`unknown_settings`).

The defaults are deliberately **not** written into Scrapy's settings object.
That keeps one question answerable: did the user set ``ADAPTIVE_MIN_DELAY``
explicitly (settings.py, ``-s``, Scrapyd's ``-d setting=``)?  If so it wins;
if not, a value may be derived from Scrapy's own settings
(``DOWNLOAD_DELAY``, ``CONCURRENT_REQUESTS_PER_DOMAIN``) so that a project's
existing politeness is neither doubled nor ignored.

This module and the two it builds on (:mod:`.spec`, :mod:`.table`) import
nothing from Scrapy, and from the package only each other, at run time: the pure modules
(frontier, policies, change) import them without loading Scrapy, and they
cannot take part in an import cycle.  :meth:`AdaptiveConfig.from_settings`
only needs ``get``, ``getpriority``, ``getfloat`` and ``getint`` of a Scrapy
``BaseSettings``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .spec import ConfigError, check_value, clause, number_text, parse_value
from .table import (
    REMOVED_SETTINGS,
    SETTING_SPECS,
    SPECS_BY_NAME,
)

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

__all__ = ["AdaptiveConfig", "unknown_settings"]


def _explicit(settings: BaseSettings, name: str) -> bool:
    """True when the user set *name* anywhere (project, cmdline, spider...).

    Scrapy's default priority is 0; our defaults are not in the settings at
    all, so any stored value was put there on purpose.
    """
    return settings.get(name) is not None


def _set_by_project(settings: BaseSettings, name: str) -> bool:
    """True when a Scrapy setting holds more than Scrapy's own default."""
    return settings.getpriority(name) not in (None, 0)


@dataclass(frozen=True)
class AdaptiveConfig:
    """Every ``ADAPTIVE_*`` value the core reads, validated and typed.

    One field per :data:`SETTING_SPECS` entry, in its order and named by
    :attr:`SettingSpec.attribute` (a test holds the two together).  Written
    out rather than generated so that type checkers see each field.
    """

    state_dir: str | None
    delivery: bool
    state_sync: bool
    state_cache_mb: int
    migrate_spider_state: bool
    stop_grace: float
    store_credentials: bool
    store_lease: float
    store_namespace: str | None
    store_password: str | None
    store_tls_ca: str | None
    store_tls_cert: str | None
    store_tls_key: str | None
    store_url: str | None
    delay_factor: float
    embed_hops: int
    host_valence: int
    lease: float
    max_delay: float
    max_retries: int
    min_delay: float
    politeness_key: str
    retry_delay: float
    budget: float | None
    objective: str
    budget_window: float | None
    capacity_share: float
    target_precision: float
    wait_changed_factor: float
    wait_default: float
    wait_depth_factor: float
    wait_initial: float
    wait_max: float
    wait_min: float
    wait_policies: Any
    wait_policy: str
    wait_unchanged_factor: float
    wait_use_overdue: bool
    conditional_get: bool
    midfetch_abort: bool
    trust_min_rate: float
    trust_warmup: int
    validator_scheme: str
    digest_default: Any
    digest_max_size: int
    digest_rules: Any
    noise_learning: bool
    revisit_embeds_on_change: bool
    unchanged: str
    canonical: Any
    feeds: tuple[str, ...]
    robots_refresh: float
    sitemaps: tuple[str, ...]
    sitemaps_from_robots: bool
    soft404_urls: int
    changes_as_items: bool
    changes_feed: str | None
    changes_log_backups: int
    changes_log_max_bytes: int
    change_events: bool
    crawl_log: bool
    crawl_log_backups: int
    crawl_log_max_bytes: int
    gone_confirmations: int
    history_size: int
    log_interval: float
    notify: Any
    text_diff: int
    warc_dir: str | None
    warc_dedup_across_urls: bool
    warc_digest_index_size: int
    warc_max_size: int
    warc_prefix: str
    warc_keep_credentials: bool

    @property
    def events_on(self) -> bool:
        """Change events are made (``ADAPTIVE_CHANGE_EVENTS``, a changes feed, events as items, or notifications)."""
        return self.change_events or self.changes_feed is not None or self.changes_as_items or bool(self.notify)

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> AdaptiveConfig:
        """Parse and validate; raise :class:`ConfigError` naming the setting.

        Mapping of Scrapy's own politeness settings (explicit ``ADAPTIVE_*``
        values always win):

        * ``DOWNLOAD_DELAY`` (if set by the project) becomes the frontier's
          ``ADAPTIVE_MIN_DELAY``.  The frontier counts its wait from the *end*
          of a fetch and the downloader counts ``DOWNLOAD_DELAY`` from the
          *start*, so the downloader's own delay has elapsed when the
          frontier releases the next URL (but for Scrapy's jitter, which can
          hold a request up to half the delay longer): the delay is applied
          once, not twice.
        * ``CONCURRENT_REQUESTS_PER_DOMAIN`` (if set by the project) becomes
          ``ADAPTIVE_HOST_VALENCE``.
        * ``ADAPTIVE_MAX_DELAY``, when not set, is raised to the minimum
          delay, so a long ``DOWNLOAD_DELAY`` alone is never refused.
        """
        values = {spec.attribute: parse_value(spec, settings.get(spec.name)) for spec in SETTING_SPECS}
        for scrapy_name, name in (
            ("DOWNLOAD_DELAY", "ADAPTIVE_MIN_DELAY"),
            ("CONCURRENT_REQUESTS_PER_DOMAIN", "ADAPTIVE_HOST_VALENCE"),
        ):
            if not _explicit(settings, name) and _set_by_project(settings, scrapy_name):
                spec = SPECS_BY_NAME[name]
                try:  # checked here, so the message names where the value came from
                    value = parse_value(spec, settings.get(scrapy_name))
                    check_value(spec, value)
                except ConfigError as exc:
                    raise ConfigError(f"{clause(exc)} (it is taken from the project's {scrapy_name}).") from None
                values[spec.attribute] = value
        # checked before it can raise the maximum, so the message names it
        check_value(SPECS_BY_NAME["ADAPTIVE_MIN_DELAY"], values["min_delay"])
        if not _explicit(settings, "ADAPTIVE_MAX_DELAY"):
            values["max_delay"] = max(values["max_delay"], values["min_delay"])
        config = cls(**values)
        config.validate()
        return config

    def validate(self) -> None:
        """Check every value against its spec, then the relations between values.

        Runs on typed values, so a config made with ``dataclasses.replace``
        or derived from Scrapy's settings is held to the same rules.
        """
        for spec in SETTING_SPECS:
            check_value(spec, getattr(self, spec.attribute))
        if self.max_delay < self.min_delay:
            raise ConfigError(
                f"ADAPTIVE_MAX_DELAY ({self.max_delay!r}) must not be lower than "
                f"ADAPTIVE_MIN_DELAY ({self.min_delay!r})."
            )
        if self.store_url is not None and not self.store_url.startswith(
            ("redis://", "rediss://", "redis+cluster://", "rediss+cluster://")
        ):
            raise ConfigError(
                f"ADAPTIVE_STORE_URL ({self.store_url.split('@')[-1]!r}) must start with redis://, rediss:// "
                "(redis+cluster:// or rediss+cluster:// for a Redis Cluster) "
                "(or be unset: LevelDB in the state folder)."
            )
        if self.wait_max < self.wait_min:
            raise ConfigError(
                f"ADAPTIVE_WAIT_MAX ({self.wait_max!r}) must not be lower than ADAPTIVE_WAIT_MIN ({self.wait_min!r})."
            )

    def warnings(self) -> list[str]:
        """Values that are allowed together but do not do what they say: each
        message names them and says what is used instead.

        The first wait is clamped to [``ADAPTIVE_WAIT_MIN``,
        ``ADAPTIVE_WAIT_MAX``] like every other, so an initial wait outside
        them is not refused (a project may lower the floor and forget the
        initial wait) but would otherwise be ignored without a word.
        """
        messages = []
        initial, low, high = self.wait_initial, self.wait_min, self.wait_max
        if initial < low:
            messages.append(
                f"ADAPTIVE_WAIT_INITIAL ({number_text(initial)}) is below ADAPTIVE_WAIT_MIN ({number_text(low)}): "
                f"the first revisit waits {number_text(low)} s."
            )
        elif initial > high:
            messages.append(
                f"ADAPTIVE_WAIT_INITIAL ({number_text(initial)}) is above ADAPTIVE_WAIT_MAX ({number_text(high)}): "
                f"the first revisit waits {number_text(high)} s."
            )
        if self.text_diff and not self.events_on:
            # the diff rides on change events: without them there is nothing to carry it
            messages.append(
                f"ADAPTIVE_TEXT_DIFF ({self.text_diff}) is set but no change events are made "
                "(ADAPTIVE_CHANGE_EVENTS, ADAPTIVE_CHANGES_FEED, ADAPTIVE_CHANGES_AS_ITEMS or ADAPTIVE_NOTIFY): "
                "no text is kept and no diff is made."
            )
        return messages


def unknown_settings(settings: Iterable[str]) -> list[str]:
    """Warnings for ``ADAPTIVE_*`` names in *settings* that no spec has.

    A misspelt name (``ADAPTIVE_MIN_DELAYY``) is otherwise silently ignored
    and the crawl runs with the default; the warning names the closest valid
    setting.  *settings* is anything that iterates over setting names (a
    Scrapy ``BaseSettings``, a dict).  Names under ``SCRAPY_ADAPTIVE_`` are
    the package's internal markers (the add-on's) and are never reported.
    A setting that was removed (:data:`~.table.REMOVED_SETTINGS`) is named
    with what took its place.
    """
    warnings = []
    for name in sorted(n for n in settings if isinstance(n, str)):
        if not name.upper().startswith("ADAPTIVE_") or name in SPECS_BY_NAME:
            continue
        if name.upper() in REMOVED_SETTINGS:
            replaced = REMOVED_SETTINGS[name.upper()]
            warnings.append(
                f"{name} is no longer a scrapy-adaptive setting and is ignored: {replaced}. "
                "Remove it from your settings."
            )
            continue
        match = closest_name(name.upper(), SPECS_BY_NAME, "ADAPTIVE_")
        hint = f"; did you mean {match}?" if match else "."
        warnings.append(f"{name} is not a scrapy-adaptive setting and is ignored{hint}")
    return warnings


def closest_name(name: str, known: Iterable[str], prefix: str) -> str | None:
    """The name of *known* closest to a misspelt *name*, or None.

    Compared without the *prefix* they all share, which would make any
    name under it look close to some known one.
    """
    suffixes = {k.removeprefix(prefix): k for k in known}
    matches = difflib.get_close_matches(name.removeprefix(prefix), list(suffixes), n=1)
    return suffixes[matches[0]] if matches else None
