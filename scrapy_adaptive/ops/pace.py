"""What sets the pace of revisits, said in the words of the settings.

A user who added the add-on line wants to know when the crawl comes back to
a page and what to change to make it come back sooner or later.  The
summary log line and ``scrapy frontier report`` say it with these
functions: where the revisit budget comes from (:func:`budget_words`) and
when the next URL is due and which setting decided that wait
(:func:`next_due`).  Only reads: the frontier's queues and one record.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..config.spec import counted
from ..frontier import Frontier
from ..humanize import human
from ..model import Outcome

#: a wait within this share of a bound was cut to it
BOUND_TOLERANCE = 0.01

#: the budget was configured
CONFIGURED = "ADAPTIVE_BUDGET"
#: the budget is a share of the politeness capacity
CAPACITY = "ADAPTIVE_CAPACITY_SHARE"
#: no budget is spent: each wait follows the target precision
PRECISION = "ADAPTIVE_TARGET_PRECISION"


@dataclass(frozen=True)
class Pace:
    """Where the crawl's revisit budget comes from, as far as the caller knows."""

    #: revisits per day planned (None: no budgeted policy)
    per_day: float | None = None
    #: :data:`CONFIGURED`, :data:`CAPACITY` or :data:`PRECISION`
    source: str = PRECISION
    #: politeness capacity, fetches per day (with :data:`CAPACITY`)
    capacity_per_day: float | None = None
    share: float | None = None
    #: the target precision holds the plan below the capacity budget
    precision_binds: bool = False
    wait_min: float = 0.0
    wait_max: float = float("inf")

    @classmethod
    def chosen(
        cls,
        wait_min: float,
        wait_max: float,
        *,
        configured: float | None = None,
        capacity: float | None = None,
        capacity_per_day: float | None = None,
        share: float | None = None,
        precision_binds: bool = False,
        planned: float | None = None,
    ) -> Pace:
        """The one rule, whoever knows the figures (a running crawl, a
        stopped one's state): a *configured* budget first, else a share of
        the politeness *capacity* (revisits per day) once it is known, else
        the target precision's *planned* revisits."""
        if configured is not None:
            return cls(configured, CONFIGURED, wait_min=wait_min, wait_max=wait_max)
        if capacity:
            return cls(
                capacity,
                CAPACITY,
                capacity_per_day=capacity_per_day,
                share=share,
                precision_binds=precision_binds,
                wait_min=wait_min,
                wait_max=wait_max,
            )
        return cls(planned, PRECISION, wait_min=wait_min, wait_max=wait_max)

    def deciding(self) -> str:
        """The setting that decides a wait between the bounds."""
        if self.source == CAPACITY and self.precision_binds:
            return PRECISION
        return self.source


def budget_words(pace: Pace) -> str:
    """``"N revisits/day (ADAPTIVE_BUDGET)"`` or where a derived budget comes from.

    >>> budget_words(Pace(240.0, CONFIGURED))
    '240 revisits/day (ADAPTIVE_BUDGET)'
    >>> budget_words(Pace(43200.0, CAPACITY, capacity_per_day=86400.0, share=0.5))[:48]
    '43200 revisits/day from politeness capacity (ADA'
    """
    if pace.per_day is None:
        return "no budget"
    if pace.source == CONFIGURED:
        return f"{pace.per_day:.0f} revisits/day (ADAPTIVE_BUDGET)"
    if pace.source == CAPACITY:
        return (
            f"{pace.per_day:.0f} revisits/day from politeness capacity ({CAPACITY} {pace.share:g} of "
            f"{pace.capacity_per_day or 0:.0f} fetches/day; ADAPTIVE_BUDGET overrides it)"
        )
    return f"{pace.per_day:.0f} revisits/day planned ({PRECISION}; no ADAPTIVE_BUDGET)"


def next_due(frontier: Frontier, now: float, pace: Pace) -> str:
    """When the next URL is due and what decided it: ``"in 58s (revisit, ADAPTIVE_WAIT_MIN)"``.

    The earliest queue head is read (one record).  Its wait was cut to a
    bound (``ADAPTIVE_WAIT_MIN``, ``ADAPTIVE_WAIT_MAX``), is a retry's
    (``ADAPTIVE_RETRY_DELAY``), or was planned by the budget or the target
    precision (:meth:`Pace.deciding`).
    """
    head = None
    for queue in frontier.queues():
        if queue.head is not None and (head is None or queue.head_time() < head[0]):
            head = (queue.head_time(), queue.name, queue.head[2])
    if head is None or head[0] == float("inf"):
        out = frontier.counts().out  # e.g. a crawl's start URL, at its first summary
        return f"(none scheduled; {counted(out, 'URL')} being fetched)" if out else "(none scheduled)"
    due, name, fp = head
    when = "now" if due <= now else f"in {human(due - now)}"
    record = frontier.get_record(name, fp)
    if record is None:
        return when
    if not record.visits:
        if record.outcome == Outcome.RETRY.value:  # e.g. a site that refused the first fetch
            return f"{when} (a first visit, retried after a failed fetch: ADAPTIVE_RETRY_DELAY)"
        return f"{when} (a first visit)"
    return f"{when} (revisit, {wait_setting(record.wait, record.outcome, pace)})"


def wait_setting(wait: float | None, outcome: str | None, pace: Pace) -> str:
    """The setting that decided a revisit's *wait*.

    >>> wait_setting(10.0, "visited", Pace(wait_min=10.0, wait_max=300.0))
    'ADAPTIVE_WAIT_MIN'
    >>> wait_setting(60.0, "visited", Pace(1.0, CAPACITY, wait_min=10.0, wait_max=300.0))
    'ADAPTIVE_CAPACITY_SHARE'
    """
    if outcome == Outcome.RETRY.value:
        return "ADAPTIVE_RETRY_DELAY"
    if wait is None:
        return pace.deciding()
    if wait <= pace.wait_min * (1 + BOUND_TOLERANCE):
        return "ADAPTIVE_WAIT_MIN"
    if wait >= pace.wait_max * (1 - BOUND_TOLERANCE):
        return "ADAPTIVE_WAIT_MAX"
    return pace.deciding()
