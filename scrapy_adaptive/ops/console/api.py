"""The frontier console: what ``scrapy frontier`` asks and orders, as one API.

:class:`FrontierConsole` works on an opened :class:`Frontier`, whoever holds
it: the command itself on a stopped crawl, or the running crawl, which
answers its control channel (:mod:`.control`) with the same class, so seeds
and forgets are applied by the frontier's one owner.

Distributions (waits, change rates, top URLs) are read from at most
``sample_limit`` records: records are keyed by fingerprint, a hash, so the
first records in key order are a uniform sample, and a report costs a
bounded scan however large the frontier.  Counts (URLs, visits, versions,
gone pages, URLs due) come from the per-queue counters and queue indexes:
exact.  The latest change events are read from the end of the state
folder's history (:mod:`.changes_command`).

No Scrapy import.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import Any

from ...config.spec import counted, plural
from ...frontier import Frontier, UrlRecord
from ...humanize import human, when
from ...model import answers_with_page
from ...store.base import StoreCorrupt
from ..progress import Progress
from .changes_command import DEFAULT_LIMIT, URL_EVENTS, event_lines, find_changes, kinds_of, limit_of, url_pattern
from .hinttrack import pending_hint, track_record, url_words
from .record_words import describe
from .seeds import Seeder, seed_problem

#: upper edges (seconds) of the wait-interval classes
WAIT_EDGES = (60.0, 600.0, 3600.0, 6 * 3600.0, 86_400.0, 7 * 86_400.0)
#: upper edges of the estimated change rate classes (versions per day)
RATE_EDGES = (0.1, 1.0, 10.0, 100.0)
TOP = 10
#: URLs due counted per host at most (a bounded scan of its queue index)
DUE_LIMIT = 100_000
#: the latest change events a report lists
LATEST_CHANGES = 20


def class_label(value: float | None, edges: tuple[float, ...], fmt: Callable[[float], str]) -> str:
    """The class of *value* among *edges* (``≤ edge``), ``> last``, or ``unknown``."""
    if value is None:
        return "unknown"
    for edge in edges:
        if value <= edge:
            return f"≤ {fmt(edge)}"
    return f"> {fmt(edges[-1])}"


def class_order(edges: tuple[float, ...], fmt: Callable[[float], str]) -> list[str]:
    return [f"≤ {fmt(e)}" for e in edges] + [f"> {fmt(edges[-1])}", "unknown"]


def change_rate(record: UrlRecord) -> float | None:
    """Versions per day over the URL's observed life (None: too few visits)."""
    if record.visits < 2 or record.fetched is None or not record.discovered:
        return None
    days = (record.fetched - record.discovered) / 86_400
    return None if days <= 0 else max(record.versions - 1, 0) / days


def answers_otherwise(record: UrlRecord) -> bool:
    """True if the URL's last answer was not its page: a redirect (a meta
    refresh has no status, only its reason) or an error.  Such a URL is
    not "never changing", whatever its version count: it moved or is gone
    (or failing), which a version count does not say (a version is new
    content of the page, and only a 2xx carries any)."""
    if not record.visits:
        return False
    if record.status is None:
        return (record.reason or "").startswith("redirect to ")
    return not answers_with_page(record.status)


def record_dict(fp: bytes, record: UrlRecord, hint_sources: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """Every field of a record by its full name, plus its fingerprint (for
    export); a waiting hint in words, and what the hint sources of its host
    earned (*hint_sources*: :func:`.hinttrack.track_record`'s ``by_host``)."""
    data = {"fp": fp.hex()}
    for name in UrlRecord._KEYS:
        data[name] = getattr(record, name)
    data["next_time"] = None if record.never else record.next_ms / 1000
    data["hint"] = pending_hint(record.hint) if record.hint else None
    data["hint_sources"] = [
        {k: v for k, v in row.items() if k != "host"} for row in hint_sources if row["host"] == record.queue
    ]
    return data


def compile_regex(regex: str) -> re.Pattern[str]:
    """*regex* compiled; ValueError naming it when it is not a regular expression."""
    try:
        return re.compile(regex)
    except re.error as exc:
        raise ValueError(
            f"--regex {regex!r} is not a valid regular expression: {exc}; nothing was forgotten."
        ) from None


class FrontierConsole:
    """Report on, look up, seed and forget URLs of one opened frontier."""

    def __init__(
        self,
        frontier: Frontier,
        *,
        progress: Progress | None = None,
        budget_per_day: float | None = None,
        identity: Callable[[str], tuple[str, bytes]] | None = None,
        seeder: Seeder | None = None,
        sample_limit: int = 20_000,
        state_path: str | None = None,
    ) -> None:
        self.frontier = frontier
        #: the state folder, where the history of change events is (None: not known here)
        self.state_path = state_path
        self.progress = progress
        self.budget_per_day = budget_per_day
        #: a URL's queue and fingerprint as the crawl computes them (None: found by a scan)
        self.identity = identity
        #: how seeds reach the crawl (the running scheduler, or the seeds file)
        self.seeder = seeder
        self.sample_limit = sample_limit
        self.sections: dict[str, Callable[[], Any]] = {}  #: report sections other components add, by name

    # -- reading ---------------------------------------------------------

    def find(self, url: str, unreadable: list[bytes] | None = None) -> list[tuple[str, bytes]]:
        """The ``(queue, fp)`` of *url*: by its identity if known, else a
        scan (which adds the fingerprints of the records it cannot read to
        *unreadable*)."""
        if self.identity is not None:
            queue, fp = self.identity(url)
            record = self.frontier.get_record(queue, fp)
            if record is not None and record.url == url:
                return [(queue, fp)]
        skipped = unreadable.append if unreadable is not None else None
        return [(record.queue, fp) for fp, record in self.frontier.records(skipped) if record.url == url]

    def report(self) -> dict[str, Any]:
        frontier = self.frontier
        now = frontier.clock()
        hosts = self._host_rows(now)
        rates_now = self._rates()
        spent = None if rates_now is None else rates_now["visits"] * 24
        return {
            "generated": now,
            "totals": {
                **frontier.shape(),
                "forgotten": frontier.counts().forgotten,
                "hosts": len(hosts),
                "gone": sum(row["gone"] for row in hosts),
            },
            "hosts": hosts,
            **self._record_classes(),
            "budget": {"set_per_day": self.budget_per_day, "spent_per_day": spent},
            "rates": rates_now,
            "hours": [[h, v] for h, v in self.progress.series()] if self.progress is not None else [],
            "hints": track_record(frontier.hosts.hint_report()),
            "changes": self._latest_changes(now),
            **{name: provider() for name, provider in self.sections.items()},
        }

    def _host_rows(self, now: float) -> list[dict[str, Any]]:
        """One row per host queue, busiest first, with its validator trust where it has a book."""
        frontier = self.frontier
        books = frontier.hosts.trust_report()
        hosts = []
        for q in frontier.queues():
            row: dict[str, Any] = {
                "host": q.name,
                "state": q.state(now).value,
                "urls": q.urls,
                "never": q.never,
                "visits": q.visits,
                "versions": q.versions,
                "gone": q.gone,
                "due": frontier.count_due(q.name, now, limit=DUE_LIMIT) if q.head_time() <= now else 0,
                "next_due": None if q.head_time() == float("inf") else q.head_time(),
                "crawl_delay": q.crawl_delay,
                "fetch_time": frontier.fetch_times.mean(q.name),
            }
            if q.name in books:
                trust, classes = books[q.name].host(), books[q.name].classes().values()
                row["trust"] = {
                    "reliability": trust.reliability,
                    "usefulness": trust.usefulness,
                    "lies": trust.lies,
                    # each class of the host's URLs is verified on its own schedule
                    "classes": len(classes),
                    "classes_trusted": sum(1 for t in classes if t.verify_rate(frontier.trust_params) < 1),
                }
            hosts.append(row)
        hosts.sort(key=lambda r: (-r["visits"], r["host"]))
        return hosts

    def _record_classes(self) -> dict[str, Any]:
        """Waits and change rates in classes (all, by content type, by host),
        the most and least changing URLs, and those whose last answer was a
        redirect or an error (moved or gone: never "never changing"), over a
        sample of the records."""
        waits: Counter[str] = Counter()
        rates: Counter[str] = Counter()
        by_type: dict[str, Counter[str]] = {}
        by_host: dict[str, Counter[str]] = {}
        rate_by_type: dict[str, Counter[str]] = {}
        rate_by_host: dict[str, Counter[str]] = {}
        changing: list[tuple[int, int, str]] = []
        steady: list[tuple[int, str]] = []
        #: last answer a redirect or an error: moved or gone, not "never changing"
        elsewhere: list[tuple[int, str, int | None, int]] = []
        sampled = 0
        for _, record in islice(self.frontier.records(), self.sample_limit):
            sampled += 1
            wait = class_label(record.wait, WAIT_EDGES, human)
            rate = class_label(change_rate(record), RATE_EDGES, lambda v: f"{v:g}/day")
            kind = (record.content_type or "unknown").split(";")[0].strip() or "unknown"
            waits[wait] += 1
            rates[rate] += 1
            by_type.setdefault(kind, Counter())[wait] += 1
            by_host.setdefault(record.queue, Counter())[wait] += 1
            rate_by_type.setdefault(kind, Counter())[rate] += 1
            rate_by_host.setdefault(record.queue, Counter())[rate] += 1
            if answers_otherwise(record):
                elsewhere.append((record.visits, record.url, record.status, record.versions))
            if record.versions > 1:
                changing.append((record.versions, record.visits, record.url))
            elif record.visits >= 3 and not answers_otherwise(record):
                steady.append((record.visits, record.url))
        changing.sort(key=lambda t: (-t[0], t[2]))
        steady.sort(key=lambda t: (-t[0], t[1]))
        elsewhere.sort(key=lambda t: (-t[0], t[1]))
        return {
            "sampled": sampled,
            "wait_classes": class_order(WAIT_EDGES, human),
            "rate_classes": class_order(RATE_EDGES, lambda v: f"{v:g}/day"),
            "waits": dict(waits),
            "waits_by_type": {k: dict(v) for k, v in sorted(by_type.items())},
            "waits_by_host": {k: dict(v) for k, v in sorted(by_host.items())},
            "change_rates": dict(rates),
            "change_rates_by_type": {k: dict(v) for k, v in sorted(rate_by_type.items())},
            "change_rates_by_host": {k: dict(v) for k, v in sorted(rate_by_host.items())},
            "top_changing": [{"url": u, "versions": ve, "visits": vi} for ve, vi, u in changing[:TOP]],
            "never_changing": [{"url": u, "visits": vi} for vi, u in steady[:TOP]],
            "redirect_or_error": [
                {"url": u, "status": st, "versions": ve, "visits": vi} for vi, u, st, ve in elsewhere[:TOP]
            ],
        }

    def _latest_changes(self, now: float) -> dict[str, Any]:
        """The latest change events (the history's end and the outbox) and the
        gone pages per host (the queues' counters: no record is read)."""
        latest = find_changes(self.state_path, self.frontier, now=now, limit=LATEST_CHANGES)
        gone = sorted(((q.name, q.gone) for q in self.frontier.queues() if q.gone), key=lambda t: (-t[1], t[0]))
        return {**latest, "gone_by_host": [{"host": host, "gone": n} for host, n in gone]}

    def _rates(self) -> dict[str, Any] | None:
        """Per hour: the recent rates in a running crawl, else those of the
        last 24 stored hours (a stopped crawl)."""
        if self.progress is None:
            return None
        recent = self.progress.rates()
        return recent if recent is not None else self.progress.stored_rates()

    def url(self, url: str) -> dict[str, Any] | None:
        """The record of *url* and its visit history in words (None: unknown)."""
        unreadable: list[bytes] = []
        fps = self.find(url, unreadable)
        if not fps:
            if unreadable:  # it may be one of them: not "not in the frontier"
                raise StoreCorrupt(unreadable_records(unreadable, "this URL is not among the others, it may be one"))
            return None
        queue, fp = fps[0]
        record = self.frontier.get_record(queue, fp)
        if record is None:
            return None
        sources = track_record(self.frontier.hosts.hint_report())["by_host"]
        now = self.frontier.clock()
        lines = describe(record, now) + url_words(record.hint, record.queue, sources)
        found = find_changes(self.state_path, self.frontier, now=now, url=record.url, limit=URL_EVENTS)
        if found["events"]:
            lines.append(f"change events, newest first{' (the latest)' if found['more'] else ''}:")
            lines += [line for event in found["events"] for line in event_lines(event, with_url=False)]
        elif found["history_from"] is not None:
            lines.append(f"change events: none since {when(found['history_from'])}")
        return {"record": record_dict(fp, record, sources), "lines": lines, "events": found["events"]}

    def changes(self, request: dict[str, Any]) -> dict[str, Any]:
        """The change events a ``changes`` request asks for (:func:`.changes_command.find_changes`)."""
        return find_changes(
            self.state_path,
            self.frontier,
            now=self.frontier.clock(),
            since=request.get("since"),
            pattern=url_pattern(request.get("url")),
            kinds=kinds_of(request.get("kinds")),
            limit=limit_of(request.get("limit", DEFAULT_LIMIT)),
        )

    # -- steering --------------------------------------------------------

    def forget(self, urls: list[str] | tuple[str, ...] = (), regex: str | None = None) -> list[str]:
        """Delete these URLs (exact URLs, or every URL *regex* matches anywhere); returns the URLs deleted."""
        found: list[tuple[str, bytes]] = []
        for url in urls:
            found += self.find(url)
        if regex is not None:
            pattern = compile_regex(regex)
            found += [(record.queue, fp) for fp, record in self.frontier.records() if pattern.search(record.url)]
        return [record.url for record in self.frontier.forget(found)]

    def export(self) -> Iterator[dict[str, Any]]:
        """Every readable record, one dict each (``export --format jsonl``)."""
        sources = track_record(self.frontier.hosts.hint_report())["by_host"]
        unreadable: list[bytes] = []
        for fp, record in self.frontier.records(unreadable.append):
            yield record_dict(fp, record, sources)
        if unreadable:  # said after what could be read, as for a damaged table
            raise StoreCorrupt(unreadable_records(unreadable, "they are not in the export"))

    def seed(self, urls: list[str]) -> list[dict[str, Any]]:
        """Hands *urls* to the seeder, all or none: one that is not an http(s)
        URL with a host refuses them all (ValueError, naming it)."""
        if self.seeder is None:
            raise ValueError("this frontier takes no seeds")
        for url in urls:
            problem = seed_problem(url)
            if problem is not None:
                raise ValueError(problem)
        return self.seeder(urls)

    def answer(self, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """One console request (the control channel's protocol), answered as dicts."""
        op = request.get("op")
        if op == "report":
            yield {"report": self.report()}
        elif op == "url":
            yield {"url": self.url(str(request["url"]))}
        elif op == "changes":
            yield {"changes": self.changes(request)}
        elif op == "seed":
            yield {"seeded": self.seed([str(u) for u in request.get("urls", [])])}
        elif op == "forget":
            yield {"forgotten": self.forget([str(u) for u in request.get("urls", [])], request.get("regex"))}
        elif op == "export":
            for data in self.export():
                yield {"record": data}
        else:
            raise ValueError(f"unknown op {op!r}")


def unreadable_records(fps: Sequence[bytes], what: str) -> str:
    """The one line for records a scan could not read, naming them by
    fingerprint, what it means for the answer (*what*), and what the crawl
    does with them."""
    named = ", ".join(fp.hex() for fp in fps[:5]) + (", ..." if len(fps) > 5 else "")
    return (
        f"{counted(len(fps), 'record')} of the frontier cannot be read (garbled bytes; "
        f"{plural(len(fps), 'fingerprint')} {named}): "
        f"{what}. The crawl moves each aside (key x/<fingerprint>, its bytes kept) when its queue reaches it "
        "and goes on; a URL found again starts a new record."
    )
