"""``scrapy frontier changes``: a crawl's change events, newest first.

Read from the state folder's history (``changes.log``, written by the
drain as it delivers: :mod:`~scrapy_adaptive.runtime.changelog`) and from
the outbox, where the events not delivered yet wait (a crawl killed, or
stopped by a feed it could not write, delivers them at its next start):
those are listed too, marked so.  An event written twice (at least once)
is listed once, by its URL, kind and time.

The history is read newest delivered first, a block at a time from its
end, and the reading stops as soon as nothing older can qualify: past
``--since``, or past the newest ``--limit`` matches once one more is known
to exist.  An event's time is never after its delivery, so stopping there
misses none.  A running crawl answers over its control channel, in its
reactor thread: the pause is that reading, at most the whole history
(``ADAPTIVE_CHANGES_LOG_MAX_BYTES`` × (``ADAPTIVE_CHANGES_LOG_BACKUPS`` + 1)).

No Scrapy import.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ...change.events import KINDS, MOVED, read_event
from ...change.fields import field_words
from ...change.text_diff import changed_lines, shorten
from ...config.patterns import UserPattern
from ...config.spec import counted, read_seconds
from ...humanize import human, when
from ...runtime.changelog import history_start, read_history

if TYPE_CHECKING:
    from ...frontier import Frontier

#: events listed when --limit is not given
DEFAULT_LIMIT = 50
#: most events one answer lists
MAX_LIMIT = 100_000
#: events read at most from the outbox (not yet delivered)
PENDING_LIMIT = 10_000
#: a URL's latest events ``scrapy frontier url`` lists
URL_EVENTS = 20
#: what an event's lines show of what changed: items, fields of one item,
#: diff lines, and the characters of one value or line
SHOWN_ITEMS, SHOWN_FIELDS, SHOWN_LINES, SHOWN_CHARS = 3, 4, 4, 60


def kinds_of(values: Iterable[str] | None) -> list[str]:
    """The kinds ``--kind`` names (repeated, or comma-separated); all five
    when none.  ValueError naming the one that is not a kind."""
    kinds: list[str] = []
    for value in values or ():
        for kind in str(value).split(","):
            kind = kind.strip().lower()
            if kind not in KINDS:
                raise ValueError(f"--kind {kind!r} is not a change event kind: use {', '.join(KINDS)}.")
            if kind not in kinds:
                kinds.append(kind)
    return kinds or list(KINDS)


def url_pattern(regex: str | None) -> UserPattern | None:
    """``--url REGEX`` compiled, time-bounded like every user's pattern; a
    ConfigError naming it when it is not a regular expression."""
    return None if regex is None else UserPattern(regex, f"--url {regex!r}")


def limit_of(raw: Any) -> int:
    try:
        limit = int(str(raw))
    except ValueError:
        limit = 0
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"--limit ({raw!r}) must be a whole number from 1 to {MAX_LIMIT}.")
    return limit


def changes_request(opts: Any) -> dict[str, Any]:
    """The request ``scrapy frontier changes`` sends, its options checked
    first (ValueError, or ConfigError, in one line: nothing is read)."""
    since = None if opts.since is None else read_seconds(opts.since, "--since", positive=True)
    url_pattern(opts.url)
    return {
        "op": "changes",
        "since": since,
        "url": opts.url,
        "kinds": kinds_of(opts.kind),
        "limit": DEFAULT_LIMIT if opts.limit is None else limit_of(opts.limit),
    }


def find_changes(
    state_path: str | None,
    frontier: Frontier | None,
    *,
    now: float,
    since: float | None = None,
    pattern: UserPattern | None = None,
    kinds: Iterable[str] = KINDS,
    limit: int = DEFAULT_LIMIT,
    url: str | None = None,
) -> dict[str, Any]:
    """The newest *limit* events that match, newest first: of the last
    *since* seconds, of the kinds *kinds*, whose URL *pattern* matches (or
    of the one URL *url*).  ``more`` says whether older matches were left
    out; ``history_from`` when the oldest event the history holds was
    delivered (older ones were rotated out); ``pending`` the events read
    from the outbox, not delivered yet (``delivered`` None)."""
    cutoff = None if since is None else now - since
    wanted_kinds = frozenset(kinds)
    top: list[tuple[float, int, dict[str, Any]]] = []  # a min-heap of the newest matches
    seen: set[tuple[Any, ...]] = set()
    more = False
    order = 0

    def consider(event: dict[str, Any]) -> None:
        nonlocal more, order
        if event["kind"] not in wanted_kinds or (url is not None and event["url"] != url):
            return
        moment = event["time"] if isinstance(event["time"], (int, float)) else 0.0
        if cutoff is not None and moment < cutoff:
            return
        if pattern is not None and not pattern.search(
            event["url"], on=f"the URL {event['url']}", fallback="its events are left out"
        ):
            return
        key = (event["url"], event["kind"], event["time"])
        if key in seen:
            return
        seen.add(key)
        order += 1
        if len(top) < limit:
            heapq.heappush(top, (moment, -order, event))
        else:
            more = True
            if moment > top[0][0]:
                heapq.heapreplace(top, (moment, -order, event))

    if state_path is not None:
        narrow = None if wanted_kinds == frozenset(KINDS) else wanted_kinds
        for event in read_history(state_path, url=url, kinds=narrow):
            delivered = event["delivered"]
            if cutoff is not None and delivered < cutoff:
                break  # every event before it is older than --since
            if more and delivered < top[0][0]:
                break  # every event before it is older than the ones kept
            consider(event)
    pending = 0
    if frontier is not None:
        for _, _, raw in frontier.outbox.events(PENDING_LIMIT):
            waiting = read_event(raw)
            if waiting is not None:
                pending += 1
                consider({**waiting, "delivered": None})
    events = [event for _, _, event in sorted(top, key=lambda t: (t[0], t[1]), reverse=True)]
    return {
        "events": events,
        "more": more,
        "pending": pending,
        "pending_capped": pending >= PENDING_LIMIT,
        "history_from": None if state_path is None else history_start(state_path),
    }


def event_words(event: dict[str, Any], *, with_url: bool = True) -> str:
    """One event on one line: time, kind, status, version, URL, where it moved."""
    status = "-" if event.get("status") is None else str(event["status"])
    version = "" if event.get("version") is None else f"v{event['version']}"
    words = f"{when(event['time'])}  {event['kind']:<7} {status:>3} {version:>5}"
    if with_url:
        words += f"  {event['url']}"
    if event["kind"] == MOVED and event.get("location"):
        words += f" -> {event['location']}"
    if event.get("delivered", 0) is None:
        words += "  (not delivered yet)"
    return words


def what_changed(event: dict[str, Any]) -> list[str]:
    """What an event says changed, a few short lines: in items mode each
    changed item's fields (``price: 10.00 → 11.50`` where the rule keeps
    values), the items added and removed; with a text diff, its changed
    lines.  Values and lines are cut to :data:`SHOWN_CHARS` characters
    (``--json`` gives them whole); none for an event that says neither."""
    lines: list[str] = []
    fields = event.get("fields")
    if isinstance(fields, dict):
        changed = [entry for entry in fields.get("changed") or () if isinstance(entry, dict)]
        for entry in changed[:SHOWN_ITEMS]:
            lines.append(_item_line(entry))
        if len(changed) > SHOWN_ITEMS:
            lines.append(f"… {counted(len(changed) - SHOWN_ITEMS, 'more changed item')}")
        for name in ("added", "removed"):
            keys = [str(key) for key in fields.get(name) or ()]
            if keys:
                more = f", … ({len(keys)} in all)" if len(keys) > SHOWN_FIELDS else ""
                shown = ", ".join(keys[:SHOWN_FIELDS]) + more
                lines.append(f"items {name}: {shorten(shown, 2 * SHOWN_CHARS)}")
    diff = event.get("text_diff")
    if isinstance(diff, str) and diff:
        lines += changed_lines(diff, most=SHOWN_LINES, width=SHOWN_CHARS)
    return lines


def _item_line(entry: dict[str, Any]) -> str:
    """One changed item: ``item SKU-42: price 10.00 → 11.50; name``."""
    said = field_words(entry, most=SHOWN_FIELDS, width=SHOWN_CHARS)
    return f"item {shorten(entry.get('item'), 30)}: {'; '.join(said) or 'changed'}"


def event_lines(event: dict[str, Any], *, with_url: bool = True, indent: str = "  ") -> list[str]:
    """An event's line, and what changed under it, for a terminal."""
    return [indent + event_words(event, with_url=with_url)] + [indent + "    " + line for line in what_changed(event)]


def change_report_lines(section: dict[str, Any] | None) -> list[str]:
    """The report's latest change events and gone pages per host, for a terminal."""
    if section is None:  # a running crawl of an older version answers without them
        return []
    lines = ["", "latest change events:" + ("" if section["events"] else " none recorded")]
    lines += [line for event in section["events"][:10] for line in event_lines(event)]
    gone = section["gone_by_host"]
    lines.append("gone pages per host:" + ("" if gone else " none"))
    lines += [f"  {row['gone']:>7}  {row['host']}" for row in gone[:30]]
    return lines


def changes_lines(answer: dict[str, Any], request: dict[str, Any]) -> list[str]:
    """A ``changes`` answer for a terminal."""
    events = answer["events"]
    about = []
    if request.get("since") is not None:
        about.append(f"in the last {human(request['since'])}")
    if request.get("kinds") and sorted(request["kinds"]) != sorted(KINDS):
        about.append("of kind " + ", ".join(request["kinds"]))
    if request.get("url"):
        about.append(f"of URLs matching {request['url']!r}")
    filters = (" " + "; ".join(about)) if about else ""
    if not events:
        lines = [f"no change events{filters}"]
    else:
        lines = [f"{counted(len(events), 'change event')}{filters}, newest first:"]
        lines += [line for event in events for line in event_lines(event)]
    if answer["more"]:
        lines.append(f"more events match: only the newest {len(events)} are listed (--limit)")
    start = answer.get("history_from")
    if start is None and not answer.get("pending"):
        lines.append(
            "the state folder holds no history of change events (changes.log): they are recorded when "
            "ADAPTIVE_CHANGE_EVENTS or ADAPTIVE_CHANGES_FEED is on"
        )
    elif start is not None:
        lines.append(f"the history (changes.log) holds events delivered since {when(start)}")
    if answer.get("pending_capped"):
        lines.append(f"the outbox holds more than {counted(PENDING_LIMIT, 'undelivered event')}: only those were read")
    return lines
