"""What the benchmarks share: progress lines, a subprocess's import path, plain tables, memory figures, output."""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent


def log(prog: str, msg: str) -> None:
    """A progress line on stderr (stdout carries only the report)."""
    print(f"[{prog} {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def env(root: Path = REPO_ROOT) -> dict[str, str]:
    """This environment with *root* on ``PYTHONPATH``: a subprocess imports its packages."""
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(root)])))


def render(header: Sequence[str], rows: Iterable[Sequence[str]], left: int = 1) -> str:
    """A plain-text table: the first *left* columns left-aligned, the others right-aligned, a rule under the header."""
    lines = [tuple(header), *(tuple(row) for row in rows)]
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    out = []
    for n, line in enumerate(lines):
        out.append("  ".join(c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths))))
        if n == 0:
            out.append("  ".join("-" * w for w in widths))
    return "\n".join(out)


def num(value: float | None, spec: str = ".2f") -> str:
    """*value* formatted, or ``-`` when there is none."""
    return "-" if value is None else format(value, spec)


def median(values: Iterable[float | None]) -> float | None:
    """The median of the values that are there (``None`` if none is)."""
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def loadavg_line(start: Sequence[float], end: Sequence[float]) -> str:
    def show(load: Sequence[float]) -> str:
        return "/".join(f"{x:.2f}" for x in load)

    return f"load average (1/5/15 min) at start {show(start)} and end {show(end)} on {os.cpu_count()} CPUs"


def rss_mb() -> float:
    """Current resident set size in MiB (from /proc/self/statm)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    """Peak resident set size of this process in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def dir_size_mb(path: str | Path) -> float:
    """Bytes of every file under *path*, in MiB (what ``du -b`` would count)."""
    total = 0
    for root, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.path.getsize(os.path.join(root, name))
            except OSError:
                pass
    return total / 2**20


def emit(result: dict[str, Any], args: argparse.Namespace, report: str) -> dict[str, Any]:
    """Print *report* (unless ``--quiet``), write *result* to ``--json`` if given, return it."""
    if not args.quiet:
        print(report)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    return result
