"""Changing-web benchmark: versions captured per fetch on a realistic changing web, same-run baselines.

Run::

    python -m bench.changing_web                 # full: 10 hosts × 91 URLs, 3 s delay, 20 minutes
    python -m bench.changing_web --smoke         # CI: 3 hosts × 19 URLs, 0.5 s delay, 90 s (< 3 min)
    python -m bench.changing_web --json out.json --svg docs/changing-web-learning.svg

One world (:mod:`bench.changing_web_world`), one copy per crawler served by
:mod:`bench.changing_web_site` on one timeline, every crawler (``--configs``:
``recrawl``, ``httpcache``, ``adaptive``, ...) at the same time with the
same spider and delay; scores from the server's log and the items received,
against the hindsight optimum of :mod:`bench.replay` at each crawler's own
fetches.  Why each of these is so, the scores' definitions and the targets:
``docs/changing-web.md``, which has the whole design.

``main(argv)`` returns every figure as a dict.
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
import threading
import time
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench.changing_web_site import copy_addresses
from bench.changing_web_world import KINDS, Url, World
from bench.common import env as _env
from bench.replay import hindsight_optimum
from bench.sim import world as simworld
from bench.sim.intensity import CONSTANT
from bench.sim.metrics import median_delay
from bench.sim.svg import line_chart
from testsite.process import REPO_ROOT, SiteProcess

SPIDER = REPO_ROOT / "bench" / "changing_web_spider.py"
DAY = 86_400.0
CONFIGS = ("recrawl", "httpcache", "adaptive", "adaptive-waits", "adaptive-oneline")
ADAPTIVE = ("adaptive", "adaptive-waits", "adaptive-oneline")
#: arrivals closer than the delay by more than this share count as impolite
#: (server-side clocks see the client's spacing through the loopback, ± ms)
GAP_TOLERANCE = 0.05
#: seconds a recrawl loop loses between two runs besides the delay (a new
#: Scrapy process starting: about a second, measured on 2 loaded cores)
RESTART_S = 1.0
#: the automatic budget never exceeds this share of what scrapy-adaptive's
#: own politeness allows (its delay counts from the end of a fetch), so that
#: the ±5 % budget target stays reachable
CAPACITY_SHARE = 0.9


def _log(msg: str) -> None:
    print(f"[changing_web {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# -- crawls ------------------------------------------------------------------------------------


def crawl_settings(config: str, args: argparse.Namespace, run_dir: Path, items: Path) -> dict[str, Any]:
    """``-s`` settings of one crawl of *config*: politeness is the same for all."""
    settings: dict[str, Any] = {
        "LOG_LEVEL": "INFO",
        "LOG_FILE": str(run_dir / "crawl.log"),
        "TELNETCONSOLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "DOWNLOAD_DELAY": args.delay,
        "DOWNLOAD_DELAY_JITTER": 0,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
        "DOWNLOAD_TIMEOUT": 30,
        "FEEDS": {items.as_uri(): {"format": "jsonlines"}},
        "EXTENSIONS": {"bench.e2e_ext.BenchStats": 0},
        "BENCH_STATS_FILE": str(run_dir / "stats.json"),
    }
    if config == "httpcache":
        settings.update(HTTPCACHE_ENABLED=True, HTTPCACHE_POLICY="scrapy.extensions.httpcache.RFC2616Policy",
                        HTTPCACHE_DIR=str(run_dir.parent / "httpcache"))  # fmt: skip
    config = base_config(config)
    if config in ADAPTIVE:
        settings.update(ADDONS={"scrapy_adaptive.Addon": 0}, JOBDIR=str(run_dir / "jobdir"),
                        ADAPTIVE_WAIT_MIN=args.wait_min)  # fmt: skip
        if config != "adaptive-oneline":  # the add-on line and the crawl's time scale only: no budget
            settings["ADAPTIVE_BUDGET"] = args.budget_per_day
    if config == "adaptive-waits":
        # the explicit waits (10/30/300/1200 s at a 3 s delay) and window (60 s)
        k = args.delay / 3.0
        settings.update(ADAPTIVE_WAIT_MIN=10 * k, ADAPTIVE_WAIT_INITIAL=30 * k, ADAPTIVE_WAIT_DEFAULT=300 * k,
                        ADAPTIVE_WAIT_MAX=1200 * k, ADAPTIVE_BUDGET_WINDOW=60 * k)  # fmt: skip
    return settings


def base_config(name: str) -> str:
    """``adaptive-oneline@main`` is ``adaptive-oneline`` run on the code ``--code main=DIR`` names."""
    return name.partition("@")[0]


def code_dir(name: str, args: argparse.Namespace) -> Path:
    """Where crawler *name*'s package comes from: this checkout, or ``--code``'s folder for its label."""
    label = name.partition("@")[2]
    if not label:
        return REPO_ROOT
    codes = dict(entry.split("=", 1) for entry in args.code or ())
    if label not in codes:
        raise SystemExit(f"--configs {name}: no --code {label}=DIR")
    return Path(codes[label]).resolve()


def _run_once(
    config: str, args: argparse.Namespace, run_dir: Path, items: Path, start_urls: list[str], seconds: float
) -> dict[str, Any]:
    """One ``scrapy runspider`` that stops itself after *seconds* (killed 60 s later)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    settings = crawl_settings(config, args, run_dir, items)
    settings["CLOSESPIDER_TIMEOUT"] = max(1, int(seconds))
    cmd = [sys.executable, "-m", "scrapy", "runspider", str(SPIDER), "-a", "start=" + ",".join(start_urls)]
    for key, value in settings.items():
        cmd += ["-s", f"{key}={json.dumps(value) if isinstance(value, dict | list) else value}"]
    code = code_dir(config, args)  # the crawler imports the package from its working folder first
    env = dict(_env(), PYTHONPATH=os.pathsep.join([str(code), _env()["PYTHONPATH"]]))
    proc = subprocess.Popen(cmd, cwd=code, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)  # fmt: skip
    killed = False
    try:
        _, stderr = proc.communicate(timeout=seconds + 60)
    except subprocess.TimeoutExpired:
        killed = True
        os.killpg(proc.pid, signal.SIGKILL)  # our own child's process group
        _, stderr = proc.communicate(timeout=30)
    stats_file = run_dir / "stats.json"
    stats = json.loads(stats_file.read_text())["stats"] if stats_file.exists() else {}
    log = run_dir / "crawl.log"
    if proc.returncode and not stderr.strip() and log.exists():
        stderr = log.read_text(errors="replace")  # the crawl logs to its file: its tail says why
    return {"returncode": proc.returncode, "killed": killed, "stats": stats, "stderr": stderr[-1500:]}


def run_crawler(
    config: str, args: argparse.Namespace, workdir: Path, start_urls: list[str], deadline: float
) -> dict[str, Any]:
    """A crawler until *deadline*: one crawl (adaptive) or a loop of whole crawls (the baselines)."""
    base = workdir / config
    runs: list[dict[str, Any]] = []
    if base_config(config) in ADAPTIVE:
        runs.append(_run_once(config, args, base / "run-1", base / "items-1.jl", start_urls, deadline - time.time()))
    else:
        # each run is one whole pass; the next starts a delay later (politeness across runs)
        while len(runs) < 10_000 and (remaining := deadline - time.time()) > 2 * args.delay:
            n = len(runs) + 1
            runs.append(_run_once(config, args, base / f"run-{n}", base / f"items-{n}.jl", start_urls, remaining))
            time.sleep(args.delay)
    return {"config": config, "runs": runs, "items_dir": str(base)}


def read_items(base: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for path in sorted(base.glob("items-*.jl")) for line in path.read_text().splitlines()
            if line.strip()]  # fmt: skip


# -- scores -----------------------------------------------------------------------------------


def _sim_world(world: World, lo: float, hi: float) -> simworld.World:
    """The window [lo, hi] (seconds after the origin) as a simulator world, for the hindsight optimum."""
    pages = [
        simworld.Page(
            index=u.index, url=u.path, host=str(u.host), kind=u.kind, rate=0.0, scale=0.0, profile=CONSTANT,
            changes=[t - lo for t in u.changes if lo < t <= hi], size=u.size, duration=u.latency, created=0.0,
        )
        for u in world.urls
    ]  # fmt: skip
    return simworld.World(spec=simworld.WorldSpec(name="changing-web"), hosts={}, pages=pages, start=0.0, end=hi - lo)


def score(
    world: World,
    origin: float,
    window: tuple[float, float],
    log: list[list[float]],
    items_by_copy: dict[int, list[dict[str, Any]]],
    copies: dict[int, list[str]],
    delay: float,
    bins: int,
) -> dict[int, dict[str, Any]]:
    """Every crawler's figures, from the server's log rows and its items (see the module doc)."""
    lo, hi = window[0] - origin, window[1] - origin
    live: dict[int, range] = {u.index: range(u.version(lo), u.version(hi) + 1) for u in world.urls}
    existed = {k: 0 for k in KINDS}
    for u in world.urls:
        existed[u.kind] += len(live[u.index])
    total = sum(existed.values())
    born: dict[tuple[int, int], int] = {}  # (url, version) -> bin it was born in (live at the start: 0)
    width = (hi - lo) / bins
    for u in world.urls:
        for v in live[u.index]:
            born[(u.index, v)] = 0 if v == live[u.index].start else min(bins - 1, int((u.started(v) - lo) // width))
    born_per_bin = [0] * bins
    for b in born.values():
        born_per_bin[b] += 1
    sim = _sim_world(world, lo, hi)
    out: dict[int, dict[str, Any]] = {}
    for copy, addresses in copies.items():
        host_of = {a: h for h, a in enumerate(addresses)}
        received: set[tuple[int, int]] = set()
        for item in items_by_copy.get(copy, []):
            parts = urlsplit(item["url"])
            url = world.by_path.get((host_of.get(parts.hostname or "", -1), parts.path))
            if url is not None and item.get("version") is not None:
                received.add((url.index, int(item["version"])))
        mine = [r for r in log if r[2] == copy]
        served = {(int(r[4]), int(r[7])) for r in mine if r[5] == 200 and r[4] >= 0}
        unmatched = len({key for key in received if key not in served})
        rows = sorted((r for r in mine if window[0] <= r[0] <= window[1]), key=lambda r: r[0])
        captured: set[tuple[int, int]] = set()
        per: dict[str, defaultdict[str, float]] = {k: defaultdict(float) for k in KINDS}
        fetched: set[int] = set()
        # seconds from a version's appearance to its capture, for the versions born in the window
        delays: list[float] = []
        delays_of: dict[str, list[float]] = {k: [] for k in KINDS}
        # (seconds after the origin, version) of every body received: the copy the crawler holds
        copies_of: defaultdict[int, list[tuple[float, int]]] = defaultdict(list)
        first_pass_done: float | None = None
        revisit_times: list[float] = []
        for r in rows:
            if r[4] < 0:
                continue
            u = world.urls[int(r[4])]
            k = per[u.kind]
            k["fetches"] += 1
            k["bytes"] += r[6]
            k["not_modified"] += r[5] == 304
            if u.index in fetched:
                revisit_times.append(r[0])
            fetched.add(u.index)
            if first_pass_done is None and len(fetched) == len(world.urls):
                first_pass_done = r[0]
            key = (u.index, int(r[7]))
            if r[5] == 200 and key in received:
                copies_of[u.index].append((r[0] - origin, key[1]))
            if r[5] == 200 and key in received and key in born and key not in captured:
                captured.add(key)
                k["new"] += 1
                if key[1] != live[u.index].start:  # born in the window: its appearance was there to see
                    delays.append(r[0] - origin - u.started(key[1]))
                    delays_of[u.kind].append(delays[-1])
        embeds = _with_page(world, rows, captured, copies_of, origin, window[0], WITH_PAGE_DELAYS * delay)
        embeds.update(fetch_reasons(world, rows))
        fetches = sum(k["fetches"] for k in per.values())
        n = len(world.urls)
        best = hindsight_optimum(sim, fetches - n, min_interval=delay) if fetches >= n else None
        fresh_best = _freshness_optimum(sim, copies_of, lo, fetches, delay)
        opt: dict[str, list[float]] = {k: [0.0, 0.0] for k in KINDS}  # revisits, versions captured
        for u in world.urls:
            o = opt[u.kind]
            o[1] += 1  # the version live at the start, captured by the first visit
            if best is not None:
                o[0] += best.per_page[u.index][0]
                o[1] += best.per_page[u.index][1]
        urls_of = Counter(u.kind for u in world.urls if u.index in fetched)
        fresh: dict[str, list[float]] = {k: [0.0, 0.0] for k in KINDS}  # seconds current, seconds observed
        for u in world.urls:
            if copies_of[u.index]:
                current, observed = fresh_time(u, copies_of[u.index], hi)
                fresh[u.kind][0] += current
                fresh[u.kind][1] += observed
        by_kind = {}
        for kind in KINDS:
            k = per[kind]
            by_kind[kind] = {
                "versions": existed[kind],
                "captured": int(k["new"]),
                "recall": k["new"] / existed[kind] if existed[kind] else None,
                "median_capture_delay_s": median_delay(delays_of[kind]),
                "freshness": fresh[kind][0] / fresh[kind][1] if fresh[kind][1] else None,
                "fetches": int(k["fetches"]),
                "precision": k["new"] / k["fetches"] if k["fetches"] else None,
                "not_modified": int(k["not_modified"]),
                "body_bytes": int(k["bytes"]),
                "revisits": int(k["fetches"]) - urls_of[kind],
                # where the hindsight optimum at this crawler's fetches spends its revisits
                "optimum_revisits": round(opt[kind][0], 1),
                "optimum_recall": opt[kind][1] / existed[kind] if existed[kind] else None,
            }
        captured_per_bin = [0] * bins
        for key in captured:
            captured_per_bin[born[key]] += 1
        optimum = fetches / total if best is None else (n + best.captured) / total
        out[copy] = {
            "versions": total,
            "captured": len(captured),
            "recall": len(captured) / total,
            "median_capture_delay_s": median_delay(delays),
            "freshness": _share(sum(f[0] for f in fresh.values()), sum(f[1] for f in fresh.values())),
            "freshness_optimum": fresh_best,
            "precision": len(captured) / fetches if fetches else 0.0,
            "requests": len(rows),
            "fetches": int(fetches),
            "body_bytes": int(sum(r[6] for r in rows)),
            "optimum": optimum,
            "of_optimum": (len(captured) / total) / optimum if optimum else None,
            "items_not_served": unmatched,
            **embeds,
            "politeness": politeness(rows, delay),
            "by_kind": by_kind,
            "first_pass_s": None if first_pass_done is None else first_pass_done - window[0],
            "revisits_after_first_pass": [t - window[0] for t in revisit_times]
            if first_pass_done is None
            else [t - window[0] for t in revisit_times if t > first_pass_done],
            "curve": [{"minute": (b + 0.5) * width / 60, "born": born_per_bin[b], "captured": captured_per_bin[b],
                       "recall": _share(captured_per_bin[b], born_per_bin[b])} for b in range(bins)],  # fmt: skip
        }
    return out


def _freshness_optimum(
    sim: simworld.World, copies_of: dict[int, list[tuple[float, int]]], lo: float, fetches: int, delay: float
) -> float | None:
    """The freshness the hindsight optimum's schedules (each URL a fixed
    interval, knowing its changes) keep at a crawler's revisits, each URL
    watched from the crawler's own first body of it, as its freshness is:
    the ceiling of what this crawler's fetches could keep current."""
    pages = [replace(p, discovered=copies_of[p.index][0][0] - lo) for p in sim.pages if copies_of.get(p.index)]
    if not pages or fetches < len(pages):
        return None
    watched = simworld.World(spec=sim.spec, hosts={}, pages=pages, start=sim.start, end=sim.end)
    return hindsight_optimum(watched, fetches - len(pages), min_interval=delay, objective="freshness").freshness


def fresh_time(url: Url, copies: list[tuple[float, int]], end: float) -> tuple[float, float]:
    """Seconds *url*'s copy was the live version, and seconds observed, from
    its first body received to *end* (the simulator's freshness, measured
    from the first visit: before it there is no copy to be current).
    *copies*: (seconds after the origin, version) of each body received, in
    time order; the copy is the last one received."""
    start = copies[0][0]
    if start >= end:
        return 0.0, 0.0
    inside = [t for t in url.changes if start < t < end] + [t for t, _ in copies if start < t < end]
    points = sorted({start, end, *inside})
    current, held, i = 0.0, copies[0][1], 0
    for a, b in zip(points, points[1:]):
        while i < len(copies) and copies[i][0] <= a:
            held = copies[i][1]
            i += 1
        if held == url.version((a + b) / 2):
            current += b - a
    return current, end - start


def _share(part: float, whole: float) -> float | None:
    return part / whole if whole else None


def politeness(rows: list[list[float]], delay: float) -> dict[str, Any]:
    """From the server's log: requests to one host in flight at once, and arrivals closer than *delay*."""
    by_host: dict[int, list[list[float]]] = defaultdict(list)
    for r in rows:
        by_host[int(r[3])].append(r)
    overlaps = short = 0
    min_gap: float | None = None
    for host_rows in by_host.values():
        host_rows.sort(key=lambda r: r[0])
        for prev, cur in zip(host_rows, host_rows[1:]):
            gap = cur[0] - prev[0]
            min_gap = gap if min_gap is None else min(min_gap, gap)
            overlaps += cur[0] < prev[1]
            short += gap < delay * (1 - GAP_TOLERANCE)
    return {"overlaps": overlaps, "short_gaps": short, "violations": overlaps + short, "min_gap_s": min_gap}


# -- targets and report ----------------------------------------------------------------------------


def targets(
    res: dict[str, dict[str, Any]], name: str, budget_per_s: float, pass_s: float, seconds: float
) -> list[dict[str, Any]]:
    """Issue 13's targets for crawler *name*, each against the same run's baselines."""
    a, plain, cache = res[name], res.get("recrawl"), res.get("httpcache")
    rows: list[dict[str, Any]] = []

    def add(target: str, value: Any, ok: bool | None, ref: str = "") -> None:
        rows.append({"target": target, "value": value, "ref": ref, "verdict": None if ok is None else
                     ("PASS" if ok else "MISS")})  # fmt: skip

    add("recall >= 0.60", f"{a['recall']:.3f}", a["recall"] >= 0.60)
    add(">= 0.9 of the hindsight optimum at its fetches", f"{a['of_optimum'] or 0:.3f}", (a["of_optimum"] or 0) >= 0.9,
        f"optimum {a['optimum']:.3f}")  # fmt: skip
    if plain:
        add("requests <= plain recrawl's", a["requests"], a["requests"] <= plain["requests"], str(plain["requests"]))
        share = a["body_bytes"] / plain["body_bytes"] if plain["body_bytes"] else 0.0
        add("body bytes <= 30 % of plain recrawl's", f"{share:.0%}", share <= 0.30,
            f"{plain['body_bytes'] / 1e6:.1f} MB")  # fmt: skip
    noise = a["by_kind"]["noise"]
    if noise["versions"]:
        ok = (noise["recall"] or 0) >= 0.8 and (noise["precision"] or 0) >= 0.5
        add("noise: recall >= 0.8 at precision >= 0.5", f"{noise['recall']:.2f} / {noise['precision'] or 0:.2f}", ok,
            f"{noise['fetches']} fetches")  # fmt: skip
    if plain:
        mine, ref = a["by_kind"]["liar"]["recall"] or 0.0, plain["by_kind"]["liar"]["recall"] or 0.0
        add("lying validators: recall >= plain recrawl's", f"{mine:.3f}", mine >= ref, f"{ref:.3f}")
    if cache:
        mine, ref = a["by_kind"]["bursty"]["recall"] or 0.0, cache["by_kind"]["bursty"]["recall"] or 0.0
        add("bursty: recall >= HttpCache's", f"{mine:.3f}", mine >= ref, f"{ref:.3f}")
    baselines = (("plain", plain), ("HttpCache", cache))
    refs = [(label, r["freshness"]) for label, r in baselines if r and r.get("freshness")]
    if refs and a.get("freshness") is not None:
        add("freshness >= plain recrawl's and HttpCache's", f"{a['freshness']:.3f}",
            all(a["freshness"] >= f for _, f in refs), ", ".join(f"{label} {f:.3f}" for label, f in refs))  # fmt: skip
    add("politeness violations = 0", a["politeness"]["violations"], a["politeness"]["violations"] == 0,
        f"min gap {a['politeness']['min_gap_s'] or 0:.2f} s")  # fmt: skip
    oneline = base_config(name) == "adaptive-oneline"
    if oneline and plain:
        ratio = a["recall"] / plain["recall"] if plain["recall"] else 0.0
        add("no budget: recall >= 1.1 x plain recrawl's at <= its requests", f"{ratio:.2f} x at "
            f"{a['requests'] / plain['requests']:.2f} x", ratio >= 1.1 and a["requests"] <= plain["requests"],
            f"{plain['recall']:.3f} at {plain['requests']}")  # fmt: skip
    after = a["revisits_after_first_pass"]
    if oneline:
        pass  # no budget to be held to
    elif a["first_pass_s"] is not None:
        span = seconds - a["first_pass_s"]
        ratio = len(after) / span / budget_per_s if span > 0 else 0.0
        add("budget spent within ±5 % after the first pass", f"{ratio:.3f}", abs(ratio - 1) <= 0.05,
            f"first pass done at {a['first_pass_s']:.0f} s")  # fmt: skip
    else:
        add("budget spent within ±5 % after the first pass", "-", False, "first pass never completed")
    if plain:
        later = [
            (p, q)
            for p, q in zip(a["curve"], plain["curve"])
            if (p["minute"] * 60 > pass_s) and p["recall"] is not None and q["recall"] is not None
        ][:-1]  # fmt: skip  (the last bin's versions are born too late for anyone)
        ok = all(p["recall"] >= q["recall"] for p, q in later) if later else None
        add("learning curve >= plain recrawl from the first revisit on",
            " ".join(f"{p['recall']:.2f}" for p, _ in later), ok,
            "plain " + " ".join(f"{q['recall']:.2f}" for _, q in later))  # fmt: skip
    return rows


#: politeness delays after a page's capture within which its figures count as
#: fetched with it (60 s at the full run's 3 s: the world's time scale)
WITH_PAGE_DELAYS = 20


def _with_page(
    world: World,
    rows: list[list[float]],
    captured: set[tuple[int, int]],
    copies_of: dict[int, list[tuple[float, int]]],
    origin: float,
    start: float,
    within: float,
) -> dict[str, Any]:
    """How far a crawler's copy of a page and of its figures are of one moment.

    ``figures_with_page``: the share of the captures of a page with figures
    (a new version received) after which every figure of the page was
    fetched (any answer: a 304 confirms the copy) within *within* seconds; an archived page replays with figures from another
    moment otherwise.  ``figure_first_fetch_s`` / ``page_first_capture_s``:
    the medians of when, seconds after *start* (the window's), each figure
    was first fetched and each page first captured.  ``page_revisits_304``:
    the share of the pages' revisits answered 304 (what validators buy).
    """
    times: defaultdict[int, list[float]] = defaultdict(list)
    for r in rows:
        if r[4] >= 0:
            times[int(r[4])].append(r[0])
    with_figures = {u.index: world.figures(u) for u in world.urls if u.is_page and u.kind != "index"}
    hits = total = 0
    for index, version in captured:
        figures = with_figures.get(index)
        if not figures:
            continue
        if (at := next((t for t, v in copies_of[index] if v == version), None)) is None:
            continue
        total, when = total + 1, origin + at
        hits += all(any(when <= t <= when + within for t in times.get(f.index, ())) for f in figures)
    firsts = sorted(ts[0] - start for i, ts in times.items() if world.urls[i].kind == "image")
    pages = sorted(copies_of[u.index][0][0] + origin - start for u in world.urls
                   if u.is_page and u.kind != "index" and copies_of[u.index])  # fmt: skip
    page_rows = [r for r in rows if r[4] >= 0 and world.urls[int(r[4])].kind not in ("image", "index")]
    seen: set[int] = set()
    revisits = not_modified = 0
    for r in page_rows:
        if int(r[4]) in seen:
            revisits += 1
            not_modified += r[5] == 304
        seen.add(int(r[4]))
    return {"figures_with_page": _share(hits, total), "page_revisits_304": _share(not_modified, revisits),
            "figure_first_fetch_s": firsts[len(firsts) // 2] if firsts else None,
            "page_first_capture_s": pages[len(pages) // 2] if pages else None}  # fmt: skip


#: why a fetch was made, in the order :func:`fetch_reasons` decides it
REASONS = ("first", "check", "verify", "conditional", "other")
#: the log's *why* column (``changing_web_site.FETCH_TAGS``) -> reason; 0: by whether validators were sent
TAGS: dict[int, Any] = {0: ("other", "conditional"), 1: "verify", 2: "check"}


def fetch_reasons(world: World, rows: list[list[float]]) -> dict[str, Any]:
    """What the validators were used for, from the server's log (time order).

    Each fetch of a URL is its ``first``, a ``check`` of its first-visit
    Last-Modified or another ``verify`` (scrapy-adaptive's deliberate full
    downloads, tagged by the spider), a ``conditional`` revisit (If-None-Match
    or If-Modified-Since sent; scrapy-adaptive's mid-fetch abort only acts on
    a trusted fetch, which sends them, so it is counted here), or ``other``.
    ``validated_conditional``: of the revisits of URLs that send validators
    (every class but noise), the share conditional, verifications aside;
    ``validated_verified``: the share of those revisits that verified (a
    check or another); ``static_reasons``: the static pages' fetches by reason.
    """
    seen: set[int] = set()
    counts: dict[str, Counter[str]] = {"all": Counter(), "static": Counter()}
    for r in rows:
        if r[4] < 0:
            continue
        u = world.urls[int(r[4])]
        why, conditional = (int(r[9]), r[8]) if len(r) > 9 else (0, 0)  # a log from before the columns: other
        reason = "first" if u.index not in seen else TAGS[why] if why else TAGS[0][bool(conditional)]
        seen.add(u.index)
        if u.kind != "noise":
            counts["all"][reason] += 1
        if u.kind == "static":
            counts["static"][reason] += 1
    a = counts["all"]
    return {"validated_conditional": _share(a["conditional"], a["conditional"] + a["other"]),
            "validated_verified": _share(a["check"] + a["verify"], a.total() - a["first"]),
            "static_reasons": {k: counts["static"][k] for k in REASONS}}  # fmt: skip


def _f3(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _f2(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _f1(value: float | None, unit: str = "") -> str:
    return "-" if value is None else f"{value:.1f}{unit}"


def _class_table(res: dict[str, Any], cell: Callable[[dict[str, Any]], str]) -> list[str]:
    """One row per page class, one column per crawler."""
    lines = [f"{'class':<9}" + "".join(f"{name:>34}" for name in res)]
    for kind in KINDS:
        if any(r["by_kind"][kind]["fetches"] or r["by_kind"][kind]["versions"] for r in res.values()):
            lines.append(f"{kind:<9}" + "".join(cell(r["by_kind"][kind]).rjust(34) for r in res.values()))
    return lines


def report(result: dict[str, Any]) -> str:
    res, p = result["crawlers"], result["params"]
    lines = [
        f"changing web: {p['hosts']} hosts × {result['urls_per_host']} URLs ({result['urls']} URLs), delay "
        f"{p['delay']} s, one pass {result['pass_s']:.0f} s, window {p['seconds']:.0f} s, seed {p['seed']}; "
        f"ADAPTIVE_BUDGET {p['budget_per_day']:.0f}/day ({p['budget_per_day'] / DAY:.2f}/s; the plain recrawl "
        f"made {res['recrawl']['requests'] / p['seconds'] if 'recrawl' in res else 0:.2f} requests/s), "
        f"ADAPTIVE_WAIT_MIN {p['wait_min']:g} s",
        f"{result['versions']} versions live in the window; load average at the end "
        + "/".join(f"{x:.2f}" for x in result["loadavg_end"])
        + f" on {os.cpu_count()} CPUs",
        "",
        f"{'crawler':<15}{'recall':>8}{'delay s':>8}{'fresh':>7}{'optimum':>9}{'of opt':>8}{'precision':>10}"
        f"{'requests':>10}{'304s':>6}"
        f"{'body MB':>9}{'req/s':>7}{'impolite':>9}{'min gap':>8}{'runs':>6}",
    ]
    for name, r in res.items():
        n304 = sum(k["not_modified"] for k in r["by_kind"].values())
        lines.append(
            f"{name:<15}{r['recall']:>8.3f}{_f1(r.get('median_capture_delay_s')):>8}{_f3(r.get('freshness')):>7}"
            f"{r['optimum']:>9.3f}{r['of_optimum'] or 0:>8.3f}{r['precision']:>10.3f}"
            f"{r['requests']:>10}{n304:>6}{r['body_bytes'] / 1e6:>9.1f}{r['requests'] / p['seconds']:>7.2f}"
            f"{r['politeness']['violations']:>9}{r['politeness']['min_gap_s'] or 0:>8.2f}{r['runs']:>6}")  # fmt: skip
    for name, r in res.items():
        if r["errors"]:
            lines.append(f"{name}: {len(r['errors'])} crawl(s) exited with an error; the last one's stderr ends:")
            lines += ["    " + line for line in r["errors"][-1].splitlines()[-5:]]
    lines.append(f"figures fetched within {WITH_PAGE_DELAYS * p['delay']:g} s of their page's capture · median "
                 "first fetch of a figure · of a page's capture · page revisits answered 304: " + "; ".join(
                     f"{name} {_f2(r.get('figures_with_page'))} · {_f1(r.get('figure_first_fetch_s'), ' s')} · "
                     f"{_f1(r.get('page_first_capture_s'), ' s')} · {_f2(r.get('page_revisits_304'))}"
                     for name, r in res.items()))  # fmt: skip
    lines.append("revisits of URLs that sent validators: share conditional, verification fetches aside · share "
                 "verifying · static pages' fetches " + " / ".join(REASONS) + ": " + "; ".join(
                     f"{name} {_f2(r.get('validated_conditional'))} · {_f2(r.get('validated_verified'))} · "
                     + " / ".join(str(r.get("static_reasons", {}).get(k, "-")) for k in REASONS)
                     for name, r in res.items()))  # fmt: skip
    lines.append("freshness against the hindsight optimum's at the crawler's fetches (each URL a fixed interval "
                 "knowing its changes, from the crawler's first fetch of it): "
                 + ", ".join(f"{name} {_f3(r.get('freshness'))} / {_f3(r.get('freshness_optimum'))}"
                             for name, r in res.items()))  # fmt: skip
    lines.append("consistency: items whose version the server never served to that crawler: "
                 + ", ".join(f"{name} {r['items_not_served']}" for name, r in res.items()))  # fmt: skip
    lines += ["", "by class: captured/versions (recall), median capture delay s, fetches, precision"]
    lines += _class_table(res, lambda k: f"{k['captured']}/{k['versions']} ({_f2(k['recall'])}) "
                          f"{_f1(k.get('median_capture_delay_s'), 's')} {k['fetches']} "
                          f"{_f2(k['precision'])}")  # fmt: skip
    lines += ["", "by class: freshness (share of the time the copy was the live version), fetches"]
    lines += _class_table(res, lambda k: f"{_f3(k.get('freshness'))} {k['fetches']}")
    lines += ["", "where the revisits went: the crawler's (recall) against the hindsight optimum's at its fetches"]
    lines += _class_table(res, lambda k: f"{k['revisits']} ({_f2(k['recall'])}) / {k['optimum_revisits']:.0f} "
                          f"({_f2(k['optimum_recall'])})")  # fmt: skip
    lines += ["", "learning curve: recall of the versions born in each slice (minutes)"]
    first = next(iter(res.values()))["curve"]
    lines.append(f"{'crawler':<15}" + "".join(f"{c['minute']:>7.1f}" for c in first))
    for name, r in res.items():
        lines.append(f"{name:<15}" + "".join("      -" if c["recall"] is None else f"{c['recall']:>7.2f}"
                                             for c in r["curve"]))  # fmt: skip
    for name, rows in result["targets"].items():
        lines += ["", f"targets for {name} (issue 13), against the baselines of this run:"]
        for t in rows:
            ref = f"  ({t['ref']})" if t["ref"] else ""
            lines.append(f"  {t['verdict'] or '-':<5} {t['target']:<58} {t['value']}{ref}")
    return "\n".join(lines)


def learning_svg(result: dict[str, Any]) -> str:
    series = {name: [(c["minute"], c["recall"]) for c in r["curve"] if c["recall"] is not None]
              for name, r in result["crawlers"].items()}  # fmt: skip
    p = result["params"]
    title = f"Changing web: recall of the versions born in each slice ({p['hosts']} hosts, {p['seconds']:.0f} s)"
    return line_chart(series, title=title, x_label="minutes since the crawlers started", y_label="recall",
                      y_range=(0.0, 1.0))  # fmt: skip


# -- main --------------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.changing_web", description=__doc__.split("\n\n")[0])
    p.add_argument("--smoke", action="store_true", help="the CI size: 3 hosts × (12 pages + 6 images), 0.5 s, 90 s")
    p.add_argument("--hosts", type=int, default=None, help="default 10 (smoke 3)")
    p.add_argument("--pages", type=int, default=None, help="HTML pages per host besides the index (default 60; 12)")
    p.add_argument("--images", type=int, default=None, help="images per host (default 30; 6)")
    p.add_argument("--delay", type=float, default=None, help="DOWNLOAD_DELAY for every crawler (default 3; 0.5)")
    p.add_argument("--seconds", type=float, default=None, help="the window (default 1200; 90)")
    p.add_argument("--budget", type=float, default=None,
                   help="ADAPTIVE_BUDGET per day (default: the plain recrawl's request rate, see default_budget)")
    p.add_argument("--wait-min", type=float, default=None, help="ADAPTIVE_WAIT_MIN (default 3 × delay)")
    p.add_argument("--grouped", type=float, default=0.0,
                   help="share of each host's pages replaying one real service's documents together (from poisson; 0)")
    p.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated, of " + ", ".join(CONFIGS))
    p.add_argument("--code", action="append", metavar="LABEL=DIR",
                   help="run the configs named CONFIG@LABEL on the checkout in DIR (e.g. main=../main), "
                        "to compare two versions of the code in one run")  # fmt: skip
    p.add_argument("--bins", type=int, default=None, help="slices of the learning curve (default 10; 6)")
    p.add_argument("--seed", type=int, default=13)
    p.add_argument("--workdir", default=None, help="keep logs, items, state and the raw record (raw.json) here")
    p.add_argument("--rescore", default=None, metavar="WORKDIR", help="score a kept run again, without crawling")
    p.add_argument("--json", default=None, help="write the figures to this file")
    p.add_argument("--svg", default=None, help="write the learning curves to this SVG file")
    p.add_argument("--quiet", action="store_true")
    return p  # fmt: skip


def _defaults(args: argparse.Namespace) -> None:
    """Fill the sizes left unset: the full run's, or the smoke run's with ``--smoke``."""
    small = args.smoke
    args.hosts = args.hosts or (3 if small else 10)
    args.pages = args.pages or (12 if small else 60)
    args.images = args.images if args.images is not None else (6 if small else 30)
    args.delay = args.delay or (0.5 if small else 3.0)
    args.seconds = args.seconds or (90.0 if small else 1200.0)
    args.bins = args.bins or (6 if small else 10)
    args.wait_min = args.wait_min if args.wait_min is not None else 3 * args.delay

    world = World(args.hosts, args.pages, args.images, args.delay, 1.0, args.seed, args.grouped)
    args.budget_per_day = default_budget(world) if args.budget is None else args.budget


def default_budget(world: World) -> float:
    """``ADAPTIVE_BUDGET`` (per day) equal to the plain recrawl's request rate, as far as it can be spent.

    The crawlers run at once, so the recrawl's rate is predicted, not
    measured: hosts ÷ delay, less the pause between its runs (a delay and
    a process start per pass).  It is capped at ``CAPACITY_SHARE`` of
    scrapy-adaptive's politeness capacity, Σ 1 ÷ (delay + the host's
    latency), which is below the recrawl's because its delay counts from
    the end of a fetch.  The report prints the recrawl's realised rate
    next to it.
    """
    recrawl = world.hosts / world.delay * world.pass_seconds / (world.pass_seconds + world.delay + RESTART_S)
    capacity = sum(1.0 / (world.delay + world.host_urls(h)[0].latency) for h in range(world.hosts))
    return min(recrawl, CAPACITY_SHARE * capacity) * DAY


def crawl_all(args: argparse.Namespace, configs: list[str], workdir: Path) -> dict[str, Any]:
    """Serve the copies, run every crawler at once for the window; the raw record of the run."""
    horizon = args.seconds + 600
    site_args = [
        "--copies", str(len(configs)), "--hosts", str(args.hosts), "--pages", str(args.pages),
        "--images", str(args.images), "--delay", str(args.delay), "--horizon", str(horizon), "--seed", str(args.seed),
        "--grouped", str(args.grouped),
    ]  # fmt: skip
    site = SiteProcess("bench.changing_web_site", site_args, startup_timeout=60.0, max_seconds=args.seconds + 300)
    site.start()
    try:
        origin = float(site.info["origin"])
        addresses = copy_addresses(len(configs), args.hosts)
        start = time.time()
        deadline = start + args.seconds
        results: dict[str, dict[str, Any]] = {}
        threads = []
        _log(f"{', '.join(configs)} for {args.seconds:.0f} s (workdir {workdir})")
        for c, config in enumerate(configs):
            urls = [f"http://{a}:{site.ports[a]}/" for a in addresses[c]]

            def crawl(config: str = config, urls: list[str] = urls) -> None:
                results[config] = run_crawler(config, args, workdir, urls, deadline)

            thread = threading.Thread(target=crawl, name=f"crawler-{config}", daemon=True)
            thread.start()
            threads.append(thread)
        for thread in threads:
            thread.join(timeout=max(1.0, deadline - time.time()) + 180)
        host, port = next(iter(site.ports.items()))
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # loopback: never a proxy
        with opener.open(f"http://{host}:{port}/_log", timeout=120) as resp:
            log = json.loads(resp.read())["log"]
    finally:
        site.stop()
    params = {k: v for k, v in vars(args).items() if k not in ("workdir", "json", "svg", "quiet", "rescore")}
    runs = {config: results.get(config, {}).get("runs", []) for config in configs}
    return {"params": params, "configs": configs, "origin": origin, "window": [start, deadline], "log": log,
            "runs": runs, "loadavg_end": os.getloadavg()}  # fmt: skip


def evaluate(raw: dict[str, Any], workdir: Path) -> dict[str, Any]:
    """Scores, targets and the learning curves of a run, from its raw record and the items in *workdir*."""
    p = argparse.Namespace(**raw["params"])
    configs = raw["configs"]
    world = World(p.hosts, p.pages, p.images, p.delay, p.seconds + 600, p.seed, getattr(p, "grouped", 0.0))
    addresses = copy_addresses(len(configs), p.hosts)
    copies = {c: addresses[c] for c in range(len(configs))}
    items = {c: read_items(workdir / config) for c, config in enumerate(configs)}
    window = (raw["window"][0], raw["window"][1])
    scores = score(world, raw["origin"], window, raw["log"], items, copies, p.delay, p.bins)
    crawlers = {}
    for c, config in enumerate(configs):
        runs = raw["runs"][config]
        crawlers[config] = {**scores[c], "runs": len(runs), "errors": [r["stderr"] for r in runs if r["returncode"]],
                            "adaptive_stats": {k: v for r in runs for k, v in r["stats"].items()
                                               if k.startswith("adaptive/budget")}}  # fmt: skip
    result: dict[str, Any] = {"params": raw["params"], "urls": len(world.urls), "urls_per_host": world.per_host,
                              "pass_s": world.pass_seconds, "versions": next(iter(scores.values()))["versions"],
                              "crawlers": crawlers, "loadavg_end": raw["loadavg_end"]}  # fmt: skip
    result["targets"] = {name: targets(crawlers, name, p.budget_per_day / DAY, world.pass_seconds, p.seconds)
                         for name in configs if base_config(name) in ADAPTIVE}  # fmt: skip
    return result


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    args = _parser().parse_args(argv)
    if args.rescore:
        workdir = Path(args.rescore)
        raw = json.loads((workdir / "raw.json").read_text())
    else:
        _defaults(args)
        configs = [c for c in args.configs.split(",") if c]
        if not configs or any(base_config(c) not in CONFIGS for c in configs):
            raise SystemExit(f"--configs: choose among {', '.join(CONFIGS)}")
        workdir = Path(args.workdir or tempfile.mkdtemp(prefix="changing-web-"))
        workdir.mkdir(parents=True, exist_ok=True)
        raw = crawl_all(args, configs, workdir)
        (workdir / "raw.json").write_text(json.dumps(raw))
    result = evaluate(raw, workdir)
    if not args.quiet:
        print(report(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    if args.svg:
        Path(args.svg).write_text(learning_svg(result))
    if not args.workdir and not args.rescore:
        shutil.rmtree(workdir, ignore_errors=True)
    return result


if __name__ == "__main__":
    main(sys.argv[1:])
