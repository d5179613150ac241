"""``python -m bench.sim``: run policies over a synthetic world, print tables.

Example (the Poisson world at four budgets, a quarter of the full size)::

    python -m bench.sim --world poisson --budget-factor 0.5 1 2 4 \\
        --policies proportional,heritrix,uniform,oracle-rate --scale 0.25 --svg-dir /tmp/lab
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from .engine import DETECTIONS, RunConfig
from .lab import kind_table, run_policy, table
from .lineup import POLICIES
from .metrics import RunResult
from .svg import line_chart
from .world import PRESETS, build_world, preset

DEFAULT_POLICIES = "uniform,heritrix,nutch,stormcrawler,proportional,precision,oracle-rate"


def parse(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.sim", description=__doc__.split("\n\n")[0])
    p.add_argument("--world", default="poisson", choices=sorted(PRESETS))
    p.add_argument("--budget-factor", type=float, nargs="+", default=[1.0], help="revisit budget = K × Λ")
    p.add_argument("--budget-per-day", type=float, help="absolute revisit budget (for the static world)")
    p.add_argument("--policies", default=DEFAULT_POLICIES, help="comma-separated: " + ", ".join(POLICIES))
    p.add_argument("--scale", type=float, default=1.0, help="fraction of the 20,000 URLs and 200 hosts")
    p.add_argument("--days", type=float, default=180.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--detection", choices=DETECTIONS, default="normalised")
    p.add_argument("--fetch-cap", type=float, help="crawler throughput cap, × the budget (e.g. 1.0)")
    p.add_argument("--no-calibrate", action="store_true", help="run rule-based policies with their own parameters")
    p.add_argument("--calibration-scale", type=float, default=0.1, help="world fraction used to calibrate rules")
    p.add_argument("--hint-recall", type=float, help="share of changes announced by a hint (sitemap, feed)")
    p.add_argument("--hint-precision", type=float, help="share of hints that announce a real change")
    p.add_argument("--hint-delay", type=float, help="mean delay of a hint after its change (seconds)")
    p.add_argument("--json", help="write every result here")
    p.add_argument("--svg-dir", help="write learning-curve and budget SVG charts here")
    args = p.parse_args(argv)

    unknown = [n for n in args.policies.split(",") if n not in POLICIES]
    if unknown:
        p.error(f"unknown policies: {', '.join(unknown)}")
    return args


def run(args: argparse.Namespace) -> list[RunResult]:
    spec = preset(args.world, seed=args.seed, scale=args.scale, days=args.days)
    for name in ("hint_recall", "hint_precision", "hint_delay"):
        if getattr(args, name) is not None:
            setattr(spec, name, getattr(args, name))
    world = build_world(spec)
    lam = world.total_rate() * 86_400
    print(f"world {spec.name}: {len(world.pages)} URLs on {len(world.hosts)} hosts, {spec.days:g} days, "
          f"Λ = {lam:.0f} changes/day, seed {spec.seed}, detection {args.detection}", flush=True)  # fmt: skip
    if world.hints:
        print(f"hints: recall {spec.hint_recall:g}, precision {spec.hint_precision:g}, "
              f"mean delay {spec.hint_delay:g}s: {len(world.hints)} hints", flush=True)  # fmt: skip
    results: list[RunResult] = []
    for factor in args.budget_factor:
        config = RunConfig(detection=args.detection)
        if args.fetch_cap:
            budget = (args.budget_per_day / 86_400) if args.budget_per_day else factor * world.total_rate()
            config.fetch_cap = args.fetch_cap * budget
        batch = []
        for name in args.policies.split(","):
            r = run_policy(name, world, factor, config, per_day=args.budget_per_day,
                           calibrate_rules=not args.no_calibrate, calibration_scale=args.calibration_scale)  # fmt: skip
            batch.append(r)
            print(table([r]).splitlines()[-1], flush=True)
        print(f"\n== {spec.name}, budget {factor:g} × Λ ({factor * lam:.0f} revisits/day) ==")
        print(table(batch), kind_table(batch), sep="\n\n")
        for r in batch:
            if "hints" in r.extra:
                print(f"{r.name:<14} hints: " + ", ".join(f"{k} {v}" for k, v in sorted(r.extra["hints"].items())))
        print(flush=True)
        results.extend(batch)
        if args.svg_dir:
            os.makedirs(args.svg_dir, exist_ok=True)
            series = {r.name: [(c["day"], c["efficiency"]) for c in r.curve] for r in batch}
            title = f"{spec.name} world, budget {factor:g}×Λ: efficiency per {config.bin_days:g} days"
            _chart(args, f"learning-{spec.name}-{factor:g}.svg", series, title, "day", "efficiency (recall ÷ optimum)")
    if args.svg_dir and len(args.budget_factor) > 1:
        series: dict[str, list[tuple[float, float]]] = {}
        for r in results:
            series.setdefault(r.name, []).append((r.extra["budget_factor"], r.efficiency))
        _chart(args, f"budget-{spec.name}.svg", series, f"{spec.name} world: efficiency against budget",
               "budget (× Λ)", "efficiency")  # fmt: skip
    return results


def _chart(args: argparse.Namespace, name: str, series: Any, title: str, x_label: str, y_label: str) -> None:
    with open(os.path.join(args.svg_dir, name), "w", encoding="utf-8") as fh:
        fh.write(line_chart(series, title=title, x_label=x_label, y_label=y_label, y_range=(0.0, 1.2)))


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    results = run(args)
    if args.json:
        data: list[dict[str, Any]] = [r.as_dict() for r in results]
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(data, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
