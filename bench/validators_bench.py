"""Benchmark: body bytes that validators save on revisits, and lies caught.

``python -m bench.validators_bench [--pages 200] [--rounds 8] [--json OUT]``

Runs real crawls (``scrapy runspider``, the add-on, a JOBDIR) against
``bench.validators_site`` on 127.0.0.1/127.0.0.2, each page revisited about
``--rounds`` times, in the same run:

* **baseline**: conditional GETs and mid-fetch aborts off: every revisit
  downloads the whole body;
* **validators**: the defaults (conditional GET, abort scheme ``both``,
  per-host trust with verification fetches).

and reports, from the server's own accounting: body bytes sent on revisits
of unchanged pages (honest servers, and servers that ignore conditional
requests) relative to the baseline (target <= 1 %), changes missed on those
servers (target 0), and for the lying host (validators frozen while the
content keeps changing) how many of its requests passed between the start
of the lies and the first full download that exposed one.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from testsite.process import SiteProcess

ROOT = Path(__file__).resolve().parent.parent
SPIDER = Path(__file__).resolve().parent / "validators_spider.py"


def site_process(pages: int, size: int) -> SiteProcess:
    """The benchmark's site, started by ``with``."""
    return SiteProcess("bench.validators_site", ["--pages", str(pages), "--size", str(size)])


def stats(ports: dict[str, int]) -> dict[str, Any]:
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(f"http://127.0.0.1:{ports['127.0.0.1']}/_stats", timeout=10) as response:
        return json.load(response)


def crawl(ports: dict[str, int], pages: int, rounds: int, extra: dict[str, object], workdir: Path) -> float:
    urls = []
    for i in range(pages):
        urls.append(f"http://127.0.0.1:{ports['127.0.0.1']}/honest/{i}")
        urls.append(f"http://127.0.0.1:{ports['127.0.0.1']}/ignore/{i}")
    for i in range(max(1, pages // 4)):
        urls.append(f"http://127.0.0.2:{ports['127.0.0.2']}/liar/{i}")
    (workdir / "urls.txt").write_text("\n".join(urls))
    settings: dict[str, object] = {
        "ADDONS": {"scrapy_adaptive.Addon": 0},
        "JOBDIR": str(workdir / "job"),
        "LOG_LEVEL": "INFO",
        "LOG_FILE": str(workdir / "crawl.log"),
        "TELNETCONSOLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 8,
        "ADAPTIVE_MIN_DELAY": 0,
        "ADAPTIVE_MAX_DELAY": 0,
        "ADAPTIVE_DELAY_FACTOR": 0,
        "ADAPTIVE_WAIT_POLICY": "scrapy_adaptive.policies.ConstantWaitPolicy",
        "ADAPTIVE_WAIT_POLICIES": [],
        "ADAPTIVE_WAIT_DEFAULT": 0.5,
        "ADAPTIVE_WAIT_MIN": 0,
        "CLOSESPIDER_PAGECOUNT": len(urls) * rounds,
        "CLOSESPIDER_TIMEOUT": 300,
        **extra,
    }
    cmd = [sys.executable, "-m", "scrapy", "runspider", str(SPIDER), "-a", f"urls_file={workdir / 'urls.txt'}"]
    for key, value in settings.items():
        cmd += ["-s", f"{key}={json.dumps(value) if isinstance(value, (dict, list)) else value}"]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "NO_PROXY": "127.0.0.1,127.0.0.2", "no_proxy": "127.0.0.1,127.0.0.2"}
    started = time.monotonic()
    subprocess.run(cmd, cwd=workdir, env=env, check=True, timeout=400, capture_output=True)
    return time.monotonic() - started


def run(pages: int, rounds: int, size: int) -> dict[str, Any]:
    results: dict[str, Any] = {"params": {"pages": pages, "rounds": rounds, "size": size}}
    for name, extra in (
        ("baseline", {"ADAPTIVE_CONDITIONAL_GET": False, "ADAPTIVE_MIDFETCH_ABORT": False}),
        ("validators", {}),
    ):
        with site_process(pages, size) as site, tempfile.TemporaryDirectory(prefix=f"validators-bench-{name}-") as tmp:
            seconds = crawl(site.ports, pages, rounds, extra, Path(tmp))
            results[name] = {"seconds": round(seconds, 1), "site": stats(site.ports)}
    return results


def report(r: dict[str, Any]) -> tuple[list[str], bool]:
    base, val = r["baseline"]["site"], r["validators"]["site"]
    lines = [f"{'pages':<8}{'metric':<52}{'baseline':>12}{'validators':>12}{'ratio':>9}  target"]
    ok = True
    for kind in ("honest", "ignore"):
        b, v = base[kind], val[kind]
        # per unchanged revisit, as the two runs make slightly different numbers of them
        b_per = b["unchanged_revisit_bytes"] / max(1, b["unchanged_revisits"])
        v_per = v["unchanged_revisit_bytes"] / max(1, v["unchanged_revisits"] + v["not_modified"])
        ratio = v_per / b_per if b_per else 0.0
        lines.append(
            f"{kind:<8}{'body bytes per unchanged revisit':<52}{b_per:>12,.0f}{v_per:>12,.1f}{ratio:>9.2%}  <= 1%"
        )
        lines.append(
            f"{kind:<8}{'unchanged revisits (304s included)':<52}{b['unchanged_revisits']:>12,}"
            f"{v['unchanged_revisits'] + v['not_modified']:>12,}"
        )
        lines.append(f"{kind:<8}{'changes missed':<52}{b['missed_changes']:>12}{v['missed_changes']:>12}{'':>9}  0")
        ok &= ratio <= 0.01 and v["missed_changes"] == 0
    liar = val["liar"]
    caught = liar["first_lie_seen_after"]
    lines.append(
        f"{'liar':<8}{'liar-host requests from the first lie to its exposure':<52}{'-':>12}"
        f"{caught if caught is not None else 'never':>12}{'':>9}  <= 1/ADAPTIVE_TRUST_MIN_RATE"
    )
    lines.append(f"{'liar':<8}{'requests to the liar while it lied':<52}{'-':>12}{liar['lie_requests']:>12}")
    ok &= caught is not None
    return lines, ok


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--size", type=int, default=16_000)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    results = run(args.pages, args.rounds, args.size)
    lines, ok = report(results)
    print("\n".join(lines))
    print(f"baseline crawl {results['baseline']['seconds']} s, validators crawl {results['validators']['seconds']} s")
    print("targets met" if ok else "targets MISSED")
    results["passed"] = ok
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()
