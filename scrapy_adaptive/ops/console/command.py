"""``scrapy frontier``: the entry point Scrapy imports on every ``scrapy`` run.

Scrapy imports every ``scrapy.commands`` entry point without a guard, so an
import error here would break ``scrapy crawl`` and ``scrapy list`` too.
This module therefore imports only Scrapy's command base class; the console
itself (:mod:`.run`) is imported when the command runs, and a failure then
is one message from this command alone.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, ClassVar

from scrapy.commands import ScrapyCommand

if TYPE_CHECKING:
    import argparse

ACTIONS = ("report", "url", "changes", "seed", "forget", "export", "schedule")


class Command(ScrapyCommand):
    requires_project = True
    requires_crawler_process = False
    default_settings: ClassVar[dict[str, Any]] = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return (
            "report [--html FILE] [--json] | url URL | changes [--since T] [--url R] [--kind K] [--limit N] | "
            "seed URL... | forget (URL... | --regex R) | export | "
            "schedule (--match R --every 1h [--from D] [--until D] [--min S] [--max S] [--name N] [--force] "
            "| --list | --remove N)"
        )

    def short_desc(self) -> str:
        return "See and steer an adaptive crawl's frontier, stopped or running"

    def long_desc(self) -> str:
        return (
            "Reads the state folder of a stopped crawl (JOBDIR/adaptive, or ADAPTIVE_STATE_DIR) directly, or asks "
            "the running crawl over its control socket in that folder. Actions: report (hosts, queues, due URLs, "
            "wait and change-rate distributions, validators' trust, budget), url URL (the record and its visits "
            "in words, and its change events), changes (the change events, newest first, of the last --since T, of "
            "URLs matching --url R, of --kind new,changed,gone,back,moved), seed URL..., forget URL... or "
            "--regex R, export (every record as JSON lines), schedule (a curated revisit schedule with a time "
            "window: add, --list, --remove)."
        )

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        parser.add_argument("--jobdir", metavar="DIR", help="the crawl's JOBDIR (default: the JOBDIR setting)")
        parser.add_argument("--state-dir", metavar="DIR", help="the state folder (default: ADAPTIVE_STATE_DIR)")
        parser.add_argument("--html", metavar="FILE", help="report: also write the HTML report to FILE")
        parser.add_argument("--json", action="store_true", help="report, url, changes: print JSON instead of text")
        parser.add_argument("--regex", metavar="R", help="forget: every URL this regular expression matches")
        # checked by the console (one line, exit code 2), not by argparse's usage block
        parser.add_argument("--format", default="jsonl", help="export: the format (jsonl)")
        parser.add_argument("--output", "-O", metavar="FILE", help="export: write to FILE instead of stdout")
        changes = parser.add_argument_group("changes")
        changes.add_argument("--since", metavar="T", help="changes: those of the last T (90s, 15m, 1h, 2d)")
        changes.add_argument("--url", metavar="R", help="changes: those of URLs this regular expression matches")
        changes.add_argument(
            "--kind", action="append", metavar="K", help="changes: those of kind K (new, changed, gone, back, moved)"
        )
        changes.add_argument("--limit", metavar="N", help="changes: list the newest N (default 50)")
        schedule = parser.add_argument_group("schedule")
        schedule.add_argument("--match", metavar="R", help="schedule: the URLs this regular expression matches")
        schedule.add_argument("--every", metavar="T", help="schedule: revisit at least this often (3600, 15m, 1h, 2d)")
        schedule.add_argument("--from", dest="from_", metavar="D", help="schedule: the window opens (ISO 8601)")
        schedule.add_argument("--until", metavar="D", help="schedule: the window closes (ISO 8601)")
        schedule.add_argument("--min", dest="min_wait", metavar="T", help="schedule: no wait shorter than this")
        schedule.add_argument("--max", dest="max_wait", metavar="T", help="schedule: no wait longer than this")
        schedule.add_argument("--name", metavar="N", help="schedule: its name (default s1, s2, ...)")
        schedule.add_argument("--force", action="store_true", help="schedule: apply even if politeness cannot")
        schedule.add_argument("--list", action="store_true", help="schedule: list the schedules")
        schedule.add_argument("--remove", metavar="N", help="schedule: remove the schedule named N")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        if not args or args[0] not in ACTIONS:
            said = f"unknown action {args[0]!r}" if args else "no action given"
            print(f"scrapy frontier: {said}; usage: scrapy frontier {self.syntax()}", file=sys.stderr)
            self.exitcode = 2
            return
        try:
            from .run import main
        except Exception as exc:  # one message, from this command only
            print(f"scrapy frontier: scrapy-adaptive cannot be loaded ({type(exc).__name__}: {exc})")
            self.exitcode = 1
            return
        assert self.settings is not None
        self.exitcode = main(args[0], args[1:], opts, self.settings)
