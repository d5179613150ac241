"""Requests the frontier cannot keep, fetched once.

The frontier stores every request so it can rebuild it for each revisit;
one whose callback is not a method of the spider (a lambda, a function of
another object) or whose ``meta`` holds what JSON cannot cannot be rebuilt.
Dropped, its URL was lost, and Scrapy's own one-off commands, whose
callbacks are all their own functions, did nothing in a project with the
add-on: ``scrapy fetch`` and ``scrapy parse`` printed nothing and ``scrapy
shell URL`` waited for ever.  Such a request is now fetched this once,
outside the frontier (no record, no revisit, no verdict), ahead of the
frontier's due URLs; the scheduler says why it cannot be kept.  A URL is
fetched once per crawl process unless the request asks for it again
(``dont_filter``, as the shell's do), so a spider that yields such requests
in a loop cannot loop.

Outside the frontier they are outside its per-host politeness, so they go
out one at a time, ``ADAPTIVE_MIN_DELAY`` apart whatever their hosts: a
one-off command's single request goes at once, and a spider that yields
thousands of them cannot hit a host faster than the frontier would.
"""

from __future__ import annotations

import math
from collections import deque
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from scrapy import Request

#: fingerprints of one-off URLs remembered (then the oldest are forgotten)
SEEN_MAX = 100_000


class OnceQueue:
    """The requests to fetch once, in the order they came, *spacing* seconds apart."""

    def __init__(self, spacing: float = 0.0) -> None:
        self.spacing = spacing
        #: the requests waiting, oldest first; the scheduler tests it for
        #: emptiness at every poll (a deque's truth, no call of ours)
        self.waiting: deque[Request] = deque()
        self._seen: dict[bytes, None] = {}
        self._next_at = -math.inf

    def add(self, fp: bytes, request: Request) -> bool:
        """Queue *request* (URL fingerprint *fp*); False if its URL was
        already fetched once and the request does not ask for it again."""
        if fp in self._seen and not request.dont_filter:
            return False
        self._seen[fp] = None
        if len(self._seen) > SEEN_MAX:
            del self._seen[next(iter(self._seen))]
        self.waiting.append(request)
        return True

    def take(self, now: float) -> Request | None:
        """The next request, if one waits and the spacing since the last has passed."""
        if not self.waiting or now < self._next_at:
            return None
        self._next_at = now + self.spacing
        return self.waiting.popleft()

    def ready_at(self) -> float | None:
        """When the next request may go (None: none waits)."""
        return self._next_at if self.waiting else None

    def __len__(self) -> int:
        return len(self.waiting)
