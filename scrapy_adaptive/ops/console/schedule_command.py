"""``scrapy frontier schedule``: curated schedules set on a running or stopped crawl.

A schedule given here is kept in the state folder (frontier meta key
``schedules``, a JSON list of entries, each with its ``name``) and loaded at
every start with the ``ADAPTIVE_WAIT_POLICIES`` ones; a running crawl takes
it at once (its tick brings the matched URLs forward when the window is
open).  Before one is kept its cost is shown, and it is refused (unless
forced) when politeness cannot honour it: a host whose matched URLs need
more fetches a day than its politeness allows at its measured fetch time
(:func:`~...frontier.crawltime.capacity`), the figures in the refusal.

:class:`ScheduleConsole` is the :class:`~.api.FrontierConsole` with the
``schedule`` request and the schedules in the report.  No Scrapy import.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ...config.spec import ConfigError, counted, read_seconds
from ...frontier import Frontier, Politeness
from ...frontier.crawltime import DEFAULT_FETCH_TIME, capacity
from ...policies.history import DAY, url_host
from ...policies.schedules import CLOSED, Schedule, Schedules, check_name
from ...runtime.schedule_entries import forced_counts, store_entries, stored_entries
from ..pace import Pace, budget_words, next_due
from .api import FrontierConsole


def cost(
    frontier: Frontier,
    schedule: Schedule,
    budget_per_day: float | None,
    *,
    limit: int | None = None,
    politeness: Politeness | None = None,
) -> dict[str, Any]:
    """What *schedule* costs while open: URLs matched (a scan of the
    records, of the first *limit* only if given: a uniform sample, keyed by
    fingerprint), fetches a day it asks for at most (URLs × a day / its
    ceiling), against the budget and each host's politeness capacity."""
    per_host: dict[str, list[float]] = {}
    scanned = 0
    for _, record in frontier.records():
        scanned += 1
        if limit is not None and scanned > limit:
            break
        if not record.never and schedule.matches(record.url, url_host(record.url), record.content_type):
            per_host.setdefault(record.queue, []).append(record.duration or 0.0)
    matched = sum(len(d) for d in per_host.values())
    rate = DAY / schedule.ceiling if schedule.ceiling else 0.0
    p = politeness or frontier.politeness
    queues = {q.name: q for q in frontier.queues()}
    hosts_over = []
    for host, durations in sorted(per_host.items()):
        q = queues.get(host)
        timed = [d for d in durations if d > 0]
        fetch_time = sum(timed) / len(timed) if timed else DEFAULT_FETCH_TIME
        if q is None:
            continue
        per_second = capacity(q, fetch_time, delay_factor=p.delay_factor, min_delay=p.min_delay, max_delay=p.max_delay)
        allowed = DAY * per_second
        needed = len(durations) * rate
        if needed > allowed:
            hosts_over.append({"host": host, "urls": len(durations), "per_day": needed, "capacity_per_day": allowed})
    return {
        "matched": matched,
        "sampled": limit is not None and scanned > limit,
        "hosts": len(per_host),
        "per_day": matched * rate,
        "budget_per_day": budget_per_day,
        "budget_share": None if not budget_per_day else matched * rate / budget_per_day,
        "hosts_over": hosts_over,
    }


def cost_words(name: str, c: dict[str, Any]) -> str:
    words = (
        f"schedule {name}: {counted(c['matched'], 'URL')} on {counted(c['hosts'], 'host')}, "
        f"up to {counted(round(c['per_day']), 'fetch', 'fetches')} a day"
    )
    if c["budget_share"] is not None:
        words += f" ({c['budget_share']:.0%} of ADAPTIVE_BUDGET, {c['budget_per_day']:.0f}/day)"
    for h in c["hosts_over"]:
        words += (
            f"; host {h['host']}: {counted(h['urls'], 'URL')} need "
            f"{counted(round(h['per_day']), 'fetch', 'fetches')} a day, "
            f"its politeness allows {h['capacity_per_day']:.0f}"
        )
    return words


class ScheduleConsole(FrontierConsole):
    """The console, with ``schedule`` requests and schedules in the report.

    *schedules* is the crawl's own collection when it runs (a schedule added
    here applies at once), else one built from the settings and the state
    folder for the command's lifetime.
    """

    def __init__(
        self,
        frontier: Frontier,
        *,
        schedules: Schedules,
        politeness: Politeness | None = None,
        pace: Callable[[], Pace] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(frontier, **kwargs)
        self.schedules = schedules
        #: where the revisit budget comes from (None: not known here)
        self.pace = pace
        #: the crawl's politeness settings (a stopped crawl's folder is opened with the defaults)
        self.politeness = politeness or frontier.politeness

    def answer(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if request.get("op") != "schedule":
            yield from super().answer(request)
            return
        action = request.get("action")
        try:
            if action == "add":
                yield self.add(dict(request.get("entry") or {}), force=bool(request.get("force")))
            elif action == "remove":
                yield self.remove(str(request.get("name")))
            else:
                yield {"schedules": self.rows()}
        except (ConfigError, ValueError) as exc:
            yield {"error": str(exc)}

    def report(self) -> dict[str, Any]:
        report = super().report()
        report["schedules"] = self.rows()
        if self.pace is not None:  # where the budget comes from, what decides the next revisit
            pace = self.pace()
            report["budget"]["source"] = budget_words(pace)
            report["budget"]["next_due"] = next_due(self.frontier, report["generated"], pace)
        return report

    def rows(self) -> list[dict[str, Any]]:
        """Every schedule in words: window, bounds, state, URLs matched, revisits forced."""
        now = self.frontier.clock()
        try:
            stored = {e["name"] for e in stored_entries(self.frontier)}
        except ValueError:  # said at start; the list still shows the settings' schedules
            stored = set()
        stored_forced, live = forced_counts(self.frontier), self.schedules.forced
        # the store sums a fleet's workers; a running crawl's own count is up to a second ahead of it
        forced = {n: max(stored_forced.get(n, 0), live.get(n, 0)) for n in {*stored_forced, *live}}
        rows = []
        for schedule in self.schedules:
            found = cost(self.frontier, schedule, None, limit=self.sample_limit)
            row = schedule.describe(now, found["matched"], forced.get(schedule.name, 0))
            row["matched_in_sample"] = found["sampled"]
            row["source"] = "console" if schedule.name in stored else "settings"
            rows.append(row)
        return rows

    def add(self, entry: dict[str, Any], *, force: bool) -> dict[str, Any]:
        names = {s.name for s in self.schedules}
        name = entry.get("name") or next(f"s{i}" for i in range(1, len(names) + 2) if f"s{i}" not in names)
        entry["name"] = check_name(str(name), "schedule")
        if name in names:
            raise ValueError(f"a schedule is already named {name!r}: remove it first, or give another --name.")
        schedule = Schedule.parse(entry, f"schedule {name!r}")
        if schedule.state(self.frontier.clock()) == CLOSED:
            raise ValueError(f"schedule {name!r}: its window closed at {entry['until']}; nothing was kept.")
        found = cost(self.frontier, schedule, self.budget_per_day, politeness=self.politeness)
        words = cost_words(name, found)
        if found["hosts_over"] and not force:
            raise ValueError(f"{words}. Politeness cannot honour it: nothing was kept (--force to apply anyway).")
        store_entries(self.frontier, [*stored_entries(self.frontier), entry])
        self.schedules.add(schedule)
        warning = "politeness cannot honour it on every host (applied with --force)" if found["hosts_over"] else None
        return {"added": name, "cost": found, "words": words, "warning": warning}

    def remove(self, name: str) -> dict[str, Any]:
        entries = stored_entries(self.frontier)
        kept = [e for e in entries if e["name"] != name]
        if len(kept) == len(entries):
            settings = self.schedules.get(name) is not None
            where = "is set in ADAPTIVE_WAIT_POLICIES: remove it there" if settings else "does not exist"
            raise ValueError(f"schedule {name!r} {where}.")
        store_entries(self.frontier, kept)
        self.schedules.remove(name)
        return {"removed": name}


def schedule_request(opts: Any) -> dict[str, Any]:
    """The control request ``scrapy frontier schedule`` sends; ValueError for bad options."""
    if opts.list:
        return {"op": "schedule", "action": "list"}
    if opts.remove:
        return {"op": "schedule", "action": "remove", "name": opts.remove}
    if not opts.match:
        raise ValueError("give --match REGEX with --every (and --from/--until), or --list, or --remove NAME.")
    entry: dict[str, Any] = {"url": opts.match}
    for key, value in (("every", opts.every), ("min", opts.min_wait), ("max", opts.max_wait)):
        if value is not None:
            entry[key] = read_seconds(value, f"--{key}", positive=key != "min")
    for key, value in (("from", opts.from_), ("until", opts.until), ("name", opts.name)):
        if value is not None:
            entry[key] = value
    Schedule.parse(dict(entry, name=entry.get("name") or "new"), "the schedule")  # refused before asking
    return {"op": "schedule", "action": "add", "entry": entry, "force": bool(opts.force)}


def schedule_lines(answer: dict[str, Any]) -> list[str]:
    """A ``schedule`` answer (or the report's schedules) for a terminal."""
    if "added" in answer:
        lines = [f"added {answer['words']}"]
        if answer.get("warning"):
            lines.append(f"WARNING: {answer['warning']}")
        return lines
    if "removed" in answer:
        return [f"removed schedule {answer['removed']}"]
    rows = answer.get("schedules") or []
    lines = [f"schedules ({len(rows)}):"] if rows else ["no schedules"]
    for row in rows:
        match = " ".join(f"{k}={v!r}" for k, v in row["match"].items())
        bounds = ", ".join(f"{k} {row[k]:g}s" for k in ("every", "min", "max") if row.get(k) is not None)
        window = f"{row['from'] or '…'} → {row['until'] or '…'}"
        about = "~" if row.get("matched_in_sample") else ""
        lines.append(
            f"  {row['name']:<24} {row['state']:<8} {window}  {bounds}  {match}  "
            f"{about}{'- URLs' if row.get('matched') is None else counted(row['matched'], 'URL')}, "
            f"{counted(row['forced'], 'revisit')} forced ({row['source']})"
        )
    return lines
