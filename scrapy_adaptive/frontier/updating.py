"""Recording a verdict: the path behind :meth:`.Frontier.update`.

:class:`VerdictWriter` takes the URL's lease back, judges the outcome (a
retry past ``max_retries`` fails), counts and folds the visit into the
record (:mod:`.update_steps`), lets the host facts learn from it, then
writes the record, its queue entry, its pending-delivery mark, its change
event and its queue's counters in one atomic write, and only then moves the
queue's head and slot.  With ``ADAPTIVE_TEXT_DIFF``, a new version's
visible text goes in that write too, and its event carries the diff from
the text kept for the version before (:meth:`VerdictWriter._text`).  The change event of a version awaiting delivery is
held instead, and written with the version's confirmation
(:meth:`.PendingVersions.hold`): a version number is said only once it is
durable, so it names one digest for ever.  A version awaiting delivery is counted in the
record here, in that one write; :meth:`.PendingVersions.confirm` counts it
in the queue and the totals later, without a second record write.
"""

from __future__ import annotations

from collections.abc import Callable

from ..change import text_diff as texts
from ..change.events import BACK, CHANGED, said_gone
from ..model import ChangeState, Outcome, Plan, UrlRecord, Visit
from ..store.base import Batch
from ..store.keys import event_key, time_to_ms
from .hostfacts import HostFacts
from .hostqueue import HostQueue, Politeness
from .leases import Leases
from .pending import Mark, PendingVersions, pending_mark
from .queues import QueueBook
from .sharing import Sharing
from .update_steps import change_event, count_visit, fold_visit, measure, outcome_of, set_outcome_time, undo_update


class VerdictWriter:
    """Folds verdicts into records and writes each in one atomic batch."""

    def __init__(
        self,
        book: QueueBook,
        leases: Leases,
        pending: PendingVersions,
        hosts: HostFacts,
        *,
        history_size: int,
        clock: Callable[[], float],
        sharing: Sharing | None,
        find: Callable[[str, bytes], UrlRecord | None],
        text_diff: int = 0,
    ) -> None:
        self.book = book
        self.leases = leases
        self.pending = pending
        self.hosts = hosts
        self.politeness: Politeness = book.politeness
        self.history_size = history_size
        self.clock = clock
        self.sharing = sharing
        #: reads a record that is not out (a verdict after a restart)
        self.find = find
        #: ``ADAPTIVE_TEXT_DIFF``: a change event's text diff is cut to this many bytes (0: none is made)
        self.text_diff = text_diff

    def write(
        self,
        fp: bytes,
        visit: Visit,
        plan: Plan | None,
        *,
        deliver: bool,
        presence: list[int] | None,
        event: str | None,
    ) -> UrlRecord | None:
        """Record *visit* and its *plan* on URL *fp* (see :meth:`.Frontier.update`)."""
        if (plan is None) == (visit.outcome is Outcome.VISITED):
            raise ValueError(
                f"A {visit.outcome.value} verdict "
                + ("needs its policy's plan." if plan is None else "has no plan: its outcome sets its next time.")
            )
        now = self.clock()
        out = self.leases.take(fp)
        if out is not None:
            record: UrlRecord | None = out.record
        else:
            record = self.find(visit.queue, fp) if visit.queue is not None else None
        if record is None:
            return None
        book = self.book
        q = book.get(record.queue)
        old = (record.queue, record.directive, record.next_ms, fp)
        was_never = record.never
        duration = measure(visit, out, now)
        undo = undo_update(book, self.leases, q, fp, out, record)
        q.urgency_waits.pop(fp, None)  # the verdict plans a new wait
        outcome = outcome_of(record, visit, self.politeness.max_retries)
        set_outcome_time(record, outcome, out, now, self.politeness.retry_delay)
        previous = (record.fetched, record.digest)
        # a changed visit whose items are delivered later waits for them
        # (its pending mark), with the presence delivered before it
        staged = plan is not None and deliver and visit.change is ChangeState.CHANGED
        before = self.pending.presence_before(fp, record) if staged else None
        mark = self._fold(fp, q, record, visit, plan, now, duration, staged=staged)
        self._learn(fp, q, record, visit, plan, presence)
        batch = Batch(records={(record.queue, fp): record.to_bytes()})
        if mark is not None:
            batch.pending[record.queue, fp] = pending_mark(*mark, self.sharing, presence=before)
        diffed = self._text(batch, fp, record, visit, mark, previous[1]) if outcome is Outcome.VISITED else None
        held = None
        if event is not None:
            row = change_event(event, record, visit, now, previous, diffed if event in (CHANGED, BACK) else None)
            where = (record.queue, event_key(time_to_ms(now), fp))
            if mark is None:
                batch.events[where] = row
            else:  # its version is said once confirmed: a restart before then takes the number back
                held = (record.versions, where, row)
        batch.move_entry(old, (record.queue, record.directive, record.next_ms, fp))
        if record.never != was_never:
            q.never += 1 if record.never else -1
            book.totals.schedulable += -1 if record.never else 1
        self._free_slot(fp, q, visit, outcome, now, duration)
        batch.hosts[record.queue] = book.counters(q)
        book.write(batch, q, undo)
        if mark is not None:
            self.pending.written(fp, mark, before)
            if held is not None:
                self.pending.hold(fp, *held)
        book.moved(q, old[1:], (record.directive, record.next_ms, fp))
        book.schedule(q)
        return record

    def _fold(
        self,
        fp: bytes,
        q: HostQueue,
        record: UrlRecord,
        visit: Visit,
        plan: Plan | None,
        now: float,
        duration: float | None,
        *,
        staged: bool,
    ) -> Mark | None:
        """Count and fold a visit and its *plan* into *record* (a verdict
        without a plan is no visit: nothing to fold); the pending mark it
        makes, if any.

        A changed visit is a version in the record at once; *staged* (its
        items delivered later), its queue and the totals count it at its
        confirmation, and the mark keeps what was delivered before it."""
        if plan is None:
            return None
        changed = visit.change is ChangeState.CHANGED
        mark = self.pending.staged(fp, record) if staged else None
        count_visit(q, self.book.totals, record, changed=changed, delivered_later=staged)
        fold_visit(record, visit, plan, now, self.history_size, duration=duration)
        return mark

    def _text(
        self, batch: Batch, fp: bytes, record: UrlRecord, visit: Visit, mark: Mark | None, previous: str | None
    ) -> str | None:
        """Keep a new version's visible text in *batch*, beside its record;
        the diff from the text kept for *previous* (the digest the record
        held before this visit), if one is.

        Keyed by digest, so a diff always starts from the version the event
        names as ``previous_digest``: a version awaiting delivery keeps the
        last delivered version's text too (the mark's digest), because a
        restart takes the pending one back and the record's digest with it
        (:meth:`.PendingVersions.redeliver`); a kill between the two writes
        cannot happen, they are one."""
        if (
            not self.text_diff
            or visit.text is None
            or visit.change is not ChangeState.CHANGED
            or visit.digest is None
            or record.digest != visit.digest
        ):
            return None
        stored = texts.unpack(self.book.store.get_text(record.queue, fp))
        keep = [(visit.digest, visit.text)]
        delivered = None if mark is None else mark[1]
        if delivered is not None and delivered != visit.digest and delivered in stored:
            keep.append((delivered, stored[delivered]))
        batch.texts[record.queue, fp] = texts.pack(keep)
        old = stored.get(previous) if previous is not None else None
        return None if old is None else texts.diff(old, visit.text, self.text_diff)

    def _learn(
        self, fp: bytes, q: HostQueue, record: UrlRecord, visit: Visit, plan: Plan | None, presence: list[int] | None
    ) -> None:
        """What the host facts conclude (the record's notes) of a verdict and
        its *plan* (a visit's only), and the URL's presence."""
        notes = []
        if plan is not None and (lie := self.hosts.observe_validation(q, visit, record)):
            notes.append(lie)
        if settled := self.hosts.settle_hint(q, record, visit, plan):
            notes.append(settled)
        record.notes = notes
        if presence is not None and presence != record.presence:
            q.gone += said_gone(presence) - said_gone(record.presence)
            record.presence = presence
        self.hosts.track_unchecked(fp, record)

    def _free_slot(
        self, fp: bytes, q: HostQueue, visit: Visit, outcome: Outcome, now: float, duration: float | None
    ) -> None:
        """Give the fetch's slot back if its end was not signalled, resting
        from *now* as a fetch of *duration* makes it rest.

        Settled before the counters are built: they carry the wait
        (``next_fetch_ms``), so a restart keeps it."""
        if q.out.get(fp) is not None:
            q.release_slot(fp, now + self.book.rest_after(q, duration or 0.0))
        q.out.pop(fp, None)
        if outcome is Outcome.RETRY and visit.host_level:
            # the host itself is unreachable: every slot rests the retry delay
            q.snooze_all(now + self.politeness.retry_delay)
