"""How often politeness lets each queue be fetched, told to a budgeted policy.

A budgeted policy (:class:`~.policies.rate.ProportionalWaitPolicy` and its
kin) spreads its fetches over URLs in proportion to their change rates; a
host whose politeness cannot take its share must be planned at what it can
take (water-filling), or the budget goes unspent.  The frontier knows the
politeness rules, each host's Crawl-delay and measured fetch times; this
module turns them into fetches per second for the policy's allocator.

Without ``ADAPTIVE_BUDGET`` the same caps give the crawl its budget: a share
(``ADAPTIVE_CAPACITY_SHARE``) of the sum of every host's cap, the fetches
per second politeness allows the whole crawl.  A crawl added with the
add-on line alone then revisits as fast as its politeness and
``ADAPTIVE_WAIT_MIN`` allow, and spends that capacity where changes are,
instead of waiting for a fixed first wait of hours whatever it could do.
The budget follows the caps as hosts are met and their fetch times measured.
"""

from __future__ import annotations

from typing import Protocol

from .crawltime import capacity
from .frontier import Frontier

#: a derived budget is given to the policy again only when it moved by more
#: than this share: every new budget makes the allocator solve its plan again
REBUDGET_STEP = 0.02


class HostCaps(Protocol):
    """Who plans with each host's cap: the policies' rate allocator
    (:class:`~.policies.allocator.RateAllocator`)."""

    def set_host_cap(self, host: str, cap: float | None) -> None: ...


class BudgetOwner(Protocol):
    """The budget's owner, the policies' crawl-wide state
    (:class:`~.policies.crawl_state.CrawlWide`), as the capacity sees it:
    told each queue's cap (through its rate allocator) and the budget
    derived from them.  A protocol here, so the frontier imports nothing of
    the policies above it."""

    @property
    def allocator(self) -> HostCaps | None: ...

    def budgeted(self) -> bool: ...

    def set_budget(self, budget: float | None, *, ceiling: bool = False) -> None: ...


def capacity_budget(caps: dict[str, float], share: float) -> float | None:
    """Revisits per second a crawl may spend: *share* of Σ *caps* (fetches
    per second per queue); None while no queue is known.

    >>> capacity_budget({"a": 0.5, "b": 0.25}, 0.5)
    0.375
    """
    total = sum(caps.values())
    return share * total if total > 0 else None


class HostCapacity:
    """Keeps a budgeted policy's per-queue caps, and a budget derived from
    them, in step with the frontier."""

    def __init__(self, frontier: Frontier, crawl: BudgetOwner | None = None, *, share: float | None = None) -> None:
        self.frontier = frontier
        #: the budget's owner (None: no policy stack to tell)
        self.crawl = crawl
        #: the policies' shared rate allocator (None: no policy plans by rates)
        self.allocator = crawl.allocator if crawl is not None else None
        #: the share of the capacity revisits may use (None: ``ADAPTIVE_BUDGET`` is set)
        self.share = share if crawl is not None and crawl.budgeted() else None
        #: fetches per second each known queue allows
        self.caps: dict[str, float] = {}
        #: the budget last derived and given to the policy (revisits per second; None: none)
        self.budget: float | None = None

    @property
    def derived(self) -> bool:
        """True when the crawl's budget comes from its politeness capacity."""
        return self.share is not None

    def total(self) -> float:
        """Fetches per second politeness allows the whole crawl (the queues known)."""
        return sum(self.caps.values())

    def _cap(self, queue: str, cap: float) -> None:
        self.caps[queue] = cap
        if self.allocator is not None:
            self.allocator.set_host_cap(queue, cap)

    def nominal(self, queue: str, crawl_delay: float | None, *, rebudget: bool = True) -> None:
        """Cap *queue* at valence fetches per max(min delay, Crawl-delay),
        before any of its fetch times is known."""
        politeness = self.frontier.politeness
        interval = max(politeness.min_delay, crawl_delay or 0.0, 1e-3)
        self._cap(queue, politeness.valence / interval)
        if rebudget:
            self.rebudget()

    def met(self, queue: str) -> None:
        """A URL of *queue* was added: cap the queue if it is new to us, so a
        derived budget counts a host from its first URL on."""
        if queue in self.caps or self.frontier.sharing is not None:  # a worker counts the hosts it holds
            return
        q = self.frontier.book.find(queue)
        self.nominal(queue, None if q is None else q.crawl_delay)

    def all_nominal(self) -> None:
        for queue in self.frontier.queues():
            self.nominal(queue.name, queue.crawl_delay, rebudget=False)
        self.rebudget()

    def measured(self) -> None:
        """Tighten the caps with measured fetch times.

        A slot's politeness wait counts from the *end* of its fetch, so a
        queue starts at most valence fetches per (fetch time + wait), fewer
        than the nominal valence per delay.  A slow host capped nominally
        would be planned visits it cannot make, and the budget would go
        unspent.
        """
        politeness = self.frontier.politeness
        known = set()
        for queue in self.frontier.queues():
            known.add(queue.name)
            fetch_time = self.frontier.fetch_times.mean(queue.name)
            if fetch_time is not None:
                cap = capacity(
                    queue,
                    fetch_time,
                    delay_factor=politeness.delay_factor,
                    min_delay=politeness.min_delay,
                    max_delay=politeness.max_delay,
                )
                self._cap(queue.name, cap)
            elif queue.name not in self.caps:
                self.nominal(queue.name, queue.crawl_delay, rebudget=False)
        for gone in set(self.caps) - known:  # hosts a worker of a fleet gave back
            del self.caps[gone]
        self.rebudget()

    def rebudget(self) -> None:
        """Give the policy the budget the capacity now allows, when it moved
        by more than :data:`REBUDGET_STEP` (only without ``ADAPTIVE_BUDGET``)."""
        if self.share is None or self.crawl is None:
            return
        budget = capacity_budget(self.caps, self.share)
        if budget is None:
            return
        if self.budget is not None and abs(budget - self.budget) <= REBUDGET_STEP * self.budget:
            return
        self.budget = budget
        self.crawl.set_budget(budget, ceiling=True)
