"""Do documents that change together buy recall or capture delay?  Three designs, tested at equal fetches.

``python -m bench.cochange lift TRACE...`` prints how much more likely a
sibling (another document of the same service) changes within an hour, and
within a day, of a document's change than at a random moment.

``python -m bench.cochange table JSON...`` prints, from a
``bench.fastreplay --json`` run of ``union`` and ``union+pulls``,
``union+pairs``, ``union+evidence``, each design's recall ÷ the default's and
median capture delay ÷ the default's, per source and budget, and the pooled
recall; docs/lab/co-change.md has the run and its verdict.

A **companion** (:class:`bench.fastreplay.Companion`) rides on the default
policy in :func:`bench.fastreplay.simulate`: after each revisit it may move
siblings' next visits earlier; a moved visit is an ordinary fetch, counted
in the budget (the fast replay's knob search then leaves fewer fetches to
the policy's own plan) and seen by the policy, which plans the next one.
Only what the crawl itself observed is used: which visits found a change,
and when documents were fetched; never the change times.  Only a revisit
that finds a change *by the policy's own plan* is a trigger (a moved visit
finding one would set off the same siblings again).

* ``pulls`` (:class:`SiblingPulls`): a trigger moves every sibling's visit
  to :data:`PULL_AFTER` later, once the service's moved visits have found a
  change often enough (:data:`PULL_THRESHOLD`, after :data:`WARM_UP`
  triggers that pull regardless; while closed, one trigger in
  :data:`EXPLORE` pulls one sibling, so that a service can earn its pulls back).
* ``pairs`` (:class:`PairPulls`): the same, but a sibling is pulled only
  if this pair's moved visits have found a change often enough (each pair's
  rate shrunk towards its service's, :data:`PAIR_PRIOR` visits' worth; the
  same warm-up and exploration).
* ``evidence`` (:class:`BurstEvidence`): no forced visit.  A sibling's plan
  is read as "visit when the chance of a new version reaches p*" (p*: that
  document's own share of revisits finding a change); the chance grows
  through the planned wait, and a trigger adds q at once (q: the share of
  the service's moved visits that found a change), so the rest of the wait
  shrinks by q ÷ what was still to come, to :data:`PULL_AFTER` when q
  covers it all.
"""

from __future__ import annotations

import argparse
import bisect
import json
import math
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from .fastreplay import read_docs, source_label
from .replay import fmt_delay
from .sim.lineup import COMPANIONS
from .sim.world import DAY, HOUR, World
from .traces.stats import read_trace

#: a pulled sibling is visited this long after the visit that found its sibling changed
PULL_AFTER = 600.0
#: a sibling fetched this recently is not pulled again
RECENT = PULL_AFTER
#: the share of moved visits that must find a change for a service (or pair) to keep pulling
PULL_THRESHOLD = 0.5
#: a service's first triggers pull whatever the evidence (there is none yet)
WARM_UP = 2
#: while a service (or pair) is closed, one trigger in this many pulls anyway
EXPLORE = 10
#: how many moved visits' worth of its service's rate a pair's own rate starts from
PAIR_PRIOR = 2.0


def _services(world: World) -> tuple[list[str], list[list[int]]]:
    """Each document's service (its host in a replayed world) and its siblings."""
    members: dict[str, list[int]] = defaultdict(list)
    for p in world.pages:
        members[p.host].append(p.index)
    service = [p.host for p in world.pages]
    return service, [[j for j in members[p.host] if j != p.index] for p in world.pages]


class _Companion:
    """The state every design shares: the service map, the live schedule, the moved visits' record."""

    def __init__(self, world: World) -> None:
        self.service, self.siblings = _services(world)
        self.due: list[float] = []
        self.last: list[float | None] = []
        #: per service: moved visits, and those that found a change
        self.moved: dict[str, int] = defaultdict(int)
        self.moved_hits: dict[str, int] = defaultdict(int)
        self.triggers: dict[str, int] = defaultdict(int)

    def bind(self, due: list[float], last: list[float | None]) -> None:
        self.due, self.last = due, last

    def rate(self, service: str) -> float:
        """The share of *service*'s moved visits that found a change (Beta(1, 1) prior)."""
        return (self.moved_hits[service] + 1.0) / (self.moved[service] + 2.0)

    def candidates(self, page: int, now: float) -> Iterable[int]:
        """Siblings known to the crawl, not fetched within :data:`RECENT`, not already due within :data:`PULL_AFTER`."""
        for j in self.siblings[page]:
            seen = self.last[j]
            if seen is not None and seen < now - RECENT and self.due[j] > now + PULL_AFTER:
                yield j

    def learn(self, page: int, changed: bool, moved: bool) -> None:
        if moved:
            s = self.service[page]
            self.moved[s] += 1
            self.moved_hits[s] += changed

    def trigger(self, page: int, changed: bool, moved: bool) -> bool:
        """Whether this revisit sets the service's pulls off (found a change by the policy's own plan)."""
        if moved or not changed or not self.siblings[page]:
            return False
        self.triggers[self.service[page]] += 1
        return True

    def warm(self, page: int) -> bool:
        """The service's first :data:`WARM_UP` triggers pull every sibling: there is no evidence yet."""
        return self.triggers[self.service[page]] <= WARM_UP

    def explore(self, page: int, closed: list[int]) -> list[int]:
        """One of the *closed* siblings, on one trigger in :data:`EXPLORE` of the service (in turn), so that
        a closed service or pair can earn its pulls back at the cost of one fetch now and then."""
        count = self.triggers[self.service[page]]
        if not closed or count % EXPLORE:
            return []
        return [closed[(count // EXPLORE) % len(closed)]]


class SiblingPulls(_Companion):
    """(a) Naive sibling pulls: every sibling, once the service's pulls have found changes often enough."""

    def visited(self, page: int, now: float, changed: bool, moved: bool) -> list[tuple[int, float]]:
        self.learn(page, changed, moved)
        if not self.trigger(page, changed, moved):
            return []
        near = list(self.candidates(page, now))
        if not (self.warm(page) or self.rate(self.service[page]) >= PULL_THRESHOLD):
            near = self.explore(page, near)
        return [(j, now + PULL_AFTER) for j in near]


class PairPulls(_Companion):
    """(b) Pairwise pulls: only the siblings whose pulls after this document's changes have found changes.

    A pair's rate starts as its service's (:data:`PAIR_PRIOR` moved visits'
    worth) and moves with the moved visits of that pair, either way: a pair
    can open in a closed service and close in an open one.
    """

    def __init__(self, world: World) -> None:
        super().__init__(world)
        self.pair_moved: dict[tuple[int, int], int] = defaultdict(int)
        self.pair_hits: dict[tuple[int, int], int] = defaultdict(int)
        #: who pulled each document's pending moved visit
        self.pulled_by: dict[int, int] = {}

    @staticmethod
    def pair(a: int, b: int) -> tuple[int, int]:
        return (a, b) if a < b else (b, a)

    def visited(self, page: int, now: float, changed: bool, moved: bool) -> list[tuple[int, float]]:
        self.learn(page, changed, moved)
        source = self.pulled_by.pop(page, None)
        if moved and source is not None:
            key = self.pair(source, page)
            self.pair_moved[key] += 1
            self.pair_hits[key] += changed
        if not self.trigger(page, changed, moved):
            return []
        base = self.rate(self.service[page])
        warm = self.warm(page)
        chosen, closed = [], []
        for j in self.candidates(page, now):
            key = self.pair(page, j)
            rate = (self.pair_hits[key] + PAIR_PRIOR * base) / (self.pair_moved[key] + PAIR_PRIOR)
            (chosen if warm or rate >= PULL_THRESHOLD else closed).append(j)
        chosen += self.explore(page, closed)
        for j in chosen:
            self.pulled_by[j] = page
        return [(j, now + PULL_AFTER) for j in chosen]


class BurstEvidence(_Companion):
    """(c) The group's change as evidence: each sibling's planned wait shortened by it, no forced visit.

    q, what a sibling's change adds to a document's chance of a new version,
    is learnt from the moved visits: the share that found a change *less*
    what the documents' own rates would have found over the same elapsed
    times (their p* × elapsed ÷ planned wait), since a moved visit of a
    document that changes often finds a change with no help from its
    siblings.  ``raw=True`` leaves that out (the share as it is): the first
    form tried, kept for the record of docs/lab/co-change.md.
    """

    def __init__(self, world: World, raw: bool = False) -> None:
        super().__init__(world)
        self.raw = raw
        #: per document: its revisits by the policy's own plan, and those that found a change
        self.own = [[0, 0] for _ in world.pages]
        #: per document: the wait the policy planned at its last visit (None: not seen yet)
        self.planned: list[float | None] = [None] * len(world.pages)
        #: per service: the changes the moved visits would have found without any sibling
        self.expected: dict[str, float] = defaultdict(float)

    def hit_rate(self, page: int) -> float:
        """p*: the share of the document's own planned revisits that found a change (Beta(1, 1) prior)."""
        n, h = self.own[page]
        return (h + 1.0) / (n + 2.0)

    def excess(self, service: str) -> float:
        """q: the share of the service's moved visits that found a change, less their own rates' share."""
        if self.raw:
            return self.rate(service)
        return max(0.0, (self.moved_hits[service] - self.expected[service] + 1.0) / (self.moved[service] + 2.0))

    def visited(self, page: int, now: float, changed: bool, moved: bool) -> list[tuple[int, float]]:
        self.learn(page, changed, moved)
        planned, seen = self.planned[page], self.last[page]
        if moved:
            share = 1.0 if not planned or seen is None else min(1.0, (now - seen) / planned)
            self.expected[self.service[page]] += self.hit_rate(page) * share
        else:
            self.own[page][0] += 1
            self.own[page][1] += changed
        self.planned[page] = self.due[page] - now
        if not self.trigger(page, changed, moved):
            return []
        q = self.excess(self.service[page])
        out = []
        for j in self.candidates(page, now):
            seen = self.last[j]
            assert seen is not None
            due = self.due[j]
            wait = due - seen
            if wait <= 0 or q <= 0:
                continue
            to_come = self.hit_rate(j) * (due - now) / wait  # the chance still to accumulate before the plan's visit
            if q >= to_come:
                out.append((j, now + PULL_AFTER))
            else:
                out.append((j, max(now + PULL_AFTER, now + (due - now) * (1.0 - q / to_come))))
        return out


COMPANIONS.update(
    {
        "pulls": SiblingPulls,
        "pairs": PairPulls,
        "evidence": BurstEvidence,
        "evidence-raw": lambda world: BurstEvidence(world, raw=True),
    }
)
DESIGNS = ("pulls", "pairs", "evidence")


# -- the lift -----------------------------------------------------------------------------------------


def _covered(times: Sequence[float], lo: float, hi: float, half: float) -> float:
    """Length of {t in [lo, hi] : some time of *times* is within *half* of t}."""
    total, end = 0.0, lo
    for v in times[bisect.bisect_left(times, lo - half) :]:
        if v - half > hi:
            break
        a, b = max(v - half, end), min(v + half, hi)
        if b > a:
            total += b - a
            end = b
    return total


def lift(path: str, window: float) -> tuple[float, float, int]:
    """(after a change, at a random moment, changes counted) for the pairs of siblings of *path*.

    For every document's change at t (its first version is its creation, not
    a change) and every sibling alive at t (between its first and last
    version): does the sibling have a version within *window* of t, either
    side?  Against it, the same question at a moment drawn uniformly over the
    two documents' common life, computed exactly (the share of that life
    within *window* of one of the sibling's versions) rather than drawn.
    """
    services: dict[str, list[list[float]]] = defaultdict(list)
    for d in read_docs(path):
        services[d.service].append([d.first, *d.changes])
    hits = n = 0
    chance = 0.0
    for docs in services.values():
        for a, mine in enumerate(docs):
            for b, other in enumerate(docs):
                if a == b:
                    continue
                lo, hi = max(mine[0], other[0]), min(mine[-1], other[-1])
                if hi <= lo:
                    continue
                share = _covered(other, lo, hi, window) / (hi - lo)
                for t in mine[1:]:
                    if not other[0] <= t <= other[-1]:
                        continue
                    k = bisect.bisect_left(other, t - window)
                    hits += k < len(other) and other[k] <= t + window
                    chance += share
                    n += 1
    return (hits / n, chance / n, n) if n else (math.nan, math.nan, 0)


def _times(x: float) -> str:
    return f"{x:.0f} ×" if x >= 10 else f"{x:.1f} ×"


def lift_table(paths: Sequence[str]) -> str:
    out = [
        "| source | pairs × changes | within 1 h: after a change / at random | lift | within 1 day: lift |",
        "|---|---|---|---|---|",
    ]
    for path in paths:
        after, anytime, n = lift(path, HOUR)
        if not n:
            out.append(f"| {source_label(path, 'all')} | 0 | – (no two documents share a service) | – | – |")
            continue
        day_after, day_any, _ = lift(path, DAY)
        out.append(
            f"| {source_label(path, 'all')} | {n:,} | {after:.3f} / {anytime:.3f} | {_times(after / anytime)} | "
            f"{_times(day_after / day_any)} |"
        )
    return "\n".join(out)


# -- the table of a run --------------------------------------------------------------------------------


def design_table(report: dict[str, Any], default: str = "union") -> str:
    """Each design against the default at equal fetches: recall ÷, median delay ÷, the share of fetches moved."""
    designs = [p for p in report["policies"] if p != default]
    head = "| source | K | default: recall · median delay | " + " | ".join(designs) + " |"
    out = [head, "|---|---|---|" + "---|" * len(designs)]

    def one(row: dict[str, dict], name: str) -> str:
        if name not in row or default not in row:
            return "–"
        c, d = row[name], row[default]
        r = c["recall"] / d["recall"] if d["recall"] else math.nan
        delay = f"{c['delay_h'] / d['delay_h']:.2f}" if c.get("delay_h") is not None and d.get("delay_h") else "–"
        moved = f", moved {c['moved_share']:.0%} (hit {c['moved_hit_rate']:.0%})" if "moved_share" in c else ""
        mark = "" if c["exact"] else " (i)"
        return f"{r:.3f} · {delay}{moved}{mark}"

    pooled: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    for source, rows in report["sources"].items():
        for n, (k, row) in enumerate(rows.items()):
            d = row.get(default)
            base = f"{d['recall']:.3f} · {fmt_delay(d.get('delay_h'))}" if d else "–"
            out.append(
                f"| {source if n == 0 else ''} | {k}× | {base} | " + " | ".join(one(row, p) for p in designs) + " |"
            )
            group = (
                "co-change"
                if any(s in source for s in ("ota", "opentermsarchive", "tosback2", "help"))
                else "elsewhere"
            )
            for name, c in row.items():
                pooled[(group, k)][name][0] += c["recall"] * c["changes"]
                pooled[(group, k)][name][1] += c["changes"]
    out += [
        "",
        "| pooled | K | default recall | " + " | ".join(designs) + " |",
        "|---|---|---|" + "---|" * len(designs),
    ]
    for (group, k), by in sorted(pooled.items()):
        if default not in by:
            continue
        base = by[default][0] / by[default][1]
        cells = [f"{by[p][0] / by[p][1] / base:.3f}" if p in by else "–" for p in designs]
        out.append(f"| {group} | {k}× | {base:.3f} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.cochange")
    sub = ap.add_subparsers(dest="command", required=True)
    one = sub.add_parser("lift", help="the co-change lift of trace files")
    one.add_argument("traces", nargs="+")
    two = sub.add_parser("table", help="the designs against the default, from bench.fastreplay --json files")
    two.add_argument("reports", nargs="+")
    two.add_argument("--default", default="union")
    three = sub.add_parser("groups", help="write the documents of the services with 2+ documents of a trace")
    three.add_argument("trace")
    three.add_argument("out")
    args = ap.parse_args(argv)
    if args.command == "lift":
        print(lift_table(args.traces))
        return 0
    if args.command == "groups":
        rows = list(read_trace(args.trace))
        sizes = Counter(r["service"] for r in rows)
        with open(args.out, "w", encoding="utf-8") as fh:
            for r in rows:
                if sizes[r["service"]] > 1:
                    fh.write(json.dumps(r) + "\n")
        return 0
    merged: dict[str, Any] = {"sources": {}, "policies": []}
    for path in args.reports:
        with open(path, encoding="utf-8") as fh:
            report = json.load(fh)
        for source, rows in report["sources"].items():
            for k, row in rows.items():
                merged["sources"].setdefault(source, {}).setdefault(k, {}).update(row)
        merged["policies"] += [p for p in report["policies"] if p not in merged["policies"]]
    print(design_table(merged, args.default))
    return 0


if __name__ == "__main__":
    sys.exit(main())
