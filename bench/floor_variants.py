"""Lab variants of the default tried for the floor (issue 37); registered in the line-up on import.

``union-quietN``: the union whose burst part files intervals under the number
of unchanged visits since the last change, 0 … N−1 and "N or more" (the
product files 0, 1 and "2 or more"), each state's offset learned by the
population as the product learns its three.  The hypothesis it tests: the
rules back off by half again at every quiet visit, the burst plan's wait
stays the same however long the quiet spell (one state for all of it), and
on the OTA halves the union's revisits after a quiet visit, mostly the
burst plan's, yield least.  ``union-quiet2`` is the union, run for run.

``union-d033``: the union whose snap-back part reacts to a change as
Heritrix's rule does (about ÷1.5 instead of halfway to the floor): a
diagnostic of how much of a cell the reaction to a change explains, not a
candidate default (a constant chosen after looking).

Figures: ``docs/lab/policy-real-traces.md``, "Where the held peers win".
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from scrapy_adaptive.policies.burst import BurstWaitPolicy
from scrapy_adaptive.policies.prior import PopulationPrior
from scrapy_adaptive.policies.union import UnionWaitPolicy

from .sim.lineup import LabContext, _snapback, _union, register


class QuietCountBurst(BurstWaitPolicy):
    """The burst policy with states 0 … *quiet* (unchanged visits since the last change, capped)."""

    def __init__(self, allocator: Any, *, quiet: int, **kwargs: Any) -> None:
        states = tuple(range(quiet + 1))
        offsets = [PopulationPrior(1.0, 1.0, min_sd=0.25, epoch=allocator.epoch, key=f"q{s}") for s in states]
        super().__init__(allocator, offsets=offsets, **kwargs)
        self.states, self.first = states, quiet + 1


def _union_quiet(quiet: int):
    def make(ctx: LabContext) -> UnionWaitPolicy:
        burst = QuietCountBurst(ctx.allocator(), quiet=quiet)
        return UnionWaitPolicy(burst, _snapback(ctx))  # type: ignore[arg-type]

    return make


for _n in (2, 4, 6, 8):
    register(f"union-quiet{_n}", _union_quiet(_n), budgeted=True)


def _union_reaction(decrement: float):
    """The union whose snap-back part reacts to a change with *decrement* instead of 0.5
    (a diagnostic of the reaction's share of the gap, not a candidate default)."""

    def make(ctx: LabContext) -> UnionWaitPolicy:
        options = {**ctx.options, "snapback": {**ctx.options.get("snapback", {}), "decrement": decrement}}
        return _union(replace(ctx, options=options))  # type: ignore[return-value]

    return make


register("union-d033", _union_reaction(1 / 3), budgeted=True)
