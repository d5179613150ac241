"""Rate-estimating wait policies: estimate λ per URL, then allocate fetches.

Archiving versions, the best use of a fetch budget B is *proportional*
allocation: every page is visited at a rate fᵢ ∝ λᵢ, i.e. with the same
expected number of changes r = λᵢ/fᵢ per interval (the derivation is in
``docs/policy-lab.md``).  Two policies implement it:

* :class:`ProportionalWaitPolicy` – a fetch budget (fetches per second)
  shared by all URLs.  A :class:`RateAllocator` (aggregate state: a
  histogram of estimated rates per host, not per URL) finds the common r\\*
  by bisection, water-fills hosts whose politeness cap binds (they get a
  larger r̂_h = λ_h/c_h), clips to [min, max] wait, and corrects the
  remaining gap between planned and realised fetches with a slow feedback
  loop.
* :class:`PrecisionWaitPolicy` – no budget: each interval is chosen so that a
  visit finds a change with probability p\\*: I = −ln(1 − p\\*)/λ̂.

Both estimate λ with :class:`RateEstimator` from the URL's own last visits
(kept in ``visit.policy_state``), regularised by a log-normal prior learned
from the population (:class:`PopulationPrior`), using the server's
Last-Modified as an exact observation once it has proved consistent.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from ..frontier.hints import Hint
from ..frontier.record import ChangeState, Visit
from .base import WaitParams, WaitPolicy
from .estimators import posterior_log_rate
from .hints import accept, base_probability, confirmed_hint, hinted_visit, marginal_value
from .history import DAY, clamp, elapsed, is_first_visit, policy_memory, visit_time
from .noise import NoiseDetector, NoiseVerdict

# -- the population prior -------------------------------------------------------------


class PopulationPrior:
    """Log-normal prior on λ, learned from the whole population (empirical Bayes).

    The prior is what a URL's rate is believed to be before its own visits
    say much, so it decides the early allocation, and early allocation is
    most of what a learner loses against an oracle.  It is fitted by
    online EM over every URL with at least one observation: each URL
    contributes the Laplace posterior of its u = ln λ, a mode m and a
    variance v, and the prior is μ = mean(m), σ² = mean(v + m²) − μ².
    Learning only from *mature* URLs (many observations) would be biased:
    fast pages mature first, so the prior would sit too high for months
    (switching to EM over all URLs took the Poisson world at 0.5Λ from 84.0
    to 86.6 % efficiency, within a point of a prior told the truth).

    The Laplace variance misses the long right tail of a URL that changed
    at each of its few visits, so σ comes out narrower than the truth (0.7
    for 1.0 with three visits per URL).  Exact moments by quadrature were
    tried and lost 0.6–0.8 points: with the posterior *mode* setting the
    wait, a little extra shrinkage of sparse histories pays.

    Aggregate state only (three sums).  A URL keeps its last contribution in
    its memory (``pp`` = ``[epoch, m, v]``) so that a new one replaces it
    exactly; contributions made by another instance (``epoch``, e.g. before
    a restart) are left alone.  Contributions are computed under the prior
    of the moment, so the sums converge as URLs are revisited, which is the
    E-step done incrementally.  Until ``min_count`` URLs contribute, the
    configured fallback is used.
    """

    def __init__(
        self,
        rate: float = 1.0 / (7 * DAY),
        log_sd: float = 2.0,
        *,
        min_count: int = 50,
        min_sd: float = 0.5,
        epoch: str | None = None,
        key: str = "pp",
    ) -> None:
        self.fallback = (math.log(rate), log_sd)
        self.key = key  #: where a URL's memory keeps its contribution
        self.min_count = min_count
        self.min_sd = min_sd
        self.epoch = epoch or uuid.uuid4().hex[:8]
        self.n = 0
        self.s1 = 0.0
        self.s2 = 0.0

    def _add(self, m: float, v: float, sign: int) -> None:
        self.n += sign
        self.s1 += sign * m
        self.s2 += sign * (m * m + v)

    def update(self, memory: dict[str, Any], log_rate: float | None, variance: float = 0.0) -> None:
        """Replace this URL's contribution (kept in *memory*); None withdraws it."""
        old = memory.pop(self.key, None)
        if old and old[0] == self.epoch:
            self._add(float(old[1]), float(old[2]), -1)
        if log_rate is not None and math.isfinite(log_rate):
            m, v = round(log_rate, 6), round(max(0.0, variance), 6)
            self._add(m, v, 1)
            memory[self.key] = [self.epoch, m, v]

    def state(self) -> dict[str, Any]:
        """The aggregate, JSON-safe (saved with the frontier, see :mod:`.persist`)."""
        return {"epoch": self.epoch, "n": self.n, "s1": self.s1, "s2": self.s2}

    def restore(self, state: Mapping[str, Any]) -> None:
        """Continue from a saved aggregate: same epoch, so URLs' contributions
        made before the restart are replaced exactly when they are revisited."""
        self.epoch = str(state["epoch"])
        self.n, self.s1, self.s2 = int(state["n"]), float(state["s1"]), float(state["s2"])

    @property
    def learned(self) -> bool:
        """True once enough URLs contribute for the fallback to be replaced."""
        return self.n >= self.min_count

    def get(self) -> tuple[float, float]:
        """(μ, σ) of ln λ (λ in changes per second)."""
        if self.n < self.min_count:
            return self.fallback
        mean = self.s1 / self.n
        var = max(self.s2 / self.n - mean * mean, 0.0)
        return mean, max(self.min_sd, math.sqrt(var))


# -- per-URL estimation ---------------------------------------------------------------------

#: observation kinds stored in the per-URL memory
UNCHANGED, CHANGED, EXACT = 0, 1, 2


def _http_time(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


@dataclass
class RateEstimator:
    """Keeps a URL's last observations in its memory and estimates λ.

    Memory keys: ``o`` – the last ``window`` observations as
    ``[seconds, kind]`` (kind 0 unchanged interval, 1 changed interval,
    2 exact age of a change known from Last-Modified); ``lm`` – how many
    times the URL's Last-Modified agreed (``[good, bad]``) with what the
    content comparison said; ``e`` – the last estimate.

    A bounded window makes the estimate forget: rates drift, and an old
    interval should not outvote recent ones for ever.
    """

    window: int = 24
    #: seconds after which an observation counts half (None: no discount).
    #: Rates drift: on the Open Terms Archive replay (14 years) 60 days took
    #: the burst policy from 84–86 % to 95 % of the hindsight optimum at 1×,
    #: and cost nothing on the stationary simulated worlds (30 days: 92 %,
    #: 180 days: 90 %).
    half_life: float | None = 60 * DAY
    trust_last_modified: bool = True

    def observe(
        self, memory: dict[str, Any], interval: float, visit: Visit, previous_fetch: float | None, now: float | None
    ) -> bool:
        """Append this visit's observation to *memory*; False if it made none."""
        if visit.change is ChangeState.UNKNOWN or interval <= 0:
            return False
        changed = visit.change is ChangeState.CHANGED
        obs: list[list[int]] = [list(o) for o in memory.get("o", [])]
        entry = [max(1, round(interval)), CHANGED if changed else UNCHANGED]
        if self.trust_last_modified and visit.last_modified and previous_fetch is not None and now is not None:
            modified = _http_time(visit.last_modified)
            if modified is not None:
                good, bad = memory.get("lm", [0, 0])
                consistent = (previous_fetch < modified <= now + 1) if changed else (modified <= previous_fetch + 1)
                if consistent:
                    good += 1
                else:
                    bad += 1
                memory["lm"] = [good, bad]
                if changed and consistent and bad == 0:
                    entry = [max(1, round(now - modified)), EXACT]
        obs.append(entry)
        memory["o"] = obs[-self.window :]
        return True

    def estimate(self, memory: Mapping[str, Any], prior: tuple[float, float]) -> float:
        return math.exp(self.posterior(memory, prior)[0])

    def posterior(self, memory: Mapping[str, Any], prior: tuple[float, float]) -> tuple[float, float]:
        """Laplace posterior of ln λ: (mode, variance).

        Observations are consecutive intervals, so an entry's age is the sum
        of the intervals after it; with a ``half_life`` each counts for
        2^(−age/half_life).
        """
        changed: list[float] = []
        weights: list[float] = []
        exposure = 0.0
        exact = 0.0
        age = 0.0
        decay = math.log(2.0) / self.half_life if self.half_life else 0.0
        for entry in reversed(memory.get("o", [])):
            seconds, kind = float(entry[0]), entry[1]
            w = math.exp(-decay * age) if decay else 1.0
            age += seconds
            if kind == CHANGED:
                changed.append(seconds)
                weights.append(w)
            else:
                exposure += w * seconds
                exact += w * (kind == EXACT)
        return posterior_log_rate(
            changed, exposure, exact, prior[0], prior[1], start=memory.get("e"), weights=weights
        )



def default_host(url: str | None) -> str:
    """The politeness key the allocator groups by: the URL's host name."""
    if not url:
        return ""
    return urlsplit(url).hostname or ""


# -- the allocator ------------------------------------------------------------------------------

_ZERO_BIN = -(10**6)


class RateAllocator:
    """Turns estimated rates into waits under a fetch budget.

    ``budget`` is in revisits per second, over all URLs.  The allocator
    holds aggregate state only: per host, a histogram of registered rates
    (count and sum per bin, ``bins_per_octave`` bins per doubling), and the
    solved common ratio r\\* (plus r̂_h for hosts whose cap binds).  Each
    URL remembers what it registered (``al`` in its memory) so that a new
    estimate replaces the old one exactly; registrations from another
    allocator instance (``epoch``, e.g. before a restart) are not removed.

    Feedback: planned and realised fetch rates differ (first waits, late
    visits, estimates moving), so the realised revisit rate over
    ``control_window`` is compared with the budget and the target is
    nudged multiplicatively, with an integral time constant of
    ``control_window / control_gain``, within ``control_limits``.

    ``host_caps`` maps a host to the most fetches per second politeness
    allows it (``valence / max(min_delay, crawl_delay)``); hosts without a
    cap are assumed never to bind.  The crawler can call
    :meth:`set_host_cap` when it learns a robots.txt Crawl-delay, and
    :meth:`set_budget` at any time.
    """

    def __init__(
        self,
        budget: float | None,
        *,
        target_ratio: float = math.log(2.0),
        min_wait: float = 3_600.0,
        max_wait: float = 28 * DAY,
        host_caps: Mapping[str, float] | None = None,
        bins_per_octave: int = 8,
        solve_every: int = 200,
        control_window: float = 3 * DAY,
        control_gain: float = 0.5,
        control_limits: tuple[float, float] = (0.5, 2.0),
        prior: PopulationPrior | None = None,
        epoch: str | None = None,
    ) -> None:
        if budget is not None and budget <= 0:
            raise ValueError("the budget must be positive (fetches per second)")
        if not target_ratio > 0:
            raise ValueError("the target ratio must be positive (expected changes per visit)")
        self.budget = budget
        self.target_ratio = target_ratio
        self.min_wait = min_wait
        self.max_wait = max_wait
        self.f_min = 1.0 / max_wait
        self.f_max = 1.0 / min_wait
        self.bpo = bins_per_octave
        self.solve_every = solve_every
        self.control_window = control_window
        self.control_gain = control_gain
        self.control_limits = control_limits
        self.prior = prior or PopulationPrior()
        self.epoch = epoch or uuid.uuid4().hex[:8]
        self._hosts: dict[str, dict[int, list[float]]] = {}
        self._global: dict[int, list[float]] = {}
        self._caps: dict[str, float] = dict(host_caps or {})
        self._host_n: dict[str, int] = {}  #: registered URLs per host
        self._bound: set[str] = set()  #: capped hosts whose cap can bind (solved on their own)
        self.ratio = 1.0  #: the solved common r* = λ/f
        self._host_ratio: dict[str, float] = {}
        self._pending = 0
        self._registered = 0
        self._solved = False
        self.correction = 1.0
        self._count = 0.0
        self._t0: float | None = None
        self._t_last: float | None = None
        self._t_control: float | None = None
        self._registered_at_t0 = 0
        self._hinted = 0.0  #: revisits made on change hints, decayed like _count

    # -- registration ----------------------------------------------------------

    def _bin(self, rate: float) -> int:
        return _ZERO_BIN if rate <= 0 else math.floor(math.log2(rate) * self.bpo)

    def _cell_add(self, cells: dict[int, list[float]], b: int, rate: float, sign: int) -> None:
        cell = cells.setdefault(b, [0.0, 0.0])
        cell[0] += sign
        cell[1] += sign * rate
        if cell[0] <= 0.5:
            del cells[b]

    def _apply(self, host: str, rate: float, sign: int) -> None:
        b = self._bin(rate)
        self._cell_add(self._hosts.setdefault(host, {}), b, rate, sign)
        self._host_n[host] = self._host_n.get(host, 0) + sign
        if host not in self._bound:
            self._cell_add(self._global, b, rate, sign)
        if sign > 0 and host in self._caps and host not in self._bound:
            self._classify(host)

    def _classify(self, host: str) -> None:
        """Solve *host* on its own only if its cap can bind.

        A host's demand never exceeds its URLs × the fastest rate (1/min
        wait), so a cap above that cannot bind; such hosts stay in the merged
        histogram.  With thousands of small hosts capped by politeness this
        keeps a solve at O(bins + bins of the hosts that matter) instead of
        O(hosts × bins) per bisection step.
        """
        cap = self._caps.get(host)
        bound = cap is not None and cap < self._host_n.get(host, 0) * self.f_max
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

    def register(self, memory: dict[str, Any], host: str, rate: float) -> None:
        """Replace this URL's registered rate (kept in *memory*) by *rate*."""
        old = memory.get("al")
        if old and old[0] == self.epoch and old[1] in self._hosts:
            self._apply(old[1], float(old[2]), -1)
        self._apply(host, rate, 1)
        memory["al"] = [self.epoch, host, rate]
        self._registered += 0 if old and old[0] == self.epoch else 1
        self._pending += 1
        self._maybe_solve()

    def _maybe_solve(self) -> None:
        """Re-solve after enough new registrations or fetches.

        "Enough" is ``solve_every`` or 1 % of the registered URLs, whichever
        is smaller, so a freshly started crawl (every URL new) is re-solved
        as it grows instead of running on a plan made for its first URLs.
        """
        if not self._solved or self._pending >= min(self.solve_every, max(1, self._registered // 100)):
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
        with how much less (r̂_h / r*)."""
        return {h: r / self.ratio for h, r in self._host_ratio.items() if self.ratio > 0 and r > self.ratio}

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
        self._host_n = {h: round(sum(n for n, _ in cells.values())) for h, cells in self._hosts.items()}
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

    def set_budget(self, budget: float | None) -> None:
        """Revisits per second, or None to visit at ``target_ratio`` instead."""
        self.budget = budget
        self._solved = False

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
        self._count = self._count * math.exp(-dt / self.control_window) + 1.0
        self._hinted = self._hinted * math.exp(-dt / self.control_window) + hinted
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
        what they leave (see :mod:`.hints`).
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
        self.correction = clamp(self.correction * (self.budget / realised) ** exponent, lo, hi)

    # -- solving -------------------------------------------------------------------

    def _cells_rate(self, cells: dict[int, list[float]], r: float) -> float:
        total = 0.0
        f_min, f_max = self.f_min, self.f_max
        for n, s in cells.values():
            if s <= 0:
                total += n * f_min
            else:
                f = s / (n * r)
                total += n * (f_min if f < f_min else f_max if f > f_max else f)
        return total

    def _total(self, r: float) -> float:
        total = self._cells_rate(self._global, r)
        for host in self._bound:
            cells = self._hosts.get(host)
            if cells:
                total += min(self._caps[host], self._cells_rate(cells, r))
        return total

    @staticmethod
    def _solve_ratio(fetch_rate: Callable[[float], float], target: float) -> float:
        """The r with fetch_rate(r) = target (fetch_rate decreases in r)."""
        lo, hi = -40.0, 40.0  # ln r
        if fetch_rate(math.exp(lo)) <= target:
            return math.exp(lo)
        if fetch_rate(math.exp(hi)) >= target:
            return math.exp(hi)
        for _ in range(60):
            mid = (lo + hi) / 2
            if fetch_rate(math.exp(mid)) > target:
                lo = mid
            else:
                hi = mid
            if hi - lo < 1e-4:
                break
        return math.exp((lo + hi) / 2)

    def solve(self) -> None:
        """Recompute r* (and the r̂_h of capped hosts) from the histograms."""
        self._pending = 0
        self._solved = True
        if self.budget is None:
            # no budget: every URL gets the target ratio, hosts whose cap
            # binds a larger one (the water-filling below still applies)
            r = self.target_ratio
        else:
            self._control()
            # hinted revisits come first; the schedule keeps at least a tenth
            target = max(self.budget * self.correction - self.hinted_rate(), 0.1 * self.budget)
            if not self._hosts:
                return
            r = self._solve_ratio(self._total, target)
        self.ratio = r
        self._host_ratio = {}
        for host in self._bound:
            cap = self._caps[host]
            cells = self._hosts.get(host)
            if cells and self._cells_rate(cells, r) > cap:
                self._host_ratio[host] = self._solve_ratio(partial(self._cells_rate, cells), cap)

    def planned_rate(self) -> float:
        """Fetches per second the current solution plans (for stats)."""
        return self._total(self.ratio) if self._hosts else 0.0

    def ratio_for(self, host: str) -> float:
        return self._host_ratio.get(host, self.ratio)

    def wait(self, host: str, rate: float) -> float:
        """The wait giving *rate* its share: r_h/λ, clipped to [min, max]."""
        if rate <= 0:
            return self.max_wait
        return clamp(self.ratio_for(host) / rate, self.min_wait, self.max_wait)


# -- the policies -------------------------------------------------------------------------------


class _RatePolicy(WaitPolicy):
    """Observation, estimation and the noise guard shared by rate policies."""

    def __init__(
        self,
        *,
        estimator: RateEstimator | None = None,
        prior: PopulationPrior | None = None,
        min_wait: float = 3_600.0,
        max_wait: float = 28 * DAY,
        noise_run: int = 8,
        noise: NoiseDetector | None = None,
    ) -> None:
        self.estimator = estimator or RateEstimator()
        self.prior = prior or PopulationPrior()
        self.min_wait = min_wait
        self.max_wait = max_wait
        #: the noise guard (``noise.py``): ``noise_run`` changed visits in a row start a probe test; 0: off
        self.noise_guard = noise or NoiseDetector(min_wait, suspect_run=noise_run)

    def _estimate(
        self, history: Mapping[str, Any], visit: Visit, memory: dict[str, Any]
    ) -> tuple[float, float | None, bool]:
        """Fold this visit into *memory*; return (λ̂, time of the visit, observed?)."""
        now = visit_time(history, visit)
        interval = elapsed(history, visit)
        if hinted_visit(history):  # the hint is credited only with what it adds (hints.py)
            visit.hint_base = base_probability(float(memory.get("e") or 0.0), interval)
        observed = False
        if interval is not None and not confirmed_hint(history, visit):  # timed by the change: see hints.py
            observed = self.estimator.observe(memory, interval, visit, history.get("fetched"), now)
        log_rate, variance = self.estimator.posterior(memory, self.prior.get())
        rate = math.exp(log_rate)
        memory["e"] = rate
        if memory.get("o"):
            self.prior.update(memory, log_rate, variance)
        return rate, now, observed

    def noise_check(self, history: Mapping[str, Any], visit: Visit, memory: dict[str, Any]) -> NoiseVerdict:
        """Fold this visit into the noise guard's state (in *memory*); its verdict.

        Under raw-byte comparison a page with a timestamp or a token
        "changes" at every fetch and would take the budget of the fastest
        page there is; the guard tells it from a fast page by short probes
        and holds it at the maximum wait (:mod:`.noise`).  With normalised
        change detection it sees only real changes and stays quiet.
        """
        return self.noise_guard.observe(memory, visit.change, elapsed(history, visit), ratio=self.planned_ratio())

    def planned_ratio(self) -> float | None:
        """Expected changes per interval the policy plans for (None: unknown)."""
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
        host_of: Callable[[str | None], str] = default_host,
        noise_run: int = 8,
        noise: NoiseDetector | None = None,
    ) -> None:
        super().__init__(
            estimator=estimator,
            prior=allocator.prior,
            min_wait=allocator.min_wait,
            max_wait=allocator.max_wait,
            noise_run=noise_run,
            noise=noise,
        )
        self.allocator = allocator
        self.host_of = host_of

    @classmethod
    def from_params(cls, params: WaitParams) -> ProportionalWaitPolicy:
        """Bounds from the wait numbers; ``ADAPTIVE_BUDGET`` revisits per day.

        Instances built from the params of one stack share one allocator
        (``params.shared``), so the whole crawl spends one budget.  Without a
        budget every URL is visited when a change is expected with
        probability ``ADAPTIVE_TARGET_PRECISION`` (r = −ln(1 − p) expected
        changes per visit), which is the allocation a budget of Λ/r would
        buy, without having to know Λ.
        """
        allocator = params.shared.get("rate_allocator")
        if allocator is None:
            allocator = RateAllocator(
                None if params.budget is None else params.budget / DAY,
                target_ratio=-math.log1p(-params.target_precision),
                min_wait=params.minimum,
                max_wait=params.maximum,
                control_window=params.budget_window,
            )
            params.shared["rate_allocator"] = allocator  # one budget for the whole stack
        policy = cls(allocator)
        policy.initial = params.initial
        return policy

    #: the first revisit's wait while the population prior is still the
    #: fallback (``ADAPTIVE_WAIT_INITIAL``, per stack entry); None: the prior's
    initial: float | None = None

    def next_wait(self, history: Mapping[str, Any], visit: Visit) -> float:
        memory = policy_memory(history)
        first = is_first_visit(history)
        rate, now, observed = self._estimate(history, visit, memory)
        verdict = self.noise_check(history, visit, memory)
        noise = verdict.flagged
        host = self.host_of(visit.url)
        if noise:
            self.prior.update(memory, None)
        self.allocator.register(memory, host, 0.0 if noise else rate)
        if not first:
            self.allocator.note_fetch(now, hinted=hinted_visit(history))
        visit.policy_state = memory
        wait_rate = self.schedule_rate(memory, visit, rate, first=first, observed=observed)
        wait = self.allocator.wait(host, wait_rate)
        if first and self.initial is not None and not self.prior.learned:
            wait = clamp(self.initial, self.min_wait, self.max_wait)
        return self.noise_guard.wait(memory, verdict, wait, self.max_wait)

    def planned_ratio(self) -> float | None:
        return self.allocator.ratio

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
        scheduled fetch is worth, φ(r_h) (:mod:`.hints`).  A subclass with its
        own ``next_wait`` is not handed hints unless it says how it accounts
        for them."""
        if type(self).next_wait is not ProportionalWaitPolicy.next_wait:
            return None
        return 0.0 if accept(hint, marginal_value(self.allocator.ratio_for(self.host_of(hint.url)))) else None


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
        min_wait: float = 3_600.0,
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

    def planned_ratio(self) -> float | None:
        return self.hazard

    @classmethod
    def from_params(cls, params: WaitParams) -> PrecisionWaitPolicy:
        """p* = ``ADAPTIVE_TARGET_PRECISION`` within the configured bounds."""
        return cls(params.target_precision, min_wait=params.minimum, max_wait=params.maximum)

    def next_wait(self, history: Mapping[str, Any], visit: Visit) -> float:
        memory = policy_memory(history)
        rate, _, _ = self._estimate(history, visit, memory)
        verdict = self.noise_check(history, visit, memory)
        noise = verdict.flagged
        if noise:
            self.prior.update(memory, None)
        visit.policy_state = memory
        normal = self.max_wait if rate <= 0 else clamp(self.hazard / rate, self.min_wait, self.max_wait)
        return self.noise_guard.wait(memory, verdict, normal, self.max_wait)
