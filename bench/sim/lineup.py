"""The policies the lab compares, built by name, plus the oracles (they need ground truth, so they live here).

Every policy gets the same :class:`LabContext`: the revisit budget, the
wait bounds, the hosts' politeness caps.  Budgeted policies are given the
budget; rule-based ones (Heritrix, Nutch, StormCrawler, precision) have
every time parameter multiplied by ``time_scale``, and
:func:`bench.sim.lab.calibrate` searches the scale that spends the budget
on a small copy of the world.  For a multiplicative rule the scale acts
only through the clamps (its equilibrium is a fixed share of visits finding
a change), so where it cannot reach the budget the rule runs with its own
parameters under a throughput cap (``name/cap``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from bench.peers.nutch import NutchWaitPolicy
from bench.peers.paced import PacedRule
from bench.peers.stormcrawler import StormCrawlerWaitPolicy
from scrapy_adaptive.model import Plan, Visit
from scrapy_adaptive.policies.allocator import RateAllocator
from scrapy_adaptive.policies.base import WaitParams, WaitPolicy
from scrapy_adaptive.policies.budget_pace import BudgetPace
from scrapy_adaptive.policies.burst import BurstWaitPolicy
from scrapy_adaptive.policies.fixed import FixedWaitPolicy
from scrapy_adaptive.policies.heritrix import HeritrixWaitPolicy
from scrapy_adaptive.policies.history import clamp, is_first_visit, policy_memory, visit_queue, visit_time
from scrapy_adaptive.policies.memory import ALLOCATION
from scrapy_adaptive.policies.prior import PopulationPrior
from scrapy_adaptive.policies.rate import PrecisionWaitPolicy, ProportionalWaitPolicy
from scrapy_adaptive.policies.snapback import SnapBackWaitPolicy
from scrapy_adaptive.policies.union import UnionWaitPolicy

from .world import DAY, HOUR, World

# -- Heritrix ---------------------------------------------------------------------------


def heritrix(initial: float, default: float, minimum: float, maximum: float) -> WaitPolicy:
    """The project's Heritrix policy with the thesis factors (1.5, 1.5).

    Built directly, not from settings, so the noise guard stays off: the
    lab's Heritrix line is the thesis's rule.
    """
    factors = {"changed_factor": 1.5, "unchanged_factor": 1.5, "use_overdue": False}
    return HeritrixWaitPolicy(WaitParams(initial=initial, default=default, minimum=minimum, maximum=maximum, **factors))


# -- oracles -----------------------------------------------------------------------------------------


class OracleRatePolicy(WaitPolicy):
    """Proportional allocation with every page's true mean rate.

    The best a rate estimator could ever do: the reference line for the
    estimation loss of :class:`ProportionalWaitPolicy`.
    """

    def __init__(self, rates: Mapping[str, float], allocator: RateAllocator):
        self.rates = rates
        self.allocator = allocator

    def _register(
        self, history: Mapping[str, Any], visit: Visit
    ) -> tuple[float, str, float | None, dict[str, Any] | None]:
        """The page's true rate, its queue, the visit's time, and the memory
        to keep (the allocation registered on a first visit; None: the
        record's stands)."""
        rate = self.rates.get(visit.url or "", 0.0)
        host = visit_queue(visit)
        memory = policy_memory(history)
        kept = None
        if not memory.get(ALLOCATION):
            self.allocator.register(memory, host, rate)
            kept = memory
        now = visit_time(history, visit)
        if not is_first_visit(history):
            self.allocator.note_fetch(now)
        return rate, host, now, kept

    def plan(self, history: Mapping[str, Any], visit: Visit) -> Plan:
        rate, host, _, memory = self._register(history, visit)
        return Plan(self.allocator.wait(host, rate), memory)


class OracleHazardPolicy(OracleRatePolicy):
    """Visits when the true accumulated hazard reaches the page's threshold.

    The threshold is the allocator's r_h (the same budget split as the rate
    oracle); the next visit is at the t where ∫λ from now reaches it, so a
    page is visited often while it is active and rarely while it is quiet.
    """

    def __init__(self, world: World, allocator: RateAllocator):
        super().__init__({p.url: p.rate for p in world.pages}, allocator)
        self.pages = {p.url: p for p in world.pages}

    def plan(self, history: Mapping[str, Any], visit: Visit) -> Plan:
        rate, host, now, memory = self._register(history, visit)
        page = self.pages.get(visit.url or "")
        if page is None or now is None or page.scale <= 0:
            return Plan(self.allocator.wait(host, rate), memory)
        threshold = self.allocator.ratio_for(host)
        target = page.profile.cumulative(now) + threshold / page.scale
        wait = page.profile.inverse(target) - now
        a = self.allocator
        return Plan(clamp(wait, a.min_wait, a.max_wait) if math.isfinite(wait) else a.max_wait, memory)


# -- the line-up -----------------------------------------------------------------------------------------


@dataclass
class LabContext:
    """What every policy of a run is built from."""

    world: World
    budget: float  #: revisits per second
    min_wait: float = HOUR
    #: 90 days: at half a change per fetch the slow half of a log-normal
    #: world wants intervals beyond 28 days, and a clamp there would be a
    #: fetch floor the budget has to pay for
    max_wait: float = 90 * DAY
    initial: float = DAY
    default: float = 3 * DAY
    time_scale: float = 1.0
    precision: float = 0.5
    options: dict[str, Any] = field(default_factory=dict)

    def host_caps(self) -> dict[str, float]:
        return {h.name: 1.0 / h.crawl_delay for h in self.world.hosts.values() if h.crawl_delay}

    def allocator(self) -> RateAllocator:
        """The allocator as the product builds it unless ``options["allocator"]`` says
        otherwise: its loop's window the time 720 revisits take at the budget
        (``ADAPTIVE_BUDGET_WINDOW`` unset), not the class's own default."""
        kw: dict[str, Any] = {"control_window": None, **self.options.get("allocator", {})}
        return RateAllocator(
            self.budget, min_wait=self.min_wait, max_wait=self.max_wait, host_caps=self.host_caps(), epoch="lab", **kw
        )


def _scaled(ctx: LabContext) -> tuple[float, float, float, float]:
    k = ctx.time_scale
    return ctx.initial * k, ctx.default * k, ctx.min_wait * k, ctx.max_wait * k


def _uniform(ctx: LabContext) -> WaitPolicy:
    return FixedWaitPolicy(len(ctx.world.pages) / ctx.budget, jitter=0.1)


def _heritrix(ctx: LabContext) -> WaitPolicy:
    initial, default, lo, hi = _scaled(ctx)
    return heritrix(initial, default, lo, hi)


def _nutch(ctx: LabContext) -> WaitPolicy:
    initial, default, lo, hi = _scaled(ctx)
    return NutchWaitPolicy(initial=initial, minimum=lo, maximum=hi, default=default)


def _storm(ctx: LabContext) -> WaitPolicy:
    initial, default, lo, hi = _scaled(ctx)
    return StormCrawlerWaitPolicy(initial=initial, minimum=lo, maximum=hi, default=default)


def _proportional(ctx: LabContext) -> WaitPolicy:
    return ProportionalWaitPolicy(ctx.allocator(), **ctx.options.get("proportional", {}))


def _burst(ctx: LabContext) -> WaitPolicy:
    return BurstWaitPolicy(ctx.allocator(), **ctx.options.get("burst", {}))


def _precision(ctx: LabContext) -> WaitPolicy:
    _, _, lo, hi = _scaled(ctx)
    # p* → an equivalent hazard per interval; time_scale stretches it
    hazard = -math.log1p(-ctx.precision) * ctx.time_scale
    p = -math.expm1(-hazard)
    return PrecisionWaitPolicy(min(p, 0.999), min_wait=ctx.min_wait, max_wait=ctx.max_wait)


def _snapback(ctx: LabContext) -> WaitPolicy:
    """The snap-back rule on the run's budget (its scale follows the budget)."""
    pace = BudgetPace(ctx.budget, **ctx.options.get("snapback_pace", {}))
    return SnapBackWaitPolicy(
        pace, minimum=ctx.min_wait, maximum=ctx.max_wait, initial=ctx.initial, **ctx.options.get("snapback", {})
    )


def _union(ctx: LabContext) -> WaitPolicy:
    """The sooner of burst's and the snap-back rule's waits, both on the run's budget."""
    return UnionWaitPolicy(_burst(ctx), _snapback(ctx))  # type: ignore[arg-type]


def _paced(peer: str) -> Callable[[LabContext], WaitPolicy]:
    """*peer*'s rule held to the run's budget as the snap-back policy holds StormCrawler's."""

    def make(ctx: LabContext) -> WaitPolicy:
        rule = POLICIES[peer](replace(ctx, time_scale=1.0))
        return PacedRule(rule, BudgetPace(ctx.budget), minimum=ctx.min_wait, maximum=ctx.max_wait)

    return make


def _prior_oracle(ctx: LabContext) -> WaitPolicy:
    """Proportional allocation told the population's true rate distribution.

    Not the pages' rates: what a learner could do if the EM prior were exact
    from the first day.  The gap to ``oracle-rate`` is what learning each
    page's own rate from its visits costs, which no prior removes.
    """
    spec = ctx.world.spec
    prior = PopulationPrior(rate=1.0 / (spec.median_interval_days * DAY), log_sd=spec.rate_sigma, min_count=10**12)
    allocator = RateAllocator(
        ctx.budget, min_wait=ctx.min_wait, max_wait=ctx.max_wait, host_caps=ctx.host_caps(), epoch="lab", prior=prior
    )
    return ProportionalWaitPolicy(allocator)


def _oracle_rate(ctx: LabContext) -> WaitPolicy:
    return OracleRatePolicy({p.url: p.rate for p in ctx.world.pages}, ctx.allocator())


def _oracle_hazard(ctx: LabContext) -> WaitPolicy:
    return OracleHazardPolicy(ctx.world, ctx.allocator())


POLICIES: dict[str, Callable[[LabContext], WaitPolicy]] = {
    "uniform": _uniform,
    "heritrix": _heritrix,
    "nutch": _nutch,
    "stormcrawler": _storm,
    "precision": _precision,
    "proportional": _proportional,
    "burst": _burst,
    "snapback": _snapback,
    "paced-heritrix": _paced("heritrix"),
    "paced-nutch": _paced("nutch"),
    "paced-stormcrawler": _paced("stormcrawler"),
    "union": _union,
    "prior-oracle": _prior_oracle,
    "oracle-rate": _oracle_rate,
    "oracle-hazard": _oracle_hazard,
}

#: policies that honour the budget themselves (no calibration needed)
BUDGETED = set(POLICIES) - {"heritrix", "nutch", "stormcrawler", "precision"}

#: the peers held to the budget, the floor the default must clear (issue 37): each
#: peer's rule made budget-aware the way the default holds StormCrawler's
#: (``snapback`` is :class:`SnapBackWaitPolicy`; Heritrix's and Nutch's rules in
#: normalised time, one crawl-wide scale from the budget) -- the peer a crawler
#: given a daily budget can actually run
HELD_PEERS = ("snapback", "paced-heritrix", "paced-nutch")
#: the peers' rules fitted with hindsight: one time scale over the whole history,
#: searched to spend the budget (the reference to approach, not a floor)
FITTED_PEERS = ("stormcrawler", "heritrix", "nutch")


def with_scale(ctx: LabContext, k: float) -> LabContext:
    return replace(ctx, time_scale=k)
