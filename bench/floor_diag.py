"""Where a peer wins a cell: per document and per kind of visit, at equal fetches (issue 37, the floor).

``python -m bench.floor_diag --trace FILE --budget-factor K --peer NAME [--max-versions 6000]``

Runs the default and *peer* on one source at the knob that spends the
target's fetches (the fast replay's search, :func:`bench.fastreplay.equal_fetch`,
then one run at the knob interpolated to the target), and splits the
difference in captured versions two ways:

* **allocation against timing**, per document: Δcaptures = Σ Δfᵢ·ȳᵢ (the
  fetches moved between documents, valued at the two policies' mean yield
  there) + Σ Δyᵢ·f̄ᵢ (more or fewer captures per fetch on the same
  document: when the visits came); by document class (change rate, gap
  regularity, when in the history the document was found);
* **kind of revisit**: the first revisit after discovery, a revisit right
  after a visit that found a change (the reaction), the second after it,
  and a revisit after two or more quiet visits (probing), each with its
  fetches and captures; and fetches and captures per tenth of the history.

Lab only: it reads the policies as the fast replay builds them.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from scrapy_adaptive.model import ChangeState, Visit
from scrapy_adaptive.policies.base import WaitPolicy

from .fastreplay import as_world, equal_fetch, simulate, source_docs
from .replay import MAX_WAIT
from .sim.lineup import BUDGETED, POLICIES, LabContext, with_scale
from .sim.world import DAY, HOUR, World

YEAR = 365.25 * DAY

KINDS = ("first", "after-change", "2nd-after-change", "quiet")


class Tally(WaitPolicy):
    """*inner*, counting each revisit's kind, document and tenth of the history, and what it found."""

    def __init__(self, inner: WaitPolicy, world: World) -> None:
        self.inner = inner
        self.start, self.span = world.start, world.duration
        self.by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.by_tenth: dict[int, list[int]] = defaultdict(lambda: [0, 0])
        self.by_doc: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        #: per planned wait: (verdict of the visit that planned it, wait ÷ the interval just ended,
        #: the family that set it, for a policy with ``decide``: the union)
        self.pending: dict[str, tuple[bool, float, str]] = {}
        #: per reaction (verdict, ratio bucket, family): [revisits, captures] of the visit it planned
        self.by_reaction: dict[tuple[bool, str, str], list[int]] = defaultdict(lambda: [0, 0])

    def next_wait(self, history: Mapping[str, Any], visit: Visit) -> float:
        past = history.get("history") or []
        if past:
            verdicts = [h[1] for h in past]
            changed = ChangeState.CHANGED.value
            if len(past) == 1:
                kind = "first"
            elif verdicts[-1] == changed:
                kind = "after-change"
            elif len(verdicts) >= 2 and verdicts[-2] == changed:
                kind = "2nd-after-change"
            else:
                kind = "quiet"
            hit = visit.change is ChangeState.CHANGED
            tenth = min(9, int(10 * (float(visit.fetched) - self.start) / self.span))
            for tally in (self.by_kind[kind], self.by_tenth[tenth], self.by_doc[str(visit.url)]):
                tally[0] += 1
                tally[1] += hit
            planned = self.pending.get(str(visit.url))
            if planned is not None:
                row = self.by_reaction[(planned[0], bucket(planned[1]), planned[2])]
                row[0] += 1
                row[1] += hit
        decide = getattr(self.inner, "decide", None)
        wait, family = decide(history, visit) if decide is not None else (self.inner.next_wait(history, visit), "")
        if past:
            interval = float(visit.fetched) - float(past[-1][0])
            if interval > 0:
                self.pending[str(visit.url)] = (visit.change is ChangeState.CHANGED, wait / interval, family)
        return wait


RATIO_BUCKETS = (0.4, 0.6, 0.9, 1.1, 1.45, 2.0)


def bucket(ratio: float) -> str:
    """The bucket of a planned wait ÷ the interval just ended (a rule's reaction: Heritrix 0.67 or 1.5)."""
    lo = 0.0
    for hi in RATIO_BUCKETS:
        if ratio < hi:
            return f"{lo:g}-{hi:g}"
        lo = hi
    return f">={lo:g}"


def build(name: str, world: World, rho: float, knob: float) -> tuple[WaitPolicy, Any]:
    """The policy as :func:`bench.fastreplay.run_once` builds it, and what its budget is set on."""
    budgeted = name in BUDGETED
    n = len(world.pages)
    budget = rho * n * (knob if budgeted else 1.0)
    ctx = with_scale(LabContext(world, budget, min_wait=HOUR, max_wait=MAX_WAIT), 1.0 if budgeted else knob)
    policy = POLICIES[name](ctx)
    target = None
    if budgeted:
        target = getattr(policy, "allocator", None) or getattr(policy, "pace", None)
        if callable(getattr(policy, "set_budget", None)):
            target = policy
    return policy, (target, budget / n)


def knob_at_target(name: str, world: World, rho: float, target: float) -> float:
    """The knob whose run spends *target* revisits, interpolated (log-log) between the search's nearest runs."""
    runs = equal_fetch(name, world, rho, target, smooth=False)["runs"]
    below = [r for r in runs if r[1] <= target]
    above = [r for r in runs if r[1] >= target]
    if not below or not above:
        return min(runs, key=lambda r: abs(r[1] - target))[0]
    (k1, f1), (k2, f2) = max(below, key=lambda r: r[1]), min(above, key=lambda r: r[1])
    if f1 == f2 or k1 == k2:
        return k1
    w = (math.log(target) - math.log(f1)) / (math.log(f2) - math.log(f1))
    return math.exp(math.log(k1) + w * (math.log(k2) - math.log(k1)))


def tallied(name: str, world: World, rho: float, knob: float) -> tuple[Tally, int, int]:
    policy, (target, per_doc) = build(name, world, rho, knob)
    tally = Tally(policy, world)
    on_discover = None
    if target is not None and hasattr(target, "set_budget"):

        def on_discover(known: int) -> None:
            target.set_budget(per_doc * known)

    run = simulate(world, tally, on_discover)
    return tally, run.revisits, run.captured


def classes(world: World) -> dict[str, dict[str, str]]:
    """Each document's class: change rate (per year of its life), gap CV, when it was found."""
    out = {}
    for p in world.pages:
        found = p.discovered or world.start
        life = max(world.start + world.duration - found, 1.0)
        rate = len(p.changes) / (life / YEAR)
        gaps = [b - a for a, b in zip([found, *p.changes], p.changes, strict=False)]
        cv = statistics.pstdev(gaps) / statistics.fmean(gaps) if len(gaps) >= 3 and statistics.fmean(gaps) > 0 else None
        out[p.url] = {
            "rate": "<2/y" if rate < 2 else "2-10/y" if rate < 10 else "10-50/y" if rate < 50 else ">=50/y",
            "cv": "few gaps" if cv is None else "cv<1" if cv < 1 else "cv 1-2" if cv < 2 else "cv>=2",
            "found": f"found in tenth {min(9, int(10 * (found - world.start) / world.duration))}",
        }
    return out


def reaction_order(key: tuple[bool, str]) -> tuple[bool, float]:
    return (not key[0], float(key[1].split("-")[0].lstrip(">=")))


def merged(tally: Tally, key: tuple[bool, str]) -> tuple[int, int]:
    """Revisits and captures of one reaction bucket, over the families."""
    rows = [v for k, v in tally.by_reaction.items() if k[:2] == key]
    return sum(r[0] for r in rows), sum(r[1] for r in rows)


def report(world: World, a: Tally, b: Tally, names: tuple[str, str], changes: int) -> str:
    lines = []
    docs = {p.url for p in world.pages}
    alloc = timing = 0.0
    cls = classes(world)
    by_class: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0, 0, 0, 0, 0, 0.0, 0.0])
    for d in docs:
        fa, ca = a.by_doc.get(d, [0, 0])
        fb, cb = b.by_doc.get(d, [0, 0])
        ya, yb = (ca / fa if fa else 0.0), (cb / fb if fb else 0.0)
        dal = (fb - fa) * (ya + yb) / 2
        dti = (yb - ya) * (fa + fb) / 2
        alloc += dal
        timing += dti
        for axis, label in cls[d].items():
            row = by_class[(axis, label)]
            row[0] += 1
            row[1] += fa
            row[2] += ca
            row[3] += fb
            row[4] += cb
            row[5] += dal
            row[6] += dti
    na, nb = names
    lines.append(
        f"captures {na} {sum(c for _, c in a.by_doc.values())}, {nb} {sum(c for _, c in b.by_doc.values())} "
        f"of {changes}; {nb} − {na} = allocation {alloc:+.0f} + timing {timing:+.0f}"
    )
    lines.append(f"| class | docs | {na} fetches | captures | {nb} fetches | captures | Δ alloc | Δ timing |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for (_axis, label), r in sorted(by_class.items()):
        lines.append(f"| {label} | {r[0]} | {r[1]} | {r[2]} | {r[3]} | {r[4]} | {r[5]:+.0f} | {r[6]:+.0f} |")
    lines.append(f"| kind of revisit | {na} fetches | captures | yield | {nb} fetches | captures | yield |")
    lines.append("|---|---|---|---|---|---|---|")
    for k in KINDS:
        fa, ca = a.by_kind.get(k, [0, 0])
        fb, cb = b.by_kind.get(k, [0, 0])
        lines.append(f"| {k} | {fa} | {ca} | {ca / max(fa, 1):.3f} | {fb} | {cb} | {cb / max(fb, 1):.3f} |")
    lines.append(f"| reaction: verdict, next wait ÷ last interval | {na} revisits | yield | {nb} revisits | yield |")
    lines.append("|---|---|---|---|---|")
    for key in sorted({k[:2] for k in (*a.by_reaction, *b.by_reaction)}, key=reaction_order):
        fa, ca = merged(a, key)
        fb, cb = merged(b, key)
        label = ("changed" if key[0] else "unchanged") + ", " + key[1]
        lines.append(f"| {label} | {fa} | {ca / max(fa, 1):.3f} | {fb} | {cb / max(fb, 1):.3f} |")
    families = sorted({k[2] for k in a.by_reaction if k[2]})
    if families:
        lines.append(f"| {na}: reaction, family that set it | revisits | yield |")
        lines.append("|---|---|---|")
        for key in sorted(a.by_reaction, key=lambda k: (*reaction_order(k[:2]), k[2])):
            f, c = a.by_reaction[key]
            label = ("changed" if key[0] else "unchanged") + f", {key[1]}, {key[2]}"
            lines.append(f"| {label} | {f} | {c / max(f, 1):.3f} |")
    lines.append("| tenth | " + " | ".join(str(t) for t in range(10)) + " |")
    lines.append("|---|" + "---|" * 10)
    for name, t in ((na, a), (nb, b)):
        lines.append(f"| {name} fetches | " + " | ".join(str(t.by_tenth.get(i, [0, 0])[0]) for i in range(10)) + " |")
        lines.append(f"| {name} captures | " + " | ".join(str(t.by_tenth.get(i, [0, 0])[1]) for i in range(10)) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.floor_diag")
    ap.add_argument("--trace", required=True)
    ap.add_argument("--half", default="all")
    ap.add_argument("--budget-factor", type=float, default=1.0)
    ap.add_argument("--default", default="union")
    ap.add_argument("--peer", required=True)
    ap.add_argument("--max-versions", type=int, default=6000)
    args = ap.parse_args(argv)
    docs = source_docs(args.trace, args.half, args.max_versions)
    world = as_world(docs)
    versions = sum(len(d.changes) + 1 for d in docs)
    target = args.budget_factor * versions - len(docs)
    end = world.start + world.duration
    rho = target / sum(end - d.first for d in docs)
    changes = sum(len(d.changes) for d in docs)
    tallies = []
    for name in (args.default, args.peer):
        knob = knob_at_target(name, world, rho, target)
        tally, revisits, captured = tallied(name, world, rho, knob)
        print(
            f"{name}: knob {knob:.4g}, revisits {revisits} (target {target:.0f}), captured {captured}, "
            f"recall {captured / changes:.3f}",
            flush=True,
        )
        tallies.append(tally)
    print(report(world, tallies[0], tallies[1], (args.default, args.peer), changes))
    return 0


if __name__ == "__main__":
    sys.exit(main())
