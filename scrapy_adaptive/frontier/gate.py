"""``ADAPTIVE_BUDGET`` as a ceiling: revisits issued no faster than it.

The wait policies plan to spend the budget and a loop corrects them by the
revisits the crawl realises, but the loop sees only what politeness let
through: when the plans ask for more than the hosts can take (the union's
two rule families, each sized to the budget, can ask for twice it), the
crawl realises its politeness capacity, above the budget, and the loop
takes many windows to bring that down.  Shrinking the plans to fit changes
which URLs get the visits (``docs/changing-web.md``, "What was tried on
this world": the budget under the union's overlap).  So the plans are left as they are and the frontier
admits revisits at the budget's rate: a token bucket holding
:data:`BURST_SECONDS` of the budget, one token per revisit.

Every revisit takes a token: planned, a retry, a noise probe, a header check,
a page's embed fetched with it, one a hint or a priority brought forward
(they are all fetches the budget pays for).  A URL's first visit goes as it
comes, and so does a known URL the spider asked for again (``dont_filter``):
the spider's own request, not the policy's: while its queue's revisits
wait, a due URL never visited is issued instead (:meth:`RevisitGate.first_visit`).
A fleet's worker holds its share, the budget over the live workers, re-set as
they come and go.  A queue whose next issue would
be a revisit while the bucket is empty is parked (off the heap) and goes
back, the one parked the longest first, as tokens come: a closed gate costs,
per revisit refused, a look at most :data:`FIRST_VISIT_SCAN` entries long,
never a scan of the queues.  Kept in memory: a
restart starts with a full bucket, at most :data:`BURST_SECONDS` of the
budget early.
"""

from __future__ import annotations

from ..model import RecordError, UrlRecord
from ..store.base import Store
from .hostqueue import Entry, HostQueue

#: URLs asked for again remembered until issued (the oldest forgotten beyond)
MAX_ASKED = 10_000

#: due entries of a queue looked through, per revisit refused, for a first
#: visit to issue instead (the look resumes where the last one stopped)
FIRST_VISIT_SCAN = 64

#: how much of the budget the bucket holds (seconds of it): revisits a quiet
#: spell left unspent may be made up this far, no further
BURST_SECONDS = 10.0


class RevisitGate:
    """A token bucket over revisits, and the queues waiting for a token."""

    def __init__(self, per_second: float, now: float) -> None:
        self.rate = self.size = self._tokens = 0.0
        self._at = now
        self.set_rate(per_second, now)
        self._tokens = self.size  # a crawl starts with a full bucket
        #: queues parked while the bucket was empty, in the order they came
        self._parked: dict[str, HostQueue] = {}
        #: URLs the spider asked for again, not yet issued (oldest first)
        self._asked: dict[bytes, None] = {}
        #: per queue, the last due entry looked through for a first visit
        self._looked: dict[str, Entry] = {}
        #: parked queues whose look for a first visit stopped at its bound:
        #: looked at again, one per issue, without waiting for a token
        self._unfinished: dict[str, HostQueue] = {}

    def set_rate(self, per_second: float, now: float) -> None:
        """A new rate from *now* on (the tokens earned until now kept, up to the new size)."""
        if not per_second > 0:
            raise ValueError(f"a revisit ceiling must be > 0 per second, not {per_second!r}")
        self._refill(now)
        self.rate = per_second
        self.size = max(1.0, per_second * BURST_SECONDS)
        self._tokens = min(self._tokens, self.size)

    def _refill(self, now: float) -> None:
        if now > self._at:
            self._tokens = min(self.size, self._tokens + (now - self._at) * self.rate)
            self._at = now

    def take(self, now: float) -> bool:
        """Spend a token for one revisit issued at *now*; False if none is left."""
        self._refill(now)
        if self._tokens >= 1.0:
            self._tokens -= 1.0
            return True
        return False

    def asked(self, fp: bytes) -> None:
        """The spider asked for *fp* again: its next issue takes no token."""
        self._asked[fp] = None
        if len(self._asked) > MAX_ASKED:
            del self._asked[next(iter(self._asked))]  # asked long ago and never issued (forgotten since)

    def admits(self, fp: bytes, now: float) -> bool:
        """May the revisit of *fp* go at *now*: asked for by the spider, or a token spent on it."""
        if fp in self._asked:
            del self._asked[fp]
            return True
        return self.take(now)

    def open_at(self, now: float) -> float:
        """When the next token is there (*now* if one is)."""
        self._refill(now)
        return now if self._tokens >= 1.0 else now + (1.0 - self._tokens) / self.rate

    def first_visit(self, store: Store, q: HostQueue, now_ms: int) -> tuple[Entry, UrlRecord] | None:
        """A due URL of *q* never visited, to issue while its revisits wait
        for tokens, or None.

        A new URL is due from the moment it was found, so it sorts behind
        every revisit of its host that fell due before: with the revisits
        held back it would wait for the whole backlog, while first visits
        spend no budget.  The due entries are read in order from where the
        last look stopped (up to :data:`FIRST_VISIT_SCAN` each time): an
        entry comes back before that point only by being issued and
        planned again, so each is read about once per fall due."""
        start = self._looked.get(q.name, q.head)
        limit = len(q.out) + FIRST_VISIT_SCAN
        read = 0
        for entry in store.queue_entries(q.name, limit=limit, start=start):
            read += 1
            if entry[1] > now_ms:
                break  # the rest is not due (a band above the scheduled one holds due URLs only)
            if entry == start or entry[2] in q.out:
                continue
            self._looked[q.name] = entry
            raw = store.get_record(q.name, entry[2])
            try:
                record = UrlRecord.from_bytes(raw) if raw is not None else None
            except RecordError:
                continue  # quarantined when its turn comes
            if record is not None and not record.visits:
                return entry, record
        else:
            if read == limit:
                self._unfinished[q.name] = q  # stopped at the bound: the look goes on at the next issue
            return None  # the queue's end: new URLs come after the last entry looked at
        self._looked.pop(q.name, None)  # looked through to the first URL not due
        return None

    def found(self, name: str) -> None:
        """A new URL was added to queue *name*: parked, it is looked at again
        at the next issue (its new URL sorts behind the revisits that wait)."""
        q = self._parked.get(name)
        if q is not None:
            self._unfinished[name] = q

    def park(self, q: HostQueue) -> None:
        """*q* waits for a token (taken off the heap by the caller)."""
        self._parked[q.name] = q

    def unpark(self, now: float) -> HostQueue | None:
        """The queue parked the longest, once a token is there for it, else
        one whose look for a first visit is unfinished (None: neither)."""
        if self._parked and self.open_at(now) <= now:
            name = next(iter(self._parked))
            self._unfinished.pop(name, None)
            return self._parked.pop(name)
        if self._unfinished:
            name = next(iter(self._unfinished))
            return self._unfinished.pop(name)
        return None

    def waiting(self) -> float | None:
        """When a parked queue may go again (None: none is parked): at once
        for one whose look for a first visit is unfinished."""
        if self._unfinished:
            return self._at
        return self.open_at(self._at) if self._parked else None

    def __len__(self) -> int:
        return len(self._parked)
