"""Rate-estimating wait policies: estimate λ per URL, then choose the wait.

Archiving versions, the best use of a fetch budget B is *proportional*
allocation: every page is visited at a rate fᵢ ∝ λᵢ, i.e. with the same
expected number of changes r = λᵢ/fᵢ per interval (the derivation is in
``docs/lab/policy-lab.md``).  Two policies implement it:

* :class:`ProportionalWaitPolicy` – a fetch budget (fetches per second)
  shared by all URLs, spent by a :class:`~.allocator.RateAllocator`
  (aggregate state: a histogram of estimated rates per politeness queue).
* :class:`PrecisionWaitPolicy` – no budget: each interval is chosen so that a
  visit finds a change with probability p\\*: I = −ln(1 − p\\*)/λ̂.

Both estimate λ with :class:`~.estimator.RateEstimator` from the URL's own
last visits (kept in the policy's per-URL memory, returned as its plan's
``memory``), regularised by a log-normal prior learned from the population
(:class:`~.prior.PopulationPrior`), using the server's Last-Modified as an
exact observation once it has proved consistent.  What a visit says in the
crawl log (a first-visit Last-Modified caught lying, the pace that moved)
is the plan's ``notes``, gathered while planning, never written into the
verdict.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, NamedTuple

from ..change.noise_learner import HELD_BACK, HELD_CHANGE, PROBE_ASKED, PROBED
from ..change.trust import HEADER_LIED, HEADER_PACE, VERIFY_ABOVE
from ..config.table import DEFAULTS
from ..frontier.hints import Hint
from ..model import ChangeState, Plan, Visit
from .allocator import RateAllocator
from .base import WaitParams, WaitPolicy
from .belief import HeaderBelief, unchanged_evidence
from .estimator import FIRST_ANSWER, RateEstimator
from .hint_decisions import accept, base_probability, confirmed_hint, hinted_visit, marginal_value
from .history import DAY, clamp, elapsed, policy_memory, record_queue, visit_queue, visit_time
from .memory import AGE_UNCHECKED, ESTIMATE, HELD_INTERVAL, LAST_MODIFIED_AGREEMENT, OBSERVATIONS
from .noise_guard import NoiseDetector, NoiseVerdict, probe_wait
from .prior import PopulationPrior

#: a rate estimate's half-life in maximum waits: 60 days at the 28-day
#: default, so even the slowest page keeps about two intervals in mind
#: (``docs/lab/policy-lab.md``, "The estimator")
HALF_LIFE_MAX_WAITS = 60 / 28
#: the most of a wait taken back for the lateness of the visit it follows
#: (:func:`keep_cadence`): a visit days late after a restart must not make
#: the next ones come at the minimum wait
CADENCE_CREDIT = 0.5


def keep_cadence(wait: float, overdue: float | None, min_wait: float) -> float:
    """The wait after a visit *overdue* seconds late, so that the URL keeps the
    cadence it was planned at: ``wait`` less the lateness, at most
    :data:`CADENCE_CREDIT` of it, never below the minimum wait.

    A budget is spent as planned only if each URL is fetched every ``wait``
    seconds; counted from a late fetch, every interval grows by the
    lateness (the queue's politeness backlog), and at a host near its
    politeness capacity that leaves a share of the budget unspent, too fast
    for the allocator's feedback loop to correct.
    """
    if not overdue or overdue <= 0 or wait <= min_wait:
        return wait
    return max(min_wait, wait - min(overdue, CADENCE_CREDIT * wait))


def scaled_estimator(params: WaitParams) -> RateEstimator:
    """The estimator of a policy built from settings: forgetting on the
    crawl's time scale, so a crawl compressed into minutes (``max`` 300 s:
    an 11-minute half-life) forgets as a real one does over 60 days."""
    return RateEstimator(half_life=HALF_LIFE_MAX_WAITS * params.maximum)


__all__ = ["PopulationPrior", "PrecisionWaitPolicy", "ProportionalWaitPolicy", "RateAllocator", "RateEstimator"]


class Estimate(NamedTuple):
    """What folding one visit into a URL's memory gave a rate policy."""

    #: λ̂, the URL's estimated rate of change (per second)
    rate: float
    #: when the visit happened (None: unknown)
    now: float | None
    #: whether the visit was an observation of the rate
    observed: bool
    #: on a hint-brought visit, the change probability without the hint (the plan's ``hint_base``)
    hint_base: float | None
    #: seconds since the previous visit (None: a first visit), as the record tells
    interval: float | None


class _RatePolicy(WaitPolicy):
    """Observation, estimation and the noise guard shared by rate policies."""

    def __init__(
        self,
        *,
        estimator: RateEstimator | None = None,
        prior: PopulationPrior | None = None,
        min_wait: float = DEFAULTS["ADAPTIVE_WAIT_MIN"],
        max_wait: float = 28 * DAY,
        noise_run: int = 8,
        noise: NoiseDetector | None = None,
    ) -> None:
        self.estimator = estimator or RateEstimator()
        self.prior = prior or PopulationPrior()
        self.min_wait = min_wait
        self.max_wait = max_wait
        #: the noise guard (``noise.py``): ``noise_run`` changed visits in a row start a probe test; 0: off
        self.noise_guard = noise or NoiseDetector(probe_wait(min_wait), suspect_run=noise_run)
        #: a stack entry's ``ADAPTIVE_WAIT_INITIAL`` (set by ``from_params``)
        self.initial: float | None = None
        #: how far an unchecked first-visit Last-Modified age is believed (shared by a stack's instances)
        self.header_belief = HeaderBelief()

    def _estimate(self, history: Mapping[str, Any], visit: Visit, memory: dict[str, Any], notes: list[str]) -> Estimate:
        """Fold this visit into *memory* (the plan's, being made) and the
        words it says into *notes* (the plan's crawl-log words)."""
        now = visit_time(history, visit)
        interval = elapsed(history, visit)
        hint_base = None
        if hinted_visit(history):  # the hint is credited only with what it adds (hints.py)
            hint_base = base_probability(float(memory.get(ESTIMATE) or 0.0), interval)
        observed = aged = False
        held = memory.pop(HELD_INTERVAL, None)
        if HELD_BACK in visit.annotations and interval is not None:
            # a difference held back for a probe: what the interval saw is the
            # probe's to say, so it is observed then (changed or not, and
            # whether the Last-Modified told the truth about it)
            memory[HELD_INTERVAL] = [interval, history.get("fetched"), now]
        elif PROBED in visit.annotations:
            # a noise probe is not a revisit: its few seconds would read as a
            # page changing every second, or never.  The one that settles a
            # held difference observes the held visit's interval, as an edit
            # (it delivers it) or not (the difference was noise)
            settles = HELD_CHANGE in visit.annotations or PROBE_ASKED not in visit.annotations
            if isinstance(held, list) and len(held) == 3 and settles:
                change = ChangeState.CHANGED if HELD_CHANGE in visit.annotations else ChangeState.UNCHANGED
                judged = replace(visit, change=change)
                observed = self.estimator.observe(memory, float(held[0]), judged, held[1], held[2])
                self._check_age(memory, judged, float(held[0]), notes)
            elif isinstance(held, list):
                memory[HELD_INTERVAL] = held  # a second probe settles it
        elif interval is None:
            aged = self.estimator.observe_age(memory, visit, now, self.min_wait)
        elif not confirmed_hint(history, visit):  # timed by the change: see hints.py
            observed = self.estimator.observe(memory, interval, visit, history.get("fetched"), now)
            self._check_age(memory, visit, interval, notes)
        prior = self.prior.get(self.fallback_rate())
        log_rate, variance = self.estimator.posterior(memory, prior)
        rate = math.exp(log_rate)
        memory[ESTIMATE] = rate
        if HEADER_LIED in notes and visit.url:
            self.header_belief.note_liar_rate(visit.url, rate)
        if aged and log_rate < prior[0]:
            # Only an *old* claim is checked (belief.py): one at or above the
            # typical rate costs fetches if it lies, not versions, and its
            # honest checks would teach the belief nothing about old ones.
            memory[AGE_UNCHECKED] = 1
        if memory.get(OBSERVATIONS):
            self.prior.update(memory, log_rate, variance)
        # what the URL's own revisits taught of its class's pace: the rate a
        # lying header of the class would hide until a liar of it is caught
        revisited = False
        for o in memory.get(OBSERVATIONS) or ():  # a loop, not any(): read at every visit
            if int(o[1]) not in FIRST_ANSWER:
                revisited = True
                break
        sibling = log_rate if revisited and not memory.get(AGE_UNCHECKED) else None
        if self.header_belief.note_sibling(memory, visit.url, sibling, self.typical_rate()):
            notes.append(HEADER_PACE)  # the frontier asks recheck_wait
        return Estimate(rate, now, observed, hint_base, interval)

    def _check_age(self, memory: dict[str, Any], visit: Visit, interval: float, notes: list[str]) -> None:
        """A full revisit checks the first visit's age (:mod:`.belief`): a lie
        or a header that moved with the content ends the check and teaches
        the queue's :class:`~.belief.HeaderBelief`; unchanged content under a
        consistent header makes a lie less likely, and ends the check once
        the header's claim dominates.  A 304 acted on saw nothing.  A lie is
        said in *notes*."""
        evidence = memory.get(AGE_UNCHECKED)
        agreement = memory.get(LAST_MODIFIED_AGREEMENT)
        if not evidence or visit.validation == "trusted" or visit.change is ChangeState.UNKNOWN:
            return
        queue = visit_queue(visit)
        if not agreement or agreement[1] > 0 or visit.change is ChangeState.CHANGED:
            del memory[AGE_UNCHECKED]  # no header any more, or caught lying, or it moved with the content
            if agreement:
                lied = agreement[1] > 0
                self.header_belief.note(queue, lied, visit.url)
                if lied:  # the siblings' odds rose: the frontier asks recheck_wait
                    notes.append(HEADER_LIED)
            return
        typical = self.typical_rate()
        evidence = float(evidence) * unchanged_evidence(self.header_belief.lie_rate(typical, visit.url), interval)
        believed = float(memory.get(ESTIMATE) or 0.0)
        if self.header_belief.dominates(queue, believed, typical, evidence, visit.url):
            del memory[AGE_UNCHECKED]
            self.header_belief.note(queue, False, visit.url)
        else:
            memory[AGE_UNCHECKED] = evidence

    def header_doubtful(self, history: Mapping[str, Any]) -> bool:
        """While the URL's first-visit age is unchecked, whether its fetches
        must be verified: always until its own first check (a full revisit)
        has been made, then while the odds that its header lies are above
        ``change.trust.VERIFY_ABOVE`` (its class's checks as they stand now,
        shrunk to its host's and the crawl's, times its own unchanged checks).

        The check ends when the header's claim dominates the mixture, which
        for a page claiming months without a change takes its odds down to
        a hair: until then each revisit was a full download (static pages
        cost 2.5 times HttpCache's fetches, nearly all in full).  The first
        check stays a full download whatever the siblings showed: trusted
        on its class's honest checks alone, a lying page whose siblings'
        checks came first answered 304 and was never caught.  The wait keeps
        following the mixture, and the verification schedules (the URL's
        own, its class's) still sample it."""
        memory = history.get("policy") or {}
        evidence = memory.get(AGE_UNCHECKED)
        if not evidence:
            return False
        if float(evidence) >= 1.0:
            return True  # not checked once yet: its own first check is a full download
        url = history.get("url")
        queue = record_queue(history, url)
        return self.header_belief.url_lie_probability(queue, float(evidence), url) > VERIFY_ABOVE

    def recheck_wait(self, history: Mapping[str, Any]) -> float | None:
        """While the URL's first-visit age is unchecked, the wait its first
        check would get now: its estimate mixed by the odds of a lie as they
        stand (:meth:`first_check_rate`), cut as :meth:`_wait_for` cuts it."""
        memory = history.get("policy") or {}
        rate = memory.get(ESTIMATE)
        if not memory.get(AGE_UNCHECKED) or not rate:
            return None
        url = history.get("url")
        queue = record_queue(history, url)
        return self._wait_for(queue, self.first_check_rate(memory, queue, url, float(rate)))

    def _wait_for(self, queue: str, rate: float) -> float:
        """The wait a URL of *rate* gets in *queue* (before the noise guard)."""
        raise NotImplementedError

    def typical_rate(self) -> float:
        """λ₀: the rate of a URL nothing is known of (the prior's centre)."""
        return math.exp(self.prior.get(self.fallback_rate())[0])

    def first_check_rate(self, memory: Mapping[str, Any], queue: str, url: str | None, rate: float) -> float:
        """The rate the next visit is timed at while the first visit's age is
        unchecked: *rate* (the header believed) mixed with the rate a lie
        would hide by the URL's odds of a lie (:class:`~.belief.HeaderBelief`).

        Only the timing: the URL's budget share stays at *rate*, since the
        mixture stands for a few checks, not a steady rate (registered, it
        would overstate the plan's demand and leave budget unspent:
        ``docs/lab/policy-lab.md``, "How far a first visit's Last-Modified
        is believed")."""
        evidence = memory.get(AGE_UNCHECKED)
        if not evidence:
            return rate
        return self.header_belief.rate(queue, rate, self.typical_rate(), float(evidence), url)

    def fallback_rate(self) -> float | None:
        """The prior's centre until the population has taught it one: the
        crawl's own time scale (None: the configured fallback)."""
        return None

    def noise_check(
        self,
        history: Mapping[str, Any],
        visit: Visit,
        memory: dict[str, Any],
        queue: str,
        rate: float | None = None,
        interval: float | None = None,
    ) -> NoiseVerdict:
        """Fold this visit into the noise guard's state (in *memory*); its verdict.

        Under raw-byte comparison a page with a timestamp or a token
        "changes" at every fetch and would take the budget of the fastest
        page there is; the guard tells it from a fast page by short probes
        and holds it at the maximum wait (:mod:`.noise`).  With normalised
        change detection it sees only real changes and stays quiet.
        *queue*: the URL's politeness queue (``visit_queue``); *rate*: the
        URL's estimated change rate (what the plan's ratio may depend on);
        *interval*: the seconds since the last visit, as the estimate read
        them (None: a first visit).
        """
        ratio = self.planned_ratio(queue, rate)
        return self.noise_guard.observe_visit(memory, history, visit, ratio=ratio, interval=interval)

    def planned_ratio(self, queue: str | None = None, rate: float | None = None) -> float | None:
        """Expected changes per interval the policy plans for a URL of *rate*
        on *queue* (None: unknown)."""
        return None

    def is_noise(self, memory: dict[str, Any]) -> bool:
        """True while the guard holds this URL as noise (read from *memory*)."""
        return self.noise_guard.flagged(memory)


class ProportionalWaitPolicy(_RatePolicy):
    """Estimated rate + proportional allocation of a shared fetch budget."""

    def __init__(
        self,
        allocator: RateAllocator,
        *,
        estimator: RateEstimator | None = None,
        noise_run: int = 8,
        noise: NoiseDetector | None = None,
        min_wait: float | None = None,
        max_wait: float | None = None,
    ) -> None:
        """*min_wait* and *max_wait* bound this policy's waits (default: the
        allocator's); the allocator is the crawl's, shared by a stack whose
        entries may each have their own bounds."""
        super().__init__(
            estimator=estimator,
            prior=allocator.prior,
            min_wait=allocator.min_wait if min_wait is None else min_wait,
            max_wait=allocator.max_wait if max_wait is None else max_wait,
            noise_run=noise_run,
            noise=noise,
        )
        self.allocator = allocator

    @classmethod
    def from_params(cls, params: WaitParams) -> ProportionalWaitPolicy:
        """Bounds from the wait numbers; ``ADAPTIVE_BUDGET`` revisits per day.

        Instances built from the params of one stack share one allocator
        (``params.crawl``), so the whole crawl spends one budget; each
        keeps its own bounds (an entry's ``min``/``max`` bound the URLs it
        matches, not the allocator every URL shares).  Without a
        budget every URL is visited when a change is expected with
        probability ``ADAPTIVE_TARGET_PRECISION`` (r = −ln(1 − p) expected
        changes per visit), which is the allocation a budget of Λ/r would
        buy, without having to know Λ.  A crawl without ``ADAPTIVE_BUDGET``
        gives the allocator a budget from its politeness capacity as a
        ceiling, with that ratio as the floor (:mod:`..frontier.capacity`).
        """
        allocator = params.crawl.allocator_for(params)  # one budget for the whole stack
        policy = cls(allocator, estimator=scaled_estimator(params), min_wait=params.minimum, max_wait=params.maximum)
        policy.initial = params.initial
        policy.header_belief = params.crawl.belief(policy.header_belief)
        return policy

    def plan(self, history: Mapping[str, Any], visit: Visit) -> Plan:
        memory = policy_memory(history)
        notes: list[str] = []
        rate, now, observed, hint_base, interval = self._estimate(history, visit, memory, notes)
        first = interval is None  # (a first visit has no interval)
        queue = visit_queue(visit)
        verdict = self.noise_check(history, visit, memory, queue, rate, interval)
        noise = verdict.flagged
        if noise:
            self.prior.update(memory, None)
            self.header_belief.note_sibling(memory, visit.url, None, self.typical_rate())
        uninformed = not noise and not memory.get(OBSERVATIONS) and self.allocator.budget is not None
        self.allocator.register(memory, queue, 0.0 if noise else rate, fallback=uninformed)
        if not first:
            self.allocator.note_fetch(now, hinted=hint_base is not None)  # only a hinted visit has a hint_base
        scheduled = self.schedule_rate(memory, visit, rate, first=first, observed=observed)
        if self.allocator.plan.freshness:
            # a burst state times the next visit sooner after a change, for
            # the burst's follow-up versions; a freshness plan is cut for the
            # page's long-run rate (a higher one would push the visit away)
            scheduled = rate
        wait_rate = self.first_check_rate(memory, queue, visit.url, scheduled)
        wait = self._wait_for(queue, wait_rate)
        if not first:
            wait = keep_cadence(wait, visit.overdue, self.min_wait)
        return Plan(self.noise_guard.wait(memory, verdict, wait, self.max_wait), memory, hint_base, tuple(notes))

    def planned_ratio(self, queue: str | None = None, rate: float | None = None) -> float | None:
        return self.allocator.planning_ratio(queue, rate)

    def _wait_for(self, queue: str, rate: float) -> float:
        return self.allocator.wait(queue, rate, self.min_wait, self.max_wait)

    def fallback_rate(self) -> float | None:
        """Before the population prior is learned, centre it on the crawl's
        own time scale, so that the same code works on a site compressed
        into minutes and on the real web.

        With a budget B (revisits per second) over N URLs, the budget is
        sized for about one change per revisit it buys: λ₀ = B/N, and a URL
        nothing is known of is revisited after N/B, within capacity from
        the start (a fresh crawl has nothing to learn from before that).
        Without one, λ₀ = r/initial: such a URL is revisited after
        ``ADAPTIVE_WAIT_INITIAL``, as configured.  The fixed fallback (one
        change a week) put a page changing every 15 s five prior standard
        deviations away, and it took the demo minutes at the maximum wait
        to come down.
        """
        allocator = self.allocator
        if allocator.budget is not None:
            return allocator.fallback_rate()
        if self.initial:
            return allocator.target_ratio / clamp(self.initial, self.min_wait, self.max_wait)
        return None

    def schedule_rate(self, memory: dict[str, Any], visit: Visit, rate: float, *, first: bool, observed: bool) -> float:
        """The rate the next wait is cut for: λ̂ here.

        The budget share is always set by the registered λ̂; a subclass may
        condition the *timing* of the next visit on the URL's recent
        verdicts (:class:`~.burst.BurstWaitPolicy`), keeping its own state
        in *memory*.
        """
        return rate

    def hint_wait(self, history: Mapping[str, Any], hint: Hint) -> float | None:
        """Visit now if the source's learned precision beats what the last
        scheduled fetch is worth, φ(r_h) (:mod:`.hint_decisions`).  A subclass with its
        own ``plan`` is not handed hints unless it says how it accounts
        for them."""
        if type(self).plan is not ProportionalWaitPolicy.plan:
            return None
        allocator = self.allocator
        # what a scheduled visit of a URL nothing more is known of captures
        ratio = allocator.changes_per_visit(record_queue(history, hint.url), allocator.fallback_rate() or 0.0)
        return 0.0 if accept(hint, marginal_value(ratio)) else None


class PrecisionWaitPolicy(_RatePolicy):
    """Budget-free: wait until a change is expected with probability p*.

    I = −ln(1 − p*)/λ̂; with exact rates every visit then finds a change
    with probability p* and the share of versions captured is
    p*/(−ln(1 − p*)) (0.72 at p* = 0.5, 0.90 at p* = 0.2).
    """

    def __init__(
        self,
        precision: float = 0.5,
        *,
        min_wait: float = DEFAULTS["ADAPTIVE_WAIT_MIN"],
        max_wait: float = 28 * DAY,
        estimator: RateEstimator | None = None,
        prior: PopulationPrior | None = None,
        noise_run: int = 8,
        noise: NoiseDetector | None = None,
    ) -> None:
        if not 0.0 < precision < 1.0:
            raise ValueError("precision must be in (0, 1)")
        super().__init__(
            estimator=estimator, prior=prior, min_wait=min_wait, max_wait=max_wait, noise_run=noise_run, noise=noise
        )
        self.precision = precision
        self.hazard = -math.log1p(-precision)

    def hint_wait(self, history: Mapping[str, Any], hint: Hint) -> float | None:
        """Visit now if the source's learned precision beats φ(−ln(1 − p*))."""
        return 0.0 if accept(hint, marginal_value(self.hazard)) else None

    def planned_ratio(self, queue: str | None = None, rate: float | None = None) -> float | None:
        return self.hazard

    @classmethod
    def from_params(cls, params: WaitParams) -> PrecisionWaitPolicy:
        """p* = ``ADAPTIVE_TARGET_PRECISION`` within the configured bounds."""
        policy = cls(
            params.target_precision,
            min_wait=params.minimum,
            max_wait=params.maximum,
            estimator=scaled_estimator(params),
        )
        policy.initial = params.initial
        policy.header_belief = params.crawl.belief(policy.header_belief)
        return policy

    def fallback_rate(self) -> float | None:
        """As :meth:`ProportionalWaitPolicy.fallback_rate` without a budget:
        a URL nothing is known of is revisited after ``initial``."""
        return self.hazard / clamp(self.initial, self.min_wait, self.max_wait) if self.initial else None

    def plan(self, history: Mapping[str, Any], visit: Visit) -> Plan:
        memory = policy_memory(history)
        notes: list[str] = []
        estimate = self._estimate(history, visit, memory, notes)
        queue = visit_queue(visit)
        verdict = self.noise_check(history, visit, memory, queue, interval=estimate.interval)
        noise = verdict.flagged
        if noise:
            self.prior.update(memory, None)
            self.header_belief.note_sibling(memory, visit.url, None, self.typical_rate())
        rate = self.first_check_rate(memory, queue, visit.url, estimate.rate)
        wait = self.noise_guard.wait(memory, verdict, self._wait_for(queue, rate), self.max_wait)
        return Plan(wait, memory, estimate.hint_base, tuple(notes))

    def _wait_for(self, queue: str, rate: float) -> float:
        return self.max_wait if rate <= 0 else clamp(self.hazard / rate, self.min_wait, self.max_wait)
