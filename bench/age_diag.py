"""Who gets the fetches of documents found late, and what the age-class prior learned (issue 37, lab).

``python -m bench.age_diag priors --trace FILE --budget-factor K``
    the age-class priors of ``union-age`` (:mod:`bench.age_variants`) after a
    run at the knob that spends the target: each class's contributions, rate
    and spread, against the pooled prior the product uses;
``python -m bench.age_diag late --trace FILE --budget-factor K --policies union,paced-nutch``
    each policy's fetches and captures by the half of the history a document
    was found in and its change rate (:func:`bench.floor_diag.classes`), at
    its own knob for the target;
``python -m bench.age_diag waits --trace FILE --budget-factor K``
    the default's two plans (burst part, snap-back part) at the first visits
    of the fast documents (≥ 50 changes a year) found in the second half.

Every run is on the table's sample (``--max-versions 6000``) and, like
:mod:`bench.floor_diag`, a single run at the interpolated knob.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from scrapy_adaptive.model import Visit

from . import age_variants  # noqa: F401  (registers union-age)
from .fastreplay import as_world, simulate, source_docs
from .floor_diag import build, classes, knob_at_target, tallied
from .sim.lineup import POLICIES
from .sim.world import DAY, World

YEAR = 365.25 * DAY


def setup(trace: str, factor: float, max_versions: int) -> tuple[World, float, float]:
    """The sampled source's world, its ρ (revisits per document-second) and the target revisits."""
    docs = source_docs(trace, "all", max_versions)
    world = as_world(docs)
    target = factor * sum(len(d.changes) + 1 for d in docs) - len(docs)
    end = world.start + world.duration
    return world, target / sum(end - d.first for d in docs), target


def run_with(name: str, world: World, rho: float, knob: float, wrap: Any = None) -> tuple[Any, Any]:
    """One run of *name* at *knob* (``wrap(policy)`` may replace it); (the policy, the run)."""
    policy, (target, per_doc) = build(name, world, rho, knob)
    runner = wrap(policy) if wrap else policy
    on_discover = None
    if target is not None and hasattr(target, "set_budget"):

        def on_discover(known: int) -> None:
            target.set_budget(per_doc * known)

    return policy, simulate(world, runner, on_discover)


def priors(world: World, rho: float, target: float) -> str:
    knob = knob_at_target("union-age", world, rho, target)
    policy, run = run_with("union-age", world, rho, knob)
    prior = policy.allocator.prior
    mu, sd = prior.pooled.get()
    lines = [
        f"union-age at knob {knob:.4g}: revisits {run.revisits} (target {target:.0f}), captured {run.captured}",
        "| prior | contributions | rate (changes/year) | sd of ln λ | decisions priced by it |",
        "|---|---|---|---|---|",
        f"| pooled (the product's) | {prior.pooled.count} | {math.exp(mu) * YEAR:.2f} | {sd:.2f} | {prior.fell_back} |",
    ]
    labels = ("0–30 d", "30–180 d", "180 d–1 y", "> 1 y")
    for label, klass, used in zip(labels, prior.classes, prior.used, strict=True):
        mu, sd = klass.get()
        rate = f"{math.exp(mu) * YEAR:.2f}" if klass.learned else "(not learned: pooled)"
        lines.append(f"| {label} | {klass.count} | {rate} | {sd:.2f} | {used} |")
    return "\n".join(lines)


def late(world: World, rho: float, target: float, names: list[str]) -> str:
    cls = classes(world)
    lines = []
    for name in names:
        knob = knob_at_target(name, world, rho, target)
        tally, revisits, captured = tallied(name, world, rho, knob)
        rows: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
        for p in world.pages:
            half = "second" if int(cls[p.url]["found"].split()[-1]) >= 5 else "first"
            fetched, caught = tally.by_doc.get(p.url, [0, 0])
            row = rows[(half, cls[p.url]["rate"])]
            row[0] += 1
            row[1] += len(p.changes)
            row[2] += fetched
            row[3] += caught
        lines += [
            f"{name} at knob {knob:.4g}: revisits {revisits} (target {target:.0f}), captured {captured}",
            "| found in half | changes/year | docs | changes | fetches | fetches per change | captures | recall |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for (half, rate), (n, ch, f, c) in sorted(rows.items()):
            lines.append(f"| {half} | {rate} | {n} | {ch} | {f} | {f / max(ch, 1):.2f} | {c} | {c / max(ch, 1):.2f} |")
    return "\n".join(lines)


class Plans:
    """The union, recording both plans' waits at every visit."""

    def __init__(self, union: Any) -> None:
        self.union = union
        self.log: dict[str, list[tuple[float, str, float, float]]] = defaultdict(list)

    def next_wait(self, history: Mapping[str, Any], visit: Visit) -> float:
        w_burst, w_snap, memory = self.union.waits(history, visit)
        self.log[str(visit.url)].append((float(visit.fetched or 0.0), visit.change.value, w_burst, w_snap))
        return w_burst if self.union.burst.is_noise(memory) or w_burst <= w_snap else w_snap


def waits(world: World, rho: float, target: float, name: str = "union", first: int = 8) -> str:
    knob = knob_at_target(name, world, rho, target)
    holder: list[Plans] = []
    _, run = run_with(name, world, rho, knob, lambda p: holder.append(Plans(p)) or holder[0])
    plans = holder[0]
    cls = classes(world)
    end = world.start + world.duration
    lines = [
        f"{name} at knob {knob:.4g}: revisits {run.revisits}; fast documents (≥ 50 changes/year) by when found",
        "| found in tenth | changes/year (mean gap) | visits | found a change | first visits: day, verdict, "
        "burst plan ÷ snap-back plan (days) |",
        "|---|---|---|---|---|",
    ]
    for p in sorted(world.pages, key=lambda q: q.discovered or world.start):
        if cls[p.url]["rate"] != ">=50/y":
            continue
        found = p.discovered or world.start
        rate = len(p.changes) / ((end - found) / YEAR)
        log = plans.log[p.url]
        hits = sum(v[1] == "changed" for v in log[1:])
        head = ", ".join(f"{(t - found) / DAY:.0f} {v[0]} {b / DAY:.0f}/{s / DAY:.0f}" for t, v, b, s in log[:first])
        tenth = cls[p.url]["found"].split()[-1]
        gap = YEAR / DAY / rate
        lines.append(f"| {tenth} | {rate:.0f} ({gap:.1f} d) | {len(log)} | {hits}/{len(log) - 1} | {head} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.age_diag")
    ap.add_argument("what", choices=("priors", "late", "waits"))
    ap.add_argument("--trace", required=True)
    ap.add_argument("--budget-factor", type=float, default=1.0)
    ap.add_argument("--policies", default="union,paced-nutch,union-age")
    ap.add_argument("--max-versions", type=int, default=6000)
    args = ap.parse_args(argv)
    world, rho, target = setup(args.trace, args.budget_factor, args.max_versions)
    if args.what == "priors":
        print(priors(world, rho, target))
    elif args.what == "late":
        names = args.policies.split(",")
        unknown = [n for n in names if n not in POLICIES]
        if unknown:
            ap.error(f"--policies: unknown {', '.join(unknown)}")
        print(late(world, rho, target, names))
    else:
        print(waits(world, rho, target))
    return 0


if __name__ == "__main__":
    sys.exit(main())
