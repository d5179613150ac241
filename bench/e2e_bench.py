"""End-to-end crawl speed: scrapy-adaptive against Scrapy's default scheduler.

Run::

    python -m bench.e2e_bench                       # 300 pages on 3 hosts, 2 runs each
    python -m bench.e2e_bench --pages 3000 --json out.json

Why it is built this way:

* **Real crawls, real server.**  The frontier bench times the data structure;
  this one times what a user sees: ``scrapy runspider`` in a subprocess
  against a local Twisted site (:mod:`bench.e2e_site`) on 127.0.0.1–.3, so
  the engine, downloader, middlewares and the engine wake-ups of the
  adaptive scheduler are all in the loop.
* **Same settings except the scheduler.**  Both crawls use
  ``CONCURRENT_REQUESTS_PER_DOMAIN=8`` and stop at ``CLOSESPIDER_PAGECOUNT=N``
  (an adaptive crawl never ends by itself).  The adaptive one adds the
  add-on, a JOBDIR, zero politeness delays, valence 8 and a revisit wait far
  beyond the run, so every page is fetched exactly once, as in the default
  crawl; the site's request counter checks it.  Scrapy's default scheduler
  *with* a JOBDIR is run too, for context (it also writes to disk).
* **Figures from the crawl itself.**  pages/s is
  ``downloader/response_count / elapsed_time_seconds`` (start_time to
  finish_time) from the stats, written to a file by :mod:`bench.e2e_ext`;
  the first-to-last-response rate, which leaves out start-up and shutdown, is
  shown next to it, with the seconds the crawl spent in the garbage
  collector and its peak resident memory.
* **Noise.**  Configurations alternate (a, b, a, b, …) so drift in machine
  load hits both, and the median of the runs is reported.
* **Two versions of the code in one run.**  ``--against DIR`` adds an
  ``adaptive@against`` crawl to each round: the same adaptive crawl with
  the ``scrapy_adaptive`` of the checkout in *DIR* (run from there, so its
  own package is the one imported), paired with this checkout's in the
  same round: a change measured against the code before it on one loaded
  machine.
* **Compiled as installed.**  The packages under test are byte-compiled
  before the first crawl (``compileall``), as ``pip install`` does for a
  user: a machine with ``PYTHONDONTWRITEBYTECODE`` set would otherwise
  compile every module of the checkout at each crawl's start, a cost
  Scrapy's own (installed, compiled) modules never pay.
* **Bounded.**  Each crawl is killed (its whole process group) after
  ``--crawl-timeout`` seconds; the site stops when its stdin closes.

``main(argv)`` returns the figures as a dict.
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from testsite.process import REPO_ROOT, SiteProcess

SPIDER = REPO_ROOT / "bench" / "e2e_spider.py"

#: adaptive pages/s over default pages/s (medians)
TARGET_RATIO = 0.9
#: the adaptive crawl with another checkout's code (``--against``)
AGAINST = "adaptive@against"


def _log(msg: str) -> None:
    print(f"[e2e_bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def _env(root: Path = REPO_ROOT) -> dict[str, str]:
    return dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [os.environ.get("PYTHONPATH"), str(root)])))


class Site(SiteProcess):
    """The local site in a subprocess (started and stopped by us only)."""

    def __init__(
        self,
        pages: int,
        hosts: int,
        links: int,
        seed: int,
        max_seconds: float,
        extra_args: Sequence[str] = (),
    ) -> None:
        args = ["--pages", str(pages), "--hosts", str(hosts), "--links", str(links), "--seed", str(seed), *extra_args]
        super().__init__("bench.e2e_site", args, startup_timeout=30.0, stop_timeout=10.0, max_seconds=max_seconds)
        self.start()
        self.start_urls: list[str] = self.info["start_urls"]

    def get(self, path: str) -> bytes:
        host, port = next(iter(self.ports.items()))
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
        with opener.open(f"http://{host}:{port}{path}", timeout=10) as resp:
            return resp.read()

    def reset(self) -> None:
        self.get("/_reset")

    def stats(self) -> dict[str, int]:
        return json.loads(self.get("/_stats"))


def crawl_settings(config: str, args: argparse.Namespace, run_dir: Path) -> dict[str, str]:
    """``-s`` settings of one crawl; only the scheduler part differs."""
    settings = {
        "LOG_LEVEL": "INFO",
        "LOG_FILE": str(run_dir / "crawl.log"),
        "TELNETCONSOLE_ENABLED": "False",
        "ROBOTSTXT_OBEY": "False",
        "CONCURRENT_REQUESTS_PER_DOMAIN": "8",
        "CLOSESPIDER_PAGECOUNT": str(args.pages),
        # a graceful stop shortly before the hard kill
        "CLOSESPIDER_TIMEOUT": str(max(1, int(args.crawl_timeout) - 10)),
        "DOWNLOAD_TIMEOUT": "30",
        "EXTENSIONS": json.dumps({"bench.e2e_ext.BenchStats": 0}),
        "BENCH_STATS_FILE": str(run_dir / "stats.json"),
    }
    if config != "default":
        settings["JOBDIR"] = str(run_dir / "jobdir")
    if config.startswith("adaptive"):
        settings.update(
            {
                "ADDONS": json.dumps({"scrapy_adaptive.Addon": 0}),
                "ADAPTIVE_MIN_DELAY": "0",
                "ADAPTIVE_MAX_DELAY": "0",
                "ADAPTIVE_DELAY_FACTOR": "0",
                "ADAPTIVE_HOST_VALENCE": "8",
                "ADAPTIVE_WAIT_DEFAULT": "100000",
            }
        )
    if config == "adaptive+":
        settings.update(dict(item.split("=", 1) for item in args.variant))
    return settings


def run_crawl(config: str, args: argparse.Namespace, site: Site, run_dir: Path) -> dict[str, Any]:
    """One crawl in a subprocess; its figures (or why there are none)."""
    run_dir.mkdir(parents=True)
    profile = ["-m", "cProfile", "-o", str(run_dir / "crawl.prof")] if args.profile else []
    # py-spy samples the running crawl (its own overhead is outside the crawl's process)
    sampler = [args.sample, "record", "-r", "250", "-f", "raw", "-o", str(run_dir / "samples.txt"), "--"]
    start = ",".join(site.start_urls)
    cmd = [sys.executable, *profile, "-m", "scrapy", "runspider", str(SPIDER), "-a", "start=" + start]
    cmd = [*sampler, *cmd] if args.sample else cmd
    for key, value in crawl_settings(config, args, run_dir).items():
        cmd += ["-s", f"{key}={value}"]
    # a crawl imports the package of the folder it runs in: --against's runs there
    root = Path(args.against).resolve() if config == AGAINST else REPO_ROOT
    site.reset()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.Popen(
        cmd,
        cwd=root,
        env=_env(root),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    killed = False
    try:
        _, stderr = proc.communicate(timeout=args.crawl_timeout)
    except subprocess.TimeoutExpired:
        killed = True
        os.killpg(proc.pid, signal.SIGKILL)  # our own child's process group
        _, stderr = proc.communicate(timeout=30)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # only the crawl was reaped in between
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    res: dict[str, Any] = {
        "config": config,
        "wall_s": wall,
        "cpu_s": cpu,
        "returncode": proc.returncode,
        "killed": killed,
    }
    res["site"] = site.stats()
    stats_file = run_dir / "stats.json"
    if not stats_file.exists():
        log = run_dir / "crawl.log"
        tail = log.read_text(errors="replace")[-2000:] if log.exists() else stderr[-2000:]
        res["error"] = f"no stats file (exit {proc.returncode}); log tail:\n{tail}"
        return res
    data = json.loads(stats_file.read_text())
    stats, timings = data["stats"], data["timings"]
    responses = int(stats.get("downloader/response_count", 0))
    elapsed = float(stats.get("elapsed_time_seconds") or 0.0)
    first_last = timings.get("first_to_last_response_s") or 0.0
    res.update(
        responses=responses,
        items=int(stats.get("item_scraped_count", 0)),
        elapsed_s=elapsed,
        pages_per_s=responses / elapsed if elapsed > 0 else 0.0,
        steady_pages_per_s=(responses - 1) / first_last if first_last > 0 else 0.0,
        first_response_after_open_s=timings.get("first_response_after_open_s"),
        # CPU per page, open to close: steadier than wall rates on a shared machine
        cpu_ms_per_page=1000 * timings["cpu_open_to_close_s"] / responses
        if timings.get("cpu_open_to_close_s") and responses
        else None,
        max_rss_mb=timings.get("max_rss_mb"),
        gc_s=timings.get("gc_s"),
        finish_reason=stats.get("finish_reason"),
        errors=int(stats.get("log_count/ERROR", 0)),
        adaptive={k: v for k, v in stats.items() if k.startswith("adaptive/")},
    )
    return res


def summarize(runs: list[dict[str, Any]], configs: Sequence[str], pages: int) -> dict[str, Any]:
    """Medians per configuration, and the adaptive/default ratio."""
    summary: dict[str, Any] = {}
    for config in configs:
        ok = [r for r in runs if r["config"] == config and "error" not in r]
        summary[config] = {
            "runs": len([r for r in runs if r["config"] == config]),
            "ok_runs": len(ok),
            "pages_per_s": [r["pages_per_s"] for r in ok],
            "median_pages_per_s": statistics.median([r["pages_per_s"] for r in ok]) if ok else None,
            "median_steady_pages_per_s": statistics.median([r["steady_pages_per_s"] for r in ok]) if ok else None,
            "median_elapsed_s": statistics.median([r["elapsed_s"] for r in ok]) if ok else None,
            "median_cpu_ms_per_page": statistics.median(cpu)
            if (cpu := [r["cpu_ms_per_page"] for r in ok if r.get("cpu_ms_per_page")])
            else None,
            "median_gc_s": statistics.median(gcs)
            if (gcs := [r["gc_s"] for r in ok if r.get("gc_s") is not None])
            else None,
            "median_max_rss_mb": statistics.median(rss)
            if (rss := [r["max_rss_mb"] for r in ok if r.get("max_rss_mb")])
            else None,
            "all_pages_fetched": all(r["responses"] >= pages for r in ok) and bool(ok),
            "max_fetches_per_page": max((r["site"]["max_hits"] for r in ok), default=None),
        }
    a, d = summary.get("adaptive", {}), summary.get("default", {})
    ratio = None
    if a.get("median_pages_per_s") and d.get("median_pages_per_s"):
        ratio = a["median_pages_per_s"] / d["median_pages_per_s"]
    steady = None
    if a.get("median_steady_pages_per_s") and d.get("median_steady_pages_per_s"):
        steady = a["median_steady_pages_per_s"] / d["median_steady_pages_per_s"]
    summary["ratio"] = ratio
    # against the baseline that also writes its state to disk, as the adaptive crawl does
    j = summary.get("default+jobdir", {})
    summary["jobdir_ratio"] = (
        a["median_pages_per_s"] / j["median_pages_per_s"]
        if a.get("median_pages_per_s") and j.get("median_pages_per_s")
        else None
    )
    # CPU per page, baseline ÷ adaptive (above 1: adaptive spends less), the steadier figure
    for name, base in (("cpu_ratio", d), ("jobdir_cpu_ratio", j)):
        summary[name] = (
            base["median_cpu_ms_per_page"] / a["median_cpu_ms_per_page"]
            if a.get("median_cpu_ms_per_page") and base.get("median_cpu_ms_per_page")
            else None
        )
    summary["steady_ratio"] = steady
    bases = ("default", "default+jobdir", AGAINST)
    summary["paired"] = {base: paired_ratios(runs, base) for base in bases if base in configs}
    summary["target"] = TARGET_RATIO
    summary["verdict"] = None if ratio is None else ("PASS" if ratio >= TARGET_RATIO else "FAIL")
    return summary


def paired_ratios(runs: list[dict[str, Any]], base: str) -> dict[str, Any]:
    """Adaptive over *base* within each round, and their medians.

    The machine's speed drifts by 10-20 % over minutes (the baselines
    themselves move that much from one round to the next); the two crawls
    of one round run a minute apart, so the ratio within a round cancels
    most of the drift that a ratio of medians over all rounds keeps.
    """
    by_round: dict[int, dict[str, dict[str, Any]]] = {}
    for r in runs:
        if "error" not in r and "round" in r:
            by_round.setdefault(r["round"], {})[r["config"]] = r
    pages, cpu = [], []
    for pair in by_round.values():
        a, b = pair.get("adaptive"), pair.get(base)
        if a is None or b is None:
            continue
        pages.append(a["pages_per_s"] / b["pages_per_s"])
        if a.get("cpu_ms_per_page") and b.get("cpu_ms_per_page"):
            cpu.append(b["cpu_ms_per_page"] / a["cpu_ms_per_page"])
    return {
        "pages_per_s": pages,
        "cpu": cpu,
        "median_pages_per_s": statistics.median(pages) if pages else None,
        "median_cpu": statistics.median(cpu) if cpu else None,
    }


def format_report(runs: list[dict[str, Any]], summary: dict[str, Any], configs: Sequence[str]) -> str:
    lines = []
    header = (
        "run",
        "config",
        "pages/s",
        "steady p/s",
        "responses",
        "items",
        "elapsed s",
        "wall s",
        "cpu s",
        "site req",
        "max hits",
        "finish reason",
    )
    table = []
    for n, r in enumerate(runs, 1):
        if "error" in r:
            table.append((str(n), r["config"], "ERROR", "", "", "", "", f"{r['wall_s']:.1f}", "", "", "", ""))
            continue
        table.append(
            (
                str(n),
                r["config"],
                f"{r['pages_per_s']:.1f}",
                f"{r['steady_pages_per_s']:.1f}",
                str(r["responses"]),
                str(r["items"]),
                f"{r['elapsed_s']:.2f}",
                f"{r['wall_s']:.1f}",
                f"{r['cpu_s']:.1f}",
                str(r["site"]["requests"]),
                str(r["site"]["max_hits"]),
                str(r["finish_reason"]),
            )
        )
    widths = [max(len(row[i]) for row in [header, *table]) for i in range(len(header))]
    for k, row in enumerate([header, *table]):
        lines.append(
            "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(row, widths, strict=True)))
        )
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    lines.append("")
    for config in configs:
        s = summary[config]
        med = "-" if s["median_pages_per_s"] is None else f"{s['median_pages_per_s']:.1f}"
        steady = "-" if s["median_steady_pages_per_s"] is None else f"{s['median_steady_pages_per_s']:.1f}"
        cpu = "-" if s["median_cpu_ms_per_page"] is None else f"{s['median_cpu_ms_per_page']:.3f}"
        rss = "-" if s.get("median_max_rss_mb") is None else f"{s['median_max_rss_mb']:.0f}"
        gcs = "-" if s.get("median_gc_s") is None else f"{s['median_gc_s']:.2f}"
        lines.append(
            f"{config:<16} median pages/s {med:>8}   steady {steady:>8}   cpu ms/page {cpu:>6}   gc s {gcs:>5}   "
            f"peak MB {rss:>4}   "
            f"ok runs {s['ok_runs']}/{s['runs']}   "
            f"all pages fetched: {s['all_pages_fetched']}   max fetches of one page: {s['max_fetches_per_page']}"
        )
    ratio = "-" if summary["ratio"] is None else f"{summary['ratio']:.2f}"
    steady_ratio = "-" if summary["steady_ratio"] is None else f"{summary['steady_ratio']:.2f}"
    lines.append(
        f"\nadaptive/default pages/s (median): {ratio}  (steady-state: {steady_ratio})   "
        f"target >= {TARGET_RATIO}   {summary['verdict'] or ''}"
    )

    def fmt(x: float | None) -> str:
        return "-" if x is None else f"{x:.2f}"

    lines.append(
        f"adaptive/default+jobdir pages/s (median): {fmt(summary['jobdir_ratio'])}   "
        f"CPU per page, default/adaptive: {fmt(summary['cpu_ratio'])}, "
        f"default+jobdir/adaptive: {fmt(summary['jobdir_cpu_ratio'])}"
    )
    for base, paired in summary.get("paired", {}).items():
        lines.append(
            f"paired within each round, adaptive/{base}: pages/s {fmt(paired['median_pages_per_s'])} "
            f"({', '.join(f'{x:.2f}' for x in paired['pages_per_s'])}), "
            f"CPU per page {base}/adaptive {fmt(paired['median_cpu'])} "
            f"({', '.join(f'{x:.2f}' for x in paired['cpu'])})"
        )
    lines.append(
        "load average (1/5/15 min) at start {} and end {} on {} CPUs".format(
            "/".join(f"{x:.2f}" for x in summary.get("loadavg_start", ())),
            "/".join(f"{x:.2f}" for x in summary.get("loadavg_end", ())),
            os.cpu_count(),
        )
    )
    return "\n".join(lines)


def add_site_arguments(p: argparse.ArgumentParser, *, pages: int, hosts: int) -> None:
    """The generated site's shape (:mod:`bench.e2e_site`): shared with :mod:`bench.fleet_bench`."""
    p.add_argument("--pages", type=int, default=pages)
    p.add_argument("--hosts", type=int, default=hosts)
    p.add_argument("--links", type=int, default=5, help="links per page")
    p.add_argument("--seed", type=int, default=7)


def add_output_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workdir", default=None, help="keep crawl logs and state here")
    p.add_argument("--json", default=None, help="write the figures to this file")
    p.add_argument("--quiet", action="store_true")
    p.add_argument(
        "--profile", action="store_true", help="run each crawl under cProfile (crawl.prof in its run folder; slower)"
    )
    p.add_argument(
        "--sample",
        metavar="PY_SPY",
        default=None,
        help="run each crawl under this py-spy executable (samples.txt in its run folder, collapsed stacks): "
        "time shares with little overhead, native frames left out",
    )


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.e2e_bench", description=__doc__.split("\n\n")[0])
    add_site_arguments(p, pages=300, hosts=3)
    p.add_argument("--repeats", type=int, default=2, help="runs of each configuration, alternating")
    p.add_argument("--crawl-timeout", type=float, default=120.0, help="kill a crawl after this many seconds")
    p.add_argument("--no-jobdir-baseline", action="store_true", help="skip Scrapy's default scheduler + JOBDIR")
    p.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="also run an 'adaptive+' configuration: the adaptive one plus these -s settings (repeatable), "
        "e.g. SCHEDULER=mypkg.ExperimentalScheduler",
    )
    p.add_argument(
        "--against",
        default=None,
        metavar="DIR",
        help="also run the adaptive crawl with the scrapy_adaptive of the checkout in DIR (e.g. "
        "'git worktree add --detach /tmp/base main'), in the same rounds, paired with this one's",
    )
    add_output_arguments(p)
    return p


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Start the site, run the crawls alternately, print and return the figures."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.against and not (Path(args.against) / "scrapy_adaptive" / "__init__.py").is_file():
        parser.error(f"--against {args.against}: no scrapy_adaptive package in that folder (a checkout is needed)")
    configs = ["default", "adaptive"] + ([AGAINST] if args.against else [])
    configs += [] if args.no_jobdir_baseline else ["default+jobdir"]
    if args.variant:
        configs.append("adaptive+")
    for root in filter(None, (REPO_ROOT, args.against and Path(args.against))):
        compileall.compile_dir(str(Path(root) / "scrapy_adaptive"), quiet=1)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="e2e-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    budget = args.repeats * len(configs) * (args.crawl_timeout + 40) + 60
    site = Site(args.pages, args.hosts, args.links, args.seed, max_seconds=budget)
    runs: list[dict[str, Any]] = []
    load_start = os.getloadavg()
    try:
        for rep in range(args.repeats):
            for config in configs:
                _log(f"run {rep + 1}/{args.repeats}: {config}")
                run = run_crawl(config, args, site, workdir / f"{rep + 1}-{config}")
                run["round"] = rep + 1
                runs.append(run)
                if "error" in run:
                    _log(f"{config} failed: {run['error']}")
    finally:
        site.stop()
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    summary = summarize(runs, configs, args.pages)
    summary["loadavg_start"], summary["loadavg_end"] = load_start, os.getloadavg()
    result = {
        "params": {k: getattr(args, k) for k in ("pages", "hosts", "links", "seed", "repeats", "crawl_timeout")},
        "runs": runs,
        "summary": summary,
    }
    return emit(result, args, format_report(runs, summary, configs))


def emit(result: dict[str, Any], args: argparse.Namespace, report: str) -> dict[str, Any]:
    """Print *report* (unless ``--quiet``), write *result* to ``--json`` if given, return it."""
    if not args.quiet:
        print(report)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(result, f, indent=1)
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
