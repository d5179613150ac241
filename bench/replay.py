"""Replay real change histories against every policy at equal fetch counts.

``python -m bench.replay --trace FILE --budget-factor K --json OUT``

The trace holds one JSON object per line, ``{"doc", "service",
"versions": [unix seconds, ...]}``.  Each document becomes a URL on the
host of its service, discovered at its first version (which the first
visit captures); its later versions are the changes to capture.  The run
ends at the last version in the file.  The policies drive the real
frontier through :func:`bench.sim.engine.simulate`.

**Budget.**  F = K × (number of versions) fetches in all, first visits
included.  The revisit budget F − D (D documents) is spread evenly over
document-time: a crawl knowing n documents may revisit at n × ρ per
second, ρ = (F − D) / Σ lifetimes, so the budget grows as documents are
discovered (the uniform policy visits every ρ⁻¹ seconds exactly).

**Equal fetches.**  Each policy has one knob: the budget multiplier for
policies that take a budget, the time scale of every wait parameter for
rule-based ones (see :mod:`bench.sim.lineup`).  The knob is searched (secant
steps in log space) until the realised revisits are within 1 % of F − D,
and the figures are then interpolated linearly between the two runs that
bracket F − D, so every policy is reported at exactly F fetches.

**Hindsight optimum.**  The best *periodic* schedule chosen knowing the
change times: every document gets its own fixed interval (from a 2^(1/4)
geometric grid between one hour and ten years, or is never revisited),
versions captured are averaged over four phases, and the intervals are
chosen to maximise captured versions under the revisit budget (Lagrange
multiplier by bisection, mixing the two bracketing solutions to meet the
budget exactly).  A clairvoyant schedule free to fetch at any instant
would capture min(1, budget ÷ versions) – 100 % from K = 1 – which no
online policy can approach and which therefore says nothing; the periodic
hindsight optimum is the fair ceiling for schedules that do not know the
future, the quantity the Poisson theory optimises.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from scrapy_adaptive.policies.base import WaitPolicy

from .sim.engine import RunConfig, simulate
from .sim.intensity import CONSTANT
from .sim.lineup import BUDGETED, FITTED_PEERS, HELD_PEERS, POLICIES, LabContext, with_scale
from .sim.metrics import RunResult
from .sim.world import DAY, HOUR, Host, Page, World, WorldSpec
from .traces.stats import read_trace

#: the policy the crawler ships as its default (ADAPTIVE_WAIT_POLICY); Heritrix's
#: rule stays available by name (docs/lab/policy-real-traces.md has the figures behind the choice)
DEFAULT_POLICY = "union"
#: a year: documents live for years and a budget of one fetch per version
#: leaves many of them months between visits; 28 days would be a floor the
#: budget cannot pay for
MAX_WAIT = 365 * DAY
REPLAY_POLICIES = [
    "uniform",
    "heritrix",
    "nutch",
    "stormcrawler",
    "fix",
    "dyn",
    "window",
    "state1",
    "state2",
    "precision",
    "proportional",
    "burst",
    "snapback",
    "paced-heritrix",
    "paced-nutch",
    "union",
    "oracle-rate",
]


# -- the trace as a world -------------------------------------------------------------------------


def _host_name(service: str, known: dict[str, str]) -> str:
    if service not in known:
        slug = "".join(c if c.isalnum() else "-" for c in service.lower()).strip("-") or "service"
        known[service] = f"{slug}-{len(known)}.trace"
    return known[service]


def load_trace(path: str) -> World:
    """Build a world from a trace file (one JSON document per line; ``.gz`` is read transparently)."""
    return world_from_docs(list(read_trace(path)), path)


def world_from_docs(rows: list[dict[str, Any]], label: str = "trace") -> World:
    """Build a world from trace rows ``{"doc", "service", "versions"}`` (versions sorted)."""
    docs = [{"doc": r["doc"], "service": r["service"], "v": r["versions"]} for r in rows if r["versions"]]
    if not docs:
        raise ValueError(f"{label}: no documents with versions")
    start = min(d["v"][0] for d in docs)
    end = max(d["v"][-1] for d in docs) + 1.0
    names: dict[str, str] = {}
    hosts: dict[str, Host] = {}
    pages: list[Page] = []
    for i, d in enumerate(docs):
        host = _host_name(d["service"], names)
        hosts.setdefault(host, Host(host))
        discovered = d["v"][0]
        changes = d["v"][1:]
        rate = len(changes) / max(end - discovered, 1.0)
        pages.append(
            Page(
                index=i,
                url=f"https://{host}/{i}",
                host=host,
                kind="poisson",
                rate=rate,
                scale=rate,
                profile=CONSTANT,
                changes=changes,
                size=20_000,
                duration=0.5,
                created=discovered,
                discovered=discovered,
            )
        )
    spec = WorldSpec(name="trace", urls=len(pages), hosts=len(hosts), days=(end - start) / DAY)
    return World(spec, hosts, pages, start, end)


def versions_in(world: World) -> int:
    return sum(len(p.changes) + 1 for p in world.pages)


def doc_time(world: World) -> float:
    end = world.start + world.duration
    return sum(end - (p.discovered or world.start) for p in world.pages)


# -- the hindsight optimum -----------------------------------------------------------------------


@dataclass
class Hindsight:
    revisits: float
    captured: float
    changes: int
    #: the optimum's (revisits, captured) for each page, in ``world.pages`` order
    per_page: tuple[tuple[float, float], ...] = ()

    @property
    def recall(self) -> float:
        return self.captured / self.changes if self.changes else 1.0


def _doc_options(page: Page, end: float, grid: list[float], phases: int) -> list[tuple[float, float]]:
    """(revisits, captured) of periodic schedules at each grid interval, phase-averaged."""
    first = page.discovered or 0.0
    life = end - first
    options = [(0.0, 0.0)]
    for interval in grid:
        if interval > 2 * life and options[-1][0] <= 1.0:
            break
        fetches = captured = 0.0
        for k in range(phases):
            phase = interval * k / phases
            # visits at first (discovery), then first + phase + n·interval, n ≥ 1 (phase 0: n·interval)
            offset = phase if phase > 0 else interval
            n = 0 if offset > life else int((life - offset) // interval) + 1
            fetches += n
            if n == 0:
                continue
            last = first + offset + (n - 1) * interval
            slots = set()
            for t in page.changes:
                if t > last:
                    break
                x = t - first - offset
                slots.add(-1 if x <= 0 else math.ceil(x / interval - 1e-12))
            captured += len(slots)
        options.append((fetches / phases, captured / phases))
    return options


def hindsight_optimum(world: World, revisits: float, *, phases: int = 4, min_interval: float = HOUR) -> Hindsight:
    """Best per-document periodic schedule, knowing the changes, at *revisits*.

    The grid of intervals starts at *min_interval* (an hour for real
    histories; the politeness delay for a world compressed into minutes,
    :mod:`bench.changing_web`).
    """
    end = world.start + world.duration
    grid = [min_interval * 2 ** (k / 4) for k in range(0, 4 * 17)]
    docs = [_doc_options(p, end, grid, phases) for p in world.pages]
    changes = sum(len(p.changes) for p in world.pages)

    def choose(mu: float) -> list[tuple[float, float]]:
        return [max(options, key=lambda o: o[1] - mu * o[0]) for options in docs]

    def pick(mu: float) -> tuple[float, float]:
        chosen = choose(mu)
        return sum(o[0] for o in chosen), sum(o[1] for o in chosen)

    lo, hi = 0.0, 1.0
    while pick(hi)[0] > revisits:
        hi *= 2
    f_lo, c_lo = pick(lo)
    if f_lo <= revisits:
        return Hindsight(f_lo, c_lo, changes, tuple(choose(lo)))
    for _ in range(60):
        mid = (lo + hi) / 2
        if pick(mid)[0] > revisits:
            lo = mid
        else:
            hi = mid
    (f1, c1), (f2, c2) = pick(lo), pick(hi)
    w = 0.0 if f1 == f2 else (revisits - f2) / (f1 - f2)
    per_page = tuple((b[0] + w * (a[0] - b[0]), b[1] + w * (a[1] - b[1])) for a, b in zip(choose(lo), choose(hi)))
    return Hindsight(revisits, c2 + w * (c1 - c2), changes, per_page)


# -- running a policy at an exact fetch count --------------------------------------------------------


def _run(name: str, world: World, rho: float, knob: float, config: RunConfig) -> RunResult:
    budgeted = name in BUDGETED
    n = len(world.pages)
    budget = rho * n * (knob if budgeted else 1.0)
    ctx = with_scale(LabContext(world, budget, min_wait=HOUR, max_wait=MAX_WAIT), 1.0 if budgeted else knob)
    policy: WaitPolicy = POLICIES[name](ctx)
    allocator = getattr(policy, "allocator", None) or (getattr(policy, "pace", None) if budgeted else None)
    if budgeted and callable(getattr(policy, "set_budget", None)):
        allocator = policy  # a policy that spends the budget through more than one part
    on_discover: Callable[[int], None] | None = None
    if allocator is not None:
        per_doc = budget / n

        def on_discover(known: int) -> None:
            allocator.set_budget(per_doc * known)

    return simulate(world, policy, config, name=name, on_discover=on_discover)


def equal_fetch_run(
    name: str,
    world: World,
    rho: float,
    target: float,
    config: RunConfig,
    *,
    rounds: int = 7,
    tolerance: float = 0.01,
    start: float = 1.0,
) -> dict[str, Any]:
    """Search the policy's knob for *target* revisits; interpolate to it.

    *start* is the first knob tried (1: the policy's own parameters); a
    good guess saves runs, and the answer is the same interpolation to
    *target* whatever the start, within *tolerance*.
    """
    sign = 1.0 if name in BUDGETED else -1.0  # revisits rise (budget) or fall (time scale) with the knob
    runs: list[tuple[float, RunResult]] = []
    knob, slope = min(max(start, 0.02), 50.0), sign
    for _ in range(rounds):
        result = _run(name, world, rho, knob, config)
        runs.append((knob, result))
        err = math.log(max(result.revisits, 1) / target)
        if abs(err) < tolerance:
            break
        if len(runs) >= 2:
            (k1, r1), (k2, r2) = runs[-2], runs[-1]
            d = math.log(k2) - math.log(k1)
            if abs(d) > 1e-12:
                measured = (math.log(max(r2.revisits, 1)) - math.log(max(r1.revisits, 1))) / d
                if measured * sign > 0.05:
                    slope = measured
        step = max(-math.log(4.0), min(math.log(4.0), -err / slope))  # at most ×4 per round
        knob = min(max(knob * math.exp(step), 0.02), 50.0)
    below = [r for _, r in runs if r.revisits <= target]
    above = [r for _, r in runs if r.revisits >= target]
    if below and above:
        a = max(below, key=lambda r: r.revisits)
        b = min(above, key=lambda r: r.revisits)
    else:
        a = b = min((r for _, r in runs), key=lambda r: abs(r.revisits - target))
    w = 0.0 if b.revisits == a.revisits else (target - a.revisits) / (b.revisits - a.revisits)
    knob_of = {id(r): k for k, r in runs}

    def mix(x: float, y: float) -> float:
        return x + w * (y - x)

    captured = mix(a.captured, b.captured)
    revisits = target if a is not b else a.revisits
    delays = (a.median_capture_delay_h, b.median_capture_delay_h)
    return {
        "recall": captured / a.changes if a.changes else 1.0,
        # the median capture delay at the target, interpolated as the captures are
        "delay_h": None if None in delays else mix(*delays),
        "precision": captured / revisits if revisits else 0.0,
        "captured": captured,
        "revisits": revisits,
        "runs": [(k, r.revisits) for k, r in runs],
        # the knob at the target (geometric mean of the bracketing runs'): where a neighbouring search should start
        "knob": math.sqrt(knob_of[id(a)] * knob_of[id(b)]),
        "realised_fetches": [r.revisits + r.first_visits for _, r in runs],
        "violations": max(r.violations for _, r in runs),
        "exact": a is not b or abs(a.revisits - target) <= tolerance * target,
    }


def replay(
    trace: str, factor: float, policies: list[str] | None = None, *, default: str = DEFAULT_POLICY
) -> dict[str, Any]:
    """Replay *trace* at *factor* × versions fetches; the JSON-ready report.

    *default* names the policy the report always includes (the shipped
    default, or a candidate for it).
    """
    world = load_trace(trace)
    docs = len(world.pages)
    fetches = factor * versions_in(world)
    target = fetches - docs
    if target <= 0:
        raise ValueError("the budget does not even cover one visit per document")
    rho = target / doc_time(world)
    config = RunConfig(bin_days=90.0)
    best = hindsight_optimum(world, target)
    report: dict[str, Any] = {
        "default_policy": default,
        "trace": trace,
        "budget_factor": factor,
        "documents": docs,
        "versions": versions_in(world),
        "changes": sum(len(p.changes) for p in world.pages),
        "fetches": fetches,
        "hindsight": {"recall": best.recall, "revisits": best.revisits, "captured": best.captured},
        "clairvoyant_recall": min(1.0, target / max(1, sum(len(p.changes) for p in world.pages))),
        "policies": {},
    }
    chosen = list(policies or REPLAY_POLICIES)
    if default not in chosen:
        chosen.insert(0, default)  # the report always says how the shipped default does
    for name in chosen:
        run = equal_fetch_run(name, world, rho, target, config)
        # a rule whose knob cannot reach the budget is compared with the
        # hindsight optimum at the fetch count it did realise
        ref = best if run["exact"] else hindsight_optimum(world, run["revisits"])
        report["policies"][name] = {
            "recall": run["recall"],
            "median_capture_delay_h": run["delay_h"],
            "precision": run["precision"],
            "efficiency": run["recall"] / ref.recall if ref.recall else 0.0,
            "fetches": run["revisits"] + docs,
            "exact": run["exact"],
            "violations": run["violations"],
            "search": run["runs"],
        }
    return report


def fmt_delay(hours: float | None) -> str:
    """A median capture delay for a table: hours below two days, days above."""
    if hours is None:
        return "–"
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} d"


def best_of(row: dict[str, dict[str, Any]], peers: Sequence[str]) -> str | None:
    """The peer of *peers* with the highest recall among those that reached the fetch count
    (a rule whose knob could not reach it bought its recall with other fetches)."""
    eligible = [p for p in peers if p in row and row[p]["exact"]]
    return max(eligible, key=lambda p: row[p]["recall"]) if eligible else None


def format_report(report: dict[str, Any]) -> str:
    lines = [
        f"trace {report['trace']}: {report['documents']} documents, {report['versions']} versions; "
        f"budget {report['budget_factor']}× = {report['fetches']:.0f} fetches; "
        f"hindsight periodic optimum recall {report['hindsight']['recall']:.3f}",
        f"{'policy':<16} {'recall':>7} {'delay':>8} {'prec':>7} {'eff':>7} {'fetches':>9}   "
        "(delay: median time from a version's appearance to its capture)",
    ]
    rows = report["policies"]
    for name, r in rows.items():
        flag = "" if r["exact"] else "  (budget not reachable: efficiency at its own fetch count)"
        lines.append(
            f"{name:<16} {r['recall']:>7.3f} {fmt_delay(r.get('median_capture_delay_h')):>8} {r['precision']:>7.3f} "
            f"{r['efficiency']:>7.1%} {r['fetches']:>9.0f}{flag}"
        )
    default = rows.get(report["default_policy"])
    for kind, peers in (("held to the budget", HELD_PEERS), ("fitted with hindsight", FITTED_PEERS)):
        best = best_of(rows, peers)
        if default is not None and best is not None and rows[best]["recall"] > 0:
            lines.append(f"default ÷ best peer {kind} ({best}): {default['recall'] / rows[best]['recall']:.3f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.replay", description=__doc__.split("\n\n")[0])
    parser.add_argument("--trace", required=True, help="JSON-lines trace file")
    parser.add_argument("--budget-factor", type=float, default=1.0, help="fetches = K × versions (default 1)")
    parser.add_argument("--json", help="write the report here")
    parser.add_argument(
        "--policies",
        help="comma-separated subset of: "
        + ", ".join(REPLAY_POLICIES)
        + " (held to the budget: "
        + ", ".join(HELD_PEERS)
        + "; fitted with hindsight: "
        + ", ".join(FITTED_PEERS)
        + ")",
    )
    parser.add_argument(
        "--default", default=DEFAULT_POLICY, help=f"the default policy, always run (default {DEFAULT_POLICY})"
    )
    args = parser.parse_args(argv)
    policies = args.policies.split(",") if args.policies else None
    unknown = [p for p in (policies or []) + [args.default] if p not in POLICIES]
    if unknown:
        parser.error(f"unknown policies: {', '.join(unknown)}")
    report = replay(args.trace, args.budget_factor, policies, default=args.default)
    print(format_report(report))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
