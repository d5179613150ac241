"""Curated schedules: a time window inside which a URL's wait is bounded.

An ``ADAPTIVE_WAIT_POLICIES`` entry that carries ``"from"``, ``"until"``
(ISO 8601 dates or datetimes, either open) or ``"every"`` (a duration:
seconds, or ``90s``, ``15m``, ``1h``, ``2d``, as every duration) is a
*schedule*, not a policy: "revisit these pages at least hourly during the
election, then let the policy decide again".  It is an overlay.  The URL's
wait is still decided by the policy that would apply without it, so the
policy keeps learning from every visit (its memory, the record's
``policy``, is updated as usual); only then, while the window is open, is
the wait bounded: at most ``every``, within [``min``, ``max``].  Outside the
window a schedule does nothing, and when it closes nothing has to be
handed back: the memory was always the policy's.

A visit planned before a window opens is planned to land at most ``every``
after its start, so URLs visited shortly before the window need no help;
URLs planned long before (or before the schedule existed) are brought
forward by the crawl when it sees the window open (the frontier's
``bring_forward``).

Pure: no Scrapy, no Twisted; the wait policy stack applies it.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..config.matching import MATCH_KEYS, Matcher
from ..config.spec import ConfigError, read_seconds
from ..dates import parse_time
from ..frontier.hints import Hint
from ..model import Plan, Visit
from .base import WaitPolicy
from .history import url_host

logger = logging.getLogger(__name__)

#: the keys that make an ``ADAPTIVE_WAIT_POLICIES`` entry a schedule
WINDOW_KEYS = ("from", "until", "every")
#: every key a schedule entry may carry besides its match keys
SCHEDULE_KEYS = (*WINDOW_KEYS, "min", "max", "name")

PENDING, OPEN, CLOSED = "pending", "open", "closed"


def is_schedule(entry: Mapping[str, Any]) -> bool:
    """True if *entry* of ``ADAPTIVE_WAIT_POLICIES`` is a schedule."""
    return any(key in entry for key in WINDOW_KEYS)


def _moment(value: Any, where: str, key: str) -> float | None:
    if value is None:
        return None
    try:
        moment = parse_time(value)
    except ValueError as exc:
        raise ConfigError(f"{where}: {key!r} ({value!r}) is not an ISO 8601 date or datetime: {exc}.") from None
    return moment


def _seconds(value: Any, where: str, key: str, *, positive: bool) -> float | None:
    return None if value is None else read_seconds(value, f"{where}: {key!r}", positive=positive)


@dataclass(frozen=True)
class Schedule:
    """One window and the bounds that win inside it."""

    name: str
    matcher: Matcher
    start: float | None = None
    end: float | None = None
    every: float | None = None
    minimum: float | None = None
    maximum: float | None = None
    #: the entry as written (for the report and the console's list)
    entry: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @classmethod
    def parse(cls, entry: Mapping[str, Any], where: str, name: str = "") -> Schedule:
        """Build from a settings or console entry; one :class:`ConfigError`
        naming *where* for anything wrong, so a typo stops the crawl at
        start-up instead of silently never applying."""
        unknown = set(entry) - set(SCHEDULE_KEYS) - set(MATCH_KEYS)
        if unknown:
            raise ConfigError(
                f"{where} is a schedule (it has {', '.join(k for k in WINDOW_KEYS if k in entry)}): unknown key(s) "
                f"{', '.join(sorted(unknown))}; a schedule takes {', '.join(SCHEDULE_KEYS)} and match keys only."
            )
        matcher = Matcher.parse(dict(entry), where)
        start = _moment(entry.get("from"), where, "from")
        end = _moment(entry.get("until"), where, "until")
        if start is not None and end is not None and end <= start:
            raise ConfigError(f"{where}: 'until' ({entry['until']!r}) must be later than 'from' ({entry['from']!r}).")
        every = _seconds(entry.get("every"), where, "every", positive=True)
        minimum = _seconds(entry.get("min"), where, "min", positive=False)
        maximum = _seconds(entry.get("max"), where, "max", positive=True)
        if every is None and minimum is None and maximum is None:
            raise ConfigError(f"{where}: a schedule must bound the wait with 'every', 'min' or 'max'.")
        if minimum is not None and maximum is not None and maximum < minimum:
            raise ConfigError(f"{where}: 'max' ({maximum:g}) must not be lower than 'min' ({minimum:g}).")
        if minimum is not None and every is not None and every < minimum:
            raise ConfigError(f"{where}: 'every' ({every:g}) must not be lower than 'min' ({minimum:g}).")
        label = entry.get("name") or name or where
        if not isinstance(label, str):
            raise ConfigError(f"{where}: 'name' ({label!r}) must be a string.")
        return cls(label, matcher, start, end, every, minimum, maximum, dict(entry))

    @property
    def ceiling(self) -> float | None:
        """The longest wait allowed inside the window (None: no ceiling)."""
        bounds = [b for b in (self.every, self.maximum) if b is not None]
        return min(bounds) if bounds else None

    def state(self, now: float) -> str:
        """``pending`` before the window, ``open`` inside it, ``closed`` after."""
        if self.start is not None and now < self.start:
            return PENDING
        if self.end is not None and now >= self.end:
            return CLOSED
        return OPEN

    def matches(self, url: str, host: str, content_type: str | None) -> bool:
        return self.matcher.matches(url, host, content_type)

    def bound(self, wait: float, at: float) -> float:
        """The wait of a visit at *at* once the window has its say.

        Inside the window: within [min, min(every, max)].  Before it, with a
        ceiling: the visit lands at most a ceiling after the window opens
        (the policy's wait if sooner).  After it: the policy's wait as is.
        """
        state = self.state(at)
        ceiling = self.ceiling
        if state == OPEN:
            if ceiling is not None:
                wait = min(wait, ceiling)
            if self.minimum is not None:
                wait = max(wait, self.minimum)
            return wait
        if state == PENDING and ceiling is not None and self.start is not None:
            return min(wait, self.start - at + ceiling)
        return wait

    def describe(self, now: float, matched: int | None = None, forced: int = 0) -> dict[str, Any]:
        """The schedule in JSON-safe words, for the report and the console."""
        out: dict[str, Any] = {
            "name": self.name,
            "match": {k: self.entry[k] for k in MATCH_KEYS if k in self.entry},
            "from": self.entry.get("from"),
            "until": self.entry.get("until"),
            "every": self.every,
            "min": self.minimum,
            "max": self.maximum,
            "state": self.state(now),
            "forced": forced,
        }
        if matched is not None:
            out["matched"] = matched
        return out


class Schedules:
    """The schedules of a crawl, tried in order: the first open one that
    matches a URL bounds its wait.

    Counts the visits whose wait a schedule shortened (``forced``): the
    revisits it took from the rest of the crawl's budget.
    """

    def __init__(self, schedules: Iterable[Schedule] = ()) -> None:
        self.items: list[Schedule] = list(schedules)
        #: schedule name -> visits whose wait it shortened
        self.forced: dict[str, int] = {}

    def __bool__(self) -> bool:
        return bool(self.items)

    def __iter__(self) -> Any:
        return iter(self.items)

    def add(self, schedule: Schedule) -> None:
        """Add, or replace the schedule of the same name."""
        self.items = [s for s in self.items if s.name != schedule.name] + [schedule]

    def remove(self, name: str) -> bool:
        before = len(self.items)
        self.items = [s for s in self.items if s.name != name]
        return len(self.items) < before

    def get(self, name: str) -> Schedule | None:
        return next((s for s in self.items if s.name == name), None)

    def find(self, url: str, host: str, content_type: str | None, at: float) -> Schedule | None:
        """The schedule that has its say on a visit at *at* (open, or pending
        with a ceiling), or None."""
        for schedule in self.items:
            state = schedule.state(at)
            if state == CLOSED or (state == PENDING and schedule.ceiling is None):
                continue
            if schedule.matches(url, host, content_type):
                return schedule
        return None

    def apply(self, url: str, host: str, content_type: str | None, wait: float, at: float) -> float:
        """*wait* (the policy's) bounded by the schedule that applies at *at*."""
        schedule = self.find(url, host, content_type, at)
        if schedule is None:
            return wait
        bounded = schedule.bound(wait, at)
        if bounded < wait:
            self.forced[schedule.name] = self.forced.get(schedule.name, 0) + 1
        return bounded

    def bound_visit(self, wait: float, visit: Visit) -> float:
        """:meth:`apply` to the wait decided for *visit* (at its fetch time;
        a visit without one, which no crawl makes, is left as decided)."""
        if not self.items or visit.fetched is None:
            return wait
        url = visit.url or ""
        return self.apply(url, url_host(url), visit.content_type, wait, visit.fetched)

    def bound_plan(self, plan: Plan, visit: Visit) -> Plan:
        """*plan* with its wait bounded as :meth:`bound_visit` bounds it: the
        policy's memory and notes stand, only the schedule's ceiling is laid
        over the wait."""
        if not self.items:  # no schedule (most crawls): nothing to lay over
            return plan
        wait = self.bound_visit(plan.wait, visit)
        return plan if wait == plan.wait else replace(plan, wait=wait)

    def restore_forced(self, counts: Mapping[str, Any]) -> None:
        """Counts saved by an earlier run, added to this run's."""
        for name, count in counts.items():
            if isinstance(name, str) and isinstance(count, int) and count >= 0:
                self.forced[name] = self.forced.get(name, 0) + count


def schedules_of(entries: Iterable[Mapping[str, Any]], setting: str) -> Schedules:
    """The schedules among a setting's entries (the others are policies),
    each named by its ``name`` or its place (``ADAPTIVE_WAIT_POLICIES[2]``)."""
    schedules = Schedules()
    for i, entry in enumerate(entries):
        if not is_schedule(entry):
            continue
        where = f"{setting}[{i}]"
        schedule = Schedule.parse(entry, where, name=where)
        if schedules.get(schedule.name) is not None:
            raise ConfigError(f"{where}: another schedule is already named {schedule.name!r}.")
        if schedule.state(time.time()) == CLOSED:
            logger.warning(
                "%s: its window closed at %s, so it bounds no wait; remove it or move its 'until'.",
                where,
                schedule.entry.get("until"),
            )
        schedules.add(schedule)
    return schedules


class Scheduled(WaitPolicy):
    """A policy with the crawl's schedules laid over it: the policy a
    request's own ``meta["adaptive_wait_policy"]`` builds decides, and a
    curator's open window still bounds it, as it bounds the stack's."""

    def __init__(self, policy: WaitPolicy, schedules: Schedules) -> None:
        self.policy = policy
        self.schedules = schedules

    def plan(self, history: Mapping[str, Any], visit: Visit) -> Plan:
        return self.schedules.bound_plan(self.policy.plan(history, visit), visit)

    def hint_wait(self, history: Mapping[str, Any], hint: Hint) -> float | None:
        return self.policy.hint_wait(history, hint)

    def recheck_wait(self, history: Mapping[str, Any]) -> float | None:
        return self.policy.recheck_wait(history)

    def header_doubtful(self, history: Mapping[str, Any]) -> bool:
        return self.policy.header_doubtful(history)


_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")


def check_name(name: str, where: str) -> str:
    """A schedule name the console can type back (``--remove NAME``)."""
    if not _NAME.match(name):
        raise ConfigError(f"{where}: schedule name {name!r} must be 1-64 letters, digits, '.', '_' or '-'.")
    return name
