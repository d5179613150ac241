"""A fast pure-Python replay of change histories, for exploring policies.

``python -m bench.fastreplay --trace FILE [--half A|B] --budget-factor K --policies a,b``

The world is :mod:`bench.replay`'s: a document is discovered at its first
version; recall = share of later versions captured.  **Budget**: F = K ×
versions fetches, first visits included; the revisits are spread evenly over
document-time.  Without the frontier, documents are visited in time order
from a heap, with no politeness, and each policy's one knob (a rule's time
scale, a budgeted policy's budget multiplier) is searched until the revisits
match the target; recall at the target is read from a line fitted through
runs around it (:func:`smoothed`).  ``--frontier`` runs each policy through
the real frontier instead (:func:`bench.sim.engine.simulate`), the check of
the fast figures.  ``--half A|B`` keeps one of two halves of the trace split
by service with a fixed seed (:func:`split`).

Each cell also gives the **median capture delay**
(:func:`bench.sim.metrics.capture_delay`).  ``--trace`` may be repeated;
``--markdown`` prints the tables of docs/benchmarks.md: the default against
the best peer held to the budget (:data:`bench.sim.lineup.HELD_PEERS`) and
the best fitted with hindsight (:data:`bench.sim.lineup.FITTED_PEERS`), then
every policy; ``--json`` keeps every cell, ``--render`` prints such files again.
"""

from __future__ import annotations

import argparse
import bisect
import heapq
import json
import math
import os
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import Pool
from typing import Any, NamedTuple

from scrapy_adaptive.model import ChangeState, Outcome, Visit
from scrapy_adaptive.policies.base import WaitPolicy

from .replay import DEFAULT_POLICY, MAX_WAIT, best_of, fmt_delay, world_from_docs
from .sim.engine import RunConfig
from .sim.engine import simulate as engine_simulate
from .sim.lineup import BUDGETED, FITTED_PEERS, HELD_PEERS, POLICIES, LabContext, with_scale
from .sim.metrics import capture_delay, median_delay
from .sim.world import HOUR, World
from .traces.stats import open_text, read_trace

SPLIT_SEED = 20261126


@dataclass
class Doc:
    service: str
    first: float
    changes: list[float]


def read_docs(path: str) -> list[Doc]:
    return [Doc(d["service"], d["versions"][0], d["versions"][1:]) for d in read_trace(path)]


def split(docs: list[Doc], half: str, seed: int = SPLIT_SEED) -> list[Doc]:
    """Half "A" or "B" of the services (shuffled with *seed*, alternate)."""
    services = sorted({d.service for d in docs})
    random.Random(seed).shuffle(services)
    keep = set(services[0::2] if half == "A" else services[1::2])
    return [d for d in docs if d.service in keep]


def as_world(docs: list[Doc]) -> World:
    """A :class:`World` for the lineup's factories (oracles are not supported),
    built as :mod:`.replay` builds its worlds."""
    rows = [{"doc": str(i), "service": d.service, "versions": [d.first, *d.changes]} for i, d in enumerate(docs)]
    return world_from_docs(rows)


class Run(NamedTuple):
    """What one run of a policy achieved."""

    revisits: int
    captured: int
    #: the median hours from a captured version's appearance to its capture (NaN: none captured)
    delay_h: float


def simulate(
    world: World,
    policy: WaitPolicy,
    on_discover: Callable[[int], None] | None = None,
    per_page: list[list[int]] | None = None,
) -> Run:
    """Revisits, captures and median capture delay of *policy* on *world*; visits in time order."""
    end = world.start + world.duration
    n = len(world.pages)
    heap: list[tuple[float, int, int]] = []  # (time, seq, page); first visits at discovery
    due = [p.discovered or world.start for p in world.pages]
    for p in world.pages:
        heap.append((due[p.index], 0, p.index))
    heapq.heapify(heap)
    records: list[dict[str, Any] | None] = [None] * n
    ptr = [0] * n
    revisits = captured = known = 0
    delays: list[float] = []
    seq = 1
    while heap:
        now, _, i = heapq.heappop(heap)
        if now > end:
            break
        page = world.pages[i]
        rec = records[i]
        k = ptr[i]
        j = bisect.bisect_right(page.changes, now, lo=k)
        ptr[i] = j
        if rec is None:
            known += 1
            if on_discover is not None:
                on_discover(known)
            rec = {
                "url": page.url,
                "queue": page.host,
                "visits": 0,
                "versions": 0,
                "fetched": None,
                "wait": None,
                "discovered": page.discovered,
                "history": [],
                "policy": {},
                "last_modified": None,
                "hint": None,
            }
            change = ChangeState.CHANGED
        else:
            revisits += 1
            change = ChangeState.CHANGED if j > k else ChangeState.UNCHANGED
            captured += j > k
            delay = capture_delay(page.changes, k, j, now)
            if delay is not None:
                delays.append(delay)
            if per_page is not None:
                per_page[i][0] += 1
                per_page[i][1] += j > k
        visit = Visit(Outcome.VISITED, status=200, change=change, content_type="text/html", size=page.size,
                      url=page.url, queue=page.host, depth=0, overdue=0.0, fetched=now)  # fmt: skip
        snap = dict(rec)
        snap["history"] = [list(h) for h in rec["history"]]
        snap["policy"] = dict(rec["policy"])
        plan = policy.plan(snap, visit)
        wait = plan.wait
        if not (wait >= 0 and math.isfinite(wait)):
            raise ValueError(f"invalid wait {wait!r}")
        rec["visits"] += 1
        rec["versions"] += change is ChangeState.CHANGED
        rec["fetched"] = now
        rec["wait"] = wait
        rec["history"].append([now, change.value, 200])
        del rec["history"][:-16]
        if plan.memory is not None:
            rec["policy"] = plan.memory
        records[i] = rec
        due[i] = now + max(wait, 1.0)
        heapq.heappush(heap, (due[i], seq, i))
        seq += 1
    median = median_delay(delays)
    return Run(revisits, captured, math.nan if median is None else median / 3_600)


def run_once(name: str, world: World, rho: float, knob: float, frontier: bool = False) -> Run:
    """One run of *name* at *knob*: here, or with *frontier* through the real frontier and its
    politeness (:func:`bench.sim.engine.simulate`, about 1–4 ms a fetch)."""
    budgeted = name in BUDGETED
    n = len(world.pages)
    budget = rho * n * (knob if budgeted else 1.0)
    ctx = with_scale(LabContext(world, budget, min_wait=HOUR, max_wait=MAX_WAIT), 1.0 if budgeted else knob)
    policy = POLICIES[name](ctx)
    allocator = None  # a rule (its time scale is the knob) is given no budget, whatever its parts
    if budgeted:
        allocator = getattr(policy, "allocator", None) or getattr(policy, "pace", None)
        if callable(getattr(policy, "set_budget", None)):
            allocator = policy  # a policy that spends the budget through more than one part
    on_discover = None
    if allocator is not None and hasattr(allocator, "set_budget"):
        per_doc = budget / n

        def on_discover(known: int) -> None:
            allocator.set_budget(per_doc * known)

    if frontier:
        r = engine_simulate(world, policy, RunConfig(bin_days=90.0), name=name, on_discover=on_discover)
        delay = r.median_capture_delay_h
        return Run(r.revisits, r.captured, math.nan if delay is None else delay)
    return simulate(world, policy, on_discover)


def equal_fetch(
    name: str,
    world: World,
    rho: float,
    target: float,
    rounds: int = 8,
    tol: float = 0.01,
    smooth: bool = True,
    frontier: bool = False,
) -> dict:
    sign = 1.0 if name in BUDGETED else -1.0
    runs: list[tuple[float, Run]] = []
    knob, slope = 1.0, sign
    for _ in range(rounds):
        r = run_once(name, world, rho, knob, frontier)
        runs.append((knob, r))
        err = math.log(max(r.revisits, 1) / target)
        if abs(err) < tol:
            break
        if len(runs) >= 2:
            (k1, a), (k2, b) = runs[-2], runs[-1]
            d = math.log(k2) - math.log(k1)
            if abs(d) > 1e-12:
                m = (math.log(max(b.revisits, 1)) - math.log(max(a.revisits, 1))) / d
                if m * sign > 0.05:
                    slope = m
        step = max(-math.log(4.0), min(math.log(4.0), -err / slope))
        knob = min(max(knob * math.exp(step), 0.005), 200.0)
    below = [r for _, r in runs if r.revisits <= target]
    above = [r for _, r in runs if r.revisits >= target]
    if below and above:
        a = max(below, key=lambda r: r.revisits)
        b = min(above, key=lambda r: r.revisits)
    else:
        a = b = min((r for _, r in runs), key=lambda r: abs(r.revisits - target))
    w = 0.0 if a.revisits == b.revisits else (target - a.revisits) / (b.revisits - a.revisits)
    captured = a.captured + w * (b.captured - a.captured)
    changes = sum(len(p.changes) for p in world.pages)
    exact = a is not b or abs(a.revisits - target) <= tol * target
    out = {
        "recall": captured / changes,
        "changes": changes,
        "delay_h": _finite(a.delay_h + w * (b.delay_h - a.delay_h)),
        "exact": exact,
        "fetch_ratio": (a.revisits + w * (b.revisits - a.revisits)) / target,
        "runs": [(round(k, 4), r.revisits) for k, r in runs],
    }
    if smooth and exact:
        out.update(smoothed(name, world, rho, target, runs, changes))
    return out


def _finite(x: float) -> float | None:
    return x if math.isfinite(x) else None


def _line_at(points: list[tuple[float, float]], x0: float) -> tuple[float, float]:
    """Least-squares line through *points*, read at *x0*; (value, residual standard deviation)."""
    n = len(points)
    mx, my = sum(x for x, _ in points) / n, sum(y for _, y in points) / n
    sxx = sum((x - mx) ** 2 for x, _ in points)
    slope = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx > 0 else 0.0
    resid = math.sqrt(sum((y - (my + slope * (x - mx))) ** 2 for x, y in points) / max(1, n - 2))
    return my + slope * (x0 - mx), resid


#: knob offsets (log) of the extra runs :func:`smoothed` adds around the target
SMOOTH_STEPS = (-0.12, -0.06, 0.0, 0.06, 0.12)


def smoothed(name: str, world: World, rho: float, target: float, runs: list[tuple[float, Run]], changes: int) -> dict:
    """Recall (and median capture delay) at *target* from a straight line through runs near it.

    A budgeted policy's feedback loops make its captures a jagged function
    of the knob: two knobs 1 % apart can differ by several points of recall
    at almost the same fetch count, so one interpolated pair says little.
    Runs at knobs spread around the target's (and the search's runs within
    25 % of the target's fetches) are fitted by least squares, captured
    against revisits, and read at the target; ``spread`` is the residual
    standard deviation in recall, what one run could be off by.  The median
    capture delay is read from its own line through the same runs.
    """
    near = sorted(runs, key=lambda kr: abs(math.log(max(kr[1].revisits, 1) / target)))[:2]
    (k1, r1), (k2, r2) = near if len(near) == 2 else (near[0], near[0])
    if r1.revisits != r2.revisits and k1 != k2:
        m = (math.log(max(r2.revisits, 1)) - math.log(max(r1.revisits, 1))) / (math.log(k2) - math.log(k1))
        centre = k1 * math.exp(math.log(target / max(r1.revisits, 1)) / m) if abs(m) > 0.05 else k1
    else:
        centre = k1
    centre = min(max(centre, 0.005), 200.0)
    points = [r for _, r in runs if abs(math.log(max(r.revisits, 1) / target)) < math.log(1.25)]
    points += [run_once(name, world, rho, centre * math.exp(d)) for d in SMOOTH_STEPS]
    fit, resid = _line_at([(p.revisits, p.captured) for p in points], target)
    timed = [(p.revisits, p.delay_h) for p in points if math.isfinite(p.delay_h)]
    delay = _line_at(timed, target)[0] if timed else None
    return {"recall": fit / changes, "delay_h": delay, "spread": resid / changes, "points": len(points)}


# -- many sources in one command, and the tables -----------------------------------------------------


def source_docs(trace: str, half: str, max_versions: int = 0, seed: int = 1) -> list[Doc]:
    """The documents of one source: *trace*, its *half* ("A", "B"; anything else: all), at most
    *max_versions* versions of them (0: all): the documents in an order shuffled with *seed*,
    taken until they hold *max_versions* (the one crossing it kept whole, so heavy documents
    are as likely to be drawn as light ones), in the file's order."""
    docs = read_docs(trace)
    if half in ("A", "B"):
        docs = split(docs, half)
    if max_versions:
        order = list(range(len(docs)))
        random.Random(seed).shuffle(order)
        chosen: list[int] = []
        held = 0
        for i in order:
            if held >= max_versions:
                break
            chosen.append(i)
            held += 1 + len(docs[i].changes)
        docs = [docs[i] for i in sorted(chosen)]
    return docs


def cell(args: tuple[str, str, str, float, int, bool]) -> tuple[str, str, str, float, dict]:
    trace, half, name, factor, max_versions, frontier = args
    docs = source_docs(trace, half, max_versions)
    world = as_world(docs)
    versions = sum(len(d.changes) + 1 for d in docs)
    target = factor * versions - len(docs)
    end = world.start + world.duration
    rho = target / sum(end - d.first for d in docs)
    return trace, half, name, factor, equal_fetch(name, world, rho, target, smooth=not frontier, frontier=frontier)


def source_label(trace: str, half: str) -> str:
    base = os.path.basename(trace)
    for ext in (".gz", ".jsonl", ".json"):
        base = base[: -len(ext)] if base.endswith(ext) else base
    return base if half not in ("A", "B") else f"{base}, half {half}"


def pooled(report: dict[str, Any], k: str) -> dict[str, dict]:
    """Every policy's recall over all the sources at K = *k*: Σ captured ÷ Σ changes (each source at its own
    equal fetches); exact only if exact in every source.  No delay: medians do not pool."""
    rows = [r[k] for r in report["sources"].values() if k in r]
    out: dict[str, dict] = {}
    for name in report["policies"]:
        cells = [row[name] for row in rows if name in row and "changes" in row[name]]
        if len(cells) != len(rows) or not cells:
            continue
        changes = sum(c["changes"] for c in cells)
        out[name] = {
            "recall": sum(c["recall"] * c["changes"] for c in cells) / changes,
            "exact": all(c["exact"] for c in cells),
        }
    return out


def tables(report: dict[str, Any]) -> str:
    """The Markdown tables: the default against the best held and the best fitted peer, then every policy.

    Each cell is recall at equal fetches and, after "·", the median capture
    delay; ÷ is the default's recall over the peer's.  The best peer is the
    best of those that reached the fetch count; where none did, the best of
    the others, marked "(i, x×)", x its revisits ÷ the target's.  The last rows
    pool the sources (:func:`pooled`).
    """
    default, held, fitted = report["default"], report["held"], report["fitted"]
    names = [default] + [p for p in held + fitted if p in report["policies"] and p != default]
    others = [p for p in report["policies"] if p not in names]
    names += others

    def show(row: dict[str, dict], name: str | None) -> str:
        if name is None or name not in row:
            return "–"
        c = row[name]
        ratio = f", {c['fetch_ratio']:.2f}×" if "fetch_ratio" in c else ""
        mark = "" if c["exact"] else f" (i{ratio})"
        delay = f" · {fmt_delay(c['delay_h'])}" if "delay_h" in c else ""
        return f"{c['recall']:.3f}{delay}{mark}"

    def best(row: dict[str, dict], peers: list[str]) -> str | None:
        return best_of(row, peers) or max((p for p in peers if p in row), key=lambda p: row[p]["recall"], default=None)

    def ratio(row: dict[str, dict], peer: str | None) -> str:
        if peer is None or default not in row or not row[peer]["recall"]:
            return "–"
        x = row[default]["recall"] / row[peer]["recall"]
        return f"**{x:.2f}**" if x >= 1.0 else f"{x:.2f}"

    factors = list(next(iter(report["sources"].values())))
    sections = [*report["sources"].items(), ("pooled", {k: pooled(report, k) for k in factors})]
    out = [
        f"| source | K | default ({default}) | best peer held to the budget | ÷ | best peer, fitted | ÷ |",
        "|---|---|---|---|---|---|---|",
    ]
    for source, rows in sections:
        for n, (k, row) in enumerate(rows.items()):
            bh, bf = best(row, held), best(row, fitted)
            out.append(
                f"| {source if n == 0 else ''} | {k}× | {show(row, default)} | "
                f"{show(row, bh)} ({bh or '–'}) | {ratio(row, bh)} | {show(row, bf)} ({bf or '–'}) | {ratio(row, bf)} |"
            )
    out += ["", "| source | K | " + " | ".join(names) + " |", "|---|---|" + "---|" * len(names)]
    for source, rows in sections:
        for n, (k, row) in enumerate(rows.items()):
            out.append(f"| {source if n == 0 else ''} | {k}× | " + " | ".join(show(row, p) for p in names) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.fastreplay")
    ap.add_argument("--trace", action="append", help="a trace (JSON lines, .gz read too); repeat for more sources")
    ap.add_argument("--half", default="all", help="A, B or all (comma-separated for several)")
    ap.add_argument("--budget-factor", default="1,2,4")
    ap.add_argument("--policies", default="stormcrawler,heritrix", help="comma-separated; the held peers are "
                    + ", ".join(HELD_PEERS) + "; the fitted " + ", ".join(FITTED_PEERS))  # fmt: skip
    ap.add_argument("--default", default=DEFAULT_POLICY, help=f"the default the tables compare ({DEFAULT_POLICY})")
    ap.add_argument("--max-versions", type=int, default=0, help="a seeded sample of a source's documents (0: all)")
    ap.add_argument("--frontier", action="store_true", help="run each policy through the real frontier "
                    "(bench.sim.engine; no smoothing): the check of the fast figures")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--json", help="write every cell here")
    ap.add_argument("--markdown", action="store_true", help="print the tables (default ÷ best held, ÷ best fitted)")
    ap.add_argument("--render", metavar="JSON", nargs="+", help="print the tables of --json reports; run nothing")
    ap.add_argument("--write-halves", metavar="PREFIX", help="write PREFIX-A.jsonl and PREFIX-B.jsonl, stop")
    args = ap.parse_args(argv)
    if args.render:
        merged: dict[str, Any] = {}
        for path in args.render:
            with open(path, encoding="utf-8") as fh:
                one = json.load(fh)
            sources = {**merged.get("sources", {}), **one["sources"]}
            names = merged.get("policies", []) + [p for p in one["policies"] if p not in merged.get("policies", [])]
            merged = {**one, "sources": sources, "policies": names}
        print(tables(merged))
        return 0
    if not args.trace:
        ap.error("--trace is required")
    if args.write_halves:
        trace = args.trace[0]
        with open_text(trace) as fh:
            lines = [json.loads(x) for x in fh if x.strip()]
        services = sorted({str(d.get("service", "")) for d in lines})
        random.Random(SPLIT_SEED).shuffle(services)
        for half, keep in (("A", set(services[0::2])), ("B", set(services[1::2]))):
            with open(f"{args.write_halves}-{half}.jsonl", "w", encoding="utf-8") as out:
                for d in lines:
                    if str(d.get("service", "")) in keep:
                        out.write(json.dumps(d) + "\n")
        return 0

    policies = args.policies.split(",")
    unknown = [p for p in policies + [args.default] if p not in POLICIES]
    if unknown:
        ap.error(f"unknown policies: {', '.join(unknown)}")
    factors = [float(k) for k in args.budget_factor.split(",")]
    jobs = [
        (t, h, p, k, args.max_versions, args.frontier)
        for t in args.trace
        for h in args.half.split(",")
        for k in factors
        for p in policies
    ]
    # the largest sources and the costliest policies first, so that the pool ends together
    jobs.sort(key=lambda j: -os.path.getsize(j[0]) * j[3] * (3 if j[2] in ("union", "burst") else 1))
    report: dict[str, Any] = {
        "command": "python -m bench.fastreplay " + " ".join(sys.argv[1:] if argv is None else argv),
        "default": args.default,
        "held": [p for p in HELD_PEERS if p in policies],
        "fitted": [p for p in FITTED_PEERS if p in policies],
        "policies": policies,
        "max_versions": args.max_versions,
        "frontier": args.frontier,
        "sources": {
            source_label(t, h): {f"{k:g}": {} for k in factors} for t in args.trace for h in args.half.split(",")
        },
    }
    with Pool(min(args.procs, len(jobs))) as pool:
        for trace, half, name, k, r in pool.imap_unordered(cell, jobs, chunksize=1):
            report["sources"][source_label(trace, half)][f"{k:g}"][name] = r
            flag = "" if r["exact"] else " (inexact)"
            spread = f" ±{r['spread']:.3f} ({r['points']} runs)" if "spread" in r else ""
            print(f"{source_label(trace, half):<24} K={k:g} {name:<22} recall {r['recall']:.3f}{spread} "
                  f"median delay {fmt_delay(r['delay_h'])}{flag}  {r['runs']}", flush=True)  # fmt: skip
            if args.json:  # after every cell: a long run interrupted keeps what it has
                with open(args.json, "w", encoding="utf-8") as fh:
                    json.dump(report, fh, indent=1)
    if args.markdown:
        print(tables(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
