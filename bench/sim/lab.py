"""Running policies over worlds: budgets, calibration, tables.

``run_policy`` builds the world's budget (``budget_factor`` × the world's
true total change rate Λ, in revisits per second), calibrates rule-based
policies' time scale on a small copy of the world so that they spend that
budget, and runs the full simulation.  A rule whose spend the time scale
cannot move to within 5 % of the budget is run with its own parameters
under a throughput cap of the budget instead (reported as ``name/cap``).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

from bench.common import render

from .engine import RunConfig, simulate
from .lineup import BUDGETED, POLICIES, LabContext, with_scale
from .metrics import RunResult
from .world import DAY, World, WorldSpec, build_world


def budget_for(world: World, factor: float, per_day: float | None = None) -> float:
    """Revisits per second: *factor* × Λ, or *per_day* when given (static worlds)."""
    if per_day is not None:
        return per_day / DAY
    total = world.total_rate()
    if total <= 0:
        raise ValueError(f"world {world.spec.name!r} never changes: give the budget per day")
    return factor * total


def calibrate(
    name: str,
    spec: WorldSpec,
    factor: float,
    config: RunConfig,
    *,
    per_day: float | None = None,
    scale: float = 0.1,
    tolerance: float = 0.02,
    rounds: int = 6,
    context: dict[str, Any] | None = None,
) -> tuple[float, list[tuple[float, float]]]:
    """Time scale k making policy *name* spend the budget on a small world.

    Revisits of a rule that multiplies and clamps waits fall roughly as
    1/k, so the search steps in log space with the measured slope (a
    secant), starting from k = 1.  Returns k and the (k, error) trail.
    """
    small = replace(spec, urls=max(50, round(spec.urls * scale)), hosts=max(2, round(spec.hosts * scale)))
    world = build_world(small)
    budget = budget_for(world, factor, None if per_day is None else per_day * scale)
    target = budget * DAY
    trail: list[tuple[float, float]] = []
    k, slope = 1.0, -1.0
    prev: tuple[float, float] | None = None
    for _ in range(rounds):
        ctx = with_scale(LabContext(world, budget, **(context or {})), k)
        result = simulate(world, POLICIES[name](ctx), config)
        err = math.log(max(result.late_revisits_per_day, 1e-3 * target) / target)
        trail.append((k, math.expm1(err)))
        if abs(err) < tolerance:
            break
        if prev is not None and abs(math.log(k) - math.log(prev[0])) > 1e-9:
            measured = (err - prev[1]) / (math.log(k) - math.log(prev[0]))
            if measured < -0.05:
                slope = measured
        prev = (k, err)
        step = max(-math.log(4.0), min(math.log(4.0), -err / slope))  # at most ×4 per round
        k = min(max(k * math.exp(step), 0.05), 50.0)
    return k, trail


def run_policy(
    name: str,
    world: World,
    factor: float,
    config: RunConfig,
    *,
    per_day: float | None = None,
    calibrate_rules: bool = True,
    calibration_scale: float = 0.1,
    context: dict[str, Any] | None = None,
) -> RunResult:
    """Run one policy of the line-up on *world* at *factor* × Λ."""
    budget = budget_for(world, factor, per_day)
    k = 1.0
    trail: list[tuple[float, float]] = []
    if calibrate_rules and name not in BUDGETED:
        scale = calibration_scale
        k, trail = calibrate(name, world.spec, factor, config, per_day=per_day, scale=scale, context=context)
    ctx = with_scale(LabContext(world, budget, **(context or {})), k)
    result = simulate(world, POLICIES[name](ctx), config, name=name)
    capped = False
    spent = result.revisits_per_day / (budget * DAY) - 1.0
    if trail and abs(spent) > 0.05 and config.fetch_cap is None:
        # Scaling the time parameters moves a multiplicative rule only
        # through its clamps: its equilibrium (a fixed share of visits
        # finding a change) does not depend on them, and a scale found on
        # the small copy need not hold on the whole world.  When the run
        # misses the budget, hold the rule's schedule to it with a
        # throughput cap instead.  The cap only binds on a schedule that
        # asks for more than the budget: keep this scale if it did, else
        # take the one whose demand came closest above the budget in the
        # calibration (or the one that asked the most), so the rule is
        # compared at equal fetches whenever it can spend them.
        if spent < 0:
            over = [kk for kk, e in trail if e > 0]
            k = max(over) if over else min(kk for kk, _ in trail)
        capped_config = replace(config, fetch_cap=budget)
        ctx = with_scale(LabContext(world, budget, **(context or {})), k)
        result = simulate(world, POLICIES[name](ctx), capped_config, name=f"{name}/cap")
        capped = True
    result.detection = config.detection
    result.set_budget(budget * DAY)
    result.extra["time_scale"] = k
    result.extra["calibration"] = trail
    result.extra["budget_factor"] = factor
    result.extra["capped"] = capped
    return result


#: (title, attribute, format) of the run table's columns
COLUMNS = [
    ("policy", "name", "{}"), ("recall", "recall", "{:.3f}"), ("med_dl_h", "median_capture_delay_h", "{:.1f}"),
    ("prec", "precision", "{:.3f}"), ("opt", "optimum", "{:.3f}"), ("eff", "efficiency", "{:.1%}"),
    ("eff2h", "late_efficiency", "{:.1%}"), ("fresh", "freshness", "{:.3f}"), ("age_h", "mean_age_h", "{:.1f}"),
    ("delay_h", "capture_delay_h", "{:.1f}"), ("rv/day", "revisits_per_day", "{:.0f}"),
    ("vs_bud", "budget_error", "{:+.1%}"), ("GB", "gigabytes", "{:.2f}"), ("viol", "violations", "{:d}"),
    ("wall_s", "wall_seconds", "{:.1f}"),
]  # fmt: skip


def table(results: list[RunResult]) -> str:
    """A plain-text table, one row per run."""
    rows = [["-" if (v := getattr(r, attr)) is None else fmt.format(v) for _, attr, fmt in COLUMNS] for r in results]
    return render([title for title, _, _ in COLUMNS], rows)


def kind_table(results: list[RunResult]) -> str:
    """Recall / precision / share of revisits per page class."""
    header = ("policy", "class", "pages", "recall", "prec", "share", "rv/page/day")
    rows = [
        (r.name, kind, f"{d['pages']:.0f}", f"{d['recall']:.3f}", f"{d['precision']:.3f}", f"{d['revisit_share']:.1%}",
         f"{d['revisits_per_page_day']:.3f}")
        for r in results
        for kind, d in r.by_kind.items()
    ]  # fmt: skip
    return render(header, rows, left=2)
