"""The frontier: URL records, per-host queues and what the crawl knows of each host.

Storage-agnostic (it works over a :class:`~scrapy_adaptive.store.base.Store`)
and pure: no Scrapy, no Twisted.  Besides the queues, leases and pending
versions it owns the host facts:

* :mod:`.hostfacts`: robots.txt ``Crawl-delay``, validator trust, soft-404s and
  parked pages, hint track records, stored with the host's counters;
* :mod:`.hints`: change hints (sitemap ``lastmod``, feed entries) and the
  arithmetic of their sources' track records;
* :mod:`.crawltime`: how long a host takes to crawl once (per-host capacity);
* :mod:`.capacity`: how often politeness lets each host be fetched, for a
  budgeted policy.
"""

from __future__ import annotations

from ..model import ChangeState, Outcome, Plan, UrlRecord, Visit
from ..store.base import Batch, MemoryStore, Store, StoreError
from .adding import AddResult
from .frontier import Frontier, Issued
from .hostqueue import HostQueue, Politeness, QueueState

__all__ = [
    "AddResult",
    "Batch",
    "ChangeState",
    "Frontier",
    "HostQueue",
    "Issued",
    "MemoryStore",
    "Outcome",
    "Plan",
    "Politeness",
    "QueueState",
    "Store",
    "StoreError",
    "UrlRecord",
    "Visit",
]
