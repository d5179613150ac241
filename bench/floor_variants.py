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

``union-gate``, ``union-gate-later``, ``union-later``: the per-revisit test
of eagerness (the sooner wait only where the other plan's forecast also
prices the revisit at a fetch), read with a fetch's marginal price φ(r*)
(:class:`GatedUnion`) and with each plan's own price, r* expected changes
(:class:`LaterUnion`: the later of the two waits).  ``union-matched``: the
later plan's timing within a document at the union's rate per document
(:class:`MatchedLater`; ``-time``: matched per unit of the URL's time;
``-snap``, ``-burst``: one family's timing, not run).

Figures: ``docs/lab/policy-real-traces.md``, "Where the held peers win" and
"A per-revisit test of eagerness".
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from scrapy_adaptive.model import Visit
from scrapy_adaptive.policies.burst import BurstWaitPolicy
from scrapy_adaptive.policies.history import visit_queue
from scrapy_adaptive.policies.prior import PopulationPrior
from scrapy_adaptive.policies.union import UnionWaitPolicy

from .sim.lineup import LabContext, _burst, _snapback, _union, register


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


def eager_fraction(ratio: float) -> float:
    """κ(r) = 1 − ln(1 + r)/r: how much sooner than a plan's own wait a revisit
    may come and still be worth one more scheduled fetch by that plan's forecast.

    A plan's wait w is where its forecast reaches the allocator's r* expected
    changes (λ = r*/w); a revisit after t < w catches a version with
    probability 1 − e^(−r*·t/w), and one more scheduled fetch is worth
    φ(r*) = 1 − (1 + r*)e^(−r*) (:func:`~scrapy_adaptive.policies.hint_decisions.marginal_value`,
    the price a change hint must clear).  They are equal at t/w = κ(r*): about
    0.31 at r* = 1, 0.19 at 0.5, 0.11 at 0.25.
    """
    if not ratio > 0:
        return 0.0
    return 1.0 - math.log1p(ratio) / ratio


class CombinedUnion(UnionWaitPolicy):
    """The union's two plans combined otherwise than by the sooner wait
    (:meth:`combine`); the burst part's noise guard still decides for both."""

    def decide(self, history: Mapping[str, Any], visit: Visit) -> tuple[float, str]:
        w_burst, w_snap, memory = self.waits(history, visit)
        if self.burst.is_noise(memory):
            return w_burst, "burst"
        return self.combine(w_burst, w_snap, memory, visit)

    def combine(self, w_burst: float, w_snap: float, memory: dict[str, Any], visit: Visit) -> tuple[float, str]:
        raise NotImplementedError


class GatedUnion(CombinedUnion):
    """The union whose sooner wait is bought only where the other plan's forecast
    also prices the revisit at least one more scheduled fetch (issue 37, the floor).

    Each family's wait is where its own forecast reaches the price; the other
    family's forecast of the sooner revisit is then r*·w_sooner/w_later
    expected changes.  Below κ(r*)·w_later (:func:`eager_fraction`) the other
    plan says the revisit is worth less than a fetch at this budget, and the
    wait is the one at which it is worth exactly that: at a tight budget the
    union's eagerness is held to about a third of the later plan's wait, at a
    generous one to a tenth, with no constant of its own.
    """

    def __init__(self, burst: BurstWaitPolicy, snap: Any, *, fallback_later: bool = False) -> None:
        super().__init__(burst, snap)
        #: a sooner wait that fails the test gives way to the later plan's wait
        #: (True) or to the wait at which the later plan prices it at a fetch (False)
        self.fallback_later = fallback_later

    def combine(self, w_burst: float, w_snap: float, memory: dict[str, Any], visit: Visit) -> tuple[float, str]:
        sooner, later = (w_burst, w_snap) if w_burst <= w_snap else (w_snap, w_burst)
        family = "burst" if w_burst <= w_snap else "snap"
        gate = eager_fraction(self.allocator.ratio_for(visit_queue(visit))) * later
        if sooner >= gate:
            return sooner, family
        return (later, "gated-later") if self.fallback_later else (gate, "gate-" + family)


class LaterUnion(CombinedUnion):
    """The later of the two waits: the gate with each plan's forecast taken at
    its own price in expected changes (λ·t ≥ r*), where it only passes at the
    plan's own wait.  A diagnostic of the gate's far end, not a candidate."""

    def combine(self, w_burst: float, w_snap: float, memory: dict[str, Any], visit: Visit) -> tuple[float, str]:
        return (w_burst, "burst") if w_burst >= w_snap else (w_snap, "snap")


register("union-gate", lambda ctx: GatedUnion(_burst(ctx), _snapback(ctx)), budgeted=True)  # type: ignore[arg-type]
register(
    "union-gate-later",
    lambda ctx: GatedUnion(_burst(ctx), _snapback(ctx), fallback_later=True),  # type: ignore[arg-type]
    budgeted=True,
)
register("union-later", lambda ctx: LaterUnion(_burst(ctx), _snapback(ctx)), budgeted=True)  # type: ignore[arg-type]


class MatchedLater(CombinedUnion):
    """The later plan's timing within a document, the union's allocation across documents.

    The gated unions above time a document's revisits better than the union
    (fewer revisits on the more eager plan's word alone) and lose the budget's
    split: the one loop stretches or shrinks every wait alike to spend the
    target, so the fetches the gate saves go to every document pro rata, to
    quiet ones as much as to the busy ones the union's overlap had given them
    to.  Here each URL's waits are the later of the two plans' times a factor
    of its own, Σ sooner ÷ Σ later over its visits so far, so the URL is
    revisited, over its life, about as often as the union would revisit it,
    and only when, within that, follows the later plan.
    """

    def __init__(self, burst: BurstWaitPolicy, snap: Any, *, shape: str = "later", in_time: bool = False) -> None:
        super().__init__(burst, snap)
        #: whose waits time the URL's revisits: the later plan's, or one family's ("burst", "snap")
        self.shape = shape
        #: match the union's revisits per unit of the URL's time (each plan's
        #: rate 1/w weighted by how long it was in force), not per visit
        self.in_time = in_time

    def combine(self, w_burst: float, w_snap: float, memory: dict[str, Any], visit: Visit) -> tuple[float, str]:
        sooner = min(w_burst, w_snap)
        if self.shape == "later":
            shaped, family = (w_burst, "burst") if w_burst >= w_snap else (w_snap, "snap")
        else:
            shaped, family = (w_burst, "burst") if self.shape == "burst" else (w_snap, "snap")
        if self.in_time:
            return shaped * self._time_factor(memory, visit, sooner, shaped), family
        memory["ms"] = float(memory.get("ms", 0.0)) + sooner
        memory["ml"] = float(memory.get("ml", 0.0)) + shaped
        return shaped * memory["ms"] / memory["ml"], family

    @staticmethod
    def _time_factor(memory: dict[str, Any], visit: Visit, sooner: float, shaped: float) -> float:
        """⟨1/shaped⟩ ÷ ⟨1/sooner⟩ over the URL's time, each plan counted for the
        interval it was in force; this visit's two plans until there is any."""
        last = memory.get("mp")
        interval = visit.fetched - last[2] if last and visit.fetched is not None else None
        if last and interval and interval > 0:
            memory["mts"] = float(memory.get("mts", 0.0)) + interval / last[0]
            memory["mtl"] = float(memory.get("mtl", 0.0)) + interval / last[1]
        memory["mp"] = [sooner, shaped, visit.fetched]
        if memory.get("mts"):
            return float(memory["mtl"]) / float(memory["mts"])
        return sooner / shaped


def _matched(shape: str, in_time: bool = False):
    def make(ctx: LabContext) -> UnionWaitPolicy:
        return MatchedLater(_burst(ctx), _snapback(ctx), shape=shape, in_time=in_time)  # type: ignore[arg-type]

    return make


register("union-matched", _matched("later"), budgeted=True)
register("union-matched-snap", _matched("snap"), budgeted=True)
register("union-matched-burst", _matched("burst"), budgeted=True)
register("union-matched-time", _matched("later", in_time=True), budgeted=True)
