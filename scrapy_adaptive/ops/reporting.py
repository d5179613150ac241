"""The periodic summary of a crawl that never ends: log lines, stats, files.

Every ``ADAPTIVE_LOG_INTERVAL`` and at close, :meth:`Reporter.summary`
writes the frontier's shape (``adaptive/frontier/*`` stats and one log
line), the budget line of a budgeted policy, the hosts that cannot get
through the URLs due before the next summary (Umbrich et al.'s crawl-time
estimate, :mod:`.frontier.crawltime`), the progress of a crawl that never
ends (rates per hour, the backlog's trend, the next URL due; the hourly
series in :mod:`.progress`), ``validators-report.json`` and the HTML report
``report.html`` in the state folder.  It only reads: the frontier owns every
figure (the hourly series is saved with it, in its meta).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..change.trust import Trust
from ..config.spec import counted
from ..frontier import Frontier
from ..frontier.crawltime import estimate_hosts
from ..humanize import human, human_bytes
from ..store.base import StoreError
from ..store.statedir import private_opener
from .composites import COUNTS, WINDOW_S, figures_words
from .console.api import FrontierConsole
from .console.html import render
from .pace import Pace, budget_words, next_due
from .progress import META_KEY as PROGRESS_KEY
from .progress import MIN_SPAN, Progress

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)

#: the HTML report the running crawl refreshes in the state folder
REPORT_HTML = "report.html"
#: the stat of the bytes validators saved (304s and mid-fetch aborts)
BYTES_SAVED_STAT = "adaptive/validators/bytes_avoided"

#: the composite captures' stats (:mod:`.composites`), and a count's stat name where it is not its own
EMBED_STATS = "adaptive/embeds/"
STAT_OF = {"within": "within_60s"}

#: the frontier shape figures copied to ``adaptive/frontier/*`` stats
SHAPE_STATS = ("urls", "queues", "ready", "snoozed", "busy", "out", "due", "visits", "versions", "never")


class Reporter:
    """Writes the summary; built once per crawl with what it reads from."""

    def __init__(
        self,
        frontier: Frontier,
        stats: StatsCollector,
        *,
        allocator: Any,
        state_path: str,
        interval: float,
        progress: Progress | None = None,
        console: FrontierConsole | None = None,
        clock: Callable[[], float] = time.time,
        pace: Callable[[], Pace] | None = None,
    ) -> None:
        self.frontier = frontier
        self.stats = stats
        #: the policies' shared rate allocator (None: no budgeted policy)
        self.allocator = allocator
        #: where the revisit budget comes from and the wait bounds, now (:mod:`.pace`)
        self.pace = pace or Pace  # not told: no budget known
        self.state_path = state_path
        self.interval = interval
        self.clock = clock
        self.last = 0.0
        #: hourly series and recent rates (saved in the frontier's meta)
        self.progress = progress if progress is not None else Progress()
        #: builds the HTML report (None: no report file)
        self.console = console
        #: the crawl is stopping for a state fault it has said already (a full
        #: disk): what cannot be written now is that fault again, not news
        self.after_fault = False
        #: report files that could not be written, said once each (until written again)
        self._unwritable: set[str] = set()

    def _unsaved(self, message: str, *args: Any) -> None:
        """A report or series that could not be written: a warning, or a
        debug line when it only repeats the fault the crawl stopped for."""
        (logger.debug if self.after_fault else logger.warning)(message, *args)

    def _write(self, path: str, text: str) -> None:
        """Replace the report file *path* whole (a temporary file, renamed);
        one that cannot be written leaves no temporary file behind."""
        try:
            with open(path + ".tmp", "w", encoding="utf-8", opener=private_opener) as f:
                f.write(text)
            os.replace(path + ".tmp", path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(path + ".tmp")
            # tried again at every summary of a crawl that runs for months: said once
            if path not in self._unwritable:
                self._unwritable.add(path)
                self._unsaved("Cannot write %s: %s (tried again at each summary, said once)", path, exc)
            return
        if path in self._unwritable:
            self._unwritable.discard(path)
            logger.info("Wrote %s again.", path)

    def due(self) -> bool:
        """True when a summary is due."""
        return self.clock() - self.last >= self.interval

    def summary(self, *, final: bool = False) -> None:
        """The summary lines and stats, and the HTML report refreshed.  At a
        crawl's start the report the last run left (at its close or its last
        summary) is kept until the first interval: rebuilding it then would
        read a sample of the records to say what that report says already."""
        opening = self.last == 0.0 and not final
        self.last = self.clock()
        shape = self.shape(final=final)
        self.budget(shape)
        self.rates(shape)
        self.crawl_times()
        self.validators(final=final)
        self.composites(final=final)
        if not (opening and os.path.exists(os.path.join(self.state_path, REPORT_HTML))):
            self.html()

    def shape(self, *, final: bool = False) -> dict[str, Any]:
        shape = self.frontier.shape()
        for name in SHAPE_STATS:
            self.stats.set_value(f"adaptive/frontier/{name}", shape[name])
        if shape["quarantined"]:
            self.stats.set_value("adaptive/quarantined", shape["quarantined"])
        sharing = self.frontier.sharing
        logger.info(
            "%s%s: %s (%d never again) in %s: %d ready, %d snoozed, %d busy; %d out; %s%d due now%s; %s, %s%s",
            "Frontier" if sharing is None else "Fleet's frontier, as this worker last read it,",
            " at close" if final else "",
            counted(shape["urls"], "URL"),
            shape["never"],
            counted(shape["queues"], "queue"),
            shape["ready"],
            shape["snoozed"],
            shape["busy"],
            shape["out"],
            ">" if shape["due_capped"] else "",
            shape["due"],
            # how late the URLs due now are (none due: nothing to say)
            ""
            if shape["overdue_p50"] is None
            else f"; overdue p50 {human(shape['overdue_p50'])} p95 {human(shape['overdue_p95'])}",
            counted(shape["visits"], "visit"),
            counted(shape["versions"], "version"),
            f"; {shape['quarantined']} quarantined" if shape["quarantined"] else "",
        )
        if sharing is not None:
            self.worker_share(sharing.held, sharing.workers, shape["queues"])
        return shape

    def worker_share(self, held: set[str], workers: int, hosts: int) -> None:
        """In a fleet, the figures above mix this worker's hosts (up to date)
        with the others' (as last read): say this worker's own apart."""
        mine = [q for q in self.frontier.queues() if q.name in held]
        logger.info(
            "This worker (one of %d) holds %d of the fleet's %s: %s, %s, %s "
            "(scrapy frontier report gives the whole fleet's, up to date)",
            workers,
            len(mine),
            counted(hosts, "host"),
            counted(sum(q.urls for q in mine), "URL"),
            counted(sum(q.visits for q in mine), "visit"),
            counted(sum(q.versions for q in mine), "version"),
        )

    def rates(self, shape: dict[str, Any]) -> None:
        """Progress of a crawl that never ends: visits, versions and bytes
        saved per hour, how the backlog of due URLs moves, when the next URL
        is due; the hourly series saved with the frontier."""
        now = self.clock()
        pace = self.pace()
        self.progress.observe(
            now,
            visits=shape["visits"],
            versions=shape["versions"],
            bytes_saved=self.stats.get_value(BYTES_SAVED_STAT, 0) or 0,
            due=shape["due"],
            budget_per_hour=None if pace.per_day is None else pace.per_day / 24,
        )
        try:
            self.frontier.notes.write(PROGRESS_KEY, self.progress.to_bytes())
        except StoreError as exc:  # the crawl is being stopped for it already; a report is not worth a traceback
            self._unsaved("The hourly progress series was not saved: %s", exc)
        when = next_due(self.frontier, now, pace)
        rates = self.progress.rates()
        if rates is None:
            observed = self.progress.observed()
            logger.info(
                "Progress: %d due; next URL due %s (%s)",
                shape["due"],
                when,
                f"too short to rate: {human(observed)} of this run observed, rates after {human(MIN_SPAN)}"
                if observed
                else f"rates after the first {human(MIN_SPAN)} of this run",
            )
            return
        for name in ("visits", "versions", "bytes_saved"):
            self.stats.set_value(f"adaptive/per_hour/{name}", round(rates[name], 1))
        logger.info(
            "Progress over the last %s: %.0f visits/h, %.0f versions/h, %s saved/h by validators; "
            "backlog %d due (%+d); next URL due %s",
            human(rates["span"]),
            rates["visits"],
            rates["versions"],
            human_bytes(rates["bytes_saved"]),
            rates["due"],
            rates["due_change"],
            when,
        )

    def composites(self, *, final: bool = False) -> None:
        """With composite captures (embeds followed with their page): how many
        page captures had every embed within 60 s, and the median gap, from
        the ``adaptive/embeds/*`` stats (:mod:`.composites`)."""
        get = self.stats.get_value
        figures = {name: get(f"{EMBED_STATS}{STAT_OF.get(name, name)}", 0) or 0 for name in (*COUNTS, "pending")}
        if not figures["pages"]:
            return
        figures["share_within"] = figures["within"] / figures["pages"]
        figures["gap_p50"] = get(f"{EMBED_STATS}gap_p50")
        figures["window"] = WINDOW_S
        logger.info("Composite captures%s: %s", " at close" if final else "", figures_words(figures))

    def html(self) -> None:
        """Refresh ``report.html`` in the state folder (written whole, then renamed)."""
        if self.console is None:
            return
        path = os.path.join(self.state_path, REPORT_HTML)
        page = render(self.console.report(), title=f"Frontier report: {self.state_path}")
        self._write(path, page)

    def budget(self, shape: dict[str, Any]) -> None:
        """With a budgeted policy: the budget, what is spent, the hosts
        whose politeness keeps their URLs from the visits they need, and the
        queues whose revisit waits for the budget (*shape*'s
        ``budget_waiting``: ``ADAPTIVE_BUDGET`` is a ceiling)."""
        allocator = self.allocator
        pace = self.pace()
        if pace.per_day is None:
            return
        realised = allocator.realised_rate() if allocator is not None else None
        capped = allocator.capped_hosts() if allocator is not None else {}
        self.stats.set_value("adaptive/budget/per_day", round(pace.per_day, 1))
        if pace.capacity_per_day is not None:
            self.stats.set_value("adaptive/budget/capacity_per_day", round(pace.capacity_per_day, 1))
        if realised is not None:
            self.stats.set_value("adaptive/budget/realised_per_day", round(realised * 86_400, 1))
        self.stats.set_value("adaptive/budget/capped_hosts", len(capped))
        waiting = shape.get("budget_waiting") or 0
        self.stats.set_value("adaptive/budget/waiting_queues", waiting)
        worst = sorted(capped.items(), key=lambda kv: -kv[1])[:5]
        logger.info(
            "Budget: %s%s; %s; %s chronically overdue (politeness caps their visits)%s%s",
            budget_words(pace),
            "; ADAPTIVE_TARGET_PRECISION holds revisits below it" if pace.precision_binds else "",
            f"spending {realised * 86_400:.0f}/day" if realised is not None else unmeasured_spending(allocator),
            counted(len(capped), "host"),
            (": " + ", ".join(f"{h} ({r:.1f}x too rare)" for h, r in worst)) if worst else "",
            f"; {counted(waiting, 'queue')} waiting for the budget's next revisit" if waiting else "",
        )

    def crawl_times(self) -> None:
        """Per host, how long one pass over the URLs due before the next
        summary takes: a host that needs longer falls further behind at
        every summary, whatever the wait policy asks of it."""
        politeness = self.frontier.politeness
        rows = estimate_hosts(
            self.frontier.queues(),
            self.frontier.count_due,
            self.frontier.fetch_times,
            now=self.clock(),
            horizon=self.interval,
            delay_factor=politeness.delay_factor,
            min_delay=politeness.min_delay,
            max_delay=politeness.max_delay,
        )
        # only measured hosts: a host not fetched since the start would be
        # judged on the paper's 2 s default fetch time, not on what it does
        behind = [r for r in rows if r.overdue and r.measured]
        self.stats.set_value("adaptive/hosts/with_due", len(rows))
        self.stats.set_value("adaptive/hosts/overdue", len(behind))
        self.stats.set_value("adaptive/hosts/max_load", round(rows[0].load, 2) if rows else 0.0)
        if behind:
            logger.info(
                "Hosts: %d of %d cannot get through the URLs due within %.0fs: %s",
                len(behind),
                len(rows),
                self.interval,
                ", ".join(
                    f"{r.queue} ({r.docs} due, one pass {r.crawl_time:.0f}s = {r.load:.2f}x the time; "
                    f"fetch {r.fetch_time:.2f}s + wait {r.wait:.2f}s"
                    + (f", {r.threads:.1f} fetches at once)" if r.threads >= 1.05 else ")")
                    for r in behind[:5]
                ),
            )

    def validators(self, *, final: bool = False) -> None:
        """Per host, how far its validators proved right (Clausen's
        reliability and usefulness), in ``validators-report.json`` in the
        state folder; a summary line in the log at close."""
        params = self.frontier.trust_params
        books = self.frontier.hosts.trust_report()
        trusts = {host: book.host() for host, book in books.items()}

        def scored(trust: Trust) -> dict[str, Any]:
            return {
                **trust.to_dict(),
                "reliability": trust.reliability,
                "usefulness": trust.usefulness,
                "verify_rate": trust.verify_rate(params),
            }

        report: dict[str, dict[str, Any]] = {}
        for host, book in books.items():
            report[host] = {**scored(trusts[host]), "classes": {k: scored(t) for k, t in book.classes().items()}}
        if not report:
            return
        path = os.path.join(self.state_path, "validators-report.json")
        self._write(path, json.dumps(report, indent=1, sort_keys=True))
        if final:
            lies = sum(t.lies for t in trusts.values())
            classes = [t for book in books.values() for t in book.classes().values()]
            trusted = sum(1 for t in classes if t.verify_rate(params) < 1)
            logger.info(
                "Validators: %s scored, %d of their %s of URLs trusted, %s counted against the hosts' "
                "trust (every lie a URL told: the adaptive/validators/lies stat; per host: %s)",
                counted(len(report), "host"),
                trusted,
                counted(len(classes), "class", "classes"),
                counted(lies, "lie"),
                path,
            )


def unmeasured_spending(allocator: Any) -> str:
    """The budget line's words before the realised revisit rate is known,
    with how long revisits must run before it is (the allocator's control
    window, from its first revisit): "not measured yet" alone, repeated for
    minutes after the start, reads as if something were stuck.

    >>> unmeasured_spending(None)
    'spending not measured yet'
    """
    if allocator is None:
        return "spending not measured yet"
    window = human(allocator.control_window)
    return f"spending not measured yet (needs at least {window} of revisits: ADAPTIVE_BUDGET_WINDOW)"
