# ruff: noqa: E402, E501, ANN
"""Exploratory policy variants for the fast replay (not part of the lab's line-up)."""

from __future__ import annotations

from bench.peers.stormcrawler import StormCrawlerWaitPolicy

from .sim.lineup import LabContext, _scaled, register


def _sc(d: float, i: float):
    def make(ctx: LabContext):
        initial, default, lo, hi = _scaled(ctx)
        return StormCrawlerWaitPolicy(
            initial=initial, minimum=lo, maximum=hi, default=default, decrement=d, increment=i
        )

    return make


for _d in (0.3, 0.5, 0.7, 0.9):
    for _i in (0.25, 0.5, 1.0):
        register(f"sc-{_d}-{_i}", _sc(_d, _i))


# -- the drift policy with a fixed threshold r = k × ln 2 (k: the searched knob) ------------
import math as _math

from . import drift_policy as _drift


def _drift_fixed(**kw):
    def make(ctx: LabContext):
        pace = _drift.HazardPace(None, ratio=_math.log(2.0) * ctx.time_scale)
        return _drift.DriftWaitPolicy(pace, minimum=ctx.min_wait, maximum=ctx.max_wait, initial=ctx.initial, **kw)

    return make


register("drift-k", _drift_fixed())


def _drift_budget(ctx: LabContext):
    pace = _drift.HazardPace(ctx.budget)
    return _drift.DriftWaitPolicy(pace, minimum=ctx.min_wait, maximum=ctx.max_wait, initial=ctx.initial)


register("drift", _drift_budget, budgeted=True)
for _g in (0.5, 0.6, 0.7):
    for _w in (0.1, 0.25, 0.5):
        for _s in (0.9, 0.99):
            register(f"drs-{_g}-{_w}-{_s}", _drift_fixed(forget=_g, anchor=_w, memory=_s))
register("drift-noanchor", _drift_fixed(anchor=0.0))

register("drift-nosurprise", _drift_fixed(surprise=False))
for _g in (0.5, 0.7, 0.9):
    for _w in (0.25, 1.0):
        register(f"dsu-{_g}-{_w}", _drift_fixed(forget=_g, anchor=_w))

# -- snapback on the budget with other feedback windows ---------------------------------------
from scrapy_adaptive.policies.snapback import BudgetPace as _BudgetPace
from scrapy_adaptive.policies.snapback import SnapBackWaitPolicy as _Snap


def _snap_window(revisits: float, gain: float = 0.5):
    def make(ctx: LabContext):
        import scrapy_adaptive.policies.snapback as sb

        sb.HORIZON_REVISITS = revisits
        pace = _BudgetPace(ctx.budget, gain=gain)
        policy = _Snap(pace, minimum=ctx.min_wait, maximum=ctx.max_wait, initial=ctx.initial)
        return policy

    return make


for _r in (2000, 7200, 20000, 100000):
    register(f"snap-w{_r}", _snap_window(_r), budgeted=True)


def _snap_rule(**kw):
    def make(ctx: LabContext):
        initial, default, lo, hi = _scaled(ctx)
        return _Snap(None, minimum=lo, maximum=hi, initial=initial, **kw)

    return make


register("snap-rule", _snap_rule())


# -- the burst policy with other estimator memories ------------------------------------------------
from scrapy_adaptive.policies.burst import BurstWaitPolicy as _Burst
from scrapy_adaptive.policies.estimator import RateEstimator as _Est


def _burst_hl(days: float, window: int | None = None):
    def make(ctx: LabContext):
        kw = {"half_life": days * 86_400.0}
        if window is not None:
            kw["window"] = window
        return _Burst(ctx.allocator(), estimator=_Est(**kw))

    return make


for _d in (7, 20, 60):
    register(f"burst-hl{_d}", _burst_hl(_d), budgeted=True)


from . import blend_policy as _blend_mod


def _blend(ctx: LabContext):
    return _blend_mod.BlendWaitPolicy(
        _BudgetPace(ctx.budget), minimum=ctx.min_wait, maximum=ctx.max_wait, initial=ctx.initial
    )


register("blend", _blend, budgeted=True)


def _snap_lowmin(ctx: LabContext):
    """snapback allowed below the replay's one-hour minimum (as the scaled rules are)."""
    return _Snap(_BudgetPace(ctx.budget), minimum=60.0, floor=ctx.min_wait, maximum=ctx.max_wait, initial=ctx.initial)


register("snap-lowmin", _snap_lowmin, budgeted=True)


def _snap_horizon(revisits: float | None = None, days: float | None = None, union: bool = False):
    """snapback (or the union with it) whose pace holds the budget over a horizon given in
    revisits at the budget or in days."""

    def make(ctx: LabContext):
        horizon = days * 86_400.0 if days is not None else revisits / ctx.budget
        snap = _Snap(
            _BudgetPace(ctx.budget, horizon=horizon), minimum=ctx.min_wait, maximum=ctx.max_wait, initial=ctx.initial
        )
        return _Union(_burst(ctx), snap) if union else snap

    return make


for _h in (5_000, 20_000, 100_000):
    register(f"snap-h{_h}", _snap_horizon(_h), budgeted=True)


# -- the per-URL switch between burst and snapback --------------------------------------------------
from .switch_policy import SwitchWaitPolicy as _Switch


class _SnapMin(_Switch):
    """burst's wait, cut to the snap-back rule's while the burst state says a change was recent."""

    def choose(self, memory, w_burst, w_snap, advantage):
        return min(w_burst, w_snap) if memory.get("s") in (0, 1) else w_burst


def _switch(cls=_Switch, forget: float = 0.9):
    def make(ctx: LabContext):
        snap = _Snap(_BudgetPace(ctx.budget), minimum=ctx.min_wait, maximum=ctx.max_wait, initial=ctx.initial)
        return cls(_Burst(ctx.allocator()), snap, forget=forget)

    return make


register("switch", _switch(), budgeted=True)
register("switch-f0.7", _switch(forget=0.7), budgeted=True)
register("snapmin", _switch(_SnapMin), budgeted=True)


# -- the snap-back rule judged on the interval it observed (for use inside the union) -------------
from scrapy_adaptive.model import ChangeState as _CS
from scrapy_adaptive.policies.history import clamp as _clamp
from scrapy_adaptive.policies.history import elapsed as _elapsed
from scrapy_adaptive.policies.history import is_first_visit as _first
from scrapy_adaptive.policies.union import UnionWaitPolicy as _Union

from .sim.lineup import _burst, _snapback


class _SnapObserved(_Snap):
    """Changed: u ← (1−d)·min(u, e) + d·m; unchanged: u ← max(u, (1+i)·e), e the observed interval
    in normalised time.  Equal to the rule when visits come at its own waits."""

    def normalised(self, history, visit, memory, old):
        if _first(history) or old is None:
            return self.initial
        e = _elapsed(history, visit)
        if e is None or visit.change not in (_CS.CHANGED, _CS.UNCHANGED):
            return self.step(old, visit.change)
        e_n = e / max(self.pace.scale(), 1e-9)
        if visit.change is _CS.CHANGED:
            u = (1.0 - self.decrement) * min(old, e_n) + self.decrement * self.floor
        else:
            u = max(old, (1.0 + self.increment) * e_n)
        return _clamp(u, self.floor, self.maximum)


def _snap_obs(ctx: LabContext):
    return _SnapObserved(_BudgetPace(ctx.budget), minimum=ctx.min_wait, maximum=ctx.max_wait, initial=ctx.initial)


register("snap-obs", _snap_obs, budgeted=True)
register("union-obs", lambda ctx: _Union(_burst(ctx), _snap_obs(ctx)), budgeted=True)


def _snap_max(years: float, union: bool = False):
    def make(ctx: LabContext):
        snap = _SnapObserved if union else _Snap
        s = snap(_BudgetPace(ctx.budget), minimum=ctx.min_wait, maximum=years * 365 * 86_400.0, initial=ctx.initial)
        if not union:
            return s
        return _Union(_burst(ctx), s)

    return make


for _y in (3, 10):
    register(f"snap-max{_y}y", _snap_max(_y), budgeted=True)
    register(f"union-max{_y}y", _snap_max(_y, union=True), budgeted=True)


def _union_lowmin(ctx: LabContext):
    """The union with both parts allowed down to one minute (the snap floor stays an hour at scale 1)."""
    from dataclasses import replace as _replace

    low = _replace(ctx, min_wait=60.0)
    snap = _Snap(_BudgetPace(ctx.budget), minimum=60.0, floor=ctx.min_wait, maximum=ctx.max_wait, initial=ctx.initial)
    return _Union(_burst(low), snap)


register("union-lowmin", _union_lowmin, budgeted=True)


def _snap_gain(gain: float, limits=(0.1, 10.0)):
    def make(ctx: LabContext):
        pace = _BudgetPace(ctx.budget, gain=gain, limits=limits)
        return _Snap(pace, minimum=ctx.min_wait, maximum=ctx.max_wait, initial=ctx.initial)

    return make


register("snap-g0", _snap_gain(0.0), budgeted=True)
register("snap-up", _snap_gain(1.0, (1.0, 10.0)), budgeted=True)


for _h in (20_000, 100_000):
    register(f"union-h{_h}", _snap_horizon(_h, union=True), budgeted=True)


# -- the snap-back pace held over a window of time (a "price" moved over that window) ------------
for _days in (90, 365, 100_000):
    register(f"snap-d{_days}", _snap_horizon(days=_days), budgeted=True)
    register(f"union-d{_days}", _snap_horizon(days=_days, union=True), budgeted=True)


# -- the union with two budget loops (as before one loop held both), and with the lab's old window --
from scrapy_adaptive.policies.allocator import RateAllocator as _Allocator


def _allocator(ctx: LabContext, cls: type = _Allocator, **kw) -> _Allocator:
    """An allocator on the run's budget and bounds as the lab builds the
    product's (its loop's window 720 revisits at the budget unless *kw* says)."""
    kw = {"control_window": None, "epoch": "lab", **kw}
    return cls(ctx.budget, min_wait=ctx.min_wait, max_wait=ctx.max_wait, host_caps=ctx.host_caps(), **kw)


def _union_loops(one_loop: bool, window_days: float | None):
    """``window_days`` None: the allocator's window as the product sets it (720 revisits at the budget)."""

    def make(ctx: LabContext):
        window = None if window_days is None else window_days * 86_400.0
        allocator = _allocator(ctx, control_window=window, epoch=None)
        snap = _Snap(_BudgetPace(ctx.budget), minimum=ctx.min_wait, maximum=ctx.max_wait, initial=ctx.initial)
        union = _Union(_Burst(allocator), snap)
        if not one_loop:
            union.pace._loop = None  # the pace keeps its own loop
        return union

    return make


register("union-two", _union_loops(False, None), budgeted=True)
register("union-two-3d", _union_loops(False, 3.0), budgeted=True)


# -- the union with a learned tilt between its families (bench/mix_policy.py) -----------------------
from . import mix_policy as _mix


def _mix_make(near: float | None = None, **kw):
    def make(ctx: LabContext):
        snap = _Snap(_BudgetPace(ctx.budget), minimum=ctx.min_wait, maximum=ctx.max_wait, initial=ctx.initial)
        return _mix.MixWaitPolicy(_burst(ctx), snap, _mix.TiltLearner(**kw), near=near)

    return make


register("mix", _mix_make(), budgeted=True)
register("mix-host", _mix_make(per_class=True), budgeted=True)
register("mix-cap2", _mix_make(bound=_math.log(2.0)), budgeted=True)
register("mix-prop", _mix_make(mode="prop", gain=1.0), budgeted=True)
register("mix-close", _mix_make(near=2.0), budgeted=True)
for _t in (-0.7, 0.35, 0.7, 1.4):
    register(f"mix-fix{_t:+g}", _mix_make(gain=0.0, initial=_t), budgeted=True)
register("mix-fast", _mix_make(gain=0.01), budgeted=True)
register("mix-close-fast", _mix_make(near=2.0, gain=0.01), budgeted=True)
register("mix-close1.5-fast", _mix_make(near=1.5, gain=0.01), budgeted=True)


# -- the union as the add-on line runs it: no ADAPTIVE_BUDGET ------------------------------------
def _union_free(ctx: LabContext, *, from_floor: bool = False):
    """The default without a budget, where politeness capacity does not bind:
    the burst part at the target precision (r = −ln(1 − p) expected changes
    per visit), the snap-back part at its configured numbers (scale 1).
    Like a peer's rule, every time constant is multiplied by the run's
    time scale (the hazard r too, as for ``precision``), and the lab fits
    that one knob to the target's fetches."""
    _, _, lo, hi = _scaled(ctx)
    k = ctx.time_scale
    ratio = -_math.log1p(-ctx.precision) * k
    allocator = _Allocator(None, target_ratio=ratio, min_wait=lo, max_wait=hi, control_window=None, epoch="lab")
    burst = _Burst(allocator, min_wait=lo, max_wait=hi)
    burst.initial = ctx.initial * k
    snap = _Snap(_BudgetPace(None), minimum=lo, maximum=hi, initial=lo if from_floor else ctx.initial * k)
    return _Union(burst, snap)


register("union-free", _union_free)
register("union-free-min", lambda ctx: _union_free(ctx, from_floor=True))


# (the peers' rules held to the budget, paced-heritrix, paced-nutch, paced-stormcrawler, are in
# the line-up itself: bench.sim.lineup.HELD_PEERS)


# -- the snap-back plan only right after a change (lab, 2026-11-26) -------------------------------
class _UnionAfterChange(_Union):
    """The union, but the snap-back rule's wait counts only on a visit that
    found a change (``visits`` = 1) or on one of the two visits after one
    (``visits`` = 2): during quiet spells the burst part's rate plans alone."""

    def __init__(self, burst, snap, visits: int = 1) -> None:
        super().__init__(burst, snap)
        self.visits = visits

    def next_wait(self, history, visit):
        w_burst, w_snap, memory = self.waits(history, visit)
        if self.burst.is_noise(memory):
            return w_burst
        recent = [visit.change] + [
            _CS(h[1]) for h in reversed((history.get("history") or [])[-(self.visits - 1) :]) if self.visits > 1
        ]
        return min(w_burst, w_snap) if _CS.CHANGED in recent else w_burst


for _v in (1, 2):
    register(
        f"union-after{_v}", (lambda v: lambda ctx: _UnionAfterChange(_burst(ctx), _snapback(ctx), v))(_v), budgeted=True
    )


# -- the budget as a ceiling: the target precision floors the plan, so spending follows activity ---
class _UnionCeiling(_Union):
    """The union given its budget as a ceiling (as the add-on line gives the
    politeness capacity): the allocator keeps ``ADAPTIVE_TARGET_PRECISION``'s
    ratio as a floor and the snap-back part its least scale, so a quiet
    population underspends and the replay's fitted budget buys more where
    changes are."""

    def set_budget(self, budget, *, ceiling: bool = False) -> None:
        super().set_budget(budget, ceiling=True)


class _UnionCeilingLoop(_UnionCeiling):
    """``union-ceiling`` whose precision floor is a slow loop: the floor's
    ratio (expected changes per visit no revisit is planned below) falls
    while the crawl spends under its budget over a long horizon and rises
    while it spends over, so spending follows activity within the horizon
    and averages the budget over it (a long-run price, not a daily rate).
    The loop is a :class:`BudgetPace`'s own correction (same integrals,
    same gain), read as the factor on the floor."""

    def __init__(self, burst, snap, horizon_revisits: float) -> None:
        super().__init__(burst, snap)
        self.ratio = self.allocator.target_ratio
        self.horizon_revisits = horizon_revisits
        self.loop = _BudgetPace(None, limits=(1e-3, 30.0))
        self.loop.register(None, 1.0)  # one pseudo-URL: the pace integrates only with URLs registered

    def set_budget(self, budget, *, ceiling: bool = False) -> None:
        super().set_budget(budget)
        self.loop.set_budget(budget)
        self.loop.horizon = self.horizon_revisits / budget if budget else None

    def next_wait(self, history, visit):
        self.loop.advance(visit.fetched, history.get("visits", 0) > 0)
        self.allocator.target_ratio = self.ratio * self.loop.correction
        self.allocator._solved = False
        return super().next_wait(history, visit)


def _union_ceiling(horizon_revisits: float | None = None):
    def make(ctx: LabContext):
        if horizon_revisits is None:
            policy = _UnionCeiling(_burst(ctx), _snapback(ctx))
        else:
            policy = _UnionCeilingLoop(_burst(ctx), _snapback(ctx), horizon_revisits)
        policy.set_budget(ctx.budget)
        return policy

    return make


register("union-ceiling", _union_ceiling(), budgeted=True)
for _h in (5_000, 20_000):
    register(f"union-ceil-loop{_h // 1000}k", _union_ceiling(_h), budgeted=True)


# -- banking made explicit: one long-run price instead of a daily one (lab, 2026-11-26) ------------
from scrapy_adaptive.policies.cells import FALLBACK_BIN as _FALLBACK_BIN
from scrapy_adaptive.policies.cells import cells_rate as _cells_rate


class _LongRunPrice:
    """The crawl's long-run price p = ∫Λ̂ dt / ∫B dt: the expected changes
    per visit at which its whole past would have spent exactly its budget
    (Λ̂ ≈ r*·B·c, the population's estimated change rate at each solve,
    held until the next one)."""

    def __init__(self) -> None:
        self.area = self.weight = 0.0
        self.t: float | None = None
        self.last: tuple[float, float] | None = None

    def observe(self, now: float | None, changes: float, budget: float) -> None:
        """At *now* the population's estimated change rate is *changes* and
        the budget it is given *budget* (both held until the next call)."""
        if now is None:
            return
        if self.t is not None and self.last is not None and now > self.t:
            dt = now - self.t
            self.area += self.last[0] * dt
            self.weight += self.last[1] * dt
        self.t = now if self.t is None else max(self.t, now)
        self.last = (changes, budget)

    @property
    def value(self) -> float | None:
        return self.area / self.weight if self.weight > 0 else None


class _PricedAllocator(_Allocator):
    """The allocator with the long-run price as a floor on its plan (while
    the floor binds the plan counts as saturated, so the loop does not wind
    up on the saving).

    ``account``: the budget loop is an account instead (every second
    credits the budget B, every revisit debits one; the plan spends
    B + balance/T, T the time the budget takes to buy ``account``
    revisits), so what the floor saves is spent once the population is
    busier than usual. ``informed_only``: a URL nothing is known of yet
    (its rate the budget's fallback guess) is planned at the day's price.
    ``informed_price``: the long-run price is learned from the URLs with an
    observation only (their estimated changes against the budget they are
    given): a URL planned on the fallback guess is planned at r = 1 whatever
    the budget, so a young crawl's price says nothing of its pages."""

    def __init__(
        self,
        *args,
        floor: bool = True,
        account: float | None = None,
        informed_only: bool = False,
        informed_price: bool = False,
        **kw,
    ) -> None:
        super().__init__(*args, **kw)
        self.informed_price = informed_price
        self.floor = floor
        self.account = account
        self.informed_only = informed_only
        self.balance = 0.0
        self.t_bank: float | None = None
        self.price = _LongRunPrice()
        self.daily: float | None = None
        self.fallback_now = False

    def note_fetch(self, now, *, hinted: bool = False) -> None:
        if self.account and now is not None and self.budget:
            if self.t_bank is not None and now > self.t_bank:
                self.balance += self.budget * (now - self.t_bank)
            self.t_bank = now if self.t_bank is None else max(now, self.t_bank)
            self.balance -= 1.0
        super().note_fetch(now, hinted=hinted)

    def _control(self) -> None:
        if not self.account:
            return super()._control()
        if self.budget:
            lo, hi = self.control_limits
            self.correction = _clamp(1.0 + self.balance / self.account, lo, hi)
        return None

    def solve(self) -> None:
        super().solve()
        if not self.budget or not self._hosts:
            return
        self.daily = r = self.ratio
        spend = self.budget * self.correction
        if self.informed_price:
            fb = self._global.get(_FALLBACK_BIN)
            if fb:
                cell = {_FALLBACK_BIN: fb}
                spend -= _cells_rate(cell, r, self.min_fetch_rate, self.max_fetch_rate, self.fallback_rate() or 0.0)
            spend = max(spend, 0.0)
        # Λ̂ ≈ r·(what the plan spends); the budget that spending was given
        self.price.observe(self._t_last, r * spend, spend / self.correction)
        price = self.price.value
        if self.floor and price is not None and self.ratio < price:
            self.ratio = price
            self._saturated = True

    def register(self, memory, host, rate, *, fallback: bool = False) -> None:
        self.fallback_now = fallback
        super().register(memory, host, rate, fallback=fallback)

    def ratio_for(self, host: str) -> float:
        if self.informed_only and self.fallback_now and self.daily is not None:
            return self._host_ratio.get(host, self.daily)
        return super().ratio_for(host)


class _CappedFollow:
    """What the snap-back pace follows: the allocator's correction within
    ``limits``, so a large balance is spent by the burst part's plan and
    not by snapping every page back to the minimum wait."""

    def __init__(self, allocator, limits: tuple[float, float]) -> None:
        self.allocator, self.limits = allocator, limits

    @property
    def correction(self) -> float:
        return _clamp(self.allocator.correction, *self.limits)


def _union_priced(
    *, floor: bool = True, loop: bool = True, pace_horizon: float | None = None, follow=None, **allocator_kw
):
    """The union on a ``_PricedAllocator`` (``floor`` False and no other
    option: the product's allocator); ``loop`` False: the allocator's loop off; ``pace_horizon``:
    the snap-back pace's demand averaged over it (None: the product's);
    ``follow``: the limits of what the pace takes of the loop's correction."""

    # the account is the loop (its correction within 0.1–10); "no loop": correction held at 1
    kw = (
        {"control_limits": (0.1, 10.0)}
        if allocator_kw.get("account")
        else {}
        if loop
        else {"control_limits": (1.0, 1.0)}
    )
    if floor or allocator_kw:
        kw.update(allocator_kw, floor=floor)

    def make(ctx: LabContext):
        allocator = _allocator(ctx, _PricedAllocator if "floor" in kw else _Allocator, **kw)
        pace = _BudgetPace(ctx.budget, horizon=pace_horizon)
        snap = _Snap(pace, minimum=ctx.min_wait, maximum=ctx.max_wait, initial=ctx.initial)
        union = _Union(_Burst(allocator), snap)
        if follow is not None:
            union.pace.follow(_CappedFollow(allocator, follow))
        return union

    return make


_LIFE = 1e15  # a pace horizon longer than any history: demand averaged over the crawl's life
register("union-lrp", _union_priced(), budgeted=True)
register("union-bank-ceil", _union_priced(loop=False, pace_horizon=_LIFE), budgeted=True)
register("union-noloop", _union_priced(floor=False, loop=False), budgeted=True)
register("union-life", _union_priced(floor=False, loop=False, pace_horizon=_LIFE), budgeted=True)
for _s in (720, 5000):
    register(f"union-bank{_s}", _union_priced(account=float(_s)), budgeted=True)
register("union-acct720", _union_priced(floor=False, account=720.0), budgeted=True)
register("union-bank720-cf", _union_priced(account=720.0, follow=(0.5, 2.0)), budgeted=True)
register("union-bank720-inf", _union_priced(account=720.0, informed_only=True), budgeted=True)
register("union-lrp-pinf", _union_priced(informed_price=True), budgeted=True)
register("union-bank720-pinf", _union_priced(account=720.0, informed_price=True), budgeted=True)


# -- the learned tilt (mix-close) with a budget loop wide enough to hold what the tilt moves ---------
def _mix_close_wide(ctx: LabContext):
    allocator = _allocator(ctx, control_limits=(0.1, 10.0))
    snap = _Snap(_BudgetPace(ctx.budget), minimum=ctx.min_wait, maximum=ctx.max_wait, initial=ctx.initial)
    return _mix.MixWaitPolicy(_Burst(allocator), snap, _mix.TiltLearner(), near=2.0)


register("mix-close-wide", _mix_close_wide, budgeted=True)


# -- the union's two waits combined by a power mean instead of the sooner (session 18) --------------
# p = -1: the two plans' rates averaged (an ensemble of two forecasters); p -> -inf: the sooner
class _PowerUnion(_Union):
    def __init__(self, burst, snap, p: float) -> None:
        super().__init__(burst, snap)
        self.p = p

    def next_wait(self, history, visit):
        w_b, w_s, memory = self.waits(history, visit)
        if self.burst.is_noise(memory):
            return w_b
        return ((w_b**self.p + w_s**self.p) / 2.0) ** (1.0 / self.p)


for _p in (-1.0, -2.0, -4.0):
    register(f"union-pm{_p:g}", (lambda p: lambda ctx: _PowerUnion(_burst(ctx), _snapback(ctx), p))(_p), budgeted=True)


# -- the union's plans combined by a calibrated hazard model (bench/stack_policy.py, session 18) -----
from . import stack_policy as _stack


def _stack_make(**kw):
    return lambda ctx: _stack.StackWaitPolicy(_burst(ctx), _snapback(ctx), **kw)


register("stack", _stack_make(), budgeted=True)
register("stack-m20k", _stack_make(memory=20_000.0), budgeted=True)
register("stack-fix-b", _stack_make(fixed=(1.0, 0.0)), budgeted=True)
register("stack-fix-s", _stack_make(fixed=(0.0, 1.0)), budgeted=True)


# -- the union whose snap-back part starts where the burst part's first wait is ---------------------
from scrapy_adaptive.policies.snapback import WAIT as _SU


class _UnionInformed(_Union):
    """On a URL's first visit the snap-back part's normalised wait is set so that its
    wait equals the burst part's (Last-Modified age, sibling rates, type priors)
    instead of the rule's fixed first wait."""

    def waits(self, history, visit):
        first = _first(history)
        w_burst, w_snap, memory = super().waits(history, visit)
        if first:
            snap = self.snap
            s = snap.scale()
            u0 = _clamp(w_burst / s, snap.floor, snap.maximum) if s > 0 else snap.initial
            snap.pace.register(memory[_SU], u0)
            memory[_SU] = u0
            w_snap = _clamp(s * u0, snap.minimum, snap.maximum)
        return w_burst, w_snap, memory


register("union-informed", lambda ctx: _UnionInformed(_burst(ctx), _snapback(ctx)), budgeted=True)
