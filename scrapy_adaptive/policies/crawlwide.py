"""What the wait policies of one crawl share: one typed object, one owner.

A crawl has one revisit budget and learns a few things from all its URLs at
once: the rate allocator that spends the budget, how far first-visit
``Last-Modified`` ages are believed (:class:`~.belief.HeaderBelief`), and the
burst policy's offset priors.  Every policy built from one stack's
parameters gets the same :class:`CrawlWide` (``WaitParams.crawl``): the
first policy that needs a part creates it, the others take it.  The
scheduler reads the allocator from here and saves and restores the parts
that learn (:mod:`.persist`), under the names :meth:`CrawlWide.persisted`
gives them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .allocator import RateAllocator
    from .belief import HeaderBelief
    from .prior import PopulationPrior


@dataclass(eq=False)
class CrawlWide:
    """The crawl-wide parts of a policy stack (None: no policy uses it)."""

    #: spends the crawl's one budget (``ADAPTIVE_BUDGET``) over every URL
    allocator: RateAllocator | None = None
    #: how far an unchecked first-visit Last-Modified age is believed
    header_belief: HeaderBelief | None = None
    #: the burst policy's population priors of each state's offset
    burst_offsets: list[PopulationPrior] | None = None
    #: the snap-back policy's budget pace (:class:`~.snapback.BudgetPace`)
    pace: Any = None

    def budgeted(self) -> bool:
        """True when a policy of the stack spends a budget (an allocator or a pace)."""
        return self.allocator is not None or self.pace is not None

    def set_budget(self, budget: float | None, *, ceiling: bool = False) -> None:
        """Give the crawl's budget (revisits per second) to every part that spends one.

        *ceiling*: the budget is the most the crawl may spend (derived from
        its politeness capacity, not configured); an allocator then keeps
        its target ratio as a floor (:meth:`.RateAllocator.set_budget`) and the
        snap-back policy its least scale (:meth:`.SnapBackWaitPolicy.least_scale`).
        """
        if self.allocator is not None:
            self.allocator.set_budget(budget, ceiling=ceiling)
        if self.pace is not None:
            self.pace.set_budget(budget, ceiling=ceiling)

    def belief(self, fresh: HeaderBelief) -> HeaderBelief:
        """The crawl's header belief; *fresh* becomes it if there is none yet."""
        if self.header_belief is None:
            self.header_belief = fresh
        return self.header_belief

    def offsets(self, fresh: list[PopulationPrior]) -> list[PopulationPrior]:
        """The crawl's burst offset priors; *fresh* become them if there are none yet."""
        if self.burst_offsets is None:
            self.burst_offsets = fresh
        return self.burst_offsets

    def persisted(self) -> dict[str, Any]:
        """The parts that learn, by the names their saved state is stored under."""
        parts = {
            "rate_allocator": self.allocator,
            "header_belief": self.header_belief,
            "burst_offsets": self.burst_offsets,
            "snapback_pace": self.pace,
        }
        return {name: part for name, part in parts.items() if part is not None}
