"""End-to-end crawl speed: scrapy-adaptive against Scrapy's default scheduler.

Run::

    python -m bench.e2e_bench                       # 300 pages on 3 hosts, 2 runs each
    python -m bench.e2e_bench --pages 3000 --json out.json
    python -m bench.e2e_bench --revisit --pages 2000 --repeats 3   # a second pass, 1 page in 10 changed

Why it is built this way:

* **Real crawls, real server**: ``scrapy runspider`` in a subprocess against
  a local Twisted site (:mod:`bench.e2e_site`) on 127.0.0.1–.3, so engine,
  downloader, middlewares and the adaptive scheduler's wake-ups are timed.
* **Same settings except the scheduler**: ``CONCURRENT_REQUESTS_PER_DOMAIN=8``
  and ``CLOSESPIDER_PAGECOUNT=N`` (an adaptive crawl never ends by itself);
  the adaptive crawl adds the add-on, a JOBDIR, zero politeness delays,
  valence 8 and a revisit wait beyond the run, so every page is fetched
  once (the site's counter checks it).  Scrapy's scheduler *with* a JOBDIR
  runs too (it also writes to disk).
* **Figures from the crawl itself** (:mod:`bench.e2e_ext`): pages/s is
  ``downloader/response_count / elapsed_time_seconds``; beside it the
  first-to-last-response rate, CPU per page, GC seconds and peak RSS.
* **Noise**: configurations alternate within each round; medians, and
  ratios paired within a round.  ``--against DIR`` adds the adaptive crawl
  with the checkout in *DIR* to each round (run from there).
* **Compiled as installed**: the packages under test are byte-compiled first,
  as ``pip install`` does.
* **A revisit pass** (``--revisit``): the site sends ETags and 304s
  (``--last-modified``: Last-Modified too).  Each round the adaptive crawl
  and an HttpCache crawl (RFC2616 policy) crawl it once, untimed (adaptive
  waits ``--revisit-wait``), ``/_bump`` changes one page in ten, and the
  second passes are timed: ``adaptive`` resumed on its JOBDIR once every
  page is due (conditional GETs; an unchanged page skips the callback),
  ``httpcache`` revalidating every page from its cache (requests say
  ``Cache-Control: max-age=0``, else the heuristic freshness serves pages
  unasked, changed or not; a 304 runs the callback on the cached body) and
  ``default``, plain Scrapy fetching everything, without a JOBDIR (its
  dupefilter would drop every URL seen).  Target: 1.3 × both.
* **Bounded**: each crawl is killed after ``--crawl-timeout`` seconds; the
  site stops when its stdin closes.

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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from bench.common import REPO_ROOT, emit, env, loadavg_line, log, median, num, render
from bench.e2e_site import add_site_arguments
from testsite.process import SiteProcess

SPIDER = REPO_ROOT / "bench" / "e2e_spider.py"
#: a run's figures whose medians are reported
FIGURES = ("pages_per_s", "steady_pages_per_s", "elapsed_s", "cpu_ms_per_page", "gc_s", "max_rss_mb")

#: adaptive pages/s over default pages/s (medians)
TARGET_RATIO = 0.9
#: the same on a revisit pass, against both baselines
REVISIT_TARGET = 1.3
REVISIT_CONFIGS = ("default", "httpcache", "adaptive")
#: Scrapy's default request headers, and revalidate every cached page
REVALIDATE_HEADERS = {
    "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
    "Accept-Language": "en",
    "Cache-Control": "max-age=0",
}
#: the adaptive crawl with another checkout's code (``--against``)
AGAINST = "adaptive@against"


def _log(msg: str) -> None:
    log("e2e_bench", msg)


class Site(SiteProcess):
    """The local site in a subprocess (started and stopped by us only)."""

    def __init__(self, pages: int, hosts: int, links: int, seed: int, max_seconds: float, extra_args: Sequence[str] = ()):
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


def crawl_settings(config: str, args: argparse.Namespace, run_dir: Path, state: Path | None = None) -> dict[str, str]:
    """``-s`` settings of one crawl; only the scheduler part differs (its JOBDIR or cache under *state*)."""
    state = state or run_dir
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
    if config == "default+jobdir" or config.startswith("adaptive"):
        settings["JOBDIR"] = str(state / ("jobdir-against" if config == AGAINST and args.revisit else "jobdir"))
    if config == "httpcache":
        settings.update(
            HTTPCACHE_ENABLED="True",
            HTTPCACHE_POLICY="scrapy.extensions.httpcache.RFC2616Policy",
            HTTPCACHE_DIR=str(state / "httpcache"),
            DEFAULT_REQUEST_HEADERS=json.dumps(REVALIDATE_HEADERS),
        )
    if config.startswith("adaptive"):
        settings.update(ADDONS=json.dumps({"scrapy_adaptive.Addon": 0}), ADAPTIVE_HOST_VALENCE="8")
        settings.update(ADAPTIVE_MIN_DELAY="0", ADAPTIVE_MAX_DELAY="0", ADAPTIVE_DELAY_FACTOR="0")
        settings.update(ADAPTIVE_WAIT_DEFAULT="100000")
    if config == "adaptive+":
        settings.update(dict(item.split("=", 1) for item in args.variant))
    return settings


def run_crawl(
    config: str, args: argparse.Namespace, site: Site, run_dir: Path, state: Path | None = None, **extra: str
) -> dict[str, Any]:
    """One crawl in a subprocess (*extra*: more ``-s`` settings); its figures (or why there are none)."""
    run_dir.mkdir(parents=True)
    profile = ["-m", "cProfile", "-o", str(run_dir / "crawl.prof")] if args.profile else []
    # py-spy samples the running crawl (its own overhead is outside the crawl's process)
    sampler = [args.sample, "record", "-r", "250", "-f", "raw", "-o", str(run_dir / "samples.txt"), "--"]
    start = ",".join(site.start_urls)
    cmd = [sys.executable, *profile, "-m", "scrapy", "runspider", str(SPIDER), "-a", "start=" + start]
    cmd = [*sampler, *cmd] if args.sample else cmd
    for key, value in {**crawl_settings(config, args, run_dir, state), **extra}.items():
        cmd += ["-s", f"{key}={value}"]
    # a crawl imports the package of the folder it runs in: --against's runs there
    root = Path(args.against).resolve() if config == AGAINST else REPO_ROOT
    site.reset()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.Popen(cmd, cwd=root, env=env(root), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)  # fmt: skip
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
    res: dict[str, Any] = {"config": config, "wall_s": wall, "cpu_s": cpu, "returncode": proc.returncode}
    res.update(killed=killed, site=site.stats())
    stats_file = run_dir / "stats.json"
    if not stats_file.exists():
        log_file = run_dir / "crawl.log"
        tail = log_file.read_text(errors="replace")[-2000:] if log_file.exists() else stderr[-2000:]
        res["error"] = f"no stats file (exit {proc.returncode}); log tail:\n{tail}"
        return res
    data = json.loads(stats_file.read_text())
    stats, timings = data["stats"], data["timings"]
    responses = int(stats.get("downloader/response_count", 0))
    elapsed = float(stats.get("elapsed_time_seconds") or 0.0)
    first_last = timings.get("first_to_last_response_s") or 0.0
    cpu_open_close = timings.get("cpu_open_to_close_s")
    res.update(
        responses=responses, items=int(stats.get("item_scraped_count", 0)), elapsed_s=elapsed,
        not_modified=int(stats.get("downloader/response_status_count/304", 0) or stats.get("httpcache/revalidate", 0)),
        pages_per_s=responses / elapsed if elapsed > 0 else 0.0,
        steady_pages_per_s=(responses - 1) / first_last if first_last > 0 else 0.0,
        first_response_after_open_s=timings.get("first_response_after_open_s"),
        # CPU per page, open to close: steadier than wall rates on a shared machine
        cpu_ms_per_page=1000 * cpu_open_close / responses if cpu_open_close and responses else None,
        max_rss_mb=timings.get("max_rss_mb"), gc_s=timings.get("gc_s"), finish_reason=stats.get("finish_reason"),
        errors=int(stats.get("log_count/ERROR", 0)),
        adaptive={k: v for k, v in stats.items() if k.startswith("adaptive/")},
    )  # fmt: skip
    return res


def summarize(
    runs: list[dict[str, Any]], configs: Sequence[str], pages: int, target: float = TARGET_RATIO
) -> dict[str, Any]:
    """Medians per configuration, the adaptive/baseline ratios of medians and within rounds."""
    summary: dict[str, Any] = {}
    for config in configs:
        ok = [r for r in runs if r["config"] == config and "error" not in r]
        summary[config] = {
            "runs": len([r for r in runs if r["config"] == config]),
            "ok_runs": len(ok),
            "pages_per_s": [r["pages_per_s"] for r in ok],
            **{f"median_{k}": median(r.get(k) for r in ok) for k in FIGURES},
            "all_pages_fetched": all(r["responses"] >= pages for r in ok) and bool(ok),
            "max_fetches_per_page": max((r["site"]["max_hits"] for r in ok), default=None),
        }
    a, d, j = (summary.get(c, {}) for c in ("adaptive", "default", "default+jobdir"))

    def ratio(x: dict[str, Any], y: dict[str, Any], key: str) -> float | None:
        return x[key] / y[key] if x.get(key) and y.get(key) else None

    summary["ratio"] = ratio(a, d, "median_pages_per_s")
    summary["steady_ratio"] = ratio(a, d, "median_steady_pages_per_s")
    # against the baseline that also writes its state to disk, as the adaptive crawl does
    summary["jobdir_ratio"] = ratio(a, j, "median_pages_per_s")
    # CPU per page, baseline ÷ adaptive (above 1: adaptive spends less), the steadier figure
    summary["cpu_ratio"] = ratio(d, a, "median_cpu_ms_per_page")
    summary["jobdir_cpu_ratio"] = ratio(j, a, "median_cpu_ms_per_page")
    bases = ("default", "default+jobdir", "httpcache", AGAINST)
    summary["paired"] = {base: paired_ratios(runs, base) for base in bases if base in configs}
    summary["target"] = target
    summary["verdict"] = None if summary["ratio"] is None else ("PASS" if summary["ratio"] >= target else "FAIL")
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
        "min_pages_per_s": min(pages, default=None),
        "min_cpu": min(cpu, default=None),
    }


def format_report(runs: list[dict[str, Any]], summary: dict[str, Any], configs: Sequence[str]) -> str:
    header = ("run", "config", "pages/s", "steady p/s", "responses", "items", "304s", "elapsed s", "wall s", "cpu s",
              "site req", "max hits", "finish reason")  # fmt: skip
    table = []
    for n, r in enumerate(runs, 1):
        if "error" in r:
            table.append((str(n), r["config"], "ERROR", *[""] * 5, f"{r['wall_s']:.1f}", *[""] * 4))
            continue
        table.append((
            str(n), r["config"], f"{r['pages_per_s']:.1f}", f"{r['steady_pages_per_s']:.1f}", str(r["responses"]),
            str(r["items"]), str(r.get("not_modified", 0)), f"{r['elapsed_s']:.2f}", f"{r['wall_s']:.1f}",
            f"{r['cpu_s']:.1f}", str(r["site"]["requests"]), str(r["site"]["max_hits"]), str(r["finish_reason"]),
        ))  # fmt: skip
    lines = [render(header, table, left=2), ""]
    for config in configs:
        s = summary[config]
        lines.append(
            f"{config:<16} median pages/s {num(s['median_pages_per_s'], '.1f'):>8}   "
            f"steady {num(s['median_steady_pages_per_s'], '.1f'):>8}   "
            f"cpu ms/page {num(s['median_cpu_ms_per_page'], '.3f'):>6}   gc s {num(s['median_gc_s']):>5}   "
            f"peak MB {num(s['median_max_rss_mb'], '.0f'):>4}   ok runs {s['ok_runs']}/{s['runs']}   "
            f"all pages fetched: {s['all_pages_fetched']}   max fetches of one page: {s['max_fetches_per_page']}"
        )
    lines.append(
        f"\nadaptive/default pages/s (median): {num(summary['ratio'])}  (steady-state: {num(summary['steady_ratio'])})"
        f"   target >= {summary['target']}   {summary['verdict'] or ''}"
    )
    lines.append(
        f"adaptive/default+jobdir pages/s (median): {num(summary['jobdir_ratio'])}   "
        f"CPU per page, default/adaptive: {num(summary['cpu_ratio'])}, "
        f"default+jobdir/adaptive: {num(summary['jobdir_cpu_ratio'])}"
    )
    for base, paired in summary.get("paired", {}).items():
        lines.append(
            f"paired within each round, adaptive/{base}: pages/s {num(paired['median_pages_per_s'])} "
            f"(min {num(paired['min_pages_per_s'])}) ({', '.join(f'{x:.2f}' for x in paired['pages_per_s'])}), "
            f"CPU per page {base}/adaptive {num(paired['median_cpu'])} (min {num(paired['min_cpu'])}) "
            f"({', '.join(f'{x:.2f}' for x in paired['cpu'])})"
        )
    lines.append(loadavg_line(summary.get("loadavg_start", ()), summary.get("loadavg_end", ())))
    return "\n".join(lines)


def add_output_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workdir", default=None, help="keep crawl logs and state here")
    p.add_argument("--json", default=None, help="write the figures to this file")
    p.add_argument("--quiet", action="store_true")
    p.add_argument("--profile", action="store_true", help="run each crawl under cProfile (crawl.prof; slower)")
    p.add_argument("--sample", metavar="PY_SPY", default=None, help="run each crawl under this py-spy executable "
                   "(samples.txt in its run folder, collapsed stacks)")


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.e2e_bench", description=__doc__.split("\n\n")[0])
    add_site_arguments(p, pages=300, hosts=3)
    p.add_argument("--repeats", type=int, default=2, help="runs of each configuration, alternating")
    p.add_argument("--crawl-timeout", type=float, default=120.0, help="kill a crawl after this many seconds")
    p.add_argument("--revisit", action="store_true", help="time a second pass, one page in ten changed, against "
                   "plain Scrapy and Scrapy's HttpCache (RFC2616)")
    p.add_argument("--last-modified", action="store_true", help="--revisit: the site sends Last-Modified too (the "
                   "first revisit of a page whose Last-Modified says it is old is then a full download, a check)")
    p.add_argument("--revisit-wait", type=float, default=30.0, help="--revisit: the first pass's waits, seconds")
    p.add_argument("--no-jobdir-baseline", action="store_true", help="skip Scrapy's default scheduler + JOBDIR")
    p.add_argument("--variant", action="append", default=[], metavar="KEY=VALUE", help="also run an 'adaptive+' "
                   "configuration: the adaptive one plus these -s settings, e.g. SCHEDULER=mypkg.ExperimentalScheduler")
    p.add_argument("--against", default=None, metavar="DIR", help="also run the adaptive crawl with the "
                   "scrapy_adaptive of the checkout in DIR, in the same rounds, paired with this one's")
    add_output_arguments(p)
    return p


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Start the site, run the crawls alternately, print and return the figures."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.against and not (Path(args.against) / "scrapy_adaptive" / "__init__.py").is_file():
        parser.error(f"--against {args.against}: no scrapy_adaptive package in that folder (a checkout is needed)")
    first = ["default", "adaptive", *["default+jobdir"] * (not args.no_jobdir_baseline)]
    first += ["adaptive+"] * bool(args.variant)
    configs = [*(REVISIT_CONFIGS if args.revisit else first), *([AGAINST] if args.against else [])]
    for root in filter(None, (REPO_ROOT, args.against and Path(args.against))):
        compileall.compile_dir(str(Path(root) / "scrapy_adaptive"), quiet=1)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="e2e-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    budget = args.repeats * len(configs) * 2 * (args.crawl_timeout + args.revisit * args.revisit_wait + 40) + 60
    extra = ["--validators", "both" if args.last_modified else "etag"] if args.revisit else []
    site = Site(args.pages, args.hosts, args.links, args.seed, max_seconds=budget, extra_args=extra)
    runs: list[dict[str, Any]] = []
    load_start = os.getloadavg()
    try:
        for rep in range(args.repeats):
            state = workdir / f"{rep + 1}-state" if args.revisit else None
            for config in revisit_round(args, site, state, rep, configs) if state else configs:
                _log(f"run {rep + 1}/{args.repeats}: {config}")
                run = run_crawl(config, args, site, workdir / f"{rep + 1}-{config}", state)
                run["round"] = rep + 1
                runs.append(run)
                if "error" in run:
                    _log(f"{config} failed: {run['error']}")
    finally:
        site.stop()
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    summary = summarize(runs, configs, args.pages, REVISIT_TARGET if args.revisit else TARGET_RATIO)
    summary["loadavg_start"], summary["loadavg_end"] = load_start, os.getloadavg()
    params = {k: getattr(args, k) for k in ("pages", "hosts", "links", "seed", "repeats", "crawl_timeout", "revisit")}
    result = {"params": params, "runs": runs, "summary": summary}
    return emit(result, args, format_report(runs, summary, configs))


def revisit_round(args: argparse.Namespace, site: Site, state: Path, rep: int, configs: Sequence[str]) -> Iterator[str]:
    """First passes (untimed), one page in ten changed, then the configurations to time, in turn."""
    wait = str(args.revisit_wait)
    first = run_crawl(
        "adaptive", args, site, state / "first-adaptive", state, ADAPTIVE_WAIT_MIN=wait, ADAPTIVE_WAIT_MAX=wait
    )
    due = time.monotonic() + args.revisit_wait + 1
    # to its end: start pages are fetched twice, so a page count would leave the last pages out
    first_cache = run_crawl("httpcache", args, site, state / "first-httpcache", state, CLOSESPIDER_PAGECOUNT="0")
    for run in (first, first_cache):
        if "error" in run or run["site"]["unique"] < args.pages:
            _log(f"first pass of {run['config']} incomplete: {run.get('error') or run['site']}")
    if AGAINST in configs:  # --against's code revisits its own copy of the first pass's state
        shutil.copytree(state / "jobdir", state / "jobdir-against")
    site.get("/_bump?every=10")
    order = [*configs[rep % len(configs) :], *configs[: rep % len(configs)]]  # who goes first changes by round
    for config in order:
        if config.startswith("adaptive"):
            time.sleep(max(0.0, due - time.monotonic()))  # every page due
        yield config


if __name__ == "__main__":
    main(sys.argv[1:])
