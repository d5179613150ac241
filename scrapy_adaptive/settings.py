"""Every ``ADAPTIVE_*`` setting, described once: :data:`SETTING_SPECS`.

Each :class:`SettingSpec` holds a setting's name, kind, default, allowed
range and one-line doc.  Everything else is generated from that table, so a
setting cannot be documented with one default and run with another:

* :data:`DEFAULTS`, which the pure dataclasses (``WaitParams``,
  ``Politeness``, ``TrustParams``) take their field defaults from;
* the parsing and per-value checks of :meth:`AdaptiveConfig.from_settings`,
  and the wording of their :class:`ConfigError` messages;
* the README's settings table (:func:`settings_table_markdown`, rewritten by
  ``python scripts/settings_table.py``);
* the warnings for misspelt names (:func:`unknown_settings`).

The defaults are deliberately **not** written into Scrapy's settings object.
That keeps one question answerable: did the user set ``ADAPTIVE_MIN_DELAY``
explicitly (settings.py, ``-s``, Scrapyd's ``-d setting=``)?  If so it wins;
if not, a value may be derived from Scrapy's own settings
(``DOWNLOAD_DELAY``, ``CONCURRENT_REQUESTS_PER_DOMAIN``) so that a project's
existing politeness is neither doubled nor ignored.

This module imports nothing from Scrapy or from the rest of the package at
run time: the pure modules (frontier, policies, change) import it without
loading Scrapy, and it cannot take part in an import cycle.
:meth:`AdaptiveConfig.from_settings` only needs ``get``, ``getpriority``,
``getfloat`` and ``getint`` of a Scrapy ``BaseSettings``.
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from scrapy.settings import BaseSettings

UNCHANGED_MODES = ("skip", "deliver")
#: how ETag / Last-Modified predict "no change" (``change/prediction.py``
#: re-exports this as ``SCHEMES``)
VALIDATOR_SCHEMES = ("etag", "timestamp", "both", "either")
POLITENESS_KEYS = ("host", "domain", "slot")

#: The upper limit of every duration setting.  Nothing this crawler does
#: needs a longer delay or wait; a larger value is a typo or a unit mistake
#: (milliseconds for seconds), and left alone it would overflow the
#: frontier's millisecond timestamps or park every URL for ever.
MAX_SECONDS = 10 * 365 * 86_400.0
#: The upper limit of every multiplying factor: a factor of 1000 already
#: turns a one-second fetch into a 17-minute politeness delay, or a one-hour
#: wait into six weeks after one step.
MAX_FACTOR = 1_000.0
#: The upper limit of ``ADAPTIVE_BUDGET``: a billion revisits a day is over
#: 11,000 fetches a second, far beyond one Scrapy process.
MAX_BUDGET = 1e9

#: where the table's groups start; their order is the README's order
GROUP_STATE = "Where the state lives"
GROUP_POLITENESS = "Politeness, enforced once, by the frontier"
GROUP_WAITS = "Revisit waits (the catch-all policy; ADAPTIVE_WAIT_POLICIES stacks more)"
GROUP_VALIDATORS = "HTTP validators"
GROUP_CHANGE = "Change detection"
GROUP_RECORD = "Record and observability"

#: the lines around the generated block in README.md
TABLE_START = "<!-- settings-table:start -->"
TABLE_END = "<!-- settings-table:end -->"


class ConfigError(ValueError):
    """A setting has a value the crawler cannot run with."""


class Kind(StrEnum):
    """What a setting's value is; decides how it is parsed and checked."""

    SECONDS = "seconds"  #: a float number of seconds
    NUMBER = "number"  #: a float (a factor, a probability, a rate)
    INTEGER = "integer"
    BOOL = "bool"
    CHOICE = "choice"  #: one of :attr:`SettingSpec.choices`
    CLASS_PATH = "class path"  #: a dotted path, or the class itself
    PATH = "path"  #: a folder (a string or ``os.PathLike``), or unset
    OBJECT = "object"  #: a structure checked where it is used (lists of rule dicts)


#: the Python type of an :class:`AdaptiveConfig` field, by kind (optional
#: numbers add ``| None``); a test holds the dataclass to it
FIELD_TYPES = {
    Kind.SECONDS: "float",
    Kind.NUMBER: "float",
    Kind.INTEGER: "int",
    Kind.BOOL: "bool",
    Kind.CHOICE: "str",
    Kind.CLASS_PATH: "str",
    Kind.PATH: "str",
    Kind.OBJECT: "Any",
}

#: what a value of each kind must be, in refusals ("... must be a number.")
_EXPECTED = {
    Kind.SECONDS: "a number of seconds",
    Kind.NUMBER: "a number",
    Kind.INTEGER: "an integer",
    Kind.BOOL: "true or false",
    Kind.CHOICE: "one of the choices",
    Kind.CLASS_PATH: "a dotted class path (a string) or a class",
    Kind.PATH: "a folder path (a string)",
    Kind.OBJECT: "a value",
}
_NUMERIC = (Kind.SECONDS, Kind.NUMBER, Kind.INTEGER)
#: kinds where an empty string (``-s NAME=``) means "not set"
_EMPTY_IS_UNSET = (Kind.CHOICE, Kind.CLASS_PATH, Kind.PATH, Kind.OBJECT)


@dataclass(frozen=True)
class SettingSpec:
    """One ``ADAPTIVE_*`` setting: what it is, its default, what is allowed.

    The bounds are inclusive (``at_least``, ``at_most``) or strict
    (``above``, ``below``); floats must also be finite.  ``at_most`` is a
    sanity limit refused with its own message ("must be at most ...");
    ``requirement`` replaces the generated wording of the other bounds where
    a setting's message explains more (the budget's unit, the probability).
    """

    name: str
    group: str
    kind: Kind
    default: Any
    doc: str
    at_least: float | None = None
    above: float | None = None
    below: float | None = None
    at_most: float | None = None
    choices: tuple[str, ...] = ()
    #: None is a valid value (meaning "not used"), not only the default
    optional: bool = False
    #: what a number counts, for the message when it is not a number
    unit: str = ""
    requirement: str | None = None
    #: the README's default cell when the value alone would mislead
    default_doc: str | None = None

    @property
    def attribute(self) -> str:
        """The :class:`AdaptiveConfig` field: ``ADAPTIVE_MIN_DELAY`` -> ``min_delay``."""
        return self.name.removeprefix("ADAPTIVE_").lower()

    @property
    def field_type(self) -> str:
        """The field's annotation, as written in :class:`AdaptiveConfig`."""
        base = FIELD_TYPES[self.kind]
        return f"{base} | None" if self.optional else base

    def expected(self) -> str:
        """What the value must be, for a value of the wrong type."""
        if self.kind is Kind.NUMBER and self.unit:
            return f"a number of {self.unit}"
        if self.kind is Kind.CHOICE:
            return f"one of {', '.join(self.choices)}"
        return _EXPECTED[self.kind]

    def range_requirement(self) -> str:
        """What the value must be, for a number outside its range."""
        if self.requirement is not None:
            return self.requirement
        if self.kind is Kind.INTEGER:
            return "0 or more" if self.at_least == 0 else f"at least {_number_text(self.at_least or 0)}"
        parts = []
        if self.above is not None:
            parts.append(f"> {_number_text(self.above)}")
        if self.at_least is not None:
            parts.append(f">= {_number_text(self.at_least)}")
        if self.below is not None:
            parts.append(f"< {_number_text(self.below)}")
        return " ".join(["a finite number", " and ".join(parts)]).strip()

    def limit_text(self) -> str:
        """``at_most`` in words: durations in years or days."""
        assert self.at_most is not None
        if self.kind is Kind.SECONDS:
            return f"{_number_text(self.at_most)} seconds ({_duration_text(self.at_most)})"
        return _number_text(self.at_most)


def _number_text(value: float) -> str:
    """``0`` for 0.0, ``1000000000`` for 1e9: a bound as people write it."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e16 else repr(value)


def _duration_text(seconds: float) -> str:
    """``10 years`` or ``3 days`` when exact, else the seconds."""
    for unit, length in (("years", 365 * 86_400), ("days", 86_400), ("hours", 3_600)):
        if seconds >= length and seconds % length == 0:
            return f"{_number_text(seconds / length)} {unit}"
    return f"{_number_text(seconds)} seconds"


def _seconds(name: str, group: str, default: float, doc: str, *, positive: bool = False, **more: Any) -> SettingSpec:
    """A duration: finite, never negative (or > 0), at most :data:`MAX_SECONDS`."""
    bounds: dict[str, Any] = {"above": 0.0} if positive else {"at_least": 0.0}
    return SettingSpec(name, group, Kind.SECONDS, default, doc, at_most=MAX_SECONDS, **bounds, **more)


def _factor(name: str, group: str, default: float, doc: str, *, positive: bool = True) -> SettingSpec:
    """A multiplier: finite, > 0 (or >= 0), at most :data:`MAX_FACTOR`."""
    bounds: dict[str, Any] = {"above": 0.0} if positive else {"at_least": 0.0}
    return SettingSpec(name, group, Kind.NUMBER, default, doc, at_most=MAX_FACTOR, **bounds)


def _integer(name: str, group: str, default: int, doc: str, *, at_least: int) -> SettingSpec:
    return SettingSpec(name, group, Kind.INTEGER, default, doc, at_least=at_least)


def _bool(name: str, group: str, default: bool, doc: str) -> SettingSpec:
    return SettingSpec(name, group, Kind.BOOL, default, doc)


#: Thesis defaults (Sigurðsson 2005, ch. 6.2) for politeness, and the code
#: defaults of Heritrix's WaitEvaluator for revisit waits.  Grouped like
#: Scrapy's ``default_settings.py``: the enabling flag first in its group,
#: then alphabetical.
SETTING_SPECS: tuple[SettingSpec, ...] = (
    SettingSpec(
        "ADAPTIVE_STATE_DIR",
        GROUP_STATE,
        Kind.PATH,
        None,
        "where the frontier lives. Without JOBDIR and without this: a temporary folder and a warning that "
        "nothing survives.",
        optional=True,
        default_doc="`<JOBDIR>/adaptive`",
    ),
    _bool(
        "ADAPTIVE_STATE_SYNC",
        GROUP_STATE,
        False,
        "fsync every write. Writes already survive a killed process; this also survives power loss, at a cost "
        "in speed.",
    ),
    _factor(
        "ADAPTIVE_DELAY_FACTOR",
        GROUP_POLITENESS,
        5.0,
        "politeness wait = this × duration of the last fetch, kept between `ADAPTIVE_MIN_DELAY` and "
        "`ADAPTIVE_MAX_DELAY`.",
        positive=False,
    ),
    _integer(
        "ADAPTIVE_EMBED_HOPS",
        GROUP_POLITENESS,
        0,
        'embedded resources (images, CSS, scripts, fonts: by URL extension or `meta["adaptive_embed"]`) up '
        "to this many embed hops from a page are fetched before other due URLs of their queue. 0 (the thesis "
        "default) treats them like any URL, so their own change rate governs them.",
        at_least=0,
    ),
    _integer(
        "ADAPTIVE_HOST_VALENCE",
        GROUP_POLITENESS,
        1,
        "fetches at a time per queue. Set from `CONCURRENT_REQUESTS_PER_DOMAIN` when the project sets that and "
        "not this.",
        at_least=1,
    ),
    _seconds(
        "ADAPTIVE_LEASE",
        GROUP_POLITENESS,
        600.0,
        "how long an issued URL may stay out without a verdict before it goes back to its queue.",
        positive=True,
    ),
    _seconds(
        "ADAPTIVE_MAX_DELAY",
        GROUP_POLITENESS,
        5.0,
        "the longest politeness wait after a fetch (a robots.txt `Crawl-delay` may be longer); never below "
        "`ADAPTIVE_MIN_DELAY`, raised to it when not set.",
    ),
    _integer(
        "ADAPTIVE_MAX_RETRIES",
        GROUP_POLITENESS,
        30,
        "frontier retries of a URL with retriable errors before it is marked failed.",
        at_least=0,
    ),
    _seconds(
        "ADAPTIVE_MIN_DELAY",
        GROUP_POLITENESS,
        2.0,
        "the shortest politeness wait after a fetch. Set from `DOWNLOAD_DELAY` when the project sets that and "
        "not this.",
    ),
    SettingSpec(
        "ADAPTIVE_POLITENESS_KEY",
        GROUP_POLITENESS,
        Kind.CHOICE,
        "host",
        "what one queue is: `host` (like Scrapy's download slots), `domain` (registered domain, public suffix "
        'list bundled, never fetched), or `slot` (`meta["download_slot"]` when the project sets one, else '
        "the host).",
        choices=POLITENESS_KEYS,
    ),
    _seconds(
        "ADAPTIVE_RETRY_DELAY",
        GROUP_POLITENESS,
        900.0,
        "wait before a frontier retry of a URL with a retriable error.",
    ),
    SettingSpec(
        "ADAPTIVE_BUDGET",
        GROUP_WAITS,
        Kind.NUMBER,
        None,
        "revisits per day that budgeted policies (`BurstWaitPolicy`, the default, and `ProportionalWaitPolicy`) "
        "share across the crawl; each host's share is capped by its politeness (valence per "
        "max(`ADAPTIVE_MIN_DELAY`, Crawl-delay)). Unset: no fixed budget, see `ADAPTIVE_TARGET_PRECISION`.",
        above=0.0,
        at_most=MAX_BUDGET,
        optional=True,
        unit="revisits per day",
        requirement="a number of revisits per day > 0",
    ),
    _seconds(
        "ADAPTIVE_BUDGET_WINDOW",
        GROUP_WAITS,
        259_200.0,
        "the window (3 days) over which the realised revisit rate is measured and held to `ADAPTIVE_BUDGET`: "
        "nothing is corrected before one window has passed, and corrections act over about two windows. "
        "Shorten it for crawls of a few hours or on a compressed clock (the budget benchmark uses 10 s). While "
        "the number of URLs known to the policy still doubles within a window (a fresh crawl), the measurement "
        "restarts: the first URLs' short waits were planned for far fewer URLs and are not held against the "
        "budget.",
        positive=True,
        requirement="a finite number of seconds > 0 (the window over which realised revisits are held to "
        "ADAPTIVE_BUDGET)",
    ),
    SettingSpec(
        "ADAPTIVE_TARGET_PRECISION",
        GROUP_WAITS,
        Kind.NUMBER,
        0.5,
        "without `ADAPTIVE_BUDGET`: the probability that a visit finds a change, the same for every URL "
        "(r = −ln(1 − p) expected changes per interval; the share of versions captured is then p / r, 72 % at "
        "0.5, 90 % at 0.2).",
        above=0.0,
        below=1.0,
        requirement="a probability strictly between 0 and 1 (the share of visits that should find a change "
        "when ADAPTIVE_BUDGET is not set)",
    ),
    _factor("ADAPTIVE_WAIT_CHANGED_FACTOR", GROUP_WAITS, 1.5, "a changed page's wait is divided by this."),
    _seconds(
        "ADAPTIVE_WAIT_DEFAULT",
        GROUP_WAITS,
        259_200.0,
        "catch-all wait when it is unknown whether the page changed (3 days).",
        positive=True,
    ),
    _factor(
        "ADAPTIVE_WAIT_DEPTH_FACTOR",
        GROUP_WAITS,
        1.0,
        "initial wait factor per link hop from the seed (`depth` meta): `initial × factor ** depth`.",
    ),
    _seconds(
        "ADAPTIVE_WAIT_INITIAL",
        GROUP_WAITS,
        86_400.0,
        "catch-all wait after a URL's first visit (1 day).",
        positive=True,
    ),
    _seconds(
        "ADAPTIVE_WAIT_MAX",
        GROUP_WAITS,
        2_419_200.0,
        "catch-all upper bound of a wait (28 days); never below `ADAPTIVE_WAIT_MIN`.",
        positive=True,
    ),
    _seconds("ADAPTIVE_WAIT_MIN", GROUP_WAITS, 3_600.0, "catch-all lower bound of a wait (1 hour)."),
    _factor(
        "ADAPTIVE_WAIT_NO_LAST_MODIFIED_FACTOR",
        GROUP_WAITS,
        0.5,
        "initial wait factor for a page sent without Last-Modified (0.5: twice as likely to change).",
    ),
    SettingSpec(
        "ADAPTIVE_WAIT_POLICIES",
        GROUP_WAITS,
        Kind.OBJECT,
        None,
        "the stack of policies matched by content type, host, URL (see Wait evaluation); a list of dicts, or "
        "JSON on the command line.",
        default_doc="`text/*`, `image/*`, then the catch-all",
    ),
    SettingSpec(
        "ADAPTIVE_WAIT_POLICY",
        GROUP_WAITS,
        Kind.CLASS_PATH,
        "scrapy_adaptive.policies.BurstWaitPolicy",
        "the policy class for the catch-all and the stack entries (`...HeritrixWaitPolicy` for the thesis's rule).",
    ),
    _factor("ADAPTIVE_WAIT_UNCHANGED_FACTOR", GROUP_WAITS, 1.5, "an unchanged page's wait is multiplied by this."),
    _bool(
        "ADAPTIVE_WAIT_USE_OVERDUE",
        GROUP_WAITS,
        False,
        "add the time a visit was overdue to the wait before the factor.",
    ),
    _bool(
        "ADAPTIVE_CONDITIONAL_GET",
        GROUP_VALIDATORS,
        True,
        "send the stored ETag / Last-Modified as `If-None-Match` / `If-Modified-Since`.",
    ),
    _bool(
        "ADAPTIVE_MIDFETCH_ABORT",
        GROUP_VALIDATORS,
        True,
        "stop a download after its headers when they predict no change.",
    ),
    SettingSpec(
        "ADAPTIVE_TRUST_MIN_RATE",
        GROUP_VALIDATORS,
        Kind.NUMBER,
        0.005,
        "the lowest share of acted-on predictions that are verified by a full download (1 in 200).",
        above=0.0,
        at_most=1.0,
        requirement="in (0, 1]",
    ),
    _integer(
        "ADAPTIVE_TRUST_WARMUP",
        GROUP_VALIDATORS,
        3,
        'right predictions (on verification fetches) before a host\'s "no change" is acted on.',
        at_least=0,
    ),
    SettingSpec(
        "ADAPTIVE_VALIDATOR_SCHEME",
        GROUP_VALIDATORS,
        Kind.CHOICE,
        "both",
        "how the stored ETag and Last-Modified predict no change (see HTTP validators).",
        choices=VALIDATOR_SCHEMES,
    ),
    SettingSpec(
        "ADAPTIVE_DIGEST_DEFAULT",
        GROUP_CHANGE,
        Kind.OBJECT,
        "exact",
        "the digest rule where no `ADAPTIVE_DIGEST_RULES` entry matches (a name or an entry dict).",
    ),
    _integer(
        "ADAPTIVE_DIGEST_MAX_SIZE",
        GROUP_CHANGE,
        1_048_576,
        "bytes up to which the `regex` rule applies (beyond: `exact`; thesis: 1 MB).",
        at_least=1,
    ),
    SettingSpec(
        "ADAPTIVE_DIGEST_RULES",
        GROUP_CHANGE,
        Kind.OBJECT,
        None,
        "which digest rule applies where (see Change detection); a list of dicts, or JSON.",
    ),
    _bool(
        "ADAPTIVE_REVISIT_EMBEDS_ON_CHANGE",
        GROUP_CHANGE,
        False,
        "a changed page's embedded resources are made due at once.",
    ),
    SettingSpec(
        "ADAPTIVE_UNCHANGED",
        GROUP_CHANGE,
        Kind.CHOICE,
        "skip",
        "`skip`: unchanged pages do not reach the callback; `deliver`: they do, flagged in meta.",
        choices=UNCHANGED_MODES,
    ),
    _bool("ADAPTIVE_CRAWL_LOG", GROUP_RECORD, True, "write `crawl.log` in the state folder."),
    _integer(
        "ADAPTIVE_CRAWL_LOG_BACKUPS",
        GROUP_RECORD,
        5,
        "old crawl logs kept when the log is rotated.",
        at_least=0,
    ),
    _integer(
        "ADAPTIVE_CRAWL_LOG_MAX_BYTES",
        GROUP_RECORD,
        50 * 2**20,
        "rotate the crawl log at this size (50 MiB).",
        at_least=1,
    ),
    _integer("ADAPTIVE_HISTORY_SIZE", GROUP_RECORD, 16, "visits kept in each URL's history.", at_least=1),
    _seconds(
        "ADAPTIVE_LOG_INTERVAL",
        GROUP_RECORD,
        60.0,
        "how often the frontier summary is logged and the `adaptive/frontier/*` stats refreshed.",
        positive=True,
    ),
)

#: the spec of each setting, by name
SPECS_BY_NAME: dict[str, SettingSpec] = {spec.name: spec for spec in SETTING_SPECS}

#: every setting's default, in the table's order (kept as a dict: older code
#: and the pure dataclasses read single defaults from it)
DEFAULTS: dict[str, Any] = {spec.name: spec.default for spec in SETTING_SPECS}


def parse_value(spec: SettingSpec, raw: Any) -> Any:
    """The typed value of *raw* as the user wrote it (``-s`` gives strings).

    Only conversion and type refusals happen here, with the raw value in the
    message; ranges are :func:`check_value`'s, on the typed value.  A bool is
    refused where a number is meant (``True`` would silently be 1).
    """
    if raw is None or (raw == "" and spec.kind in _EMPTY_IS_UNSET):
        return spec.default
    if spec.kind in _NUMERIC:
        return _parse_number(spec, raw)
    if spec.kind is Kind.BOOL:
        return _parse_bool(spec, raw)
    if spec.kind is Kind.CLASS_PATH and isinstance(raw, type):
        return f"{raw.__module__}.{raw.__qualname__}"
    if spec.kind is Kind.PATH and isinstance(raw, os.PathLike):
        raw = os.fspath(raw)
    if spec.kind in (Kind.CHOICE, Kind.CLASS_PATH, Kind.PATH) and not isinstance(raw, str):
        raise ConfigError(f"{spec.name} ({raw!r}) must be {spec.expected()}.")
    return raw


def _parse_number(spec: SettingSpec, raw: Any) -> float | int:
    integer = spec.kind is Kind.INTEGER
    if isinstance(raw, bool):
        raise ConfigError(f"{spec.name} ({raw!r}) must be {spec.expected()}.")
    try:
        value = float(raw)
        if integer:
            if not value.is_integer():
                raise ValueError
            return int(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{spec.name} ({raw!r}) must be {spec.expected()}.") from None
    if math.isnan(value):
        raise ConfigError(f"{spec.name} ({raw!r}) must be a number.")
    return value


def _parse_bool(spec: SettingSpec, raw: Any) -> bool:
    """Scrapy's ``getbool`` spellings: ``True``/``False``, 1/0, and their strings."""
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, int) and raw in (0, 1):
        return bool(raw)
    if isinstance(raw, str) and raw.strip().lower() in ("true", "1", "false", "0"):
        return raw.strip().lower() in ("true", "1")
    raise ConfigError(f"{spec.name} ({raw!r}) must be {spec.expected()}.")


def check_value(spec: SettingSpec, value: Any) -> None:
    """Refuse a typed *value* outside what *spec* allows, naming the setting."""
    problem = _problem(spec, value)
    if problem is not None:
        raise ConfigError(f"{spec.name} ({value!r}) must be {problem}.")


def _problem(spec: SettingSpec, value: Any) -> str | None:
    """What *value* must be instead, or None when it is allowed."""
    if value is None:
        return None if spec.optional or spec.kind is Kind.OBJECT else spec.expected()
    if spec.kind in _NUMERIC:
        if isinstance(value, bool) or not isinstance(value, int | float):
            return spec.expected()
        if spec.kind is Kind.INTEGER and not isinstance(value, int):
            return spec.expected()
        if not _within_range(spec, value):
            return spec.range_requirement()
        if spec.at_most is not None and value > spec.at_most:
            return f"at most {spec.limit_text()}"
        return None
    if spec.kind is Kind.BOOL:
        return None if isinstance(value, bool) else spec.expected()
    if spec.kind is Kind.CHOICE:
        return None if value in spec.choices else spec.expected()
    if spec.kind in (Kind.CLASS_PATH, Kind.PATH):
        return None if isinstance(value, str) else spec.expected()
    return None


def _within_range(spec: SettingSpec, value: float) -> bool:
    """Finite, and inside the bounds other than the sanity limit."""
    return (
        math.isfinite(value)
        and (spec.at_least is None or value >= spec.at_least)
        and (spec.above is None or value > spec.above)
        and (spec.below is None or value < spec.below)
    )


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
    state_sync: bool
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
    budget_window: float
    target_precision: float
    wait_changed_factor: float
    wait_default: float
    wait_depth_factor: float
    wait_initial: float
    wait_max: float
    wait_min: float
    wait_no_last_modified_factor: float
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
        * ``ADAPTIVE_MAX_DELAY``, when not set, is raised to the minimum
          delay, so a long ``DOWNLOAD_DELAY`` alone is never refused.
        """
        values = {spec.attribute: parse_value(spec, settings.get(spec.name)) for spec in SETTING_SPECS}
        if not _explicit(settings, "ADAPTIVE_MIN_DELAY") and _set_by_project(settings, "DOWNLOAD_DELAY"):
            values["min_delay"] = settings.getfloat("DOWNLOAD_DELAY")
        # checked before it can raise the maximum, so the message names it
        check_value(SPECS_BY_NAME["ADAPTIVE_MIN_DELAY"], values["min_delay"])
        if not _explicit(settings, "ADAPTIVE_MAX_DELAY"):
            values["max_delay"] = max(values["max_delay"], values["min_delay"])
        if not _explicit(settings, "ADAPTIVE_HOST_VALENCE") and _set_by_project(
            settings, "CONCURRENT_REQUESTS_PER_DOMAIN"
        ):
            values["host_valence"] = settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN")
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
        if self.wait_max < self.wait_min:
            raise ConfigError(
                f"ADAPTIVE_WAIT_MAX ({self.wait_max!r}) must not be lower than ADAPTIVE_WAIT_MIN ({self.wait_min!r})."
            )


def unknown_settings(settings: Iterable[str]) -> list[str]:
    """Warnings for ``ADAPTIVE_*`` names in *settings* that no spec has.

    A misspelt name (``ADAPTIVE_MIN_DELAYY``) is otherwise silently ignored
    and the crawl runs with the default; the warning names the closest valid
    setting.  *settings* is anything that iterates over setting names (a
    Scrapy ``BaseSettings``, a dict).  Names under ``SCRAPY_ADAPTIVE_`` are
    the package's internal markers (the add-on's) and are never reported.
    """
    warnings = []
    for name in sorted(n for n in settings if isinstance(n, str)):
        if not name.upper().startswith("ADAPTIVE_") or name in SPECS_BY_NAME:
            continue
        # compared without the prefix they all share, which would make any
        # ADAPTIVE_ name look close to some setting
        suffixes = [known.removeprefix("ADAPTIVE_") for known in SPECS_BY_NAME]
        matches = difflib.get_close_matches(name.upper().removeprefix("ADAPTIVE_"), suffixes, n=1)
        hint = f"; did you mean ADAPTIVE_{matches[0]}?" if matches else "."
        warnings.append(f"{name} is not a scrapy-adaptive setting and is ignored{hint}")
    return warnings


def _default_cell(spec: SettingSpec) -> str:
    if spec.default_doc is not None:
        return spec.default_doc
    if isinstance(spec.default, str):
        return f'`"{spec.default}"`'
    return f"`{spec.default!r}`"


def _allowed_cell(spec: SettingSpec) -> str:
    if spec.choices:
        return ", ".join(f"`{choice}`" for choice in spec.choices)
    parts = []
    for sign, bound in (("≥", spec.at_least), (">", spec.above), ("<", spec.below), ("≤", spec.at_most)):
        if bound is not None:
            text = _duration_text(bound) if spec.kind is Kind.SECONDS and sign == "≤" else _number_text(bound)
            parts.append(f"{sign} {text}")
    return ", ".join(parts)


def settings_table_markdown() -> str:
    """The README's settings reference, one table per group, from the specs.

    Returned with its marker lines, so it replaces the README's block whole.
    """
    lines = [TABLE_START, "<!-- generated from scrapy_adaptive/settings.py by scripts/settings_table.py -->"]
    groups = dict.fromkeys(spec.group for spec in SETTING_SPECS)
    for group in groups:
        lines += ["", f"**{group}**", ""]
        lines += ["| setting | type | default | allowed | meaning |", "|---|---|---|---|---|"]
        for spec in SETTING_SPECS:
            if spec.group == group:
                cells = (f"`{spec.name}`", spec.kind.value, _default_cell(spec), _allowed_cell(spec), spec.doc)
                lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    lines += ["", TABLE_END]
    return "\n".join(lines)


def replace_settings_table(text: str) -> str:
    """*text* (the README) with its marked block replaced by the generated one."""
    start, end = text.find(TABLE_START), text.find(TABLE_END)
    if start < 0 or end < start:
        raise ValueError(f"the text has no {TABLE_START} ... {TABLE_END} block")
    return text[:start] + settings_table_markdown() + text[end + len(TABLE_END) :]
