"""A fast pure-Python replay of change histories, for exploring policies.

``python -m bench.fastreplay --trace FILE [--half A|B] --budget-factor K --policies a,b``

Same accounting as :mod:`bench.replay` (F = K × versions fetches, first
visits included; a document is discovered at its first version; recall =
share of later versions captured; the run ends at the last version), but
without the frontier: documents are visited in time order from a heap, with
no politeness, and each policy's one knob (the time scale of a rule, the
budget multiplier of a budgeted policy) is searched until the revisits
match the target; recall at the target is then read from a straight line
fitted through runs around it (:func:`smoothed`), since a budgeted
policy's captures are a jagged function of its knob.  Agreement with the real replay
is checked in ``docs/lab/policy-real-traces.md``; use :mod:`bench.replay`
for reported figures.

``--half A|B`` keeps one of two halves of the trace split by service with a
fixed seed (:func:`split`), so a policy can be developed on one half and
reported on the other.
"""

from __future__ import annotations

import argparse
import bisect
import gzip
import heapq
import json
import math
import random
import sys
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing import Pool
from typing import Any

from scrapy_adaptive.model import ChangeState, Outcome, Visit
from scrapy_adaptive.policies.base import WaitPolicy

from .replay import MAX_WAIT, world_from_docs
from .sim.lineup import BUDGETED, POLICIES, LabContext, with_scale
from .sim.world import HOUR, World

SPLIT_SEED = 20261126


@dataclass
class Doc:
    service: str
    first: float
    changes: list[float]


def read_docs(path: str) -> list[Doc]:
    opener = gzip.open if path.endswith(".gz") else open
    docs = []
    with opener(path, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
        for line in fh:
            if not line.strip():
                continue
            d = json.loads(line)
            v = sorted({float(x) for x in d["versions"]})
            if v:
                docs.append(Doc(str(d.get("service", "")), v[0], v[1:]))
    return docs


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


def simulate(
    world: World,
    policy: WaitPolicy,
    on_discover: Callable[[int], None] | None = None,
    per_page: list[list[int]] | None = None,
) -> tuple[int, int]:
    """(revisits, captured) of *policy* on *world*; visits in time order."""
    end = world.start + world.duration
    heap: list[tuple[float, int, int]] = []  # (time, seq, page); first visits at discovery
    for p in world.pages:
        heap.append((p.discovered or world.start, 0, p.index))
    heapq.heapify(heap)
    records: list[dict[str, Any] | None] = [None] * len(world.pages)
    ptr = [0] * len(world.pages)
    revisits = captured = known = 0
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
            if per_page is not None:
                per_page[i][0] += 1
                per_page[i][1] += j > k
        visit = Visit(
            Outcome.VISITED,
            status=200,
            change=change,
            content_type="text/html",
            size=page.size,
            url=page.url,
            queue=page.host,
            depth=0,
            overdue=0.0,
            fetched=now,
        )
        snap = dict(rec)
        snap["history"] = [list(h) for h in rec["history"]]
        snap["policy"] = dict(rec["policy"])
        wait = policy.next_wait(snap, visit)
        if not (wait >= 0 and math.isfinite(wait)):
            raise ValueError(f"invalid wait {wait!r}")
        rec["visits"] += 1
        rec["versions"] += change is ChangeState.CHANGED
        rec["fetched"] = now
        rec["wait"] = wait
        rec["history"].append([now, change.value, 200])
        del rec["history"][:-16]
        if visit.policy_state is not None:
            rec["policy"] = visit.policy_state
        records[i] = rec
        heapq.heappush(heap, (now + max(wait, 1.0), seq, i))
        seq += 1
    return revisits, captured


def run_once(name: str, world: World, rho: float, knob: float) -> tuple[int, int]:
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

    return simulate(world, policy, on_discover)


def equal_fetch(
    name: str, world: World, rho: float, target: float, rounds: int = 8, tol: float = 0.01, smooth: bool = True
) -> dict:
    sign = 1.0 if name in BUDGETED else -1.0
    runs: list[tuple[float, tuple[int, int]]] = []
    knob, slope = 1.0, sign
    for _ in range(rounds):
        r = run_once(name, world, rho, knob)
        runs.append((knob, r))
        err = math.log(max(r[0], 1) / target)
        if abs(err) < tol:
            break
        if len(runs) >= 2:
            (k1, a), (k2, b) = runs[-2], runs[-1]
            d = math.log(k2) - math.log(k1)
            if abs(d) > 1e-12:
                m = (math.log(max(b[0], 1)) - math.log(max(a[0], 1))) / d
                if m * sign > 0.05:
                    slope = m
        step = max(-math.log(4.0), min(math.log(4.0), -err / slope))
        knob = min(max(knob * math.exp(step), 0.005), 200.0)
    below = [r for _, r in runs if r[0] <= target]
    above = [r for _, r in runs if r[0] >= target]
    if below and above:
        a, b = max(below), min(above)
    else:
        a = b = min((r for _, r in runs), key=lambda r: abs(r[0] - target))
    w = 0.0 if a[0] == b[0] else (target - a[0]) / (b[0] - a[0])
    captured = a[1] + w * (b[1] - a[1])
    changes = sum(len(p.changes) for p in world.pages)
    exact = a is not b or abs(a[0] - target) <= tol * target
    out = {"recall": captured / changes, "exact": exact, "runs": [(round(k, 4), r[0]) for k, r in runs]}
    if smooth and exact:
        out.update(smoothed(name, world, rho, target, runs, changes))
    return out


#: knob offsets (log) of the extra runs :func:`smoothed` adds around the target
SMOOTH_STEPS = (-0.12, -0.06, 0.0, 0.06, 0.12)


def smoothed(
    name: str, world: World, rho: float, target: float, runs: list[tuple[float, tuple[int, int]]], changes: int
) -> dict:
    """Recall at *target* from a straight line through runs near it.

    A budgeted policy's feedback loops make its captures a jagged function
    of the knob: two knobs 1 % apart can differ by several points of recall
    at almost the same fetch count, so one interpolated pair says little.
    Runs at knobs spread around the target's (and the search's runs within
    25 % of the target's fetches) are fitted by least squares, captured
    against revisits, and read at the target; ``spread`` is the residual
    standard deviation in recall, what one run could be off by.
    """
    near = sorted(runs, key=lambda kr: abs(math.log(max(kr[1][0], 1) / target)))[:2]
    (k1, r1), (k2, r2) = near if len(near) == 2 else (near[0], near[0])
    if r1[0] != r2[0] and k1 != k2:
        m = (math.log(max(r2[0], 1)) - math.log(max(r1[0], 1))) / (math.log(k2) - math.log(k1))
        centre = k1 * math.exp(math.log(target / max(r1[0], 1)) / m) if abs(m) > 0.05 else k1
    else:
        centre = k1
    centre = min(max(centre, 0.005), 200.0)
    points = [r for _, r in runs if abs(math.log(max(r[0], 1) / target)) < math.log(1.25)]
    points += [run_once(name, world, rho, centre * math.exp(d)) for d in SMOOTH_STEPS]
    xs = [p[0] for p in points]
    ys = [p[1] for p in points]
    n = len(points)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx > 0 else 0.0
    fit = my + slope * (target - mx)
    resid = math.sqrt(sum((y - (my + slope * (x - mx))) ** 2 for x, y in zip(xs, ys)) / max(1, n - 2))
    return {"recall": fit / changes, "spread": resid / changes, "points": n}


def cell(args: tuple[str, str, str | None, float]) -> tuple[str, str, float, dict]:
    trace, half, name, factor = args  # type: ignore[misc]
    docs = read_docs(trace)
    if half in ("A", "B"):
        docs = split(docs, half)
    world = as_world(docs)
    versions = sum(len(d.changes) + 1 for d in docs)
    target = factor * versions - len(docs)
    end = world.start + world.duration
    rho = target / sum(end - d.first for d in docs)
    return half, name, factor, equal_fetch(name, world, rho, target)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.fastreplay")
    ap.add_argument("--trace", required=True)
    ap.add_argument("--half", default="all", help="A, B or all")
    ap.add_argument("--budget-factor", default="1,2,4")
    ap.add_argument("--policies", default="stormcrawler,heritrix")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument(
        "--write-halves", metavar="PREFIX", help="write PREFIX-A.jsonl and PREFIX-B.jsonl (for bench.replay), stop"
    )
    args = ap.parse_args(argv)
    if args.write_halves:
        opener = gzip.open if args.trace.endswith(".gz") else open
        with opener(args.trace, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
            lines = [json.loads(x) for x in fh if x.strip()]
        services = sorted({str(d.get("service", "")) for d in lines})
        random.Random(SPLIT_SEED).shuffle(services)
        for half, keep in (("A", set(services[0::2])), ("B", set(services[1::2]))):
            with open(f"{args.write_halves}-{half}.jsonl", "w", encoding="utf-8") as out:
                for d in lines:
                    if str(d.get("service", "")) in keep:
                        out.write(json.dumps(d) + "\n")
        return 0
    import bench.policy_lineup  # noqa: F401  (registers the exploratory variants)

    jobs = [
        (args.trace, h, p, float(k))
        for h in args.half.split(",")
        for k in args.budget_factor.split(",")
        for p in args.policies.split(",")
    ]
    with Pool(min(args.procs, len(jobs))) as pool:
        for half, name, k, r in pool.imap_unordered(cell, jobs, chunksize=1):
            flag = "" if r["exact"] else " (inexact)"
            spread = f" ±{r['spread']:.3f} ({r['points']} runs)" if "spread" in r else ""
            print(f"{half:>4} K={k:g} {name:<22} recall {r['recall']:.3f}{spread}{flag}  {r['runs']}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
