"""``ADAPTIVE_BUDGET`` as a ceiling: revisits issued no faster than it.

The wait policies plan to spend the budget and a loop corrects them by the
revisits the crawl realises, but the loop sees only what politeness let
through: when the plans ask for more than the hosts can take (the union's
two rule families, each sized to the budget, can ask for twice it), the
crawl realises its politeness capacity, above the budget, and the loop
takes many windows to bring that down.  Shrinking the plans to fit changes
which URLs get the visits (``docs/changing-web.md``, "The budget under the
union's overlap").  So the plans are left as they are and the frontier
admits revisits at the budget's rate: a token bucket holding
:data:`BURST_SECONDS` of the budget, one token per revisit.

Every revisit takes a token: planned, a retry, a noise probe, a header check,
a page's embed fetched with it, one a hint or a priority brought forward
(they are all fetches the budget pays for).  A URL's first visit goes as it
comes, and so does a known URL the spider asked for again (``dont_filter``):
the spider's own request, not the policy's.  A fleet's worker holds its
share, the budget over the live workers, re-set as they come and go.  A queue whose next issue would
be a revisit while the bucket is empty is parked (off the heap) and goes
back, the one parked the longest first, as tokens come: a closed gate costs
one record read per queue, never a scan of the queues.  Kept in memory: a
restart starts with a full bucket, at most :data:`BURST_SECONDS` of the
budget early.
"""

from __future__ import annotations

from .hostqueue import HostQueue

#: URLs asked for again remembered until issued (the oldest forgotten beyond)
MAX_ASKED = 10_000

#: how much of the budget the bucket holds (seconds of it): revisits a quiet
#: spell left unspent may be made up this far, no further
BURST_SECONDS = 10.0


class RevisitGate:
    """A token bucket over revisits, and the queues waiting for a token."""

    def __init__(self, per_second: float, now: float) -> None:
        if not per_second > 0:
            raise ValueError(f"a revisit ceiling must be > 0 per second, not {per_second!r}")
        self.rate = per_second
        self.size = max(1.0, per_second * BURST_SECONDS)
        self._tokens = self.size
        self._at = now
        #: queues parked while the bucket was empty, in the order they came
        self._parked: dict[str, HostQueue] = {}
        #: URLs the spider asked for again, not yet issued (oldest first)
        self._asked: dict[bytes, None] = {}

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

    def park(self, q: HostQueue) -> None:
        """*q* waits for a token (taken off the heap by the caller)."""
        self._parked[q.name] = q

    def unpark(self, now: float) -> HostQueue | None:
        """The queue parked the longest, once a token is there for it (None: no
        token yet, or none parked)."""
        if not self._parked or self.open_at(now) > now:
            return None
        name = next(iter(self._parked))
        return self._parked.pop(name)

    def waiting(self) -> float | None:
        """When a parked queue may go again (None: none is parked)."""
        return self.open_at(self._at) if self._parked else None

    def __len__(self) -> int:
        return len(self._parked)
