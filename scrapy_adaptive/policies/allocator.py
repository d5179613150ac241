"""The rate allocator: estimated rates in, waits that spend a fetch budget out.

Archiving versions, the best use of a fetch budget B is *proportional*
allocation: every page is visited at a rate fᵢ ∝ λᵢ, i.e. with the same
expected number of changes r = λᵢ/fᵢ per interval (the derivation is in
``docs/lab/policy-lab.md``).  :class:`RateAllocator` finds the common r\\* by
bisection over aggregate state (a histogram of estimated rates per
politeness queue, not per URL), water-fills queues whose politeness cap
binds (they get a larger r̂_h = λ_h/c_h), clips to [min, max] wait, and
corrects the remaining gap between planned and realised fetches with a slow
feedback loop.  Under the freshness objective (``ADAPTIVE_OBJECTIVE``) the
same machinery solves the knob μ of :mod:`.objective` instead of r: only
how a URL's fetch rate follows its change rate differs.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Mapping
from functools import partial
from typing import Any

from ..config.table import DEFAULTS
from .history import DAY, clamp
from .memory import ALLOCATION
from .objective import VERSIONS, Objective
from .prior import PopulationPrior
from .rate_histogram import FALLBACK_BIN as _FALLBACK_BIN
from .rate_histogram import ZERO_BIN as _ZERO_BIN
from .rate_histogram import cells_rate, log_bracket, solve_ratio

#: revisits an unconfigured budget window holds (3 days at 240 revisits a day)
WINDOW_REVISITS = 720.0

#: the shortest wait the allocator plans with: ``ADAPTIVE_WAIT_MIN = 0``
#: (revisit as soon as politeness allows) still needs a finite fastest
#: fetch rate for the solve in ln r; a millisecond is no bound in practice
SHORTEST_WAIT = 0.001
#: registrations and fetches at least between two solves of a plan already made
MIN_PENDING = 8
#: seconds of crawl time (the visits' own times) at least between two solves
#: of a plan already made, unless ``solve_every`` changes came meanwhile: a
#: crawl fetching dozens of pages a second re-planned every few fetches (the
#: most calls of any part of a revisit) for a ratio that moves by a hair
#: within a second; the budget's feedback works over a window of hours
SOLVE_SPACING_S = 1.0
#: the most expected changes per visit the noise guard is told of (a page
#: the freshness objective leaves at its slowest rate changes at every
#: visit, by plan, not by noise)
MAX_PLANNED_CHANGES = 20.0


class RateAllocator:
    """Turns estimated rates into waits under a fetch budget.

    ``budget`` is in revisits per second, over all URLs; a "host" is a
    politeness queue, the unit politeness caps (``host_caps``: the most
    fetches per second it allows; uncapped hosts never bind).  Aggregate
    state only: per host a histogram of registered rates, and the solved
    common ratio r\\* (plus r̂_h for hosts whose cap binds).  Each URL
    remembers what it registered (:data:`~.memory.ALLOCATION`), so a new
    estimate replaces the old one exactly; registrations of another instance
    (``epoch``, before a restart) are not removed.  Planned and realised
    rates differ (first waits, late visits, moving estimates), so the
    realised revisit rate over ``control_window`` nudges the target,
    multiplicatively, within ``control_limits``.
    """

    def __init__(
        self,
        budget: float | None,
        *,
        target_ratio: float = math.log(2.0),
        min_wait: float = DEFAULTS["ADAPTIVE_WAIT_MIN"],
        max_wait: float = 28 * DAY,
        host_caps: Mapping[str, float] | None = None,
        bins_per_octave: int = 8,
        solve_every: int = 200,
        control_window: float | None = 3 * DAY,
        control_gain: float = 0.5,
        control_limits: tuple[float, float] = (0.5, 2.0),
        prior: PopulationPrior | None = None,
        epoch: str | None = None,
        objective: Objective = VERSIONS,
    ) -> None:
        if budget is not None and budget <= 0:
            raise ValueError("the budget must be positive (fetches per second)")
        if not target_ratio > 0:
            raise ValueError("the target ratio must be positive (expected changes per visit)")
        self.budget = budget
        #: the budget is a ceiling (derived from politeness capacity, not
        #: asked for): no URL is planned below ``target_ratio`` (:meth:`set_budget`)
        self.ceiling = False
        self.target_ratio = target_ratio
        #: what the budget is spent for (without a budget every URL is
        #: planned at ``target_ratio``, whatever it is: :attr:`plan`)
        self.objective = objective
        #: the objective the knob is solved for: the configured one under a
        #: budget, the versions plan at ``target_ratio`` without one
        self.plan = objective if budget is not None else VERSIONS
        self.min_wait = min_wait
        self.max_wait = max_wait
        self.min_fetch_rate = 1.0 / max_wait
        self.max_fetch_rate = 1.0 / max(min_wait, SHORTEST_WAIT)
        self.bins_per_octave = bins_per_octave
        self.solve_every = solve_every
        #: the configured window; None: :data:`WINDOW_REVISITS` at the budget (:attr:`control_window`)
        self.window = control_window
        self.control_gain = control_gain
        self.control_limits = control_limits
        self.prior = prior or PopulationPrior()
        self.epoch = epoch or uuid.uuid4().hex[:8]
        self._hosts: dict[str, dict[int, list[float]]] = {}
        self._global: dict[int, list[float]] = {}
        self._caps: dict[str, float] = dict(host_caps or {})
        self._host_urls: dict[str, int] = {}  #: registered URLs per host
        self._urls = 0  #: registered URLs in all (their sum, asked at every plan)
        self._bound: set[str] = set()  #: capped hosts whose cap can bind (solved on their own)
        self.ratio = 1.0  #: the solved knob: the common r* = λ/f (freshness: μ*, :mod:`.objective`)
        self._host_ratio: dict[str, float] = {}
        self._pending = 0
        self._registered = 0
        self._solved = False
        self._saturated = False  #: the last solve could not plan the whole target
        self.correction = 1.0
        self._count = 0.0
        self._t0: float | None = None
        self._t_last: float | None = None
        self._t_control: float | None = None
        #: the crawl time (the last fetch's) of the last solve
        self._t_solved: float | None = None
        self._registered_at_t0 = 0
        self._hinted = 0.0  #: revisits made on change hints, decayed like _count

    @property
    def control_window(self) -> float:
        """Seconds over which realised revisits are held to the budget.

        Unless configured, the time the budget takes to buy
        :data:`WINDOW_REVISITS` revisits: enough to measure a rate, and on
        the crawl's own time scale (3 days at 240 revisits a day, 4 minutes
        at 250,000 a day), so the loop of a crawl compressed into minutes
        acts within minutes and a real crawl's is not jumpy.
        """
        if self.window is not None:
            return self.window
        if self.budget:
            return WINDOW_REVISITS / self.budget
        return 3 * DAY

    # -- registration ----------------------------------------------------------

    def _cell(self, rate: float, fallback: bool) -> tuple[int, float]:
        """The histogram cell a registered rate counts in, and what it adds
        to the cell's sum (the fallback cell counts URLs in its sum too)."""
        if fallback:
            return _FALLBACK_BIN, 1.0
        return (_ZERO_BIN if rate <= 0 else math.floor(math.log2(rate) * self.bins_per_octave)), rate

    def _cell_add(self, cells: dict[int, list[float]], b: int, rate: float, sign: int) -> None:
        cell = cells.setdefault(b, [0.0, 0.0])
        cell[0] += sign
        cell[1] += sign * rate
        if cell[0] <= 0.5:
            del cells[b]

    def _apply(self, host: str, b: int, rate: float, sign: int) -> None:
        """Add (*sign* 1) or remove (-1) a URL of *host* counting *rate* in cell *b*."""
        self._cell_add(self._hosts.setdefault(host, {}), b, rate, sign)
        self._host_urls[host] = self._host_urls.get(host, 0) + sign
        self._urls += sign
        if host not in self._bound:
            self._cell_add(self._global, b, rate, sign)
        if sign > 0 and host in self._caps and host not in self._bound:
            self._classify(host)

    def _move(self, host: str, b: int, old: float, rate: float) -> bool:
        """A URL of *host* re-registered in the cell *b* it was in (most
        revisits: a rate that moved by less than a bin): its rate moves
        within the cell, no count changes and no host is classified again;
        False when the URL is the cell's only one (the general path then
        removes and adds it, with the same sums)."""
        cell = self._hosts[host].get(b)
        shared = None if host in self._bound else self._global.get(b)
        if cell is None or cell[0] < 2 or (host not in self._bound and (shared is None or shared[0] < 2)):
            return False
        for c in (cell, shared):
            if c is not None:
                c[1] -= old
                c[1] += rate
        return True

    def _classify(self, host: str) -> None:
        """Solve *host* on its own only if its cap can bind.

        A host's demand never exceeds its URLs × the fastest rate (1/min
        wait), so a cap above that cannot bind; such hosts stay in the merged
        histogram.  With thousands of small hosts capped by politeness this
        keeps a solve at O(bins + bins of the hosts that matter) instead of
        O(hosts × bins) per bisection step.
        """
        cap = self._caps.get(host)
        bound = cap is not None and cap < self._host_urls.get(host, 0) * self.max_fetch_rate
        if bound == (host in self._bound):
            return
        sign = -1 if bound else 1
        for b, (n, sm) in list(self._hosts.get(host, {}).items()):
            cell = self._global.setdefault(b, [0.0, 0.0])
            cell[0] += sign * n
            cell[1] += sign * sm
            if cell[0] <= 0.5:
                del self._global[b]
        if bound:
            self._bound.add(host)
        else:
            self._bound.discard(host)
        self._solved = False

    def register(self, memory: dict[str, Any], host: str, rate: float, *, fallback: bool = False) -> None:
        """Replace this URL's registered rate (kept in *memory*) by *rate*;
        *fallback*: nothing is known of the URL, so it counts at whatever
        :meth:`fallback_rate` is when the plan is solved."""
        old = memory.get(ALLOCATION)
        b, counted = self._cell(rate, fallback)
        if old and old[0] == self.epoch and old[1] in self._hosts:
            old_b, old_counted = self._cell(float(old[2]), len(old) > 3 and bool(old[3]))
            if not (old[1] == host and old_b == b and self._move(host, b, old_counted, counted)):
                self._apply(old[1], old_b, old_counted, -1)
                self._apply(host, b, counted, 1)
        else:
            self._apply(host, b, counted, 1)
        memory[ALLOCATION] = [self.epoch, host, rate, 1] if fallback else [self.epoch, host, rate]
        self._registered += 0 if old and old[0] == self.epoch else 1
        self._pending += 1
        self._maybe_solve()

    def _maybe_solve(self) -> None:
        """Re-solve after enough new registrations or fetches.

        "Enough" is ``solve_every`` or 1 % of the registered URLs, whichever
        is smaller, so a freshly started crawl (every URL new) is re-solved
        as it grows instead of running on a plan made for its first URLs;
        and at least :data:`MIN_PENDING`: a crawl of a few URLs would
        otherwise bisect anew at every fetch (a third of the add-on's calls
        per revisit of a one-page crawl) for a plan that moves by a hair;
        and, short of ``solve_every`` changes, at most once per
        :data:`SOLVE_SPACING_S` of crawl time.
        """
        if not self._solved:
            self.solve()
        elif self._pending >= max(MIN_PENDING, min(self.solve_every, self._registered // 100)):
            t, solved = self._t_last, self._t_solved
            if t is None or solved is None or t - solved >= SOLVE_SPACING_S or self._pending >= self.solve_every:
                self.solve()

    def set_host_cap(self, host: str, cap: float | None) -> None:
        """Set (or with None remove) the fetches-per-second cap of *host*."""
        if cap is None:
            self._caps.pop(host, None)
        else:
            self._caps[host] = cap
        self._classify(host)
        self._solved = False

    def capped_hosts(self) -> dict[str, float]:
        """Hosts whose politeness cap binds: their URLs are visited less often
        than the budget would have them (the thesis's "chronically overdue"),
        with how much less: the fetch rate the plan would give the host
        without its cap, over the cap.

        The factor is a ratio of two fetch rates, so it is bounded by the
        host's URLs × the fastest rate (1/min wait) over its cap.
        """
        out: dict[str, float] = {}
        for host in self._bound:
            cap = self._caps.get(host)
            cells = self._hosts.get(host)
            if not cap or not cells:
                continue
            demand = self._cells_rate(cells, self.ratio)
            if demand > cap:
                out[host] = demand / cap
        return out

    def state(self) -> dict[str, Any]:
        """What survives a restart, JSON-safe: the registered rates (per host,
        as histogram cells), the epoch they were registered under, the
        feedback loop's memory and the prior.  Caps are not saved: the
        scheduler sets them again from politeness at open."""
        return {
            "epoch": self.epoch,
            "hosts": {h: [[b, n, sm] for b, (n, sm) in cells.items()] for h, cells in self._hosts.items()},
            "registered": self._registered,
            "registered_at_t0": self._registered_at_t0,
            "correction": self.correction,
            "count": self._count,
            "hinted": self._hinted,
            "t": [self._t0, self._t_last, self._t_control],
            "prior": self.prior.state(),
        }

    def restore(self, state: Mapping[str, Any]) -> None:
        """Continue from :meth:`state` (the current caps are kept)."""
        self.epoch = str(state["epoch"])
        self._hosts = {
            str(h): {int(b): [float(n), float(sm)] for b, n, sm in cells} for h, cells in state["hosts"].items()
        }
        self._host_urls = {h: round(sum(n for n, _ in cells.values())) for h, cells in self._hosts.items()}
        self._urls = sum(self._host_urls.values())
        self._global = {}
        self._bound = set()
        for cells in self._hosts.values():
            for b, (n, sm) in cells.items():
                cell = self._global.setdefault(b, [0.0, 0.0])
                cell[0] += n
                cell[1] += sm
        for host in list(self._caps):
            self._classify(host)
        self._registered = int(state["registered"])
        self._registered_at_t0 = int(state.get("registered_at_t0", 0))
        self.correction = float(state["correction"])
        self._count = float(state["count"])
        self._hinted = float(state.get("hinted", 0.0))
        t0, t_last, t_control = state["t"]
        self._t0, self._t_last, self._t_control = t0, t_last, t_control
        self.prior.restore(state["prior"])
        self._solved = False

    def set_budget(self, budget: float | None, *, ceiling: bool = False) -> None:
        """Revisits per second, or None to visit at ``target_ratio`` instead.

        *ceiling*: the budget is the most the crawl may spend, not what it
        is asked to spend (the crawl's politeness capacity when no budget
        is configured).  The plan then never goes below ``target_ratio``
        expected changes per visit: a capacity far beyond what the pages'
        changes need is not spent refetching pages that do not change.
        """
        self.budget = budget
        self.ceiling = ceiling and budget is not None
        self.plan = self.objective if budget is not None else VERSIONS
        self._solved = False

    def floor_binds(self) -> bool:
        """True when a ceiling budget is not spent because ``target_ratio`` holds the plan back."""
        floor = self._floor()
        return self.ceiling and floor is not None and self.ratio <= floor

    def _floor(self) -> float | None:
        """The knob under which a ceiling budget is not spent (:meth:`.Objective.floor`):
        a URL of the registered URLs' mean rate is planned at no more than
        ``target_ratio`` expected changes per visit."""
        if not self.plan.freshness:
            return self.target_ratio
        n = total = 0.0
        for cells in (self._global, *(self._hosts.get(h, {}) for h in self._bound)):
            for b, (count, rates) in cells.items():
                if b not in (_FALLBACK_BIN, _ZERO_BIN):
                    n += count
                    total += rates
        return self.plan.floor(self.target_ratio, total / n if n > 0 else None)

    # -- the control loop ---------------------------------------------------------

    def note_fetch(self, now: float | None, *, hinted: bool = False) -> None:
        """Count one revisit at *now* (for the budget feedback); *hinted*: a
        visit a change hint brought forward, outside the plan."""
        if now is None:
            return
        if self._t0 is None or self._registered > 2 * self._registered_at_t0:
            # (re)start the measurement when the population has doubled since
            # it began: the revisits counted so far were planned for far
            # fewer URLs (a fresh crawl's first URLs get short waits), and a
            # correction learnt from that start-up burst would starve the
            # crawl for several windows afterwards
            self._t0 = self._t_last = self._t_control = now
            self._count = 0.0
            self._registered_at_t0 = self._registered
        dt = max(0.0, now - (self._t_last or now))
        window = self.control_window
        self._count = self._count * math.exp(-dt / window) + 1.0
        self._hinted = self._hinted * math.exp(-dt / window) + hinted
        self._t_last = max(now, self._t_last or now)
        self._pending += 1
        self._maybe_solve()

    def realised_rate(self) -> float | None:
        """Revisits per second over the control window (None: too early)."""
        if self._t0 is None or self._t_last is None:
            return None
        span = self._t_last - self._t0
        if span < self.control_window:
            return None
        return self._count / (self.control_window * (1.0 - math.exp(-span / self.control_window)))

    def hinted_rate(self) -> float:
        """Revisits per second made on change hints (0 until a quarter window).

        They are paid from the same budget, so the schedule is planned for
        what they leave (see :mod:`.hint_decisions`).
        """
        if self._t0 is None or self._t_last is None or self._t_last - self._t0 < self.control_window / 4:
            return 0.0
        span = self._t_last - self._t0
        return self._hinted / (self.control_window * (1.0 - math.exp(-span / self.control_window)))

    def _control(self) -> None:
        realised = self.realised_rate()
        if self.budget is None or realised is None or realised <= 0 or self._t_control is None or self._t_last is None:
            return
        dt = self._t_last - self._t_control
        self._t_control = self._t_last
        exponent = self.control_gain * dt / self.control_window
        lo, hi = self.control_limits
        # in logs, bounded by what the limits let through: after a long
        # pause (a crawl restarted days later, a page revisited after weeks)
        # dt is thousands of windows and the power overflowed
        factor = math.exp(clamp(exponent * math.log(self.budget / realised), math.log(lo / hi), math.log(hi / lo)))
        if factor > 1 and self._saturated:
            # anti-windup: asking for more than the plan can give changes
            # nothing now and overspends for windows once it can
            return
        self.correction = clamp(self.correction * factor, lo, hi)

    # -- solving -------------------------------------------------------------------

    def _cells_rate(self, cells: dict[int, list[float]], r: float, fallback: float | None = None) -> float:
        """The fetch rate *cells* ask for at ratio *r*; *fallback*: :meth:`fallback_rate`
        as a solve read it once (it holds still while the solve bisects)."""
        fallback = (self.fallback_rate() or 0.0) if fallback is None else fallback
        return cells_rate(cells, r, self.min_fetch_rate, self.max_fetch_rate, fallback, self.plan)

    def _planned_cap(self, host: str) -> float:
        """The fetch rate *host*'s plan may ask for: its politeness cap, times
        the feedback loop's correction under a budget.

        A host planned at exactly its cap realises less than it (a slot
        left idle because nothing was due just then), and the feedback loop,
        held by anti-windup, could not ask for more.  Planned at
        cap × correction it keeps a small backlog; the frontier's politeness
        still bounds what it actually gets.
        """
        cap = self._caps[host]
        return cap * self.correction if self.budget is not None else cap

    def _total(self, r: float, fallback: float | None = None) -> float:
        fallback = (self.fallback_rate() or 0.0) if fallback is None else fallback
        total = self._cells_rate(self._global, r, fallback)
        for host in self._bound:
            cells = self._hosts.get(host)
            if cells:
                total += min(self._planned_cap(host), self._cells_rate(cells, r, fallback))
        return total

    def _bracket(self, *groups: dict[int, list[float]], fallback: float) -> tuple[float, float]:
        return log_bracket(groups, fallback, self.min_fetch_rate, self.max_fetch_rate, self.plan)

    def solve(self) -> None:
        """Recompute r* (and the r̂_h of capped hosts) from the histograms."""
        self._pending = 0
        self._solved = True
        self._t_solved = self._t_last
        if self.budget is None:
            # no budget: every URL gets the target ratio, hosts whose cap
            # binds a larger one (the water-filling below still applies)
            r = self.target_ratio
            fallback = 0.0  # no budget, no fallback rate
        else:
            self._control()
            fallback = self.fallback_rate() or 0.0
            # hinted revisits come first; the schedule keeps at least a tenth
            target = max(self.budget * self.correction - self.hinted_rate(), 0.1 * self.budget)
            if not self._hosts:
                return
            groups = (self._global, *(self._hosts.get(h, {}) for h in self._bound))
            r = solve_ratio(partial(self._total, fallback=fallback), target, self._bracket(*groups, fallback=fallback))
            # the plan cannot spend the target (every URL at its fastest, or
            # its host's cap): the feedback loop must not wind up on it
            self._saturated = self._total(r, fallback) < target * 0.999
            floor = self._floor()
            if self.ceiling and floor is not None and r < floor:
                # a ceiling is not a target: the rest of it stays unspent
                r = floor
                self._saturated = True
        self.ratio = r
        self._host_ratio = {}
        for host in self._bound:
            cap = self._planned_cap(host)
            cells = self._hosts.get(host)
            if cells and self._cells_rate(cells, r, fallback) > cap:
                host_rate = partial(self._cells_rate, cells, fallback=fallback)
                self._host_ratio[host] = solve_ratio(host_rate, cap, self._bracket(cells, fallback=fallback))

    def planned_rate(self) -> float:
        """Fetches per second the current solution plans (for stats)."""
        return self._total(self.ratio) if self._hosts else 0.0

    def urls(self) -> int:
        """URLs with a registered rate (this allocator's epoch)."""
        return max(0, self._urls)

    def fallback_rate(self) -> float | None:
        """With a budget B over N URLs: λ₀ = B/N, the rate of a URL nothing is
        known of (the budget is sized for about one change per revisit it
        buys), so such a URL is revisited after N/B; None without a budget."""
        if self.budget is None:
            return None
        return self.budget * self.correction / max(1, self._urls)

    def planning_ratio(self, host: str | None = None, rate: float | None = None) -> float | None:
        """Expected changes per visit the plan works to, for the noise guard:
        for a URL of *rate* on *host* (the versions objective plans every
        URL at one ratio; the freshness one, fast URLs at more changes per
        visit; None: not known without the rate).

        When the budget buys more than any plan can spend (every URL at its
        fastest), the knob is only an edge; the plan is then at least as
        dense as the budget-free one, so the smaller of its ratio and the
        target ratio is reported.
        """
        if self.plan.freshness:
            if rate is None or rate <= 0:
                return None
            ratio = min(self.plan.changes_per_visit(rate, self.ratio_for(host or "")), MAX_PLANNED_CHANGES)
        else:
            ratio = self.ratio
        return min(ratio, self.target_ratio) if self._saturated else ratio

    def ratio_for(self, host: str) -> float:
        """The knob *host* is planned at (its own where its politeness cap binds)."""
        return self._host_ratio.get(host, self.ratio)

    def changes_per_visit(self, host: str, rate: float) -> float:
        """Expected changes between two planned visits of a URL of *rate* on *host*."""
        return self.plan.changes_per_visit(rate, self.ratio_for(host))

    def wait(self, host: str, rate: float, min_wait: float | None = None, max_wait: float | None = None) -> float:
        """The wait giving *rate* its share: r_h/λ, clipped to [min, max]:
        the allocator's, or the asking policy's own (a stack entry's)."""
        low = self.min_wait if min_wait is None else min_wait
        high = self.max_wait if max_wait is None else max_wait
        if rate <= 0:
            return high
        if not self.plan.freshness:
            return clamp(self.ratio_for(host) / rate, low, high)
        f = self.plan.frequency(rate, self.ratio_for(host))
        return high if f <= 0 else clamp(1.0 / f, low, high)
