"""``ADAPTIVE_NOTIFY``: which change events are announced where, parsed once.

One setting says it all, so a project that only wants its Slack channel
told writes one string, and a team that wants price changes of product
pages in one channel and every ``gone`` in another writes two entries::

    ADAPTIVE_NOTIFY = "slack://T0/B0/XYZ"
    ADAPTIVE_NOTIFY = [
        {"to": "json://127.0.0.1:8000/hook", "url": r"/product/", "kinds": ["changed"], "fields": ["price"]},
        {"to": "mailto://user:pass@example.com", "kinds": ["gone"], "batch": "1h"},
    ]

``to`` is an Apprise URL (the ``notify`` extra sends with Apprise);
``url`` and ``hosts`` match the event's URL as in every other list setting
(:class:`~.matching.Matcher`: ``url`` is a regular expression, as in the
digest rules, which is why the Apprise URL is not called ``url``);
``kinds`` keeps those kinds only; ``fields`` keeps, of the ``changed``
events, those whose items changed in one of these fields (items mode),
and says only those fields; ``batch`` is how long the first event waits
for others to go in the same message.

Pure: the Apprise URL is checked by the runtime, which imports Apprise.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from .matching import Matcher
from .spec import ConfigError, duration_seconds

#: the setting
NOTIFY = "ADAPTIVE_NOTIFY"
#: seconds the first event of a message waits for others, unless ``batch`` says
DEFAULT_BATCH = 60.0
#: the longest batch window allowed (a day: a daily digest)
MAX_BATCH = 86_400.0
#: the keys an entry may have
KEYS = ("to", "url", "hosts", "kinds", "fields", "batch")
#: the event kinds (:data:`..change.events.KINDS`, repeated: config sits below change)
EVENT_KINDS = ("new", "changed", "gone", "back", "moved")


def masked(to: str) -> str:
    """An Apprise URL as an error may show it: its scheme and host only
    (the rest may hold a token or a password)."""
    parts = urlsplit(to)
    host = parts.hostname or ""
    return f"{parts.scheme}://{host}/…" if parts.scheme else "…"


@dataclass(frozen=True)
class NotifyChannel:
    """One entry of ``ADAPTIVE_NOTIFY``: where to, and which events."""

    to: str
    #: how errors name the entry: ``ADAPTIVE_NOTIFY[1]``
    where: str = NOTIFY
    matcher: Matcher = field(default_factory=Matcher)
    kinds: frozenset[str] = frozenset(EVENT_KINDS)
    fields: tuple[str, ...] = ()
    batch: float = DEFAULT_BATCH

    def wants(self, event: Mapping[str, Any]) -> bool:
        """Whether *event* (the feed's fields) goes to this channel."""
        if event.get("kind") not in self.kinds:
            return False
        url = event.get("url") or ""
        if not self.matcher.matches(url, urlsplit(url).hostname or "", None):
            return False
        if self.fields and event.get("kind") == "changed":
            return bool(self.changed_fields(event))
        return True

    def changed_fields(self, event: Mapping[str, Any]) -> set[str]:
        """The fields of this channel's ``fields`` that *event*'s items changed in."""
        diff = event.get("fields")
        changed = diff.get("changed") if isinstance(diff, Mapping) else None
        names: set[str] = set()
        for entry in changed if isinstance(changed, list) else []:
            if isinstance(entry, Mapping) and isinstance(entry.get("fields"), list):
                names.update(name for name in entry["fields"] if name in self.fields)
        return names


def _strings(value: Any, where: str, key: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list | tuple) or not value or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(f"{where}: {key!r} must be a non-empty list of strings, not {value!r}.")
    return tuple(value)


def _batch(value: Any, where: str) -> float:
    seconds = duration_seconds(value) if isinstance(value, str) else value
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not 0 <= seconds <= MAX_BATCH:
        raise ConfigError(
            f"{where}: 'batch' ({value!r}) must be a number of seconds (or 90s, 15m, 1h) from 0 to {MAX_BATCH:.0f}."
        )
    return float(seconds)


def _channel(entry: Any, where: str) -> NotifyChannel:
    if isinstance(entry, str):
        entry = {"to": entry}
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where} must be an Apprise URL (a string) or a dict with 'to', not {entry!r}.")
    unknown = sorted(set(entry) - set(KEYS))
    if unknown:
        raise ConfigError(f"{where} has unknown keys {unknown} (known: {', '.join(KEYS)}).")
    to = entry.get("to")
    if not isinstance(to, str) or "://" not in to:
        shown = masked(to) if isinstance(to, str) else repr(to)
        raise ConfigError(f"{where}: 'to' ({shown}) must be an Apprise URL such as 'json://host/path' or 'slack://…'.")
    kinds = _strings(entry["kinds"], where, "kinds") if "kinds" in entry else EVENT_KINDS
    wrong = [k for k in kinds if k not in EVENT_KINDS]
    if wrong:
        raise ConfigError(f"{where}: 'kinds' names {wrong}, which are not event kinds ({', '.join(EVENT_KINDS)}).")
    return NotifyChannel(
        to=to.strip(),
        where=where,
        matcher=Matcher.parse({k: entry[k] for k in ("url", "hosts") if k in entry}, where, required=False),
        kinds=frozenset(kinds),
        fields=_strings(entry["fields"], where, "fields") if "fields" in entry else (),
        batch=_batch(entry["batch"], where) if "batch" in entry else DEFAULT_BATCH,
    )


def notify_channels(value: Any) -> tuple[NotifyChannel, ...]:
    """The channels of an ``ADAPTIVE_NOTIFY`` value: unset or empty, none;
    a string, Apprise URLs separated by spaces (or JSON, as ``-s`` gives a
    list); a dict, one entry; a list of strings and dicts.  A
    :class:`ConfigError` names the setting and the entry."""
    if isinstance(value, str):
        text = value.strip()
        if text.startswith(("[", "{")):
            try:
                value = json.loads(text)
            except ValueError as exc:
                raise ConfigError(f"{NOTIFY} is not valid JSON: {exc}.") from None
        else:
            value = text.split()
    if value is None:
        return ()
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list | tuple):
        raise ConfigError(f"{NOTIFY} must be an Apprise URL, a list of them, or a list of dicts, not {value!r}.")
    channels = [_channel(entry, f"{NOTIFY}[{n}]") for n, entry in enumerate(value)]
    seen: dict[str, str] = {}
    for channel in channels:
        if channel.to in seen:
            raise ConfigError(
                f"{channel.where} sends to the same Apprise URL as {seen[channel.to]} ({masked(channel.to)}): "
                "one entry per URL (each keeps its own queue of notifications in the state folder)."
            )
        seen[channel.to] = channel.where
    return tuple(channels)
