"""The steps of :meth:`~.frontier.Frontier.update` that work on one record.

Each step is a plain function of the record, the verdict (and a visit's
plan) and the numbers it needs, so the update reads as the list of its
steps and each step is tested alone: :func:`measure` the fetch,
:func:`outcome_of` the outcome and :func:`set_outcome_time` (a retry's or a
failure's next time), :func:`count_visit` in the record, its queue and the
totals, and :func:`fold_visit` what the visit saw and its plan into the
record (the next time from the plan's wait); :func:`change_event` is the
outbox row of the visit's change event, and :func:`undo_update` what a
failed write puts back.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from ..change.events import event_row
from ..config.spec import counted
from ..model import Outcome, Plan, UrlRecord, Visit, answers_with_page
from ..store.keys import NEVER_MS, PROBE_DIRECTIVE, time_to_ms

if TYPE_CHECKING:
    from .hostqueue import HostQueue
    from .leases import Lease, Leases
    from .queues import QueueBook, Totals

#: what a visit with a digested body replaces in the record, even with None
#: (a validator the page no longer sends is gone)
SEEN_FIELDS = ("content_type", "size", "digest", "payload_digest", "etag", "last_modified")


def measure(visit: Visit, out: Lease | None, now: float) -> float | None:
    """The fetch's duration: the verdict's, else from the downloader's signals."""
    if visit.duration is not None or out is None:
        return visit.duration
    if out.duration is not None:
        return out.duration
    return max(0.0, now - out.fetch_started) if out.fetch_started is not None else None


def outcome_of(record: UrlRecord, visit: Visit, max_retries: int) -> Outcome:
    """The visit's outcome, a retry past *max_retries* made a failure (the
    record's reason says so; the verdict itself is left as it came)."""
    outcome = visit.outcome
    reason = visit.reason
    if outcome is Outcome.RETRY and record.failures + 1 > max_retries:
        outcome = Outcome.FAILED
        reason = f"{reason or 'error'} (gave up after {counted(max_retries, 'retry', 'retries')})"
    record.outcome = outcome.value
    record.reason = reason
    record.directive = 0  # a preference holds for one issue, not for ever
    return outcome


def set_outcome_time(record: UrlRecord, outcome: Outcome, out: Lease | None, now: float, retry_delay: float) -> None:
    """How overdue the URL was issued, and the next time of a visit that
    did not happen: a retry after *retry_delay*, anything else but a
    visit never (a visit's next time is its plan's, :func:`fold_visit`)."""
    if out is not None:
        record.overdue = round(out.overdue, 3)
    if outcome is Outcome.RETRY:
        record.failures += 1
        record.next_ms = time_to_ms(now + retry_delay)
    elif outcome is not Outcome.VISITED:
        record.next_ms = NEVER_MS


def count_visit(
    q: HostQueue, totals: Totals, record: UrlRecord, *, changed: bool, delivered_later: bool = False
) -> None:
    """A visit in the record, its queue and the totals; a version too if
    *changed*: in the record at once, in its queue and the totals only when
    its items are confirmed delivered if *delivered_later*
    (:meth:`.PendingVersions.confirm`)."""
    record.visits += 1
    record.failures = 0
    q.visits += 1
    totals.visits += 1
    if changed:
        record.versions += 1
        if not delivered_later:
            q.versions += 1
            totals.versions += 1


def change_event(
    event: str,
    record: UrlRecord,
    visit: Visit,
    now: float,
    previous: tuple[float | None, str | None],
    text_diff: str | None = None,
) -> bytes:
    """The outbox row of the change *event* the visit made: with the URL's
    version count (the versions awaiting delivery included), *previous*,
    the capture before the visit (its time and digest), and *text_diff*,
    its visible text's diff since then (``ADAPTIVE_TEXT_DIFF``)."""
    return event_row(
        event,
        record.url,
        now,
        version=record.versions,
        status=visit.status,
        reason=visit.reason,
        digest=record.digest,
        previous_time=previous[0],
        previous_digest=previous[1],
        location=visit.location,
        fields=visit.field_changes,
        text_diff=text_diff or None,
    )


def fold_visit(
    record: UrlRecord, visit: Visit, plan: Plan, now: float, history_size: int, *, duration: float | None = None
) -> None:
    """What the visit saw, into the record; the policy's *plan* beside it:
    its memory, and the next time from its wait.

    A digested body describes the page completely; without one (304, abort,
    no body) only what was seen replaces what is known.  An answer that is
    not the page (a redirect, a 4xx, a 5xx) replaces none of it: its body,
    type and validators are the error page's, and the record keeps the last
    capture, so the page answering again with that content is no new
    version (:func:`~..model.delivers_content`).  A probe (learning
    a page's noise) must come within seconds, ahead of its queue's overdue
    URLs, while the record keeps the plan's wait.
    """
    record.status = visit.status
    record.fetched = now
    record.duration = visit.duration if duration is None else duration
    body_seen = visit.digest is not None
    if visit.status is None or answers_with_page(visit.status):
        for name in SEEN_FIELDS:
            value = getattr(visit, name)
            if value is not None or body_seen:
                setattr(record, name, value)
    if plan.memory is not None:
        record.policy = plan.memory
    if visit.noise is not None:
        record.noise = visit.noise or None
    if visit.fields is not None:
        record.fields = visit.fields
    wait = plan.wait
    record.wait = wait
    if visit.probe is None:
        record.next_ms = time_to_ms(now + wait)
    else:
        record.next_ms = time_to_ms(now + min(wait, visit.probe))
        record.directive = PROBE_DIRECTIVE
    record.history.append([round(now, 3), visit.change.value, visit.status])
    del record.history[:-history_size]


def undo_update(
    book: QueueBook, leases: Leases, q: HostQueue, fp: bytes, out: Lease | None, record: UrlRecord
) -> Callable[[], None]:
    """What a failed write of a verdict puts back: the queue's counts and
    slots, the totals, and the lease with its record as stored."""
    keep = book.keep(q)

    def undo() -> None:
        keep()
        if out is not None:
            # the record object was changed in place: take the stored one
            raw = book.store.get_record(record.queue, fp)
            if raw is not None:
                out.renew(UrlRecord.from_bytes(raw))
            leases.lend(fp, out)

    return undo
