"""The machinery of the ``ADAPTIVE_*`` settings: what a setting spec is.

:class:`SettingSpec` describes one setting (name, kind, default, allowed
range, one-line doc); :func:`parse_value` turns what the user wrote into a
typed value and :func:`check_value` refuses a typed value outside the spec,
both with :class:`ConfigError` messages naming the setting.  The table of
every setting is :data:`~scrapy_adaptive.config.table.SETTING_SPECS`; the
typed config built from it is :class:`~scrapy_adaptive.config.settings.AdaptiveConfig`.

This module imports nothing from Scrapy or from the rest of the package.
"""

from __future__ import annotations

import json
import math
import os
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class ConfigError(ValueError):
    """A setting has a value the crawler cannot run with."""


def clause(message: object) -> str:
    """An error's message as a clause a log line goes on from ("...; the
    request is kept."): its closing full stop dropped, since the messages
    are whole sentences."""
    return str(message).rstrip(".")


class Kind(StrEnum):
    """What a setting's value is; decides how it is parsed and checked."""

    SECONDS = "seconds"  #: a float number of seconds
    NUMBER = "number"  #: a float (a factor, a probability, a rate)
    INTEGER = "integer"
    BOOL = "bool"
    CHOICE = "choice"  #: one of :attr:`SettingSpec.choices`
    CLASS_PATH = "class path"  #: a dotted path, or the class itself
    PATH = "path"  #: a folder (a string or ``os.PathLike``), or unset
    TEXT = "text"  #: a string (an address, a name, a file prefix), or unset
    OBJECT = "object"  #: a structure checked where it is used (lists of rule dicts)
    URLS = "urls"  #: http(s) URLs: a list, or one string separated by spaces


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
    Kind.TEXT: "str",
    Kind.OBJECT: "Any",
    Kind.URLS: "tuple[str, ...]",
}

#: what a value of each kind must be, in refusals ("... must be a number.")
_EXPECTED = {
    Kind.SECONDS: "a number of seconds (or 90s, 15m, 1h, 2d)",
    Kind.NUMBER: "a number",
    Kind.INTEGER: "an integer",
    Kind.BOOL: "true or false",
    Kind.CHOICE: "one of the choices",
    Kind.CLASS_PATH: "a dotted class path (a string) or a class",
    Kind.PATH: "a folder path (a string)",
    Kind.TEXT: "a string",
    Kind.OBJECT: "a value",
    Kind.URLS: "http(s) URLs (a list, or a string separated by spaces)",
}
_NUMERIC = (Kind.SECONDS, Kind.NUMBER, Kind.INTEGER)
#: kinds where an empty string (``-s NAME=``) means "not set"
_EMPTY_IS_UNSET = (Kind.CHOICE, Kind.CLASS_PATH, Kind.PATH, Kind.TEXT, Kind.OBJECT, Kind.URLS)


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
    #: the tables' default cell when the value alone would mislead
    default_doc: str | None = None
    #: a setting a user sets (the add-on's state, politeness, waits and
    #: budget, digests, the validators' switches, feeds, WARC, Redis): listed
    #: in the README's table, which a test holds to at most 25; the others are
    #: expert knobs, listed with these in docs/settings.md only
    user: bool = False

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
            return "0 or more" if self.at_least == 0 else f"at least {number_text(self.at_least or 0)}"
        parts = []
        if self.above is not None:
            parts.append(f"> {number_text(self.above)}")
        if self.at_least is not None:
            parts.append(f">= {number_text(self.at_least)}")
        if self.below is not None:
            parts.append(f"< {number_text(self.below)}")
        return " ".join(["a finite number", " and ".join(parts)]).strip()

    def limit_text(self) -> str:
        """``at_most`` in words: durations in years or days."""
        assert self.at_most is not None
        if self.kind is Kind.SECONDS:
            return f"{number_text(self.at_most)} seconds ({duration_text(self.at_most)})"
        return number_text(self.at_most)


def number_text(value: float) -> str:
    """``0`` for 0.0, ``1000000000`` for 1e9: a bound as people write it."""
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e16 else repr(value)


def plural(n: float, word: str, many: str | None = None) -> str:
    """*word* as it goes after the number *n*: ``1 host``, ``2 hosts``
    (*many*: the plural when it is not *word* + s, ``entries``)."""
    return word if n == 1 else many or f"{word}s"


def counted(n: float, word: str, many: str | None = None) -> str:
    """*n* and its noun: ``1 request``, ``3 requests``, ``0 URLs``.

    Messages say counts with it rather than a fixed plural after ``%d``
    ("holds 1 requests"); a test holds the package to that.
    """
    return f"{n} {plural(n, word, many)}"


def duration_text(seconds: float) -> str:
    """``10 years`` or ``3 days`` when exact, else the seconds."""
    for unit, length in (("years", 365 * 86_400), ("days", 86_400), ("hours", 3_600)):
        if seconds >= length and seconds % length == 0:
            return f"{number_text(seconds / length)} {unit}"
    return f"{number_text(seconds)} seconds"


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
    if spec.kind is Kind.URLS:
        return _parse_urls(spec, raw)
    if spec.kind is Kind.CLASS_PATH and isinstance(raw, type):
        return f"{raw.__module__}.{raw.__qualname__}"
    if spec.kind is Kind.PATH and isinstance(raw, os.PathLike):
        raw = os.fspath(raw)
    if spec.kind in (Kind.CHOICE, Kind.CLASS_PATH, Kind.PATH, Kind.TEXT) and not isinstance(raw, str):
        raise ConfigError(f"{spec.name} ({raw!r}) must be {spec.expected()}.")
    return raw


_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhd])\s*$")
_UNITS = {"s": 1.0, "m": 60.0, "h": 3600.0, "d": 86_400.0}


def duration_seconds(text: str) -> float | None:
    """``90s``, ``15m``, ``1h``, ``2d`` in seconds; None for anything else
    (a bare number is read as seconds by whoever reads numbers)."""
    found = _DURATION.match(text)
    return float(found.group(1)) * _UNITS[found.group(2)] if found else None


def read_seconds(raw: Any, name: str, *, positive: bool = False) -> float:
    """A duration that is not a setting of its own (a schedule's ``every``, a
    console option) read as every duration setting is: a number, its
    string, or ``90s``, ``15m``, ``1h``, ``2d``; finite, >= 0 (> 0 if
    *positive*), at most :data:`MAX_SECONDS`.  One :class:`ConfigError`
    naming *name* and the value as written, so "30s" means the same
    wherever a user writes it."""
    spec = seconds_spec(name, "", None, "", positive=positive)
    value = parse_value(spec, raw)
    problem = requirement(spec, value)
    if problem is not None:
        raise ConfigError(f"{name} ({raw!r}) must be {problem}.")
    return float(value)


def _parse_number(spec: SettingSpec, raw: Any) -> float | int:
    integer = spec.kind is Kind.INTEGER
    if isinstance(raw, bool):
        raise ConfigError(f"{spec.name} ({raw!r}) must be {spec.expected()}.")
    if spec.kind is Kind.SECONDS and isinstance(raw, str) and (seconds := duration_seconds(raw)) is not None:
        return seconds
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


def _parse_urls(spec: SettingSpec, raw: Any) -> tuple[str, ...]:
    """``"a b"``, ``["a", "b"]`` (or its JSON, as ``-s`` gives a list) ->
    ``("a", "b")``; not split at commas: URLs hold them."""
    if isinstance(raw, str) and raw.lstrip().startswith("["):
        try:
            raw = json.loads(raw)
        except ValueError:
            raise ConfigError(f"{spec.name} ({raw!r}) must be {spec.expected()}.") from None
    if isinstance(raw, str):
        return tuple(raw.split())
    if isinstance(raw, list | tuple) and all(isinstance(url, str) for url in raw):
        return tuple(url.strip() for url in raw if url.strip())
    raise ConfigError(f"{spec.name} ({raw!r}) must be {spec.expected()}.")


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
    problem = requirement(spec, value)
    if problem is not None:
        raise ConfigError(f"{spec.name} ({value!r}) must be {problem}.")


def requirement(spec: SettingSpec, value: Any) -> str | None:
    """What a typed *value* must be instead to pass *spec*, or None when it is
    allowed (also for values given under another name, held to the setting's
    bounds: a policy entry's ``min``, a request's override)."""
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
            if spec.kind is Kind.INTEGER:  # the whole range: there is no unit to say what is sane
                return f"an integer from {number_text(spec.at_least or 0)} to {spec.limit_text()}"
            return f"at most {spec.limit_text()}"
        return None
    if spec.kind is Kind.BOOL:
        return None if isinstance(value, bool) else spec.expected()
    if spec.kind is Kind.CHOICE:
        return None if value in spec.choices else spec.expected()
    if spec.kind in (Kind.CLASS_PATH, Kind.PATH, Kind.TEXT):
        return None if isinstance(value, str) else spec.expected()
    if spec.kind is Kind.URLS:
        ok = isinstance(value, tuple) and all(
            isinstance(url, str) and url.startswith(("http://", "https://")) for url in value
        )
        return None if ok else spec.expected()
    return None


def _within_range(spec: SettingSpec, value: float) -> bool:
    """Finite, and inside the bounds other than the sanity limit."""
    return (
        math.isfinite(value)
        and (spec.at_least is None or value >= spec.at_least)
        and (spec.above is None or value > spec.above)
        and (spec.below is None or value < spec.below)
    )


# -- the limits, choices and groups the table refers to, and its entry builders --

UNCHANGED_MODES = ("skip", "deliver")
#: what a fetch budget is spent for (ADAPTIVE_OBJECTIVE, policies/objective.py)
OBJECTIVES = ("versions", "freshness")
#: how ETag / Last-Modified predict "no change" (``change/prediction.py``
#: re-exports this as ``SCHEMES``)
VALIDATOR_SCHEMES = ("etag", "timestamp", "both", "either")
POLITENESS_KEYS = ("host", "domain", "slot")

#: The upper limit of every duration setting.  Nothing this crawler does
#: needs a longer delay or wait; a larger value is a typo or a unit mistake
#: (milliseconds for seconds), and left alone it would overflow the
#: frontier's millisecond timestamps or park every URL for ever.
MAX_SECONDS = 10 * 365 * 86_400.0
#: sanity limit of a size in bytes (1 TiB): 1e20 is a typo, and a file never
#: rotated fills the disk
MAX_BYTES = 2**40
#: The upper limit of ``ADAPTIVE_HISTORY_SIZE``.  Each kept visit is about
#: 33 bytes of the URL's record, which is read and rewritten whole at every
#: visit and copied into the request's meta (``adaptive_record``): a
#: thousand visits (years of daily revisits) make a 33 KB record, already
#: more to rewrite than many pages weigh; 1e11 would make the first record
#: that reaches it exhaust the memory.  Every visit is also a line of the
#: crawl log (``ADAPTIVE_CRAWL_LOG``), the place for a longer history.
MAX_HISTORY = 1000
#: sanity limit of ``ADAPTIVE_EMBED_HOPS``
MAX_EMBED_HOPS = 10
#: The upper limit of every multiplying factor: a factor of 1000 already
#: turns a one-second fetch into a 17-minute politeness delay, or a one-hour
#: wait into six weeks after one step.
MAX_FACTOR = 1_000.0
#: The upper limit of ``ADAPTIVE_BUDGET``: a billion revisits a day is over
#: 11,000 fetches a second, far beyond one Scrapy process.
MAX_BUDGET = 1e9

#: where the table's groups start; their order is docs/settings.md's order
GROUP_STATE = "Where the state lives"
GROUP_POLITENESS = "Politeness, enforced once, by the frontier"
GROUP_WAITS = "Revisit waits (the catch-all policy; ADAPTIVE_WAIT_POLICIES stacks more)"
GROUP_VALIDATORS = "HTTP validators"
GROUP_CHANGE = "Change detection"
GROUP_SIGNALS = "The sites' own signals: sitemaps, feeds, robots.txt"
GROUP_RECORD = "Record and observability"
GROUP_ARCHIVE = "Archive (WARC, the `warc` extra)"


def seconds_spec(
    name: str, group: str, default: float | None, doc: str, *, positive: bool = False, **more: Any
) -> SettingSpec:
    """A duration: finite, never negative (or > 0), at most :data:`MAX_SECONDS`."""
    bounds: dict[str, Any] = {"above": 0.0} if positive else {"at_least": 0.0}
    return SettingSpec(name, group, Kind.SECONDS, default, doc, at_most=MAX_SECONDS, **bounds, **more)


def factor_spec(name: str, group: str, default: float, doc: str, *, positive: bool = True, **more: Any) -> SettingSpec:
    """A multiplier: finite, > 0 (or >= 0), at most :data:`MAX_FACTOR`."""
    bounds: dict[str, Any] = {"above": 0.0} if positive else {"at_least": 0.0}
    return SettingSpec(name, group, Kind.NUMBER, default, doc, at_most=MAX_FACTOR, **bounds, **more)


def integer_spec(
    name: str, group: str, default: int, doc: str, *, at_least: int, at_most: int | None = None, **more: Any
) -> SettingSpec:
    return SettingSpec(name, group, Kind.INTEGER, default, doc, at_least=at_least, at_most=at_most, **more)


def bool_spec(name: str, group: str, default: bool, doc: str, **more: Any) -> SettingSpec:
    return SettingSpec(name, group, Kind.BOOL, default, doc, **more)


#: Thesis defaults (Sigurðsson 2005, ch. 6.2) for politeness, and the code
#: defaults of Heritrix's WaitEvaluator for revisit waits.  Grouped like
#: Scrapy's ``default_settings.py``: the enabling flag first in its group,
#: then alphabetical.
