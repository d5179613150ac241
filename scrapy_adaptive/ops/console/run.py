"""What ``scrapy frontier`` does once it runs (see :mod:`.command`).

Where: the state folder is ``--state-dir``, else ``ADAPTIVE_STATE_DIR``,
else ``<JOBDIR>/adaptive`` (``--jobdir`` or the JOBDIR setting).  How: a
running crawl is asked over its control socket (:mod:`.control`); when no
crawl answers, the folder is opened directly (its database lock then keeps a
crawl from starting meanwhile).  Both paths answer the same requests with
the same :class:`~.api.FrontierConsole`.

A worker of a shared frontier (its marker names a Redis store) is answered
from that store, while the rest of the fleet may be running: ``report``,
``url`` and ``export`` only read; ``forget`` writes one transaction per
queue (the queue's record, entry, mark and counters, the counts as
increments), which the queue's holder sees as a missing record when the
URL's turn comes; ``seed`` goes to the worker's seeds file, added when that
worker starts again (a running worker, any one of the fleet, adds seeds
at once).  See docs/shared-frontier.md, "The console".
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ...config.matching import check_entries
from ...config.settings import AdaptiveConfig
from ...config.spec import ConfigError, counted, plural
from ...frontier import Frontier, Politeness
from ...humanize import human, when
from ...policies.schedules import schedules_of
from ...runtime.schedule_entries import load_stored
from ...store.base import StoreError
from ...store.marker import read_marker
from ...store.statedir import (
    MARKER,
    SharedStore,
    StateDir,
    StateDirError,
    check_counts,
    open_store,
    private_opener,
    shared_store,
)
from ...warc.digests import shared_payloads_in
from ..composites import figures_words
from ..pace import Pace
from ..progress import BUDGET, Progress
from ..progress import META_KEY as PROGRESS_KEY
from . import control
from .api import FrontierConsole, compile_regex
from .changes_command import change_report_lines, changes_lines, changes_request
from .hinttrack import report_words
from .html import render
from .payloads import payload_lines
from .schedule_command import ScheduleConsole, schedule_lines, schedule_request
from .seeds import file_seeder, seed_problem

if TYPE_CHECKING:
    import argparse

    from scrapy.settings import BaseSettings


class ConsoleError(Exception):
    """Why the command cannot go on: printed as is."""


class UsageError(ConsoleError):
    """The command's arguments are wrong: printed as is, exit code 2 (as for
    an unknown action), nothing read or changed."""


def state_folder(opts: argparse.Namespace, settings: BaseSettings, config: AdaptiveConfig) -> StateDir:
    path = opts.state_dir or config.state_dir
    if not path:
        jobdir = opts.jobdir or settings.get("JOBDIR")
        if not jobdir:
            raise ConsoleError(
                "No state folder given: pass --jobdir DIR (the crawl's JOBDIR), --state-dir DIR, or "
                "-s JOBDIR=DIR / -s ADAPTIVE_STATE_DIR=DIR."
            )
        path = os.path.join(jobdir, "adaptive")
    state = StateDir(os.path.abspath(os.path.expanduser(str(path))), temporary=False)
    state_marker(state)
    return state


def state_marker(state: StateDir) -> dict[str, Any]:
    """The folder's marker, read and refused as a crawl's start reads and
    refuses it (:func:`~scrapy_adaptive.store.marker.read_marker`)."""
    try:
        marker = read_marker(state.marker)
    except StateDirError as exc:
        raise ConsoleError(str(exc)) from exc
    if marker is None:
        raise ConsoleError(f"{state.path} is not a scrapy-adaptive state folder (no {MARKER}): no crawl ran there.")
    return marker


def answers(state: StateDir, config: AdaptiveConfig, request: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The answers to *request*: from the running crawl, else from the folder itself."""
    try:
        yield from control.ask(state.path, request)
        return
    except control.ControlUnavailable:
        pass
    except OSError as exc:
        raise ConsoleError(f"The crawl running on {state.path} did not answer ({exc}).") from exc
    marker = state_marker(state)
    shared = marker_store(state, marker, config)
    # an export salvages what a damaged or rolled-back database still holds,
    # record by record, and says what is wrong after it
    salvage = request.get("op") == "export" and shared is None
    try:
        store = open_store(
            state,
            spider=marker.get("spider"),
            fingerprinter=marker.get("fingerprinter"),
            sync=False,
            shared=shared,
            check=not salvage,
        )
    except (StateDirError, StoreError) as exc:
        if "in use by another crawl" in str(exc):
            raise ConsoleError(
                f"A crawl holds {state.path} but its control socket does not answer (it is starting or "
                "stopping, or its state folder path is too long for a socket). Try again in a moment."
            ) from exc
        raise ConsoleError(str(exc)) from exc
    damage: Exception | None = None
    try:
        frontier = Frontier(store)
        try:
            if salvage:
                check_counts(state, marker, store)
            frontier.load(redeliver=False)
        except (StateDirError, StoreError) as exc:
            if not salvage:
                raise
            damage = exc  # the queues' rows or the counts: the records are still read one by one
        if damage is not None:  # an export needs nothing but the records
            yield from FrontierConsole(frontier).answer(request)
            raise ConsoleError(str(damage)) if isinstance(damage, StateDirError) else damage
        setting = "ADAPTIVE_WAIT_POLICIES"
        schedules = schedules_of(check_entries(config.wait_policies, setting), setting)
        load_stored(frontier, schedules)
        console = ScheduleConsole(
            frontier,
            schedules=schedules,
            politeness=Politeness(config.delay_factor, config.min_delay, config.max_delay, config.host_valence),
            progress=Progress.from_bytes(frontier.notes.read(PROGRESS_KEY)),
            budget_per_day=config.budget,
            seeder=file_seeder(state.path),
            pace=lambda: stopped_pace(config, store),
            state_path=state.path,
        )
        if config.warc_dir:  # the crawl's WARC folder, closed with it
            console.sections["shared_payloads"] = lambda: shared_payloads_in(str(config.warc_dir))
        yield from console.answer(request)
    finally:
        store.close()


def stopped_pace(config: AdaptiveConfig, store: Any) -> Pace:
    """Where a stopped crawl's budget came from: configured, or the share of
    its politeness capacity it last reported (the hourly series)."""
    hours = Progress.from_bytes(store.get_meta(PROGRESS_KEY)).hours
    last = hours[max(hours)][BUDGET] * 24 if hours else 0.0
    share = config.capacity_share
    return Pace.chosen(
        config.wait_min,
        config.wait_max,
        configured=config.budget,
        capacity=last,
        capacity_per_day=last / share if share else None,
        share=share,
    )


def marker_store(state: StateDir, marker: dict[str, Any], config: AdaptiveConfig) -> SharedStore | None:
    """The shared store the worker's marker names (None: LevelDB in the folder).

    The crawl's ``ADAPTIVE_STORE_*`` settings say how to reach it (the
    marker's URL has its password hidden); without them, the marker's URL
    serves when it had no password.  Opening compares the store with the
    marker, so settings naming another store are refused.
    """
    named = marker.get("store")
    if not isinstance(named, str) or not named:
        return None
    configured = shared_store(config, str(marker.get("spider")))
    if configured is not None:
        return configured
    url, _, namespace = named.partition(" ")
    if ":***@" in url and config.store_password is None:
        raise ConsoleError(
            f"The crawl on {state.path} keeps its frontier in the Redis store {named}, which needs a password: "
            "run scrapy frontier with the crawl's settings (ADAPTIVE_STORE_URL, or ADAPTIVE_STORE_PASSWORD)."
        )
    return SharedStore(
        url,
        namespace,
        password=config.store_password,
        tls_ca=config.store_tls_ca,
        tls_cert=config.store_tls_cert,
        tls_key=config.store_tls_key,
    )


def main(action: str, args: list[str], opts: argparse.Namespace, settings: BaseSettings) -> int:
    shown = 0
    to_file = False
    try:
        config = AdaptiveConfig.from_settings(settings)
        request = build_request(action, args, opts)
        state = state_folder(opts, settings, config)
        to_file = action == "export" and opts.output
        with _output_file(opts.output) if to_file else _stdout() as out:
            for answer in answers(state, config, request):
                if "error" in answer:
                    raise ConsoleError(str(answer["error"]))
                show(action, answer, opts, out, state, request)
                shown += 1
    except BrokenPipeError:  # `scrapy frontier export | head`
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (Python flushes stdout at exit)
        return 0
    except OSError as exc:
        print(f"scrapy frontier {action}: {exc}", file=sys.stderr)
        return 1
    except (ConsoleError, ConfigError, StoreError) as exc:
        # a damaged or rolled-back database: what an export could read was written, then this one line
        done = ""
        if action == "export" and (shown or isinstance(exc, StoreError)):
            where = f" to {opts.output}{PARTIAL}; {opts.output} is unchanged" if to_file and shown else ""
            done = f" ({counted(shown, 'record')} exported{where}, from before and after the damage)"
        print(f"scrapy frontier {action}: {exc}{done}", file=sys.stderr)
        return 2 if isinstance(exc, UsageError) else 1
    return 0


def build_request(action: str, args: list[str], opts: argparse.Namespace) -> dict[str, Any]:
    """The request *action* sends; a :class:`UsageError` for arguments it cannot take."""
    try:
        return _request(action, args, opts)
    except (ValueError, ConsoleError) as exc:  # ConfigError too: a bad --since, --url, --every
        raise UsageError(str(exc)) from None


def _request(action: str, args: list[str], opts: argparse.Namespace) -> dict[str, Any]:
    # Scrapy hands on the options it does not know among the arguments:
    # a misspelt one would otherwise be taken for a URL, or ignored
    unknown = [arg for arg in args if arg.startswith("-")]
    if unknown:
        raise ConsoleError(f"unknown option {unknown[0]!r}: scrapy frontier -h lists them")
    if action == "changes":
        if args:
            raise ConsoleError(f"changes takes options, not {args[0]!r}: scrapy frontier changes [--since T] ...")
        return changes_request(opts)
    if action == "url":
        if len(args) != 1:
            raise ConsoleError("give one URL: scrapy frontier url URL")
        return {"op": "url", "url": args[0]}
    if action == "seed":
        if not args:
            raise ConsoleError("give the URLs to seed: scrapy frontier seed URL...")
        problems = [problem for problem in map(seed_problem, args) if problem is not None]
        if problems:  # refused now, all of them: nothing is added
            raise ConsoleError(" ".join(problems) + " Nothing was seeded.")
        return {"op": "seed", "urls": args}
    if action == "forget":
        if not args and not opts.regex:
            raise ConsoleError("give the URLs to forget, or --regex R")
        if opts.regex is not None:
            compile_regex(opts.regex)  # refused before anything is read or deleted
        return {"op": "forget", "urls": args, "regex": opts.regex}
    if action == "schedule":
        return schedule_request(opts)
    if args:  # report, export
        raise ConsoleError(f"{action} takes options, not {args[0]!r}")
    if action == "export" and getattr(opts, "format", "jsonl") != "jsonl":
        raise ConsoleError(f"--format {opts.format!r} is not a format export writes: use jsonl")
    if action == "export" and getattr(opts, "output", None):
        check_output(opts.output)
    return {"op": action}


def check_output(path: str) -> None:
    """Refuse an ``-O`` path that is there and is not a regular file, before
    anything is read.  The export replaces the path with a new file: a
    device (``/dev/full``, as root), a FIFO or a symlink would be replaced by
    a regular file, not written to, and a folder cannot be replaced."""
    import stat

    try:
        mode = os.lstat(path).st_mode
    except OSError:  # a new file (or under a regular file: said when it is opened)
        return
    if stat.S_ISREG(mode):
        return
    kinds = [
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a device"),
        (stat.S_ISBLK, "a device"),
        (stat.S_ISSOCK, "a socket"),
    ]
    kind = next((said for test, said in kinds if test(mode)), "not a regular file")
    raise ConsoleError(
        f"-O {path} is {kind}: export writes a new file or replaces a regular one, so it is not replaced; "
        "nothing was exported"
    )


@contextmanager
def _stdout() -> Iterator[Any]:
    yield sys.stdout


#: where an export that stopped part-way leaves what it wrote
PARTIAL = ".partial"


@contextmanager
def _output_file(path: str) -> Iterator[Any]:
    """*path* replaced only by a whole export: a refused or broken one (a
    damaged database, a crawl starting) leaves an earlier export there, the
    backup it may be, and what it wrote, if anything, in ``path.partial``."""
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        file = open(tmp, "w", encoding="utf-8", opener=private_opener)  # noqa: SIM115 - closed below
    except OSError as exc:  # said of the file asked for, not of the temporary one beside it
        raise OSError(f"{path} cannot be written ({exc.strerror or exc})") from None
    with file as out:
        try:
            yield out
        except BaseException:
            out.close()
            if os.path.getsize(tmp):
                os.replace(tmp, path + PARTIAL)
            else:
                os.unlink(tmp)
            raise
    try:
        os.replace(tmp, path)
    except OSError as exc:  # a folder of that name: the export is kept beside it, and said where
        kept = path + PARTIAL
        try:
            os.replace(tmp, kept)
        except OSError:
            kept = tmp
        raise OSError(f"{path} cannot be replaced ({exc.strerror or exc}); the whole export is in {kept}") from None


def show(
    action: str, answer: dict[str, Any], opts: argparse.Namespace, out: Any, state: StateDir, request: dict[str, Any]
) -> None:
    if action == "export":
        out.write(json.dumps(answer["record"], ensure_ascii=False) + "\n")
        return
    if opts.json:
        out.write(json.dumps(answer, ensure_ascii=False, indent=1, default=str) + "\n")
    elif action == "report":
        out.write("\n".join(report_lines(answer["report"])) + "\n")
    elif action == "url":
        if answer["url"] is None:
            raise ConsoleError("this URL is not in the frontier")
        out.write("\n".join(answer["url"]["lines"]) + "\n")
    elif action == "seed":
        for row in answer["seeded"]:
            out.write(f"{row['url']}: {row['result']}\n")
    elif action == "forget":
        for url in answer["forgotten"]:
            out.write(f"forgotten: {url}\n")
        out.write(f"{counted(len(answer['forgotten']), 'URL')} forgotten\n")
    elif action == "schedule":
        out.write("\n".join(schedule_lines(answer)) + "\n")
    elif action == "changes":
        out.write("\n".join(changes_lines(answer["changes"], request)) + "\n")
    if action == "report" and opts.html:
        with open(opts.html, "w", encoding="utf-8", opener=private_opener) as f:
            f.write(render(answer["report"], title=f"Frontier report: {state.path}"))
        out.write(f"HTML report written to {opts.html}\n")


def report_lines(report: dict[str, Any]) -> list[str]:
    """The report as text for a terminal."""
    t = report["totals"]
    budget = report["budget"]
    lines = [
        f"Frontier at {when(report['generated'])}: {counted(t['urls'], 'URL')} in {counted(t['hosts'], 'host')}, "
        f"{counted(t['visits'], 'visit')}, {counted(t['versions'], 'version')}; {t['due']} due now, "
        f"{t['never']} never again, {t['forgotten']} forgotten",
        f"queues: {t['ready']} ready, {t['snoozed']} snoozed, {t['busy']} busy, {t['empty']} empty"
        + (
            ""
            if t["overdue_p50"] is None
            else f"; overdue p50 {human(t['overdue_p50'])}, p95 {human(t['overdue_p95'])}"
        ),
        "budget: "
        + (budget.get("source") or ("not set" if budget["set_per_day"] is None else f"{budget['set_per_day']:.0f}"))
        + ", visits "  # all of them, first visits too: not the revisits the budget counts
        + ("-" if budget["spent_per_day"] is None else f"{budget['spent_per_day']:.0f}/day (first visits included)")
        + (f"; next URL due {budget['next_due']}" if budget.get("next_due") else ""),
        "",
        f"{'host':<32} {'state':<8} {'URLs':>7} {'due':>6} {'visits':>7} {'versions':>8} {'trust':>6} next due",
    ]
    for h in report["hosts"][:30]:
        trust = h.get("trust") or {}
        rel = trust.get("reliability")
        lines.append(
            f"{h['host']:<32} {h['state']:<8} {h['urls']:>7} {h['due']:>6} {h['visits']:>7} {h['versions']:>8} "
            f"{'-' if rel is None else f'{rel:.2f}':>6} {when(h['next_due'])}"
        )

    def dist(title: str, classes: list[str], counts: dict[str, int]) -> None:
        lines.append("")
        lines.append(f"{title} (of {counted(report['sampled'], 'record')}):")
        for c in classes:
            if counts.get(c):
                lines.append(f"  {c:<14} {counts[c]:>7}")

    dist("wait intervals", report["wait_classes"], report["waits"])
    for kind, counts in report["waits_by_type"].items():
        lines.append(f"  {kind}: " + ", ".join(f"{c} {counts[c]}" for c in report["wait_classes"] if counts.get(c)))
    dist("observed change rates (new versions per day seen)", report["rate_classes"], report["change_rates"])
    for kind, counts in report["change_rates_by_host"].items():
        lines.append(f"  {kind}: " + ", ".join(f"{c} {counts[c]}" for c in report["rate_classes"] if counts.get(c)))
    lines.append("")
    lines.append("most changing URLs:" + ("" if report["top_changing"] else " none revisited yet"))
    lines += [
        f"  {r['versions']:>4} {plural(r['versions'], 'version'):<8} in "
        f"{r['visits']:>4} {plural(r['visits'], 'visit'):<6}  {r['url']}"
        for r in report["top_changing"]
    ]
    lines.append("never changing URLs:" + ("" if report["never_changing"] else " none revisited yet"))
    lines += [f"  {r['visits']:>4} {plural(r['visits'], 'visit'):<6}  {r['url']}" for r in report["never_changing"]]
    # a running crawl of an older version answers without them
    if elsewhere := report.get("redirect_or_error"):
        lines.append("URLs last answering a redirect or an error (moved or gone, not versions):")
        lines += [f"  {answer_words(r['status']):>10}  {r['url']}" for r in elsewhere]
    lines += change_report_lines(report.get("changes"))
    if "hints" in report:  # a running crawl of an older version answers without them
        lines += ["", *report_words(report["hints"])]
    if report.get("schedules"):
        lines += ["", *schedule_lines({"schedules": report["schedules"]})]
    if (composites := report.get("composites")) is not None:  # a running crawl with composite captures
        words = figures_words(composites) or f"none settled yet; {composites.get('pending', 0)} pending"
        lines += ["", f"pages captured with their embeds: {words}"]
    return lines + payload_lines(report.get("shared_payloads"))


def answer_words(status: int | None) -> str:
    """A last answer in a report's words: its status, or ``redirect`` for a
    meta refresh (which has none)."""
    return "redirect" if status is None else str(status)
