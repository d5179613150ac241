"""Defaults and start-up validation for every ``ADAPTIVE_*`` setting.

The defaults live here and *only* here; they are deliberately **not** written
into Scrapy's settings object.  That keeps one question answerable: did the
user set ``ADAPTIVE_MIN_DELAY`` explicitly (settings.py, ``-s``, Scrapyd's
``-d setting=``)?  If so it wins; if not, a value may be derived from Scrapy's
own settings (``DOWNLOAD_DELAY``, ``CONCURRENT_REQUESTS_PER_DOMAIN``) so that
a project's existing politeness is neither doubled nor ignored.

:class:`AdaptiveConfig` is parsed once, frozen, and handed to components as
plain values; it is tested without a crawler.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from typing import Any

from scrapy.settings import BaseSettings

#: Thesis defaults (Sigurðsson 2005, ch. 6.2) for politeness, and the code
#: defaults of Heritrix's WaitEvaluator for revisit waits.  All times are in
#: seconds as floats.
DEFAULTS: dict[str, Any] = {
    # where the state lives
    "ADAPTIVE_STATE_DIR": None,  # None: <JOBDIR>/adaptive, or a temp dir
    "ADAPTIVE_STATE_SYNC": False,  # fsync every write (power-loss safety)
    # politeness, enforced once, by the frontier
    "ADAPTIVE_DELAY_FACTOR": 5.0,
    "ADAPTIVE_EMBED_HOPS": 0,
    "ADAPTIVE_HOST_VALENCE": 1,
    "ADAPTIVE_LEASE": 600.0,
    "ADAPTIVE_MAX_DELAY": 5.0,
    "ADAPTIVE_MAX_RETRIES": 30,
    "ADAPTIVE_MIN_DELAY": 2.0,
    "ADAPTIVE_POLITENESS_KEY": "host",
    "ADAPTIVE_RETRY_DELAY": 900.0,
    # revisit waits (the catch-all policy; ADAPTIVE_WAIT_POLICIES stacks more)
    "ADAPTIVE_BUDGET": None,  # revisits per day, for budgeted policies
    "ADAPTIVE_BUDGET_WINDOW": 259_200.0,  # 3 days: the window the budget is held over
    "ADAPTIVE_TARGET_PRECISION": 0.5,  # without a budget: P(a visit finds a change)
    "ADAPTIVE_WAIT_CHANGED_FACTOR": 1.5,
    "ADAPTIVE_WAIT_DEFAULT": 259_200.0,  # 3 days: wait when change is unknown
    "ADAPTIVE_WAIT_DEPTH_FACTOR": 1.0,  # initial wait x factor ** depth
    "ADAPTIVE_WAIT_INITIAL": 86_400.0,  # 1 day: wait after the first visit
    "ADAPTIVE_WAIT_MAX": 2_419_200.0,  # 28 days
    "ADAPTIVE_WAIT_MIN": 3_600.0,  # 1 hour
    "ADAPTIVE_WAIT_NO_LAST_MODIFIED_FACTOR": 0.5,  # no Last-Modified: 2x as likely to change
    "ADAPTIVE_WAIT_POLICIES": None,  # None: text/*, image/*, then the catch-all
    "ADAPTIVE_WAIT_POLICY": "scrapy_adaptive.policies.BurstWaitPolicy",
    "ADAPTIVE_WAIT_UNCHANGED_FACTOR": 1.5,
    "ADAPTIVE_WAIT_USE_OVERDUE": False,
    # HTTP validators
    "ADAPTIVE_CONDITIONAL_GET": True,
    "ADAPTIVE_MIDFETCH_ABORT": True,
    "ADAPTIVE_TRUST_MIN_RATE": 0.005,  # verify at least 1 in 200 acted-on predictions
    "ADAPTIVE_TRUST_WARMUP": 3,  # right predictions before any is trusted
    "ADAPTIVE_VALIDATOR_SCHEME": "both",
    # change detection
    "ADAPTIVE_DIGEST_DEFAULT": "exact",
    "ADAPTIVE_DIGEST_MAX_SIZE": 1_048_576,  # the regex rule's limit (thesis: 1 MB)
    "ADAPTIVE_DIGEST_RULES": None,
    "ADAPTIVE_REVISIT_EMBEDS_ON_CHANGE": False,
    "ADAPTIVE_UNCHANGED": "skip",  # or "deliver" (flagged in meta)
    # record and observability
    "ADAPTIVE_CRAWL_LOG": True,
    "ADAPTIVE_CRAWL_LOG_BACKUPS": 5,
    "ADAPTIVE_CRAWL_LOG_MAX_BYTES": 50 * 2**20,
    "ADAPTIVE_HISTORY_SIZE": 16,
    "ADAPTIVE_LOG_INTERVAL": 60.0,
}

UNCHANGED_MODES = ("skip", "deliver")
VALIDATOR_SCHEMES = ("etag", "timestamp", "both", "either")

POLITENESS_KEYS = ("host", "domain", "slot")


class ConfigError(ValueError):
    """A setting has a value the crawler cannot run with."""


def _explicit(settings: BaseSettings, name: str) -> bool:
    """True when the user set *name* anywhere (project, cmdline, spider...).

    Scrapy's default priority is 0; our defaults are not in the settings at
    all, so any stored value was put there on purpose.
    """
    return settings.get(name) is not None


def _number(settings: BaseSettings, name: str, default: Any, *, integer: bool = False) -> Any:
    raw = settings.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
        if integer:
            if not value.is_integer():
                raise ValueError
            return int(value)
    except (TypeError, ValueError):
        kind = "an integer" if integer else "a number of seconds"
        raise ConfigError(f"{name} ({raw!r}) must be {kind}.") from None
    if math.isnan(value):
        raise ConfigError(f"{name} ({raw!r}) must be {'an integer' if integer else 'a number'}.")
    return value


def _bool(settings: BaseSettings, name: str, default: bool) -> bool:
    if settings.get(name) is None:
        return default
    try:
        return settings.getbool(name)
    except ValueError:
        raise ConfigError(f"{name} ({settings.get(name)!r}) must be true or false.") from None


@dataclass(frozen=True)
class AdaptiveConfig:
    """Every ``ADAPTIVE_*`` value the core reads, validated and typed."""

    state_dir: str | None
    state_sync: bool
    delay_factor: float
    min_delay: float
    max_delay: float
    host_valence: int
    max_retries: int
    retry_delay: float
    embed_hops: int
    lease: float
    politeness_key: str
    wait_initial: float
    wait_default: float
    wait_min: float
    wait_max: float
    wait_policy: str
    budget: float | None
    budget_window: float
    target_precision: float
    wait_changed_factor: float
    wait_unchanged_factor: float
    wait_use_overdue: bool
    wait_no_last_modified_factor: float
    wait_depth_factor: float
    wait_policies: Any
    conditional_get: bool
    midfetch_abort: bool
    trust_min_rate: float
    trust_warmup: int
    validator_scheme: str
    digest_default: Any
    digest_max_size: int
    digest_rules: Any
    revisit_embeds_on_change: bool
    unchanged: str
    crawl_log: bool
    crawl_log_backups: int
    crawl_log_max_bytes: int
    history_size: int
    log_interval: float

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> AdaptiveConfig:
        """Parse and validate; raise :class:`ConfigError` naming the setting.

        Mapping of Scrapy's own politeness settings (explicit ``ADAPTIVE_*``
        values always win):

        * ``DOWNLOAD_DELAY`` (if set by the project) becomes the frontier's
          ``ADAPTIVE_MIN_DELAY``.  The frontier counts its wait from the *end*
          of a fetch and the downloader counts ``DOWNLOAD_DELAY`` from the
          *start*, so the downloader's own delay has always elapsed when the
          frontier releases the next URL: the delay is applied once, not
          twice.
        * ``CONCURRENT_REQUESTS_PER_DOMAIN`` (if set by the project) becomes
          ``ADAPTIVE_HOST_VALENCE``.
        """
        d = DEFAULTS
        min_delay = d["ADAPTIVE_MIN_DELAY"]
        if not _explicit(settings, "ADAPTIVE_MIN_DELAY") and settings.getpriority("DOWNLOAD_DELAY") not in (None, 0):
            min_delay = settings.getfloat("DOWNLOAD_DELAY")
        min_delay = _number(settings, "ADAPTIVE_MIN_DELAY", min_delay)
        valence = d["ADAPTIVE_HOST_VALENCE"]
        if not _explicit(settings, "ADAPTIVE_HOST_VALENCE") and settings.getpriority(
            "CONCURRENT_REQUESTS_PER_DOMAIN"
        ) not in (None, 0):
            valence = settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN")
        state_dir = settings.get("ADAPTIVE_STATE_DIR")
        config = cls(
            state_dir=str(state_dir) if state_dir else None,
            state_sync=_bool(settings, "ADAPTIVE_STATE_SYNC", d["ADAPTIVE_STATE_SYNC"]),
            delay_factor=_number(settings, "ADAPTIVE_DELAY_FACTOR", d["ADAPTIVE_DELAY_FACTOR"]),
            min_delay=min_delay,
            max_delay=_number(settings, "ADAPTIVE_MAX_DELAY", max(d["ADAPTIVE_MAX_DELAY"], min_delay)),
            host_valence=_number(settings, "ADAPTIVE_HOST_VALENCE", valence, integer=True),
            max_retries=_number(settings, "ADAPTIVE_MAX_RETRIES", d["ADAPTIVE_MAX_RETRIES"], integer=True),
            retry_delay=_number(settings, "ADAPTIVE_RETRY_DELAY", d["ADAPTIVE_RETRY_DELAY"]),
            embed_hops=_number(settings, "ADAPTIVE_EMBED_HOPS", d["ADAPTIVE_EMBED_HOPS"], integer=True),
            lease=_number(settings, "ADAPTIVE_LEASE", d["ADAPTIVE_LEASE"]),
            politeness_key=str(settings.get("ADAPTIVE_POLITENESS_KEY") or d["ADAPTIVE_POLITENESS_KEY"]),
            wait_initial=_number(settings, "ADAPTIVE_WAIT_INITIAL", d["ADAPTIVE_WAIT_INITIAL"]),
            wait_default=_number(settings, "ADAPTIVE_WAIT_DEFAULT", d["ADAPTIVE_WAIT_DEFAULT"]),
            wait_min=_number(settings, "ADAPTIVE_WAIT_MIN", d["ADAPTIVE_WAIT_MIN"]),
            wait_max=_number(settings, "ADAPTIVE_WAIT_MAX", d["ADAPTIVE_WAIT_MAX"]),
            wait_policy=str(settings.get("ADAPTIVE_WAIT_POLICY") or d["ADAPTIVE_WAIT_POLICY"]),
            budget=_number(settings, "ADAPTIVE_BUDGET", d["ADAPTIVE_BUDGET"]),
            budget_window=_number(settings, "ADAPTIVE_BUDGET_WINDOW", d["ADAPTIVE_BUDGET_WINDOW"]),
            target_precision=_number(settings, "ADAPTIVE_TARGET_PRECISION", d["ADAPTIVE_TARGET_PRECISION"]),
            wait_changed_factor=_number(settings, "ADAPTIVE_WAIT_CHANGED_FACTOR", d["ADAPTIVE_WAIT_CHANGED_FACTOR"]),
            wait_unchanged_factor=_number(
                settings, "ADAPTIVE_WAIT_UNCHANGED_FACTOR", d["ADAPTIVE_WAIT_UNCHANGED_FACTOR"]
            ),
            wait_use_overdue=_bool(settings, "ADAPTIVE_WAIT_USE_OVERDUE", d["ADAPTIVE_WAIT_USE_OVERDUE"]),
            wait_no_last_modified_factor=_number(
                settings, "ADAPTIVE_WAIT_NO_LAST_MODIFIED_FACTOR", d["ADAPTIVE_WAIT_NO_LAST_MODIFIED_FACTOR"]
            ),
            wait_depth_factor=_number(settings, "ADAPTIVE_WAIT_DEPTH_FACTOR", d["ADAPTIVE_WAIT_DEPTH_FACTOR"]),
            wait_policies=settings.get("ADAPTIVE_WAIT_POLICIES"),
            conditional_get=_bool(settings, "ADAPTIVE_CONDITIONAL_GET", d["ADAPTIVE_CONDITIONAL_GET"]),
            midfetch_abort=_bool(settings, "ADAPTIVE_MIDFETCH_ABORT", d["ADAPTIVE_MIDFETCH_ABORT"]),
            trust_min_rate=_number(settings, "ADAPTIVE_TRUST_MIN_RATE", d["ADAPTIVE_TRUST_MIN_RATE"]),
            trust_warmup=_number(settings, "ADAPTIVE_TRUST_WARMUP", d["ADAPTIVE_TRUST_WARMUP"], integer=True),
            validator_scheme=str(settings.get("ADAPTIVE_VALIDATOR_SCHEME") or d["ADAPTIVE_VALIDATOR_SCHEME"]),
            digest_default=settings.get("ADAPTIVE_DIGEST_DEFAULT") or d["ADAPTIVE_DIGEST_DEFAULT"],
            digest_max_size=_number(settings, "ADAPTIVE_DIGEST_MAX_SIZE", d["ADAPTIVE_DIGEST_MAX_SIZE"], integer=True),
            digest_rules=settings.get("ADAPTIVE_DIGEST_RULES"),
            revisit_embeds_on_change=_bool(
                settings, "ADAPTIVE_REVISIT_EMBEDS_ON_CHANGE", d["ADAPTIVE_REVISIT_EMBEDS_ON_CHANGE"]
            ),
            unchanged=str(settings.get("ADAPTIVE_UNCHANGED") or d["ADAPTIVE_UNCHANGED"]),
            crawl_log=_bool(settings, "ADAPTIVE_CRAWL_LOG", d["ADAPTIVE_CRAWL_LOG"]),
            crawl_log_backups=_number(
                settings, "ADAPTIVE_CRAWL_LOG_BACKUPS", d["ADAPTIVE_CRAWL_LOG_BACKUPS"], integer=True
            ),
            crawl_log_max_bytes=_number(
                settings, "ADAPTIVE_CRAWL_LOG_MAX_BYTES", d["ADAPTIVE_CRAWL_LOG_MAX_BYTES"], integer=True
            ),
            history_size=_number(settings, "ADAPTIVE_HISTORY_SIZE", d["ADAPTIVE_HISTORY_SIZE"], integer=True),
            log_interval=_number(settings, "ADAPTIVE_LOG_INTERVAL", d["ADAPTIVE_LOG_INTERVAL"]),
        )
        config.validate()
        return config

    def validate(self) -> None:
        """Check ranges and relations between values."""
        names = {f.name: "ADAPTIVE_" + f.name.upper() for f in fields(self)}
        for attr in ("delay_factor", "min_delay", "max_delay", "retry_delay", "wait_min"):
            value = getattr(self, attr)
            if value < 0 or math.isinf(value):
                raise ConfigError(f"{names[attr]} ({value!r}) must be a finite number >= 0.")
        for attr in ("lease", "log_interval", "wait_initial", "wait_default", "wait_max"):
            value = getattr(self, attr)
            if value <= 0 or math.isinf(value):
                raise ConfigError(f"{names[attr]} ({value!r}) must be a finite number > 0.")
        for attr in ("host_valence", "history_size"):
            if getattr(self, attr) < 1:
                raise ConfigError(f"{names[attr]} ({getattr(self, attr)!r}) must be at least 1.")
        for attr in ("max_retries", "embed_hops"):
            if getattr(self, attr) < 0:
                raise ConfigError(f"{names[attr]} ({getattr(self, attr)!r}) must be 0 or more.")
        if self.max_delay < self.min_delay:
            raise ConfigError(
                f"ADAPTIVE_MAX_DELAY ({self.max_delay!r}) must not be lower than "
                f"ADAPTIVE_MIN_DELAY ({self.min_delay!r})."
            )
        if self.wait_max < self.wait_min:
            raise ConfigError(
                f"ADAPTIVE_WAIT_MAX ({self.wait_max!r}) must not be lower than ADAPTIVE_WAIT_MIN ({self.wait_min!r})."
            )
        for attr in ("wait_changed_factor", "wait_unchanged_factor", "wait_depth_factor"):
            if getattr(self, attr) <= 0 or math.isinf(getattr(self, attr)):
                raise ConfigError(f"{names[attr]} ({getattr(self, attr)!r}) must be a finite number > 0.")
        if self.wait_no_last_modified_factor <= 0:
            raise ConfigError(
                f"ADAPTIVE_WAIT_NO_LAST_MODIFIED_FACTOR ({self.wait_no_last_modified_factor!r}) must be > 0."
            )
        for attr in ("digest_max_size", "crawl_log_max_bytes"):
            if getattr(self, attr) < 1:
                raise ConfigError(f"{names[attr]} ({getattr(self, attr)!r}) must be at least 1.")
        if self.crawl_log_backups < 0:
            raise ConfigError(f"ADAPTIVE_CRAWL_LOG_BACKUPS ({self.crawl_log_backups!r}) must be 0 or more.")
        if self.budget is not None and not (0 < self.budget < math.inf):
            raise ConfigError(f"ADAPTIVE_BUDGET ({self.budget!r}) must be a number of revisits per day > 0.")
        if not 0 < self.budget_window < math.inf:
            raise ConfigError(
                f"ADAPTIVE_BUDGET_WINDOW ({self.budget_window!r}) must be a finite number of seconds > 0 "
                "(the window over which realised revisits are held to ADAPTIVE_BUDGET)."
            )
        if not 0 < self.target_precision < 1:
            raise ConfigError(
                f"ADAPTIVE_TARGET_PRECISION ({self.target_precision!r}) must be a probability strictly between 0 "
                "and 1 (the share of visits that should find a change when ADAPTIVE_BUDGET is not set)."
            )
        if self.validator_scheme not in VALIDATOR_SCHEMES:
            raise ConfigError(
                f"ADAPTIVE_VALIDATOR_SCHEME ({self.validator_scheme!r}) must be one of {', '.join(VALIDATOR_SCHEMES)}."
            )
        if not 0 < self.trust_min_rate <= 1:
            raise ConfigError(f"ADAPTIVE_TRUST_MIN_RATE ({self.trust_min_rate!r}) must be in (0, 1].")
        if self.trust_warmup < 0:
            raise ConfigError(f"ADAPTIVE_TRUST_WARMUP ({self.trust_warmup!r}) must be 0 or more.")
        if self.unchanged not in UNCHANGED_MODES:
            raise ConfigError(f"ADAPTIVE_UNCHANGED ({self.unchanged!r}) must be one of {', '.join(UNCHANGED_MODES)}.")
        if self.politeness_key not in POLITENESS_KEYS:
            raise ConfigError(
                f"ADAPTIVE_POLITENESS_KEY ({self.politeness_key!r}) must be one of {', '.join(POLITENESS_KEYS)}."
            )
