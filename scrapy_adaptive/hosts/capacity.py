"""How often politeness lets each queue be fetched, told to a budgeted policy.

A budgeted policy (:class:`~.policies.rate.ProportionalWaitPolicy` and its
kin) spreads its fetches over URLs in proportion to their change rates; a
host whose politeness cannot take its share must be planned at what it can
take (water-filling), or the budget goes unspent.  The frontier knows the
politeness rules, each host's Crawl-delay and measured fetch times; this
module turns them into fetches per second for the policy's allocator.
"""

from __future__ import annotations

from typing import Any

from ..frontier import Frontier
from .crawltime import capacity


class HostCapacity:
    """Keeps a budgeted policy's per-queue caps in step with the frontier."""

    def __init__(self, frontier: Frontier, allocator: Any) -> None:
        self.frontier = frontier
        #: the policies' shared rate allocator (None: no budgeted policy)
        self.allocator = allocator

    def nominal(self, queue: str, crawl_delay: float | None) -> None:
        """Cap *queue* at valence fetches per max(min delay, Crawl-delay),
        before any of its fetch times is known."""
        if self.allocator is None:
            return
        politeness = self.frontier.politeness
        interval = max(politeness.min_delay, crawl_delay or 0.0, 1e-3)
        self.allocator.set_host_cap(queue, politeness.valence / interval)

    def all_nominal(self) -> None:
        for queue in self.frontier.queues():
            self.nominal(queue.name, queue.crawl_delay)

    def measured(self) -> None:
        """Tighten the caps with measured fetch times.

        A slot's politeness wait counts from the *end* of its fetch, so a
        queue starts at most valence fetches per (fetch time + wait), fewer
        than the nominal valence per delay.  A slow host capped nominally
        would be planned visits it cannot make, and the budget would go
        unspent.
        """
        if self.allocator is None:
            return
        politeness = self.frontier.politeness
        for queue in self.frontier.queues():
            fetch_time = self.frontier.fetch_times.mean(queue.name)
            if fetch_time is not None:
                cap = capacity(
                    queue,
                    fetch_time,
                    delay_factor=politeness.delay_factor,
                    min_delay=politeness.min_delay,
                    max_delay=politeness.max_delay,
                )
                self.allocator.set_host_cap(queue.name, cap)
