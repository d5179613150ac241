"""The frontier at a glance: queue states, URLs due, overdue percentiles.

Read by the periodic summary (:mod:`scrapy_adaptive.ops.reporting`) and at
open; counting due URLs costs one bounded scan per ready queue.  The overdue
percentiles are those of the URLs due now, read in the same scan: a summary
that said "0 due now; overdue p50 601.7s" (how late past visits had been)
described a backlog that was no longer there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Protocol

from ..store.base import Store
from ..store.keys import time_to_ms
from .hostqueue import HostQueue, QueueState
from .queues import Counts


class Counted(Protocol):
    """What the shape reads of a frontier."""

    store: Store
    clock: Callable[[], float]

    def queues(self) -> Iterator[HostQueue]: ...

    def counts(self) -> Counts: ...


#: due URLs whose lateness is read for the overdue percentiles (each
#: queue's most overdue first); beyond them the due URLs are only counted
OVERDUE_SAMPLE = 10_000


def frontier_shape(frontier: Counted, *, due_limit: int = 200_000) -> dict[str, Any]:
    """The frontier's figures; due URLs are counted up to *due_limit*, and
    how late they are (percentiles, None when none is due) read from up to
    :data:`OVERDUE_SAMPLE` of them."""
    now = frontier.clock()
    queues = list(frontier.queues())
    states = {s: 0 for s in QueueState}
    for q in queues:
        states[q.state(now)] += 1
    due = 0
    late: list[float] = []
    now_ms = time_to_ms(now)
    for q in queues:
        if due >= due_limit:
            break
        if q.head_time() > now:
            continue
        limit = min(due_limit - due, OVERDUE_SAMPLE - len(late))
        times = frontier.store.due_times(q.name, now_ms, limit=limit) if limit > 0 else []
        late.extend(max(0.0, now - ms / 1000) for ms in times)
        if len(times) < limit:
            due += len(times)
        else:  # the sample is full: count the rest
            due += frontier.store.count_due(q.name, now_ms, limit=due_limit - due)
    samples = sorted(late)
    counts = frontier.counts()
    return {
        "urls": counts.urls,
        "never": counts.never,
        "queues": len(queues),
        "ready": states[QueueState.READY],
        "snoozed": states[QueueState.SNOOZED],
        "busy": states[QueueState.BUSY],
        "empty": states[QueueState.EMPTY],
        "out": counts.out,
        "due": due,
        "due_capped": due >= due_limit,
        "overdue_p50": percentile(samples, 0.5),
        "overdue_p95": percentile(samples, 0.95),
        "visits": counts.visits,
        "versions": counts.versions,
        "quarantined": counts.quarantined,
    }


def percentile(ordered: list[float], q: float) -> float | None:
    """The *q* quantile of an ascending list (None when empty)."""
    if not ordered:
        return None
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]
