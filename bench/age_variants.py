"""A lab variant of the default whose rate prior is learned per age class (issue 37); registered on import.

``union-age``: the union whose burst part's population prior
(:class:`~scrapy_adaptive.policies.prior.PopulationPrior`, shared with the
allocator) is split by the URL's age, the time since the crawl first saw
it, in the classes 0–30 days, 30–180 days, 180 days–1 year and over a year
(:data:`AGE_EDGES`, the bins of the measurement, chosen before it).  Each
class's prior is learned as the product learns its one prior (online EM
over the URLs' posteriors), from the contribution each URL made while it
was in that class (its last one there: a URL that has aged out keeps
teaching the class what URLs of that age did); a class with fewer than
the prior's ``min_count`` contributions uses the pooled prior, which is
the product's, unchanged.  The hypothesis it tests: documents change
faster when young, so one prior, dominated by old documents, under-prices a
young one until its own visits outweigh it.

The measurement behind it is :mod:`bench.age_rates`, the diagnostics
:mod:`bench.age_diag`; the figures are in ``docs/lab/policy-real-traces.md``,
"Young documents change faster on OTA and tosback2, not on endoflife; a
prior per age class buys nothing".
"""

from __future__ import annotations

import bisect
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from scrapy_adaptive.model import Visit
from scrapy_adaptive.policies.memory import PRIOR_CONTRIBUTION
from scrapy_adaptive.policies.prior import PopulationPrior
from scrapy_adaptive.policies.union import UnionWaitPolicy

from .sim.lineup import LabContext, _burst, _snapback, register
from .sim.world import DAY

#: the age classes' upper edges (seconds since the crawl first saw the URL)
AGE_EDGES = (30 * DAY, 180 * DAY, 365.25 * DAY)


class AgedPrior:
    """The pooled population prior plus one per age class; :attr:`age` (set by the
    policy before each decision) says which class a URL's estimate draws on and
    teaches.  The aggregate saved with the allocator is the pooled one's."""

    def __init__(self, pooled: PopulationPrior, edges: tuple[float, ...] = AGE_EDGES) -> None:
        self.pooled = pooled
        self.edges = edges
        self.classes = [
            PopulationPrior(min_count=pooled.min_count, epoch=pooled.epoch, key=f"{PRIOR_CONTRIBUTION}a{k}")
            for k in range(len(edges) + 1)
        ]
        #: the age of the URL being decided (None: no class, the pooled prior)
        self.age: float | None = None
        #: how often each class's own prior was used, and the pooled one for lack of contributions
        self.used = [0] * (len(edges) + 1)
        self.fell_back = 0

    def _class(self) -> PopulationPrior | None:
        if self.age is None:
            return None
        return self.classes[bisect.bisect_right(self.edges, self.age)]

    def get(self, fallback_rate: float | None = None) -> tuple[float, float]:
        klass = self._class()
        if klass is not None and klass.learned:
            self.used[self.classes.index(klass)] += 1
            return klass.get()
        self.fell_back += 1
        return self.pooled.get(fallback_rate)

    def update(self, memory: dict[str, Any], log_rate: float | None, variance: float = 0.0) -> None:
        self.pooled.update(memory, log_rate, variance)
        if log_rate is None:
            for klass in self.classes:
                klass.update(memory, None)
            return
        klass = self._class()
        if klass is not None:
            klass.update(memory, log_rate, variance)

    @property
    def learned(self) -> bool:
        return self.pooled.learned

    @property
    def epoch(self) -> str:
        return self.pooled.epoch

    def state(self) -> dict[str, Any]:
        return self.pooled.state()

    def restore(self, state: Mapping[str, Any]) -> None:
        self.pooled.restore(state)


class AgedUnion(UnionWaitPolicy):
    """The union, its burst part's prior an :class:`AgedPrior` told each URL's age."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.first_seen: dict[str, float] = {}

    def decide(self, history: Mapping[str, Any], visit: Visit) -> tuple[float, str]:
        prior = self.allocator.prior
        assert isinstance(prior, AgedPrior)
        now = float(visit.fetched) if visit.fetched is not None else None
        url = str(visit.url or history.get("url"))
        if now is not None:
            seen = history.get("discovered")
            first = self.first_seen.setdefault(url, now if seen is None else float(seen))
            prior.age = max(0.0, now - first)
        else:
            prior.age = None
        try:
            return super().decide(history, visit)
        finally:
            prior.age = None


def _union_age(ctx: LabContext) -> AgedUnion:
    allocator = {**ctx.options.get("allocator", {}), "prior": AgedPrior(PopulationPrior())}
    ctx = replace(ctx, options={**ctx.options, "allocator": allocator})
    return AgedUnion(_burst(ctx), _snapback(ctx))  # type: ignore[arg-type]


register("union-age", _union_age, budgeted=True)
