"""Scaling of a fleet: pages/s of 1, 2, 4 workers on one Redis frontier.

Run::

    python -m bench.fleet_bench                           # 1, 2, 4 workers; 4000 pages on 16 hosts
    python -m bench.fleet_bench --workers 1,2 --pages 2000 --json out.json

Why it is built this way:

* **Real workers, real store**: each worker is a ``scrapy runspider`` of the
  e2e spider with the add-on and ``ADAPTIVE_STORE_URL`` pointing at a
  redis-server started here (AOF on, ``appendfsync everysec``), each with its
  own state folder, against the e2e site on many loopback hosts, with the e2e
  benchmark's settings: every page is fetched once.
* **Measured at the site**: the middle 80 % of the pages (10 % to 90 %
  fetched) over the time that took, leaving out start-up and the tail;
  workers stop (SIGINT, then SIGKILL) at 95 % or after ``--crawl-timeout``.
* **A ratio** to one worker, and efficiency (ratio / workers): target ≥ 0.8
  up to the cores available.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import emit, log
from bench.common import env as _env
from bench.e2e_bench import SPIDER, Site, add_output_arguments, add_site_arguments, crawl_settings
from testsite.process import REPO_ROOT
from testsite.redisserver import RedisServer

#: fleet pages/s over (workers × one worker's), up to the cores available
TARGET_EFFICIENCY = 0.8


def _log(msg: str) -> None:
    log("fleet_bench", msg)


def start_worker(args: argparse.Namespace, site: Site, redis_url: str, run_dir: Path) -> subprocess.Popen[str]:
    run_dir.mkdir(parents=True)
    settings = crawl_settings("adaptive", args, run_dir)
    settings.pop("JOBDIR")
    settings.update(
        {
            "ADAPTIVE_STORE_URL": redis_url,
            "ADAPTIVE_STATE_DIR": str(run_dir / "state"),
            "ADAPTIVE_STORE_LEASE": "5",
            "CLOSESPIDER_PAGECOUNT": "0",
        }
    )
    cmd = [sys.executable, "-m", "scrapy", "runspider", str(SPIDER), "-a", "start=" + ",".join(site.start_urls)]
    for key, value in settings.items():
        cmd += ["-s", f"{key}={value}"]
    return subprocess.Popen(
        cmd, cwd=REPO_ROOT, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
        start_new_session=True,
    )  # fmt: skip


def stop(procs: list[subprocess.Popen[str]], grace: float = 20.0) -> None:
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
    deadline = time.monotonic() + grace
    for proc in procs:
        try:
            proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)  # our own child's process group
            proc.wait(timeout=30)


def run_fleet(n: int, args: argparse.Namespace, site: Site, redis: RedisServer, run_dir: Path) -> dict[str, Any]:
    """*n* workers on an emptied store and a reset site; the site's fetch rate."""
    site.reset()
    redis.client().flushall()
    started = time.monotonic()
    procs = [start_worker(args, site, redis.url, run_dir / f"worker-{i}") for i in range(n)]
    marks: dict[float, float] = {}
    fetched = 0
    try:
        while time.monotonic() - started < args.crawl_timeout:
            fetched = site.stats()["requests"]
            now = time.monotonic()
            for share in (0.1, 0.9):
                if fetched >= share * args.pages and share not in marks:
                    marks[share] = now
            if fetched >= 0.95 * args.pages or all(p.poll() is not None for p in procs):
                break
            time.sleep(0.1)
    finally:
        stop(procs)
    res: dict[str, Any] = {"workers": n, "fetched": fetched, "wall_s": time.monotonic() - started}
    if 0.1 in marks and 0.9 in marks and marks[0.9] > marks[0.1]:
        res["pages_per_s"] = 0.8 * args.pages / (marks[0.9] - marks[0.1])
        res["to_10pct_s"] = marks[0.1] - started
    rss = []
    for i in range(n):
        stats_file = run_dir / f"worker-{i}" / "stats.json"
        if stats_file.exists():
            stats = json.loads(stats_file.read_text())["stats"]
            if stats.get("memusage/max"):
                rss.append(stats["memusage/max"] / 2**20)
    res["rss_mb_per_worker"] = rss
    res["repeated_fetches"] = site.stats()["repeated"]
    return res


def format_report(result: dict[str, Any]) -> str:
    lines = ["workers  pages/s  ratio to 1  efficiency  max RSS/worker MB  repeated fetches"]
    for row in result["rows"]:
        rss = max(row["rss_mb_per_worker"], default=0.0)
        lines.append(
            f"{row['workers']:>7}  {row.get('pages_per_s', 0):>7.0f}  {row.get('ratio', 0):>10.2f}  "
            f"{row.get('efficiency', 0):>10.2f}  {rss:>17.0f}  {row['repeated_fetches']:>16}"
        )
    p = result["params"]
    lines.append(
        f"{p['pages']} pages on {p['hosts']} hosts; {os.cpu_count()} CPUs; load average {result['loadavg_start']} "
        f"at start, {result['loadavg_end']} at end; target efficiency ≥ {TARGET_EFFICIENCY} up to the cores"
    )
    return "\n".join(lines)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.fleet_bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--workers", default="1,2,4", help="fleet sizes, comma-separated")
    add_site_arguments(p, pages=4000, hosts=16)
    p.add_argument("--crawl-timeout", type=float, default=120.0, help="stop a fleet after this many seconds")
    add_output_arguments(p)
    return p


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = _parser().parse_args(argv)
    sizes = [int(n) for n in args.workers.split(",")]
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="fleet-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "redis").mkdir(exist_ok=True)
    budget = len(sizes) * (args.crawl_timeout + 60) + 60
    site = Site(args.pages, args.hosts, args.links, args.seed, max_seconds=budget)
    redis = RedisServer(workdir / "redis", fsync="everysec")
    rows: list[dict[str, Any]] = []
    load_start = os.getloadavg()
    try:
        redis.start()
        for n in sizes:
            _log(f"{n} worker(s)")
            rows.append(run_fleet(n, args, site, redis, workdir / f"fleet-{n}"))
    finally:
        redis.stop()
        site.stop()
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    one = next((r.get("pages_per_s") for r in rows if r["workers"] == 1), None)
    for row in rows:
        if one and row.get("pages_per_s"):
            row["ratio"] = row["pages_per_s"] / one
            row["efficiency"] = row["ratio"] / row["workers"]
    result = {
        "params": {k: getattr(args, k) for k in ("workers", "pages", "hosts", "links", "seed", "crawl_timeout")},
        "rows": rows,
        "loadavg_start": [round(x, 2) for x in load_start],
        "loadavg_end": [round(x, 2) for x in os.getloadavg()],
    }
    return emit(result, args, format_report(result))


if __name__ == "__main__":
    main(sys.argv[1:])
