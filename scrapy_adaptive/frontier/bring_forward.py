"""Bringing known URLs' next visits forward, in bulk.

A curated schedule whose window opens (or that is added to a running crawl)
finds its URLs planned by the wait policy, some of them weeks away; a crawl
resumed with a lower ``ADAPTIVE_WAIT_MIN`` or ``ADAPTIVE_WAIT_MAX`` finds
them planned under the old bound.  Their visits must come sooner without
touching anything else of their records.
The frontier owns the records, so the move is made here, one atomic write
per queue, with the queues' heads kept right as
:meth:`.Frontier.add` does for one URL.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..model import RecordError, UrlRecord
from ..store.base import Batch
from ..store.keys import time_to_ms

if TYPE_CHECKING:
    from .frontier import Frontier
    from .hostqueue import Entry

logger = logging.getLogger(__name__)

#: records moved per write: one batch per queue, bounded so that a host
#: with a million matching URLs is not one huge write
BATCH = 1000


def bring_forward(frontier: Frontier, plan: Callable[[UrlRecord], float | None]) -> int:
    """Scan every record; *plan* answers when the URL's next visit should be
    at the latest (epoch seconds) or None; a URL planned later moves there.

    URLs out (their verdict plans them anew), never to be visited again, or
    unreadable (quarantined when their turn comes) are left alone, and so
    are hosts another worker of a fleet holds (it moves them itself).  A scan
    of the whole store: for rare events (a window opening), not per tick.
    Returns how many visits moved.
    """
    now_ms = time_to_ms(frontier.clock())
    staged: dict[str, list[tuple[bytes, UrlRecord, int]]] = {}
    moved = 0
    for fp, raw in frontier.store.records():
        if frontier.lent(fp) is not None:
            continue
        try:
            record = UrlRecord.from_bytes(raw)
        except RecordError:
            continue
        if record.never:
            continue
        latest = plan(record)
        if latest is None:
            continue
        new_ms = max(now_ms, time_to_ms(latest))
        if new_ms >= record.next_ms:
            continue
        group = staged.setdefault(record.queue, [])
        group.append((fp, record, new_ms))
        if len(group) >= BATCH:
            moved += _write(frontier, record.queue, staged.pop(record.queue))
    for queue, group in staged.items():
        moved += _write(frontier, queue, group)
    return moved


def _write(frontier: Frontier, queue: str, group: list[tuple[bytes, UrlRecord, int]]) -> int:
    book = frontier.book
    q = book.find(queue)
    sharing = frontier.sharing
    if q is None or (sharing is not None and not sharing.issues(queue)):
        return 0  # in a fleet, the worker holding the host moves its URLs
    batch = Batch()
    moves: list[tuple[Entry, Entry]] = []
    for fp, record, new_ms in group:
        old: Entry = (record.directive, record.next_ms, fp)
        new: Entry = (record.directive, new_ms, fp)
        batch.move_entry((queue, *old), (queue, *new))
        record.next_ms = new_ms
        batch.records[queue, fp] = record.to_bytes()
        moves.append((old, new))
    book.write(batch, q)
    for old, new in moves:
        book.moved(q, old, new)
    book.schedule(q)
    return len(moves)


#: the frontier meta key holding the wait bounds the stored plans were made under
BOUNDS_KEY = "wait-bounds"
#: a stored wait within this share of the old minimum was held there by it
AT_BOUND = 0.001


def rebound(frontier: Frontier, minimum: float, maximum: float) -> tuple[int, tuple[float, float] | None]:
    """Bring forward the visits planned under an earlier, wider pair of wait bounds.

    A URL's next visit is planned once, at its last visit, within the
    ``ADAPTIVE_WAIT_MIN`` / ``ADAPTIVE_WAIT_MAX`` of that run.  A user who
    lowers either before resuming expects it to hold now, not after every
    plan made under the old bound has run out (an hour for the default
    minimum, a year for the maximum).  So: with a lower minimum, a URL
    whose wait the old minimum held is due *minimum* after its last fetch;
    with a lower maximum, no URL is due later than *maximum* after it.
    Raised bounds apply from each URL's next visit (a visit planned sooner
    costs one fetch, not a version).  Returns how many visits moved and the
    bounds of the last run (None: none recorded, or unchanged); records the
    new ones.
    """
    store = frontier.store
    raw = store.get_meta(BOUNDS_KEY)
    try:
        old_min, old_max = (float(x) for x in json.loads(raw)) if raw else (minimum, maximum)
    except (ValueError, TypeError) as exc:  # plans follow the new bounds from each URL's next visit
        logger.warning(
            "The state folder's last wait bounds (key m/%s) cannot be read (%s); nothing is brought forward, "
            "and every URL's wait follows this run's ADAPTIVE_WAIT_MIN / ADAPTIVE_WAIT_MAX from its next visit.",
            BOUNDS_KEY,
            exc,
        )
        old_min, old_max = minimum, maximum
    moved = 0
    if old_min > minimum or old_max > maximum:
        moved = bring_forward(frontier, _rebound_plan(old_min, old_max, minimum, maximum))
    # recorded after the moves: a crash between them moves them again, no harm
    store.write(Batch(meta={BOUNDS_KEY: json.dumps([minimum, maximum]).encode()}))
    return moved, None if (old_min, old_max) == (minimum, maximum) else (old_min, old_max)


def _rebound_plan(
    old_min: float, old_max: float, minimum: float, maximum: float
) -> Callable[[UrlRecord], float | None]:
    held = old_min * (1 + AT_BOUND)

    def plan(record: UrlRecord) -> float | None:
        if record.fetched is None:
            return None
        latest = record.fetched + maximum if maximum < old_max else None
        if minimum < old_min and record.wait is not None and record.wait <= held:
            latest = record.fetched + minimum
        return latest

    return plan
