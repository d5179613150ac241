"""Replay the real-trace corpus: every peer's rule, per source and pooled.

``python -m bench.replay_corpus [--factors 1,2,4] [--default union] [--max-docs N] [--max-versions V]
[--seed S] [--jobs N] [--json OUT]``

Why: one trace at one budget says little about whether the default wins on
real change histories; this runs each source of the committed corpus
(``bench/traces/*.jsonl.gz``, see ``bench/traces/SOURCES.md``) and the
held-out corpus' dev half (``--dev``, referenced by path, never copied) at
each budget factor K, for the peers' rules (uniform, Heritrix, Nutch,
StormCrawler and Umbrich's fix, dyn, window, state1, state2, fitted with
hindsight; and held to the budget: snapback, paced-heritrix, paced-nutch), the default
(``--default``, ``union`` today) and the hindsight periodic optimum, all
exactly as :mod:`bench.replay` defines them: F = K × versions fetches, each
policy's knob searched until its realised fetches are within 1 % of F and
the figures interpolated to exactly F.

**Per source** the table gives, at each K, every policy's recall (changes
captured ÷ changes) at equal fetches and its median capture delay (a
version's appearance to its capture), the optimum's recall, the default's
recall ÷ the best peer's held to the budget and ÷ the best fitted peer's,
and those peers' names.  A rule whose knob cannot
bring it to F (multiplicative rules plateau) is marked ``*`` with its
realised fetches ÷ F in the notes; it is not eligible as the best peer,
since its recall was bought with a different number of fetches.

**Pooled.**  Sources are not merged into one world (their time spans and
schedules differ by years): each source is replayed on its own at its own
equal fetches, and the pooled recall at K is Σ captured ÷ Σ changes over
the sources (a change-weighted micro-average: the share of all the
corpus' changes a policy catches when every source gets K fetches per
version).  The unweighted mean of the sources' recalls (macro) is given
too, because the micro figure is dominated by the sources with most
changes.  A policy is exact in the pool only if it is in every source.

**Cost.**  The replay drives the real frontier (about 1–4 ms per fetch), so
a table costs about 3 × Σ(knob-search runs) × K × versions fetches.
``--max-docs`` keeps a seeded sample of each source's documents and
``--max-versions`` then stops adding (seeded-order) documents once the
sample holds that many versions; ``--jobs`` spreads (source, policy) cells
over processes.  Each cell runs K = 1, 2, 4 in turn, each search starting
from the knob the previous K ended at, scaled by the budget ratio: a
neighbouring start saves runs and changes no figure's meaning (each is the
same interpolation to exactly F, within the same 1 %); ``--no-chain``
starts every search from the policy's own parameters, as ``bench.replay``
does.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import random
import shlex
import subprocess
import sys
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from functools import lru_cache
from multiprocessing import get_context
from typing import Any

from .replay import (
    best_of,
    doc_time,
    equal_fetch_run,
    fmt_delay,
    hindsight_optimum,
    versions_in,
    world_from_docs,
)
from .sim.engine import RunConfig
from .sim.lineup import BUDGETED, FITTED_PEERS, HELD_PEERS, POLICIES
from .sim.world import World
from .traces.stats import read_trace

HERE = os.path.dirname(os.path.abspath(__file__))
TRACES = os.path.join(HERE, "traces")
#: the shared development half of the Open Terms Archive histories, beside the checkout
DEV_TRACE = os.path.join(os.path.dirname(os.path.dirname(HERE)), "shared", "traces", "opentermsarchive-dev.jsonl")
DEFAULT = "union"
#: the peers: their rules fitted with hindsight (the reference) and held to the budget (the floor)
PEERS = ["uniform", *FITTED_PEERS, *HELD_PEERS]
HINDSIGHT = "optimum"


# -- the sources --------------------------------------------------------------------------------------


def corpus_sources(traces_dir: str = TRACES, dev: str | None = DEV_TRACE) -> dict[str, str]:
    """Name → trace path: every committed ``*.jsonl.gz`` plus the dev half when it exists."""
    sources = {}
    for path in sorted(glob.glob(os.path.join(traces_dir, "*.jsonl.gz"))):
        sources[os.path.basename(path)[: -len(".jsonl.gz")]] = path
    if dev and os.path.exists(dev):
        sources["opentermsarchive-dev"] = dev
    return sources


def subsample(
    rows: list[dict[str, Any]], max_docs: int, max_versions: int, seed: int, by: str | None = None
) -> list[dict[str, Any]]:
    """A seeded sample of *rows*: at most *max_docs* documents, stopping once *max_versions* are held.

    The documents are shuffled by ``random.Random(seed)`` (from their sorted
    names, so the file's order does not matter) and taken in that order; the
    document that crosses *max_versions* is kept, so no document is cut and
    heavy documents are as likely to be drawn as light ones.  0 means no cap.
    With *by* (a row key, e.g. ``"service"``) whole groups of rows are drawn
    the same way, so that a sample keeps every sibling of a document it holds
    (what a study of documents changing together needs); *max_docs* then
    counts documents still, and the group crossing a cap is kept whole.
    """
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in sorted(rows, key=lambda r: r["doc"]):
        groups.setdefault(str(row[by]) if by else row["doc"], []).append(row)
    order = [groups[k] for k in sorted(groups)]
    random.Random(seed).shuffle(order)
    chosen: list[dict[str, Any]] = []
    held = 0
    for group in order:
        if (max_docs and len(chosen) >= max_docs) or (max_versions and held >= max_versions):
            break
        chosen.extend(group)
        held += sum(len(row["versions"]) for row in group)
    return sorted(chosen, key=lambda r: r["doc"])


@lru_cache(maxsize=16)
def load_world(path: str, max_docs: int, max_versions: int, seed: int) -> World:
    """The (sub-sampled) world of one source, cached per process."""
    rows = subsample(list(read_trace(path)), max_docs, max_versions, seed)
    return world_from_docs(rows, path)


def budget(world: World, factor: float) -> tuple[float, float, float]:
    """(fetches F, revisit target F − D, per-document revisit rate ρ) at K = *factor*."""
    fetches = factor * versions_in(world)
    target = fetches - len(world.pages)
    if target <= 0:
        raise ValueError("the budget does not even cover one visit per document")
    return fetches, target, target / doc_time(world)


# -- the cells ----------------------------------------------------------------------------------------


def run_cell(task: tuple[str, str, str, tuple[float, ...], int, int, int, bool]) -> dict[str, Any]:
    """One (source, policy) cell at every K: the equal-fetch figures (or the optimum's)."""
    source, path, policy, factors, max_docs, max_versions, seed, chain = task
    world = load_world(path, max_docs, max_versions, seed)
    config = RunConfig(bin_days=90.0)
    changes = sum(len(p.changes) for p in world.pages)
    out: dict[str, Any] = {"source": source, "policy": policy, "by_factor": {}}
    knob, previous = 1.0, None
    wall = time.perf_counter()
    for factor in factors:
        fetches, target, rho = budget(world, factor)
        if policy == HINDSIGHT:
            best = hindsight_optimum(world, target)
            out["by_factor"][str(factor)] = {
                "recall": best.recall,
                "captured": best.captured,
                "changes": changes,
                "fetches": best.revisits + len(world.pages),
                "exact": True,
            }
            continue
        start = 1.0
        if chain and previous is not None:
            # budgeted knobs multiply the budget (about 1 whatever K); time-scale knobs shrink as K grows
            start = knob if policy in BUDGETED else knob * previous / factor
        run = equal_fetch_run(policy, world, rho, target, config, start=start)
        knob, previous = run["knob"], factor
        cell = {
            "recall": run["recall"],
            "delay_h": run["delay_h"],
            "captured": run["captured"],
            "changes": changes,
            "fetches": run["revisits"] + len(world.pages),
            "fetch_ratio": (run["revisits"] + len(world.pages)) / fetches,
            "exact": run["exact"],
            "runs": len(run["runs"]),
            "knob": run["knob"],
            "violations": run["violations"],
        }
        if not run["exact"]:
            # what the optimum would catch with the fetches this rule did spend
            cell["optimum_at_own_fetches"] = hindsight_optimum(world, run["revisits"]).recall
        out["by_factor"][str(factor)] = cell
    out["seconds"] = time.perf_counter() - wall
    return out


def _cost(world: World, policy: str, factors: Iterable[float]) -> float:
    """A guess of a cell's cost for scheduling the slow ones first."""
    runs = 1.0 if policy == HINDSIGHT else (2.0 if policy in BUDGETED else 5.0)
    heavy = 2.5 if policy in ("burst", "proportional", "union") else 1.0
    return runs * heavy * sum(factors) * versions_in(world)


# -- the report ---------------------------------------------------------------------------------------


def add_efficiency(row: dict[str, Any]) -> None:
    """Give every policy cell of a (source, K) row its efficiency: recall ÷ the optimum's at its own fetches.

    An exact cell spent F fetches, so its reference is the optimum at F; a
    cell whose knob could not reach F is measured against the optimum at the
    fetches it did spend (as :mod:`bench.replay` does), which makes every
    rule comparable, plateaued or not.
    """
    optimum = row.get(HINDSIGHT)
    if optimum is None:
        return
    for name, cell in row.items():
        if name.startswith("_"):
            continue
        ref = optimum["recall"] if cell["exact"] else cell.get("optimum_at_own_fetches", optimum["recall"])
        cell["optimum_recall"] = ref
        cell["efficiency"] = cell["recall"] / ref if ref > 0 else 0.0


def summarise(row: dict[str, Any], default: str, peers: list[str]) -> dict[str, Any]:
    """The default against the best peer for one (source or pool, K) row, two ways.

    By recall: among the peers that reached equal fetches (a plateaued
    rule's recall was bought with other fetches).  By efficiency: among all
    peers, each against the optimum at its own fetches.
    """
    exact = {p: row[p]["recall"] for p in peers if p in row and row[p]["exact"]}
    best = max(exact, key=lambda p: exact[p]) if exact else None
    d = row.get(default)
    ratio = d["recall"] / exact[best] if d and best and exact[best] > 0 else None
    held = best_of(row, [p for p in peers if p in HELD_PEERS])
    fitted = best_of(row, [p for p in peers if p in FITTED_PEERS])
    eff = {p: row[p]["efficiency"] for p in peers if p in row and "efficiency" in row[p]}
    best_eff = max(eff, key=lambda p: eff[p]) if eff else None
    eff_ratio = d["efficiency"] / eff[best_eff] if d and "efficiency" in d and best_eff and eff[best_eff] > 0 else None
    return {
        "best_peer": best,
        "best_peer_recall": exact.get(best) if best else None,
        "default_over_best": ratio,
        "best_held": held,
        "default_over_best_held": d["recall"] / row[held]["recall"] if d and held and row[held]["recall"] else None,
        "best_fitted": fitted,
        "default_over_best_fitted": (
            d["recall"] / row[fitted]["recall"] if d and fitted and row[fitted]["recall"] else None
        ),
        "best_peer_by_efficiency": best_eff,
        "default_over_best_efficiency": eff_ratio,
    }


def pool(sources: dict[str, dict[str, Any]], factor: str, names: list[str]) -> dict[str, Any]:
    """Micro (Σ captured ÷ Σ changes) and macro (mean recall) pools at one K.

    Efficiency pools the same way: micro Σ captured ÷ Σ (optimum's recall at
    the cell's own fetches × changes), macro the mean of the efficiencies.
    """
    micro: dict[str, dict[str, Any]] = {}
    macro: dict[str, dict[str, Any]] = {}
    for name in names:
        cells = [s["factors"][factor][name] for s in sources.values() if name in s["factors"][factor]]
        if len(cells) != len(sources) or not cells:
            continue
        captured = sum(c["captured"] for c in cells)
        changes = sum(c["changes"] for c in cells)
        exact = all(c["exact"] for c in cells)
        micro[name] = {"recall": captured / changes if changes else 1.0, "exact": exact}
        macro[name] = {"recall": sum(c["recall"] for c in cells) / len(cells), "exact": exact}
        if all("efficiency" in c for c in cells):
            reachable = sum(c["optimum_recall"] * c["changes"] for c in cells)
            micro[name]["efficiency"] = captured / reachable if reachable > 0 else 0.0
            macro[name]["efficiency"] = sum(c["efficiency"] for c in cells) / len(cells)
    return {"micro": micro, "macro": macro}


def build_report(
    cells: list[dict[str, Any]], paths: dict[str, str], worlds: dict[str, World], args: argparse.Namespace
) -> dict[str, Any]:
    sources: dict[str, dict[str, Any]] = {}
    for source, path in paths.items():
        world = worlds[source]
        sources[source] = {
            "path": os.path.relpath(path) if path.startswith(HERE) else path,
            "docs": len(world.pages),
            "versions": versions_in(world),
            "changes": sum(len(p.changes) for p in world.pages),
            "factors": {str(k): {} for k in args.factors},
            "seconds": 0.0,
        }
    for cell in cells:
        s = sources[cell["source"]]
        s["seconds"] += cell.get("seconds", 0.0)
        for factor, figures in cell["by_factor"].items():
            s["factors"][factor][cell["policy"]] = figures
    report = {
        "command": "python -m bench.replay_corpus " + shlex.join(args.argv),
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": args.commit,
        "default_policy": args.default,
        "peers": args.peers,
        "factors": args.factors,
        "max_docs": args.max_docs,
        "max_versions": args.max_versions,
        "seed": args.seed,
        "chain": args.chain,
        "pooled_definition": "micro: sum captured / sum changes over sources, each at its own equal fetches; "
        "macro: mean of the sources' recalls",
        "sources": sources,
    }
    return summarise_report(report)


def summarise_report(report: dict[str, Any]) -> dict[str, Any]:
    """(Re)compute the efficiencies, the default-versus-best-peer summaries and the pools from the cells."""
    default, peers = report["default_policy"], report["peers"]
    names = [default] + [p for p in peers if p != default] + [HINDSIGHT]
    sources = report["sources"]
    for s in sources.values():
        for row in s["factors"].values():
            row.pop("_summary", None)
            add_efficiency(row)
            row["_summary"] = summarise(row, default, peers)
    pooled: dict[str, Any] = {}
    for factor in (str(k) for k in report["factors"]):
        plain = {
            n: {"factors": {factor: {p: v for p, v in s["factors"][factor].items() if p != "_summary"}}}
            for n, s in sources.items()
        }
        p = pool(plain, factor, names)
        p["micro"]["_summary"] = summarise(p["micro"], default, peers)
        p["macro"]["_summary"] = summarise(p["macro"], default, peers)
        pooled[factor] = p
    report["pooled"] = pooled
    return report


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip()


def _fmt_row(label: str, row: dict[str, Any], names: list[str]) -> tuple[str, list[str]]:
    notes: list[str] = []
    cols = []
    for name in names:
        cell = row.get(name)
        if cell is None:
            cols.append(f"{'-':>15}")
            continue
        mark = "" if cell["exact"] else "*"
        cols.append(f"{cell['recall']:>6.3f}{mark or ' '}{fmt_delay(cell.get('delay_h')):>8}")
        if not cell["exact"] and "fetch_ratio" in cell:
            notes.append(
                f"{name} at {label}: fetches {cell['fetch_ratio']:.2f}× F, knob {cell['knob']:.3g}"
                f" (optimum at its own fetches {cell.get('optimum_at_own_fetches', float('nan')):.3f},"
                f" efficiency {cell.get('efficiency', float('nan')):.1%})"
            )
    summary = row["_summary"]

    def ratio(x: float | None) -> str:
        return f"{x:>6.3f}" if x is not None else f"{'n/a':>6}"

    cols.append(f"{ratio(summary.get('default_over_best_held'))} {summary.get('best_held') or '-':<14}")
    cols.append(f"{ratio(summary.get('default_over_best_fitted'))} {summary.get('best_fitted') or '-':<12}")
    cols.append(f"{ratio(summary['default_over_best_efficiency'])} {summary['best_peer_by_efficiency'] or '-'}")
    return f"{label:<5}" + " ".join(cols), notes


def format_report(report: dict[str, Any]) -> str:
    default = report["default_policy"]
    names = [default] + [p for p in report["peers"] if p != default] + [HINDSIGHT]
    header = (
        f"{'K':<5}"
        + " ".join(f"{n[:15]:>15}" for n in names)
        + f" {'d/held':>6} {'best held':<14} {'d/fit':>6} {'best fitted':<12} {'eff d/b':>6} best by eff"
    )
    lines = [
        f"recall at equal fetches (F = K × versions), then the median capture delay (a version's appearance to "
        f"its capture); default {default}; * = the knob could not bring the rule to F (its recall is at its own "
        "fetches, see the notes)",
        f"d/held, d/fit = {default}'s recall ÷ the best peer's held to the budget ({', '.join(HELD_PEERS)}), fitted "
        f"with hindsight ({', '.join(FITTED_PEERS)}), among those at F; eff d/b = {default}'s efficiency ÷ the best "
        "peer's, efficiency = recall ÷ the hindsight optimum's at the same fetches (every peer eligible)",
    ]
    notes: list[str] = []
    for name, s in report["sources"].items():
        lines += ["", f"{name}: {s['docs']} docs, {s['versions']} versions, {s['changes']} changes", header]
        for factor in (str(k) for k in report["factors"]):
            text, n = _fmt_row(f"{factor}×", s["factors"][factor], names)
            lines.append(text)
            notes += [f"{name} {x}" for x in n]
    for kind in ("micro", "macro"):
        title = "Σ captured ÷ Σ changes" if kind == "micro" else "mean of sources' recalls"
        lines += [
            "",
            f"pooled ({kind}: {title}) over {len(report['sources'])} sources; * = not at F in some source",
            header,
        ]
        for factor in (str(k) for k in report["factors"]):
            text, _ = _fmt_row(f"{factor}×", report["pooled"][factor][kind], names)
            lines.append(text)
    if notes:
        lines += ["", "not at equal fetches:"] + [f"  {n}" for n in notes]
    return "\n".join(lines)


def format_markdown(report: dict[str, Any]) -> str:
    """The tables as Markdown, for docs/lab: recall · median capture delay per policy, the optimum's recall,
    the default ÷ the best held and the best fitted peer, and the efficiency ratio."""
    default = report["default_policy"]
    names = [default] + [p for p in report["peers"] if p != default] + [HINDSIGHT]
    head = "| K | " + " | ".join(names) + " | d/held | best held | d/fit | best fitted | eff d/b | best by eff |"
    rule = "|" + "---|" * (len(names) + 7)

    def num(x: float | None) -> str:
        return "n/a" if x is None else f"{x:.3f}"

    def row(label: str, r: dict[str, Any]) -> str:
        cols = []
        for n in names:
            c = r.get(n)
            delay = "" if c is None or c.get("delay_h") is None else f" · {fmt_delay(c['delay_h'])}"
            cols.append("–" if c is None else f"{c['recall']:.3f}{'' if c['exact'] else '*'}{delay}")
        s = r["_summary"]
        return (
            f"| {label} | "
            + " | ".join(cols)
            + f" | {num(s.get('default_over_best_held'))} | {s.get('best_held') or '–'}"
            + f" | {num(s.get('default_over_best_fitted'))} | {s.get('best_fitted') or '–'}"
            + f" | {num(s['default_over_best_efficiency'])} | {s['best_peer_by_efficiency'] or '–'} |"
        )

    out: list[str] = []
    for name, src in report["sources"].items():
        out += [
            f"**{name}** ({src['docs']} docs, {src['versions']} versions, {src['changes']} changes)",
            "",
            head,
            rule,
        ]
        out += [row(f"{k}×", src["factors"][str(k)]) for k in report["factors"]]
        out.append("")
    for kind, title in (("micro", "Σ captured ÷ Σ changes"), ("macro", "mean of the sources' recalls")):
        out += [f"**pooled, {kind}** ({title})", "", head, rule]
        out += [row(f"{k}×", report["pooled"][str(k)][kind]) for k in report["factors"]]
        out.append("")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.replay_corpus", description=__doc__.split("\n\n")[0])
    parser.add_argument("--traces", default=TRACES, help="directory of <source>.jsonl.gz traces")
    parser.add_argument("--dev", default=DEV_TRACE, help="the held-out corpus' dev half (by path; '' to leave out)")
    parser.add_argument("--sources", help="comma-separated subset of the source names")
    parser.add_argument("--factors", default="1,2,4", help="budget factors K (fetches = K × versions)")
    parser.add_argument("--default", default=DEFAULT, help=f"the default policy compared with the peers ({DEFAULT})")
    parser.add_argument("--peers", default=",".join(PEERS), help="comma-separated peer policies")
    parser.add_argument("--max-docs", type=int, default=0, help="seeded sample of at most N documents per source")
    parser.add_argument("--max-versions", type=int, default=0, help="stop sampling a source at V versions")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--no-chain", dest="chain", action="store_false", help="start each K's search afresh")
    parser.add_argument("--no-optimum", dest="optimum", action="store_false", help="skip the hindsight optimum")
    parser.add_argument("--json", help="write the report here")
    parser.add_argument("--render", metavar="JSON", help="print the tables of a report written earlier; run nothing")
    parser.add_argument("--markdown", action="store_true", help="with --render: Markdown tables")
    raw = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(raw)
    if args.render:
        with open(args.render, encoding="utf-8") as fh:
            report = summarise_report(json.load(fh))
        print(format_markdown(report) if args.markdown else format_report(report))
        return 0
    args.argv = raw
    args.factors = [float(k) if "." in k else int(k) for k in args.factors.split(",")]
    args.peers = [p for p in args.peers.split(",") if p]
    unknown = [p for p in args.peers + [args.default] if p not in POLICIES]
    if unknown:
        parser.error(f"unknown policies: {', '.join(unknown)}")
    paths = corpus_sources(args.traces, args.dev or None)
    if args.sources:
        wanted = args.sources.split(",")
        missing = [w for w in wanted if w not in paths]
        if missing:
            parser.error(f"unknown sources: {', '.join(missing)} (have {', '.join(paths)})")
        paths = {w: paths[w] for w in wanted}
    if not paths:
        parser.error("no traces found")
    args.commit = _git_commit()  # at the start: the code and traces that ran, whatever is committed meanwhile
    worlds = {n: load_world(p, args.max_docs, args.max_versions, args.seed) for n, p in paths.items()}
    policies = [args.default] + [p for p in args.peers if p != args.default]
    if args.optimum:
        policies.append(HINDSIGHT)
    factors = tuple(args.factors)
    tasks = [
        (n, p, pol, factors, args.max_docs, args.max_versions, args.seed, args.chain)
        for n, p in paths.items()
        for pol in policies
    ]
    tasks.sort(key=lambda t: -_cost(worlds[t[0]], t[2], factors))
    wall = time.perf_counter()
    cells: list[dict[str, Any]] = []
    if args.jobs > 1:
        with get_context("fork").Pool(args.jobs) as workers:
            for cell in workers.imap_unordered(run_cell, tasks):
                cells.append(cell)
                print(f"  done {cell['source']} {cell['policy']} ({cell['seconds']:.0f} s)", file=sys.stderr)
    else:
        for task in tasks:
            cell = run_cell(task)
            cells.append(cell)
            print(f"  done {cell['source']} {cell['policy']} ({cell['seconds']:.0f} s)", file=sys.stderr)
    report = build_report(cells, paths, worlds, args)
    report["wall_seconds"] = time.perf_counter() - wall
    print(format_report(report))
    print(f"\nwall {report['wall_seconds']:.0f} s with {args.jobs} job(s)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(report, fh, indent=1)
            fh.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
