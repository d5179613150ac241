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
``-snap``, ``-burst``: one family's timing, not run).  ``union-regular``:
the union held, on a URL whose observed change gaps are more regular than a
Poisson process's at 95 % confidence, to no revisit sooner than the URL's
shortest observed gap after its last change (:class:`RegularUnion`;
``-resolved``: only gaps with a quiet visit inside count; ``-respend``: the
revisits the floor saves respent on the same URL after it);
``union-regular-hazard``: on such URLs, each revisit planned where the
gaps' own hazard since the last change reaches the allocator's price
(:class:`HazardRegularUnion`).

Figures: ``docs/lab/policy-real-traces.md``, "Where the held peers win",
"A per-revisit test of eagerness" and "Timing regular documents by their own gaps".
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from scrapy_adaptive.model import ChangeState, Visit
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


#: one-sided significance of the regularity test: a Poisson process's gaps
#: pass it in this share of histories
REGULAR_ALPHA = 0.05
#: change detections a URL keeps (so up to one fewer gaps): the test's sample
REGULAR_KEEP = 9
#: Monte Carlo draws per sample size for the test's critical values (seeded: one table everywhere)
REGULAR_DRAWS = 20_000


def gaps_cv(gaps: list[float]) -> float:
    """The gaps' coefficient of variation (population sd ÷ mean), as ``bench.floor_diag`` classes documents."""
    mean = math.fsum(gaps) / len(gaps)
    if not mean > 0:
        return math.inf
    return math.sqrt(math.fsum((g - mean) ** 2 for g in gaps) / len(gaps)) / mean


_CRITICAL: dict[tuple[int, float], float] = {}


def regular_cv(n: int, alpha: float = REGULAR_ALPHA) -> float:
    """The CV below which *n* gaps are more regular than a Poisson process's at 1 − *alpha*.

    Under the null of exponential gaps (the memoryless change process the
    burst part's rate and every rule's back-off assume) the sample CV of *n*
    gaps has a distribution free of the rate; its *alpha* quantile, taken from
    a seeded simulation, is the critical value.  A URL below it has gaps too
    even for a memoryless process by the URL's own record: a release cadence,
    a daily digest.
    """
    key = (n, alpha)
    if key not in _CRITICAL:
        rng = random.Random(n)
        cvs = sorted(gaps_cv([rng.expovariate(1.0) for _ in range(n)]) for _ in range(REGULAR_DRAWS))
        _CRITICAL[key] = cvs[int(alpha * REGULAR_DRAWS)]
    return _CRITICAL[key]


def regular_gaps(times: list[float]) -> list[float] | None:
    """The gaps between a URL's change detections *times*, if they pass the regularity test; else None."""
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    if len(gaps) < 3 or min(gaps) <= 0:
        return None
    return gaps if gaps_cv(gaps) < regular_cv(len(gaps)) else None


class RegularUnion(UnionWaitPolicy):
    """The union, timed on regular documents by the URL's own gaps (issue 37, the floor).

    The burst part's states count verdicts; neither part sees how long it has
    been since the last change against the URL's usual gap.  On a URL whose
    observed change gaps pass :func:`regular_gaps` (more regular than a
    Poisson process's at 95 %), no change has, by its own record, come sooner
    than its shortest observed gap after the one before: a revisit before
    ``last change + shortest gap`` has an empirical catch probability of
    zero.  The union's wait is kept when it is at least that; otherwise the
    revisit moves to it.  Bursty and irregular URLs (and URLs with fewer than
    three observed gaps) keep the union's waits untouched, as does the noise
    guard.  The "last change" is the visit that detected it, and detection
    gaps carry the visit spacing's jitter on top of the change gaps: the
    shortest detection gap is at most about the shortest change gap, so the
    floor errs early.
    """

    def __init__(self, burst: BurstWaitPolicy, snap: Any, *, respend: bool = False, resolved: bool = False) -> None:
        super().__init__(burst, snap)
        #: count only gaps the visits resolve (``union-regular-resolved``): a change
        #: found by the visit right after another change is a gap no longer than
        #: the polling interval, not a measurement of it, so it restarts the record
        #: (detections at every visit of a burst would otherwise look regular)
        self.resolved = resolved
        #: spend the revisits the floor saves on the same URL, after the floor
        #: (``union-regular-respend``), rather than leave them to the budget loop
        self.respend = respend

    def decide(self, history: Mapping[str, Any], visit: Visit) -> tuple[float, str]:
        wait, family = super().decide(history, visit)
        memory = visit.policy_state if visit.policy_state is not None else {}
        if visit.fetched is None:
            return wait, family
        now = float(visit.fetched)
        times = [float(t) for t in memory.get("rg", ())]
        if visit.change is ChangeState.CHANGED:
            past = history.get("history") or ()
            unresolved = self.resolved and past and past[-1][1] == ChangeState.CHANGED.value
            times = [now] if unresolved else [*times, now][-REGULAR_KEEP:]
            memory["rg"] = times
            visit.policy_state = memory
        gaps = None if self.burst.is_noise(memory) else regular_gaps(times)
        if gaps is None:
            return wait, family
        return self.regular_wait(memory, visit, now - times[-1], gaps, wait, family)

    def regular_wait(
        self, memory: dict[str, Any], visit: Visit, elapsed: float, gaps: list[float], wait: float, family: str
    ) -> tuple[float, str]:
        """The wait on a regular URL, *elapsed* after its last change: the union's *wait* held to the floor."""
        floor = min(gaps) - elapsed
        if self.respend:
            return self._respent(memory, float(visit.fetched or 0.0), wait, family, floor)
        return (floor, family + "-regular") if wait < floor else (wait, family)

    @staticmethod
    def _respent(memory: dict[str, Any], now: float, wait: float, family: str, floor: float) -> tuple[float, str]:
        """The floor, with the URL's revisits kept at the union's count.

        ``ru`` counts the revisits the union's own waits would have made in
        the URL's regular spells (each interval ÷ the union's wait planned at
        its start), ``rn`` those made.  Where the floor binds the revisit waits
        for it; where it does not, a URL behind the union's count has the
        union's wait shortened by rn ÷ ru, so the fetches the floor saved
        before the due time are spent after it, in the same document.
        """
        last = memory.get("rp")
        if last is not None and now > last[0] and last[1] > 0:
            memory["ru"] = float(memory.get("ru", 0.0)) + (now - last[0]) / last[1]
            memory["rn"] = float(memory.get("rn", 0.0)) + 1.0
        memory["rp"] = [now, wait]
        if wait < floor:
            return floor, family + "-regular"
        expected, made = float(memory.get("ru", 0.0)), float(memory.get("rn", 0.0))
        if expected > made > 0:
            return wait * made / expected, family + "-respent"
        return wait, family


register("union-regular", lambda ctx: RegularUnion(_burst(ctx), _snapback(ctx)), budgeted=True)  # type: ignore[arg-type]
register(
    "union-regular-resolved",
    lambda ctx: RegularUnion(_burst(ctx), _snapback(ctx), resolved=True),  # type: ignore[arg-type]
    budgeted=True,
)
register(
    "union-regular-respend",
    lambda ctx: RegularUnion(_burst(ctx), _snapback(ctx), respend=True),  # type: ignore[arg-type]
    budgeted=True,
)


class HazardRegularUnion(RegularUnion):
    """On regular URLs, each revisit where the gaps' hazard since the last change reaches the price.

    :class:`RegularUnion`'s floor times the first revisit after a change and
    loses the fetches it saves to every document (the one budget loop
    stretches all waits alike).  Here the union's forecast, a constant rate,
    is replaced on a regular URL by the URL's own gap distribution (a normal
    with the observed detection gaps' mean and sd), and the wait is where its
    cumulative hazard since the last change grows by the allocator's r*: the
    expected changes a scheduled revisit must cover, the same price every
    other document's wait answers to.  The hazard is near zero early in the
    gap, so the revisit waits; it climbs once the change is due, so the
    revisits come closer together then — the fetches the early gap saves are
    spent in the same document's due window, at the same price.  Past the
    URL's longest observed gap the cadence is broken and the union decides.
    """

    def regular_wait(
        self, memory: dict[str, Any], visit: Visit, elapsed: float, gaps: list[float], wait: float, family: str
    ) -> tuple[float, str]:
        if elapsed >= max(gaps):
            return wait, family
        planned = hazard_wait(gaps, elapsed, self.allocator.ratio_for(visit_queue(visit)))
        return (planned, family + "-regular") if planned is not None else (wait, family)


def hazard_wait(gaps: list[float], elapsed: float, price: float) -> float | None:
    """The wait t at which the cumulative hazard of a normal fitted to *gaps*
    grows by *price* from *elapsed*: S(elapsed + t) = S(elapsed)·e^(−price).
    None where the fit has no spread or the survival is already nil."""
    spread = statistics.pstdev(gaps)
    if not spread > 0 or not price > 0:
        return None
    dist = statistics.NormalDist(statistics.fmean(gaps), spread)
    survival = 1.0 - dist.cdf(elapsed)
    goal = 1.0 - survival * math.exp(-price)
    if not survival > 0 or not 0.0 < goal < 1.0:
        return None
    return max(dist.inv_cdf(goal) - elapsed, 0.0)


register(
    "union-regular-hazard",
    lambda ctx: HazardRegularUnion(_burst(ctx), _snapback(ctx)),  # type: ignore[arg-type]
    budgeted=True,
)
