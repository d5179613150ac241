"""Budget benchmark: does a real crawl spend ``ADAPTIVE_BUDGET``, and no more?

Run::

    python -m bench.budget_bench                     # ~3 minutes
    python -m bench.budget_bench --seconds 600 --json budget.json

One real crawl (``scrapy runspider bench/e2e_spider.py`` with the add-on and
``ProportionalWaitPolicy``) of :mod:`bench.e2e_site` with changing pages:
every page changes as a Poisson process, its mean interval log-normal across
pages (median ``--change-median`` seconds, σ ``--change-sigma``), on the
wall clock: a world whose pages change over days, compressed to minutes.
The budget is given per day, as a user would, but is a few revisits per
second, so a couple of minutes hold hundreds of them; the allocator's
feedback window (``ADAPTIVE_BUDGET_WINDOW``) is shortened to match.

Figures, after a warm-up in which every page gets its first visit and the
estimates and the feedback settle:

* **budget ratio**: revisits per second counted *by the site* (a request for
  a page it served before) over the budget, in the whole window and in
  slices of it, so drift shows;
* **versions captured**: of the versions the pages went through in the
  window (the site's own change schedules), the share some visit saw;
* **crawl-time estimate** (Umbrich et al., section 5): per host, how long it
  took to work through the URLs due at a given moment, against the estimate
  (:mod:`bench.budget_ext` samples inside the crawl); over- and
  underestimation as in the paper's table 3, for our politeness model and
  for the paper's own delay.

The three hosts differ in speed: 127.0.0.1 answers at once, 127.0.0.2 after
50 ms, 127.0.0.3 after 300 ms and asks for a 1 s Crawl-delay in robots.txt,
so politeness, not the budget, limits it: its URLs are chronically overdue.

``main(argv)`` returns the figures as a dict.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.e2e_bench import REPO_ROOT, SPIDER, Site, _env

DAY = 86_400.0
#: the budget is held within this share (the target of issue "budget")
TOLERANCE = 0.05


def _log(msg: str) -> None:
    print(f"[budget_bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def crawl_settings(args: argparse.Namespace, run_dir: Path) -> dict[str, Any]:
    return {
        "ADDONS": {"scrapy_adaptive.Addon": 0},
        "JOBDIR": str(run_dir / "jobdir"),
        "LOG_LEVEL": "INFO",
        "LOG_FILE": str(run_dir / "crawl.log"),
        "TELNETCONSOLE_ENABLED": False,
        "ROBOTSTXT_OBEY": True,  # the slow host's Crawl-delay is read from it
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": args.valence,
        "DOWNLOAD_TIMEOUT": 30,
        "CLOSESPIDER_TIMEOUT": args.seconds,
        "ADAPTIVE_HOST_VALENCE": args.valence,
        "ADAPTIVE_MIN_DELAY": 0.1,
        "ADAPTIVE_MAX_DELAY": 1.0,
        "ADAPTIVE_DELAY_FACTOR": 2.0,
        "ADAPTIVE_WAIT_POLICY": args.policy,
        "ADAPTIVE_WAIT_POLICIES": [],
        "ADAPTIVE_WAIT_MIN": 1.0,
        # the first revisit while the population prior is not learned yet:
        # soon, so that it is learned in the first seconds, while the number
        # of URLs still doubles and the budget's measurement restarts
        "ADAPTIVE_WAIT_INITIAL": 1.0,
        "ADAPTIVE_WAIT_MAX": args.max_wait,
        "ADAPTIVE_BUDGET": args.budget * DAY,
        "ADAPTIVE_BUDGET_WINDOW": args.window,
        "ADAPTIVE_LOG_INTERVAL": 10.0,
        "EXTENSIONS": {"bench.e2e_ext.BenchStats": 0, "bench.budget_ext.CrawlTimeProbe": 0},
        "BENCH_STATS_FILE": str(run_dir / "stats.json"),
        "CRAWLTIME_PROBE_FILE": str(run_dir / "crawltime.json"),
        # due sets drain cleanly from the start: URLs found later queue behind
        "CRAWLTIME_PROBE_START": 1.0,
        "CRAWLTIME_PROBE_INTERVAL": 2.0,
    }


def run_crawl(args: argparse.Namespace, site: Site, run_dir: Path) -> dict[str, Any]:
    """The crawl in a subprocess (killed, with its group, if it overstays)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "scrapy", "runspider", str(SPIDER), "-a", "start=" + ",".join(site.start_urls)]
    for key, value in crawl_settings(args, run_dir).items():
        cmd += ["-s", f"{key}={json.dumps(value) if isinstance(value, dict | list) else value}"]
    proc = subprocess.Popen(
        cmd, cwd=REPO_ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        _, stderr = proc.communicate(timeout=args.seconds + 60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # our own child's process group
        _, stderr = proc.communicate(timeout=30)
    stats_file = run_dir / "stats.json"
    if not stats_file.exists():
        raise RuntimeError(f"the crawl wrote no stats (exit {proc.returncode}): {stderr[-2000:]}")
    stats = json.loads(stats_file.read_text())["stats"]
    probe_file = run_dir / "crawltime.json"
    probe = json.loads(probe_file.read_text()) if probe_file.exists() else {}
    return {
        "stats": {k: v for k, v in stats.items() if k.startswith(("adaptive/", "finish_"))},
        "samples": probe.get("samples", []),
        "allocator": probe.get("allocator", []),
    }


def budget_figures(
    visits: list[list[float]], versions_at: Any, budget: float, warmup: float, slices: int = 4
) -> dict[str, Any]:
    """Revisits per second and captured versions after *warmup*, from the site's log.

    *visits* is ``[time, page, version]`` per page request; *versions_at(t)*
    gives every page's version at time t.
    """
    visits = sorted(visits)
    if not visits:
        raise RuntimeError("the site served no page")
    start = visits[0][0] + warmup
    end = visits[-1][0]
    if end - start < 1.0:
        raise RuntimeError(f"the crawl ended {end - visits[0][0]:.0f}s after its first page: no time after warm-up")
    seen: set[int] = set()
    revisit_times: list[float] = []
    first_after_warmup = 0
    captured: set[tuple[int, int]] = set()
    for t, page, version in visits:
        page = int(page)
        if t >= start:
            if page in seen:
                revisit_times.append(t)
            else:
                first_after_warmup += 1
            captured.add((page, int(version)))
        seen.add(page)
    span = end - start
    rate = len(revisit_times) / span
    edges = [start + span * k / slices for k in range(slices + 1)]
    per_slice = [
        sum(1 for t in revisit_times if lo <= t < hi or (k == slices - 1 and t == hi)) / (hi - lo) / budget
        for k, (lo, hi) in enumerate(zip(edges, edges[1:]))
    ]
    at_start, at_end = versions_at(start), versions_at(end)
    existing = sum(e - s + 1 for s, e in zip(at_start, at_end, strict=True))
    changes = sum(e - s for s, e in zip(at_start, at_end, strict=True))
    return {
        "window_s": span,
        "revisits": len(revisit_times),
        "revisits_per_s": rate,
        "budget_per_s": budget,
        "ratio": rate / budget,
        "slice_ratios": per_slice,
        "first_visits_after_warmup": first_after_warmup,
        "pages_seen": len(seen),
        "changes_per_s": changes / span,
        "versions_existing": existing,
        "versions_captured": len(captured),
        "captured_share": len(captured) / existing if existing else None,
    }


def _errors(samples: list[dict[str, Any]], key: str) -> dict[str, Any]:
    """The paper's table 3: mean over- and underestimation, as shares of the measured time."""
    errors = [(s[key] - s["measured"]) / s["measured"] for s in samples]
    over = [e for e in errors if e > 0]
    under = [e for e in errors if e <= 0]
    return {
        "samples": len(errors),
        "median": statistics.median(errors) if errors else None,
        "over_mean": statistics.fmean(over) if over else None,
        "over_count": len(over),
        "under_mean": statistics.fmean(under) if under else None,
        "under_count": len(under),
    }


def crawltime_figures(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Estimation errors per host and in all, for both delays."""
    drained = [s for s in samples if s.get("measured")]
    hosts = sorted({s["host"] for s in drained})
    out: dict[str, Any] = {"taken": len(samples), "drained": len(drained), "hosts": {}}
    for host in [*hosts, "all"]:
        rows = [s for s in drained if host in ("all", s["host"])]
        out["hosts"][host] = {
            "docs_median": statistics.median(s["docs"] for s in rows),
            "measured_median_s": statistics.median(s["measured"] for s in rows),
            "fetch_time_s": statistics.median(s["fetch_time"] for s in rows),
            "wait_s": statistics.median(s["wait"] for s in rows),
            "ours": _errors(rows, "estimate"),
            "paper_delay": _errors(rows, "paper_estimate"),
        }
    return out


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.0%}"


def report(result: dict[str, Any]) -> str:
    b, c, st = result["budget"], result["crawltime"], result["crawl"]["stats"]
    lines = [
        f"budget {b['budget_per_s']:.2f} revisits/s ({b['budget_per_s'] * DAY:,.0f}/day), "
        f"window ADAPTIVE_BUDGET_WINDOW={result['params']['window']:.0f}s; measured over {b['window_s']:.0f}s "
        f"after a {result['params']['warmup']:.0f}s warm-up",
        f"  realised {b['revisits_per_s']:.3f} revisits/s ({b['revisits']} revisits): "
        f"ratio {b['ratio']:.3f}  (target 1 ± {TOLERANCE:.0%})  {'PASS' if result['passed'] else 'FAIL'}",
        "  per slice: " + ", ".join(f"{r:.3f}" for r in b["slice_ratios"]),
        f"  first visits after warm-up: {b['first_visits_after_warmup']} (pages seen {b['pages_seen']})",
        f"  the crawler's own view: {st.get('adaptive/budget/realised_per_day', '-')}/day realised "
        f"of {st.get('adaptive/budget/per_day', '-')}/day; capped hosts {st.get('adaptive/budget/capped_hosts', '-')}, "
        f"hosts behind their due URLs {st.get('adaptive/hosts/overdue', '-')} (max load "
        f"{st.get('adaptive/hosts/max_load', '-')})",
        f"versions: {b['changes_per_s']:.2f} changes/s on the site; {b['versions_captured']} of "
        f"{b['versions_existing']} versions captured ({b['captured_share']:.1%})",
        "",
        f"crawl-time estimate: {c['drained']} due sets drained of {c['taken']} sampled",
        f"{'host':<12}{'sets':>5}{'docs':>6}{'fetch s':>9}{'wait s':>8}{'took s':>8}"
        f"{'ours: over (n)':>18}{'under (n)':>13}{'median':>8}{'paper d: over (n)':>20}{'under (n)':>13}{'median':>8}",
    ]
    for host, h in c["hosts"].items():
        cells = [
            f"{host:<12}{h['ours']['samples']:>5}{h['docs_median']:>6.0f}{h['fetch_time_s']:>9.3f}"
            f"{h['wait_s']:>8.2f}{h['measured_median_s']:>8.1f}"
        ]
        for key, width in (("ours", 18), ("paper_delay", 20)):
            e = h[key]
            over = f"{_pct(e['over_mean'])} ({e['over_count']})"
            under = f"{_pct(e['under_mean'])} ({e['under_count']})"
            cells.append(f"{over:>{width}}{under:>13}{_pct(e['median']):>8}")
        lines.append("".join(cells))
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.budget_bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--seconds", type=float, default=180.0, help="length of the crawl (default %(default)s)")
    p.add_argument("--warmup", type=float, default=80.0, help="seconds left out at the start (default %(default)s)")
    p.add_argument("--budget", type=float, default=20.0, help="revisits per second (default %(default)s)")
    p.add_argument("--window", type=float, default=10.0, help="ADAPTIVE_BUDGET_WINDOW, seconds (default %(default)s)")
    p.add_argument(
        "--policy",
        default="scrapy_adaptive.policies.ProportionalWaitPolicy",
        help="ADAPTIVE_WAIT_POLICY (default %(default)s; scrapy_adaptive.policies.UnionWaitPolicy is the product's)",
    )
    p.add_argument("--pages", type=int, default=300)
    p.add_argument("--change-median", type=float, default=10.0, help="median mean change interval, seconds")
    p.add_argument("--change-sigma", type=float, default=1.0)
    p.add_argument("--max-wait", type=float, default=60.0, help="ADAPTIVE_WAIT_MAX, seconds")
    p.add_argument("--valence", type=int, default=2)
    p.add_argument("--latency", default="0,0.05,0.2", help="per host, seconds")
    p.add_argument("--crawl-delay", default="0,0,0.5", help="per host, robots.txt Crawl-delay")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--workdir", default=None, help="keep the crawl's log and state here")
    p.add_argument("--json", default=None, help="write the figures to this file")
    return p


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = _parser().parse_args(argv)
    if not 0 < args.warmup < args.seconds:
        raise SystemExit("--warmup must be shorter than --seconds")
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="budget-bench-"))
    site_args = [
        "--change-median", str(args.change_median), "--change-sigma", str(args.change_sigma),
        "--latency", args.latency, "--crawl-delay", args.crawl_delay,
    ]  # fmt: skip
    site = Site(args.pages, 3, 5, args.seed, max_seconds=args.seconds + 180, extra_args=site_args)
    try:
        _log(f"crawling for {args.seconds:.0f}s (workdir {workdir})")
        crawl = run_crawl(args, site, workdir)
        visits = json.loads(site.get("/_visits"))["visits"]

        def versions_at(t: float) -> list[int]:
            return json.loads(site.get(f"/_versions?at={t!r}"))

        budget = budget_figures(visits, versions_at, args.budget, args.warmup)
    finally:
        site.stop()
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    result = {
        "params": {k: v for k, v in vars(args).items() if k not in ("workdir", "json")},
        "budget": budget,
        "crawltime": crawltime_figures(crawl["samples"]),
        "crawl": crawl,
        "loadavg_end": os.getloadavg(),
    }
    result["passed"] = abs(budget["ratio"] - 1.0) <= TOLERANCE
    print(report(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main()
