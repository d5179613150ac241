"""The add-on's own share of a revisiting crawl: calls per fetch and CPU, under cProfile.

Run::

    python -m bench.profile_probe                  # 45 s, 300 pages on 3 hosts
    python -m bench.profile_probe --seconds 45 --top 25 --workdir /tmp/probe

Why it is built this way:

* **A real crawl that revisits**: :mod:`bench.e2e_site`'s pages change
  (``--change-median`` s), the waits are a few seconds and the crawl runs
  for ``--seconds``, so most fetches are revisits of unchanged pages.
* **Counted by file**: a call is scrapy-adaptive's when its function's file
  is under ``scrapy_adaptive/``: those calls per fetched response, their own
  time over the profile's (``cpu_share``), and the cumulative time of the
  calls entered from outside the package (``cpu_share_inclusive``: with the
  LevelDB, JSON and hashing it asks for).  ``--top`` lists the busiest.
"""

from __future__ import annotations

import argparse
import json
import pstats
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.common import env as _env
from bench.e2e_bench import SPIDER, Site, crawl_settings

PACKAGE = "/scrapy_adaptive/"


def share(prof: Path, responses: int, top: int = 0) -> dict[str, Any]:
    """Calls into scrapy_adaptive per response and its share of the profile's own time."""
    stats: dict[Any, Any] = pstats.Stats(str(prof)).stats  # type: ignore[attr-defined]
    ours = {k: v for k, v in stats.items() if PACKAGE in k[0]}
    calls = sum(v[1] for v in ours.values())  # all calls, recursive ones included
    own = sum(v[2] for v in ours.values())
    total = sum(v[2] for v in stats.values())
    # entered from outside the package: its calls' cumulative time, callees (LevelDB, json, hashing) included
    inclusive = sum(t[3] for v in ours.values() for caller, t in v[4].items() if PACKAGE not in caller[0])
    out: dict[str, Any] = {
        "responses": responses,
        "calls_per_fetch": calls / responses if responses else None,
        "cpu_share": own / total if total else None,
        "cpu_share_inclusive": inclusive / total if total else None,
        "modules": len({k[0] for k in ours}),
    }
    if top:

        def name(k: Any) -> str:
            return f"{k[0].split(PACKAGE, 1)[1]}:{k[1]}({k[2]})"

        by_calls = sorted(ours.items(), key=lambda kv: -kv[1][1])[:top]
        by_cumtime = sorted(ours.items(), key=lambda kv: -kv[1][3])[:top]
        out["by_calls"] = [(name(k), round(v[1] / responses, 2)) for k, v in by_calls]
        out["by_cumtime_ms"] = [(name(k), round(1000 * v[3] / responses, 4)) for k, v in by_cumtime]
    return out


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Serve the changing site, crawl it under cProfile for a while, print the add-on's share."""
    p = argparse.ArgumentParser(prog="python -m bench.profile_probe", description=__doc__.split("\n")[0])
    p.add_argument("--pages", type=int, default=300)
    p.add_argument("--hosts", type=int, default=3)
    p.add_argument("--seconds", type=int, default=45, help="length of the crawl")
    p.add_argument("--change-median", type=float, default=60.0, help="pages' median mean change interval, seconds")
    p.add_argument("--top", type=int, default=0, help="list the add-on's N busiest functions")
    p.add_argument("--workdir", default=None, help="keep the crawl's log, state and crawl.prof here")
    p.add_argument("-s", dest="settings", action="append", default=[], help="extra KEY=VALUE crawl setting")
    args = p.parse_args(argv)
    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="profile-probe-"))
    shutil.rmtree(workdir / "jobdir", ignore_errors=True)
    workdir.mkdir(parents=True, exist_ok=True)
    churn = ["--change-median", str(args.change_median)]
    site = Site(args.pages, args.hosts, 5, 7, max_seconds=args.seconds + 120, extra_args=churn)
    # e2e_bench's adaptive crawl (no politeness delays, valence 8), for a while, with short waits
    e2e = argparse.Namespace(pages=0, crawl_timeout=args.seconds + 10, variant=[])
    settings = crawl_settings("adaptive", e2e, workdir)
    settings.pop("ADAPTIVE_WAIT_DEFAULT")  # e2e_bench's: no revisit within its run
    settings.update(
        {"ADAPTIVE_WAIT_MIN": "1", "ADAPTIVE_WAIT_INITIAL": "2", "ADAPTIVE_WAIT_MAX": "20"},
        **dict(item.split("=", 1) for item in args.settings),
    )
    prof = workdir / "crawl.prof"
    cmd = [sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "scrapy", "runspider", str(SPIDER)]
    cmd += ["-a", "start=" + ",".join(site.start_urls)]
    for key, value in settings.items():
        cmd += ["-s", f"{key}={value}"]
    try:
        subprocess.run(cmd, env=_env(), stdout=subprocess.DEVNULL, check=True, timeout=args.seconds + 90)
    finally:
        site.stop()
    stats = json.loads((workdir / "stats.json").read_text())["stats"]
    out = share(prof, int(stats.get("downloader/response_count", 0)), args.top)
    out["visits"] = {k: v for k, v in stats.items() if k.startswith("adaptive/visit")}
    for key in ("by_calls", "by_cumtime_ms"):
        for fn, value in out.get(key, []):
            print(f"{key:14} {value:>9} {fn}")
    print(json.dumps({k: v for k, v in out.items() if not k.startswith("by_")}))
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
