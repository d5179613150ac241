"""What the wait policies of one crawl share: one typed object, one owner.

A crawl has one revisit budget and learns a few things from all its URLs at
once: the rate allocator that spends the budget, how far first-visit
``Last-Modified`` ages are believed (:class:`~.belief.HeaderBelief`), and the
burst policy's offset priors.  The policy stack builds one
:class:`CrawlWide` and hands it to every policy in its parameters
(``WaitParams.crawl``); the budget's spenders, the rate allocator and the
snap-back pace, are made here, once, from the crawl's numbers
(:meth:`CrawlWide.allocator_for`, :meth:`CrawlWide.pace_for`), and every
policy that spends the budget takes the same one.  The scheduler reads the
allocator from here, tells both the budget the politeness capacity allows,
and saves and restores the parts that learn (:mod:`.persist`), under the
names :meth:`CrawlWide.persisted` gives them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from .allocator import RateAllocator
from .budget_pace import BudgetPace
from .history import DAY
from .objective import objective_named

if TYPE_CHECKING:
    from .belief import HeaderBelief
    from .prior import PopulationPrior


class Capacity(Protocol):
    """The politeness capacity of the crawl's hosts (:class:`~..frontier.capacity.HostCapacity`)."""

    #: the budget derived from it and given to the policies (revisits per second; None: none)
    budget: float | None
    #: the share of the capacity revisits may use (None: ``ADAPTIVE_BUDGET`` is set)
    share: float | None

    @property
    def derived(self) -> bool: ...

    def total(self) -> float: ...


class BudgetNumbers(Protocol):
    """The numbers the budget's spenders are made from (a :class:`~.base.WaitParams`)."""

    budget: float | None
    budget_window: float | None
    target_precision: float
    objective: str
    minimum: float
    maximum: float


@dataclass(eq=False)
class CrawlWide:
    """The crawl-wide parts of a policy stack (None: no policy uses it)."""

    #: spends the crawl's one budget (``ADAPTIVE_BUDGET``) over every URL
    allocator: RateAllocator | None = None
    #: how far an unchecked first-visit Last-Modified age is believed
    header_belief: HeaderBelief | None = None
    #: the burst policy's population priors of each state's offset
    burst_offsets: list[PopulationPrior] | None = None
    #: the snap-back policy's budget pace
    pace: BudgetPace | None = None
    #: how often politeness lets the crawl's hosts be fetched: the budget's
    #: ceiling when none is configured (set when the crawl opens its frontier)
    capacity: Capacity | None = None

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

    def share_fleet(self, budget_per_day: float | None, workers: int) -> float | None:
        """In a fleet, ``ADAPTIVE_BUDGET`` (*budget_per_day*) is the fleet's:
        this worker spends its share, budget ÷ live *workers*, on the hosts it
        holds (about that share of the URLs).  Every part that spends the
        budget is given the same share; a part already at it is left alone
        (setting a budget restarts its control window).  Returns the share
        (revisits per second; None: no budget, or no worker yet)."""
        if budget_per_day is None or workers < 1:
            return None
        share = budget_per_day / DAY / workers
        for part in (self.allocator, self.pace):
            if part is not None and part.budget != share:
                part.set_budget(share)
        return share

    def allocator_for(self, params: BudgetNumbers) -> RateAllocator:
        """The crawl's rate allocator, made from the first *params* that ask:
        the budget (``ADAPTIVE_BUDGET``, revisits a day; None: the target
        precision decides), its control window and the catch-all bounds."""
        if self.allocator is None:
            self.allocator = RateAllocator(
                None if params.budget is None else params.budget / DAY,
                target_ratio=-math.log1p(-params.target_precision),
                objective=objective_named(params.objective),
                min_wait=params.minimum,
                max_wait=params.maximum,
                control_window=params.budget_window,
            )
        return self.allocator

    def pace_for(self, params: BudgetNumbers) -> BudgetPace:
        """The crawl's snap-back pace, made from the first *params* that ask."""
        if self.pace is None:
            budget = None if params.budget is None else params.budget / DAY
            self.pace = BudgetPace(budget, horizon=params.budget_window)
        return self.pace

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
