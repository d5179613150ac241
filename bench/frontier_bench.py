"""Frontier throughput, memory, disk and restart figures against Scrapy's scheduler.

Run::

    python -m bench.frontier_bench                          # 1M URLs, 10k hosts
    python -m bench.frontier_bench --urls 20000 --hosts 200 # smoke run
    python -m bench.frontier_bench --store redis://127.0.0.1:6379/0  # + Redis, same run

Why it is built this way:

* **Same-run baseline**: every figure beside Scrapy's default scheduler with a
  JOBDIR (the only configuration that persists anything), on the same
  workload, as a ratio; the spec's targets are checked on the absolute figures.
* **One subprocess per phase**: peak RSS only grows, so each phase (and each
  restart, as after a crash) runs in a fresh interpreter.
* **Fingerprints precomputed** (SHA-1 of the URL); Scrapy's
  ``RequestFingerprinter`` is measured apart and folded in where a comparison
  needs it (Scrapy's ``enqueue_request`` fingerprints: included there).
* **A fake clock and zero politeness**: queues are always ready, so the
  figures are of the frontier code and its store, not of waiting.
* **Bounded loops** in count and in time (``--max-seconds``); a cut loop says so.
* **Earlier commits too**: ``update`` gets the URL's presence where the
  frontier takes it, so the same file runs on older code.

``main(argv)`` returns the figures as a dict (the smoke test uses it).
"""

from __future__ import annotations

import argparse
import array
import hashlib
import itertools
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from bench.common import REPO_ROOT, dir_size_mb, emit, env, loadavg_line, log, num, peak_rss_mb, render, rss_mb

#: The spec's speed targets: metric key -> (comparison, bound)
TARGETS: dict[str, tuple[str, float]] = {
    "cycles_per_s": (">=", 10_000.0),
    "dup_adds_per_s": (">=", 50_000.0),
    "peak_rss_mb": ("<", 500.0),
    "restart_s": ("<", 5.0),
}

#: Check the time budget every this many iterations (a power of two minus one).
_CHECK_MASK = 1023


def _rate(count: int, seconds: float) -> float:
    return count / seconds if seconds > 0 else 0.0


def _log(msg: str) -> None:
    log("frontier_bench", msg)


class FakeClock:
    """A clock the benchmark advances by hand (``Frontier(clock=...)``)."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


# -- the workload -------------------------------------------------------------


@dataclass
class Workload:
    """N URLs over H hosts, compact: a host index (4 bytes) and a SHA-1 (20 bytes) per URL, 24 MB at 1M
    (``workload_mb``); the URL string is rebuilt when needed (the harness overhead)."""

    n: int
    host_names: list[str]
    host_of: array.array  # URL index -> host index
    fps: bytearray  # 20 bytes per URL: SHA-1 of the URL (not copied into bytes: 200 MB at 10M)

    def url(self, i: int) -> str:
        return f"http://{self.host_names[self.host_of[i]]}/path/{i}"

    def host(self, i: int) -> str:
        return self.host_names[self.host_of[i]]

    def fp(self, i: int) -> bytes:
        return bytes(self.fps[20 * i : 20 * i + 20])


def host_sizes(n: int, hosts: int, zipf_s: float) -> list[int]:
    """URLs per host, Zipf-like (size of rank r ∝ 1/r^s), each host at least one URL."""
    hosts = max(1, min(hosts, n))
    weights = [1.0 / (rank**zipf_s) for rank in range(1, hosts + 1)]
    total = sum(weights)
    sizes = [max(1, int(n * w / total)) for w in weights]
    excess = sum(sizes) - n
    # rounding: give or take the difference from the largest hosts
    rank = 0
    while excess != 0:
        step = 1 if excess < 0 else -1
        if sizes[rank] + step >= 1:
            sizes[rank] += step
            excess += step
        rank = (rank + 1) % hosts
    return sizes


def make_workload(n: int, hosts: int, seed: int, zipf_s: float) -> Workload:
    """The seeded workload: URLs shuffled across hosts, as a crawl discovers them."""
    rng = random.Random(seed)
    sizes = host_sizes(n, hosts, zipf_s)
    host_of = array.array("I")
    for h, size in enumerate(sizes):
        host_of.extend(array.array("I", [h]) * size)
    rng.shuffle(host_of)  # type: ignore[arg-type]
    names = [f"host{h}.example" for h in range(len(sizes))]
    sha1 = hashlib.sha1
    # filled in place: joining a generator would first hold every 20-byte
    # digest as its own bytes object (~56 bytes each, 560 MB at 10M URLs)
    fps = bytearray(20 * n)
    for i in range(n):
        fps[20 * i : 20 * i + 20] = sha1(f"http://{names[host_of[i]]}/path/{i}".encode()).digest()
    return Workload(n=n, host_names=names, host_of=host_of, fps=fps)


def workload_mb(wl: Workload) -> float:
    """What the harness itself holds for the workload (fingerprints + host ids + names), MiB."""
    names = sum(sys.getsizeof(name) for name in wl.host_names) + sys.getsizeof(wl.host_names)
    return (len(wl.fps) + wl.host_of.itemsize * len(wl.host_of) + names) / 2**20


def dup_sample(n: int, k: int, seed: int) -> list[int]:
    """min(k, n) distinct known URL indices, seeded (the same for both schedulers)."""
    return random.Random(seed + 1).sample(range(n), min(k, n))


# -- phase: adaptive frontier ---------------------------------------------------


def _politeness() -> Any:
    from scrapy_adaptive.frontier import Politeness

    return Politeness(min_delay=0, max_delay=0, delay_factor=0, valence=1)


#: the Redis namespace of ``--store`` runs (emptied before each run)
BENCH_NAMESPACE = "frontier-bench"


def _open_store(args: argparse.Namespace, path: str) -> Any:
    if args.phase_store:
        from scrapy_adaptive.store.redis import RedisStore

        return RedisStore(args.phase_store, namespace=BENCH_NAMESPACE)
    from scrapy_adaptive.store.leveldb import LevelDBStore

    return LevelDBStore(path) if args.cache_mb is None else LevelDBStore(path, cache_mb=args.cache_mb)


def empty_namespace(url: str) -> int:
    """Delete every key of :data:`BENCH_NAMESPACE` (SCAN, never FLUSHDB: the database may hold others)."""
    import redis

    client = redis.Redis.from_url(url)
    keys = iter(client.scan_iter(match=f"{BENCH_NAMESPACE}:*", count=1000))
    deleted = sum(client.unlink(*chunk) for chunk in iter(lambda: list(itertools.islice(keys, 1000)), []))
    client.close()
    return deleted


def measure_fingerprint(wl: Workload, count: int) -> dict[str, float]:
    """µs per URL of Scrapy's fingerprinting, for context (not frontier cost)."""
    from scrapy import Request
    from scrapy.utils.request import RequestFingerprinter

    fingerprinter = RequestFingerprinter()
    count = min(count, wl.n)
    urls = [wl.url(i) for i in range(count)]
    t0 = time.perf_counter()
    for url in urls:
        Request(url)
    t1 = time.perf_counter()
    for url in urls:
        fingerprinter.fingerprint(Request(url))
    t_request, t_both = t1 - t0, time.perf_counter() - t1
    return {
        "count": count,
        "request_plus_fingerprint_us": t_both / count * 1e6,
        "request_only_us": t_request / count * 1e6,
        "fingerprint_only_us": max(0.0, t_both - t_request) / count * 1e6,
    }


def _add_loop(
    add: Callable[..., Any], wl: Workload, start: int, stop: int, deadline: float, priorities: int = 0
) -> tuple[int, float]:
    """Add URLs [start, stop) until *deadline*; return (count, seconds).
    With *priorities* K, URL i has ``Request.priority`` ``i % (2K+1) - K``
    (every host's queue orders its due URLs by priority)."""
    url_of, host_of, fp_of = wl.url, wl.host, wl.fp
    perf = time.perf_counter
    t0 = perf()
    i = start
    span = 2 * priorities + 1
    while i < stop:
        url = url_of(i)
        request = {"url": url, "method": "GET", "meta": {}, "callback": "parse"}
        if priorities:
            priority = i % span - priorities
            request["priority"] = priority
            add(fp_of(i), url, host_of(i), request, priority=priority)
        else:
            add(fp_of(i), url, host_of(i), request)
        i += 1
        if not i & _CHECK_MASK and perf() > deadline:
            break
    return i - start, perf() - t0


def _timed(items: Any, step: Callable[[Any], Any], deadline: float) -> tuple[int, float, bool]:
    """``step(item)`` for each item until *deadline*: (count, seconds, cut short)."""
    perf = time.perf_counter
    done, t0, cut = 0, perf(), False
    for item in items:
        step(item)
        done += 1
        if not done & _CHECK_MASK and perf() > deadline:
            cut = True
            break
    return done, perf() - t0, cut


def _deciles(total: int, chunk: Callable[[int, int], tuple[int, float]]) -> tuple[int, float, list[float]]:
    """``chunk(lo, hi)`` over ten tenths of *total*, until one is cut short: (count, seconds, rate of each
    tenth), to show whether throughput holds as the state grows."""
    done, secs, rates = 0, 0.0, []
    bounds = [total * k // 10 for k in range(11)]
    for lo, hi in zip(bounds, bounds[1:], strict=False):
        if hi > lo:
            n, t = chunk(lo, hi)
            done, secs = done + n, secs + t
            rates.append(_rate(n, t))
            if n < hi - lo:
                break
    return done, secs, rates


def _figures(count: int, seconds: float, cpu0: float | None = None, **more: Any) -> dict[str, Any]:
    """A timed loop's figures (*cpu0*: the thread's CPU time when it began, for its CPU per operation)."""
    res = {"count": count, "seconds": seconds, "per_s": _rate(count, seconds), **more}
    if cpu0 is not None:
        res["thread_cpu_us"] = (time.thread_time() - cpu0) / max(count, 1) * 1e6
    return res


def _url_count(frontier: Any) -> int:
    """The frontier's URLs (``url_count`` before the frontier had ``counts()``:
    this file measures earlier commits too)."""
    counts = getattr(frontier, "counts", None)
    return int(counts().urls if counts is not None else frontier.url_count)


def phase_adaptive(args: argparse.Namespace, state_dir: str) -> dict[str, Any]:
    """Load N URLs into a fresh LevelDB frontier; time adds, duplicates, cycles."""
    from scrapy import Request
    from scrapy.utils.request import RequestFingerprinter

    from scrapy_adaptive.frontier import ChangeState, Frontier, Outcome, Plan, Visit

    res: dict[str, Any] = {"rss_start_mb": rss_mb()}
    t0 = time.perf_counter()
    wl = make_workload(args.urls, args.hosts, args.seed, args.zipf)
    res["workload_s"] = time.perf_counter() - t0
    res["hosts"] = len(wl.host_names)
    res["largest_host_urls"] = max(host_sizes(args.urls, args.hosts, args.zipf))
    res["fingerprint"] = measure_fingerprint(wl, min(args.fingerprint_sample, wl.n))
    res["workload_mb"] = workload_mb(wl)
    res["rss_before_load_mb"] = rss_mb()

    # harness overhead: the same loop with an add that does nothing
    overhead_n = min(wl.n, 100_000)
    count, secs = _add_loop(lambda *a: None, wl, 0, overhead_n, time.perf_counter() + args.max_seconds)
    res["harness_us_per_add"] = secs / max(count, 1) * 1e6

    clock = FakeClock(time.time())
    res["rss_before_open_mb"] = before_open = rss_mb()
    store = _open_store(args, state_dir)
    frontier = Frontier(store, _politeness(), clock=clock)

    # 1. new URLs, in ten chunks to show whether throughput degrades as the DB grows
    _log(f"adaptive: adding {wl.n} new URLs over {len(wl.host_names)} hosts")
    deadline = time.perf_counter() + args.max_seconds
    cpu0 = time.thread_time()
    added, add_secs, chunks = _deciles(
        wl.n, lambda lo, hi: _add_loop(frontier.add, wl, lo, hi, deadline, args.priorities)
    )
    res["add_new"] = _figures(added, add_secs, cpu0, per_s_by_decile=chunks, truncated=added < wl.n)
    res["rss_after_load_mb"] = rss_mb()
    res["frontier_rss_after_load_mb"] = res["rss_after_load_mb"] - before_open
    res["peak_rss_after_load_mb"] = peak_rss_mb()
    res["url_count"] = _url_count(frontier)
    fp_us = res["fingerprint"]["fingerprint_only_us"]
    per_add_s = add_secs / max(added, 1)
    res["add_new"]["per_s_incl_fingerprint_derived"] = 1.0 / (per_add_s + fp_us / 1e6)

    # 2. duplicates: re-add known URLs
    sample = dup_sample(added, args.dups, args.seed)
    _log(f"adaptive: re-adding {len(sample)} known URLs")
    cpu0 = time.thread_time()
    add, url_of, host_of, fp_of = frontier.add, wl.url, wl.host, wl.fp
    perf = time.perf_counter

    def add_known(i: int) -> None:
        url = url_of(i)
        add(fp_of(i), url, host_of(i), {"url": url, "method": "GET", "meta": {}, "callback": "parse"})

    done, secs, cut = _timed(sample, add_known, perf() + args.max_seconds)
    res["add_dup"] = _figures(done, secs, cpu0, truncated=cut)

    # 2b. duplicates with Scrapy's fingerprinting included (Request built outside the timing); the
    # fingerprint differs from the stored SHA-1, so the add takes the known fp: "fingerprint + lookup"
    fingerprinter = RequestFingerprinter()
    requests = [Request(url_of(i)) for i in sample[: args.fingerprint_sample]]
    known = zip(requests, sample, strict=False)
    both = lambda ri: (fingerprinter.fingerprint(ri[0]), add_known(ri[1]))  # noqa: E731
    done, timed, _ = _timed(known, both, perf() + args.max_seconds)
    res["add_dup_incl_fingerprint"] = _figures(done, timed)

    # 3. next + fetch_ended + update cycles
    cycles = min(args.cycles, added)
    _log(f"adaptive: {cycles} next+update cycles")
    cpu0 = time.thread_time()
    digest = "sha1:" + "0" * 40
    nxt, ended, update = frontier.next, frontier.downloads.fetch_ended, frontier.update
    visited, unchanged = Outcome.VISITED, ChangeState.UNCHANGED
    plan = Plan(86400.0)
    extra: dict[str, Any] = {"presence": [1, 0, 0]}  # what a crawl's verdicts give update()
    state = {"empty": 0, "cut": False}  # next() calls that found nothing; stopped by the deadline

    def run_cycles(lo: int, hi: int) -> tuple[int, float]:
        done, t0 = 0, perf()
        while done < hi - lo:
            issued = nxt()
            if issued is None:
                state["empty"] += 1
                if state["empty"] > 1000:  # nothing due any more: the workload is spent
                    break
                clock.now += 0.001
                continue
            ended(issued.fp, 0.1)
            visit = Visit(visited, status=200, change=unchanged, size=1000, digest=digest)
            update(issued.fp, visit, plan, **extra)
            clock.now += 0.001
            done += 1
            if not done & _CHECK_MASK and perf() > deadline:
                state["cut"] = True
                break
        return done, perf() - t0

    deadline = perf() + args.max_seconds
    done, secs, rates = _deciles(cycles, run_cycles)
    res["cycles"] = _figures(
        done, secs, cpu0, per_s_by_decile=rates, empty_next_calls=state["empty"], truncated=state["cut"]
    )
    res["rss_end_mb"] = rss_mb()
    res["frontier_rss_end_mb"] = res["rss_end_mb"] - before_open

    t0 = perf()
    store.close()
    res["close_s"] = perf() - t0
    res["disk_mb"] = dir_size_mb(state_dir)
    res["peak_rss_mb"] = peak_rss_mb()
    res["clock_end"] = clock.now
    return res


def phase_adaptive_restart(args: argparse.Namespace, state_dir: str) -> dict[str, Any]:
    """Reopen the frontier in a fresh process: open, load(), first next()."""
    from scrapy_adaptive.frontier import Frontier

    res: dict[str, Any] = {"rss_start_mb": rss_mb()}
    perf = time.perf_counter
    res["rss_before_open_mb"] = before_open = rss_mb()
    t0 = perf()
    store = _open_store(args, state_dir)
    t1 = perf()
    frontier = Frontier(store, _politeness(), clock=FakeClock(args.clock or time.time()))
    frontier.load()
    t2 = perf()
    issued = frontier.next()
    t3 = perf()
    res.update(open_s=t1 - t0, load_s=t2 - t1, first_next_s=t3 - t2, restart_s=t3 - t0)
    res["first_next_found"] = issued is not None
    res.update(url_count=_url_count(frontier), queues=sum(1 for _ in frontier.queues()), rss_mb=rss_mb())
    res["frontier_rss_mb"] = res["rss_mb"] - before_open
    store.close()
    res["disk_mb"] = dir_size_mb(state_dir)  # after LevelDB replayed and flushed its log
    res["peak_rss_mb"] = peak_rss_mb()
    return res


# -- phase: Scrapy's default scheduler -------------------------------------------


class _IdleDownloader:
    """What ``DownloaderAwarePriorityQueue`` asks of the downloader (slot keys, active downloads per slot),
    idle: a real engine needs a reactor; with nothing in flight this answers as the real one would."""

    def __init__(self) -> None:
        self.slots: dict[str, Any] = {}

    def get_slot_key(self, request: Any) -> str:
        from scrapy.utils.httpobj import urlparse_cached

        slot = request.meta.get("download_slot")
        return slot if slot is not None else (urlparse_cached(request).hostname or "")


def _scrapy_scheduler(jobdir: str, priority_queue: str | None) -> tuple[Any, Any]:
    """A Scrapy default ``Scheduler`` with a JOBDIR, opened, and its spider."""
    from scrapy import Spider
    from scrapy.core.scheduler import Scheduler
    from scrapy.utils.test import get_crawler

    class BenchSpider(Spider):
        name = "bench"

        def parse(self, response: Any) -> None:
            pass

    settings: dict[str, Any] = {"JOBDIR": jobdir, "LOG_LEVEL": "WARNING"}
    if priority_queue:
        settings["SCHEDULER_PRIORITY_QUEUE"] = priority_queue
    crawler = get_crawler(BenchSpider, settings)
    spider = BenchSpider.from_crawler(crawler)
    crawler.spider = spider  # disk queues serialise callbacks against it
    crawler.engine = SimpleNamespace(downloader=_IdleDownloader())  # type: ignore[assignment]
    scheduler = Scheduler.from_crawler(crawler)
    scheduler.open(spider)
    return scheduler, spider


def phase_scrapy(args: argparse.Namespace, jobdir: str) -> dict[str, Any]:
    """Enqueue the same URLs into Scrapy's scheduler, then duplicates; close."""
    from scrapy import Request

    res: dict[str, Any] = {"priority_queue": args.scrapy_pq or "default", "rss_start_mb": rss_mb()}
    wl = make_workload(args.urls, args.hosts, args.seed, args.zipf)
    res["rss_before_load_mb"] = rss_mb()
    perf = time.perf_counter
    t0 = perf()
    scheduler, spider = _scrapy_scheduler(jobdir, args.scrapy_pq)
    res["open_s"] = perf() - t0
    enqueue, parse, url_of = scheduler.enqueue_request, spider.parse, wl.url

    filtered = 0

    def enqueue_each(indices: Sequence[int], deadline: float) -> tuple[int, float]:
        """Enqueue a new Request for each URL index (its construction not timed): (count, seconds)."""
        nonlocal filtered
        done, timed = 0, 0.0
        for i in indices:
            request = Request(url_of(i), callback=parse)
            t0 = perf()
            filtered += not enqueue(request)
            timed += perf() - t0
            done += 1
            if not done & _CHECK_MASK and perf() > deadline:
                break
        return done, timed

    _log(f"scrapy: enqueueing {wl.n} new requests")
    deadline = perf() + args.max_seconds
    done, timed, chunks = _deciles(wl.n, lambda lo, hi: enqueue_each(range(lo, hi), deadline))
    res["enqueue"] = _figures(done, timed, per_s_by_decile=chunks, truncated=done < wl.n)
    res["rss_after_load_mb"] = rss_mb()
    res["peak_rss_after_load_mb"] = peak_rss_mb()

    sample = dup_sample(done, args.dups, args.seed)
    _log(f"scrapy: enqueueing {len(sample)} duplicate requests")
    filtered = 0
    dup_done, timed = enqueue_each(sample, perf() + args.max_seconds)
    res["enqueue_dup"] = _figures(dup_done, timed, filtered=filtered)

    t0 = perf()
    scheduler.close("finished")
    res["close_s"] = perf() - t0
    res["disk_mb"] = dir_size_mb(jobdir)
    res["queue_dirs"] = sum(1 for _ in Path(jobdir, "requests.queue").iterdir())
    res["peak_rss_mb"] = peak_rss_mb()
    return res


def phase_scrapy_restart(args: argparse.Namespace, jobdir: str) -> dict[str, Any]:
    """Reopen Scrapy's scheduler on the JOBDIR in a fresh process; dequeue."""
    res: dict[str, Any] = {"rss_start_mb": rss_mb()}
    perf = time.perf_counter
    t0 = perf()
    scheduler, _spider = _scrapy_scheduler(jobdir, args.scrapy_pq)
    t1 = perf()
    first = scheduler.next_request()
    t2 = perf()
    res.update(open_s=t1 - t0, first_next_s=t2 - t1, restart_s=t2 - t0, first_next_found=first is not None)
    res["rss_mb"] = rss_mb()

    _log(f"scrapy: dequeueing up to {args.cycles} requests")
    dequeued = itertools.islice(iter(scheduler.next_request, None), args.cycles)
    done, secs, cut = _timed(dequeued, lambda _: None, perf() + args.max_seconds)
    res["dequeue"] = _figures(done, secs, truncated=cut)
    t0 = perf()
    scheduler.close("finished")
    res["close_s"] = perf() - t0
    res["peak_rss_mb"] = peak_rss_mb()
    return res


PHASES: dict[str, Callable[[argparse.Namespace, str], dict[str, Any]]] = {
    "adaptive": phase_adaptive,
    "adaptive-restart": phase_adaptive_restart,
    "scrapy": phase_scrapy,
    "scrapy-restart": phase_scrapy_restart,
}


# -- orchestration ---------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m bench.frontier_bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--urls", type=int, default=1_000_000, help="URLs in the workload (default 1M)")
    p.add_argument("--hosts", type=int, default=10_000, help="hosts (default 10k)")
    p.add_argument("--dups", type=int, default=200_000, help="duplicate adds: this many known URLs (default 200k)")
    p.add_argument("--cycles", type=int, default=200_000, help="next+update cycles / dequeues (default 200k)")
    p.add_argument("--priorities", type=int, default=0, help="K: URL i has Request.priority i %% (2K+1) - K, the "
                   "cost of ordering by priority (default 0: none)")
    p.add_argument("--zipf", type=float, default=1.0, help="Zipf exponent of host sizes (default 1.0)")
    p.add_argument("--seed", type=int, default=20240607)
    p.add_argument("--fingerprint-sample", type=int, default=50_000, help="URLs timed for fingerprint cost")
    p.add_argument("--max-seconds", type=float, default=120.0, help="time budget of each timed loop")
    p.add_argument("--phase-timeout", type=float, default=900.0, help="kill a phase subprocess after this")
    p.add_argument("--cache-mb", type=int, default=None, help="LevelDBStore cache_mb (default: the store's)")
    p.add_argument("--scrapy-pq", default=None, help="SCHEDULER_PRIORITY_QUEUE for the baseline (default: Scrapy's)")
    p.add_argument("--no-baseline", action="store_true", help="skip Scrapy's scheduler")
    p.add_argument("--target-rss-mb", type=float, default=TARGETS["peak_rss_mb"][1], help="peak RSS target")
    p.add_argument("--target-restart-s", type=float, default=TARGETS["restart_s"][1], help="restart target")
    p.add_argument("--workdir", default=None, help="keep state here instead of a temp dir")
    p.add_argument("--json", default=None, help="write the figures to this file")
    p.add_argument("--quiet", action="store_true", help="do not print the table")
    # internal: run one phase in this process
    p.add_argument("--phase", choices=sorted(PHASES), help=argparse.SUPPRESS)
    p.add_argument("--phase-dir", help=argparse.SUPPRESS)
    p.add_argument("--phase-out", help=argparse.SUPPRESS)
    p.add_argument("--clock", type=float, default=None, help=argparse.SUPPRESS)
    p.add_argument("--store", default=None, help="also run the frontier phases on this Redis store "
                   f"(redis://host:port/db); its keys go under {BENCH_NAMESPACE}:*, emptied first")
    p.add_argument("--phase-store", default=None, help=argparse.SUPPRESS)
    return p


_FORWARDED = ("urls", "hosts", "dups", "cycles", "priorities", "zipf", "seed", "fingerprint_sample", "max_seconds")


def _run_phase(name: str, args: argparse.Namespace, directory: str, extra: Sequence[str] = ()) -> dict[str, Any]:
    """Run one phase in a fresh interpreter and return its figures."""
    out = os.path.join(os.path.dirname(directory), f"{name}.json")
    cmd = [sys.executable, "-m", "bench.frontier_bench", "--phase", name, "--phase-dir", directory, "--phase-out", out]
    for attr in _FORWARDED:
        cmd += [f"--{attr.replace('_', '-')}", str(getattr(args, attr))]
    if args.scrapy_pq:
        cmd += ["--scrapy-pq", args.scrapy_pq]
    if args.cache_mb is not None:
        cmd += ["--cache-mb", str(args.cache_mb)]
    cmd += list(extra)
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env(), timeout=args.phase_timeout, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"phase {name} failed with exit code {proc.returncode}")
    with open(out, encoding="utf-8") as f:
        res: dict[str, Any] = json.load(f)
    res["wall_s"] = time.perf_counter() - started
    return res


def run_store_phases(args: argparse.Namespace, directory: str) -> dict[str, Any]:
    """The same frontier phases on the ``--store`` Redis, next to LevelDB's (same workload, same run)."""
    os.makedirs(os.path.dirname(directory), exist_ok=True)
    empty_namespace(args.store)
    load = _run_phase("adaptive", args, directory, ["--phase-store", args.store])
    clock = str(load["clock_end"] + 2 * 86400.0)
    restart = _run_phase("adaptive-restart", args, directory, ["--phase-store", args.store, "--clock", clock])
    import redis

    client = redis.Redis.from_url(args.store)
    server_mb = int(client.info("memory")["used_memory"]) / 2**20  # the whole database, others' keys too
    client.close()
    empty_namespace(args.store)
    return {"adaptive": load, "adaptive_restart": restart, "server_used_memory_mb": server_mb}


#: (metric, kind, path in a phase's figures): the rows of the store comparison
_STORE_ROWS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("new URL adds/s", "rate", "adaptive", ("add_new", "per_s")),
    ("duplicate adds/s", "rate", "adaptive", ("add_dup", "per_s")),
    ("next+update cycles/s", "rate", "adaptive", ("cycles", "per_s")),
    ("peak RSS of the worker, MB", "size", "adaptive", ("peak_rss_mb",)),
    ("restart: open+load+first next, s", "time", "adaptive_restart", ("restart_s",)),
    ("frontier's own RSS after restart, MB", "size", "adaptive_restart", ("frontier_rss_mb",)),
)


def build_store_rows(r: dict[str, Any]) -> list[dict[str, Any]]:
    """LevelDB against the ``--store`` Redis, metric by metric, with the ratio Redis / LevelDB."""
    rows = []
    for metric, kind, phase, path in _STORE_ROWS:
        leveldb, other = _get(r.get(phase), *path), _get(r["store"].get(phase), *path)
        ratio = other / leveldb if leveldb and other is not None else None
        rows.append({"metric": metric, "kind": kind, "leveldb": leveldb, "redis": other, "ratio": ratio})
    return rows


def format_store_table(rows: list[dict[str, Any]], url: str) -> str:
    table = [(r["metric"], _fmt(r["leveldb"], r["kind"]), _fmt(r["redis"], r["kind"]), num(r["ratio"])) for r in rows]
    return f"\nThe same frontier on Redis ({url}):\n" + render(("metric", "LevelDB", "Redis", "Redis/LevelDB"), table)


def format_store_notes(store: dict[str, Any]) -> str:
    mb = store["server_used_memory_mb"]
    return f"Redis server memory (used_memory) holding the frontier: {mb:.1f} MB; LevelDB's: its state on disk (above)"


def _get(d: dict[str, Any] | None, *path: str) -> float | None:
    value: Any = d
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return float(value) if isinstance(value, (int, float)) else None


def _last(d: dict[str, Any] | None, key: str) -> float | None:
    """The last decile's rate of a chunked loop (does throughput hold as the state grows?)."""
    deciles = (d or {}).get(key, {}).get("per_s_by_decile") or []
    return float(deciles[-1]) if deciles else None


def build_rows(r: dict[str, Any]) -> list[dict[str, Any]]:
    """The comparison table: metric, adaptive, scrapy, ratio, target, verdict."""
    targets = {**TARGETS, **r.get("targets", {})}
    names = {"a": "adaptive", "ar": "adaptive_restart", "s": "scrapy", "sr": "scrapy_restart"}
    phases = {short: r.get(name) for short, name in names.items()}

    def fig(path: str | None) -> float | None:
        """``"a.add_new.per_s"``: a figure of a phase (``a``, ``ar``, ``s``, ``sr``); ``…~`` its last decile's."""
        if path is None:
            return None
        phase, *keys = path.rstrip("~").split(".")
        return _last(phases[phase], keys[0]) if path.endswith("~") else _get(phases[phase], *keys)

    # metric, kind, adaptive's figure, Scrapy's, target
    spec = [
        ("new URL adds/s (frontier.add, fp precomputed)", "rate", "a.add_new.per_s", "s.enqueue.per_s", None),
        ("new URL adds/s incl. fingerprint (derived)", "rate", "a.add_new.per_s_incl_fingerprint_derived",
         "s.enqueue.per_s", None),
        ("new adds/s, last decile", "rate", "a.add_new~", "s.enqueue~", None),
        ("duplicate adds/s (fp precomputed)", "rate", "a.add_dup.per_s", "s.enqueue_dup.per_s", "dup_adds_per_s"),
        ("duplicate adds/s incl. fingerprint", "rate", "a.add_dup_incl_fingerprint.per_s", "s.enqueue_dup.per_s", None),
        ("next+update cycles/s (scrapy: next_request)", "rate", "a.cycles.per_s", "sr.dequeue.per_s", "cycles_per_s"),
        ("new add: main-thread CPU, µs", "time", "a.add_new.thread_cpu_us", None, None),
        ("duplicate add: main-thread CPU, µs", "time", "a.add_dup.thread_cpu_us", None, None),
        ("cycle: main-thread CPU, µs", "time", "a.cycles.thread_cpu_us", None, None),
        ("RSS after loading, MB", "size", "a.rss_after_load_mb", "s.rss_after_load_mb", None),
        ("peak RSS of the loading process, MB", "size", "a.peak_rss_mb", "s.peak_rss_mb", "peak_rss_mb"),
        ("  of which the harness's workload arrays, MB", "size", "a.workload_mb", None, None),
        ("frontier's own RSS after loading (RSS - RSS before open), MB", "size", "a.frontier_rss_after_load_mb", None,
         None),
        ("frontier's own RSS at the end of the phase, MB", "size", "a.frontier_rss_end_mb", None, None),
        ("state on disk, MB", "size", "a.disk_mb", "s.disk_mb", None),
        ("state on disk after restart, MB", "size", "ar.disk_mb", None, None),
        ("close, s", "time", "a.close_s", "s.close_s", None),
        ("restart: open+load+first next, s", "time", "ar.restart_s", "sr.restart_s", "restart_s"),
        ("RSS after restart, MB", "size", "ar.rss_mb", "sr.rss_mb", None),
        ("frontier's own RSS after restart, MB", "size", "ar.frontier_rss_mb", None, None),
    ]  # fmt: skip
    rows = []
    for metric, kind, a_path, s_path, target_key in spec:
        av, sv = fig(a_path), fig(s_path)
        if av is None and sv is None and target_key is None:
            continue  # a figure this run did not measure (Scrapy's, without the baseline)
        ratio = av / sv if av is not None and sv else None
        target = verdict = None
        if target_key is not None:
            op, bound = targets[target_key]
            target = f"{op} {bound:,.0f}"
            if av is not None:
                verdict = "PASS" if (av >= bound if op == ">=" else av < bound) else "FAIL"
        rows.append(
            dict(metric=metric, kind=kind, adaptive=av, scrapy=sv, ratio=ratio, target=target, verdict=verdict,
                 target_key=target_key)
        )
    return rows


def _fmt(value: float | None, kind: str) -> str:
    if value is None:
        return "-"
    if kind == "rate":
        return f"{value:,.0f}"
    if kind == "time":
        return f"{value:.3f}"
    return f"{value:,.1f}"


def format_table(rows: list[dict[str, Any]]) -> str:
    header = ("metric", "adaptive", "scrapy default", "ratio a/s", "target", "pass/fail")
    table = [
        (r["metric"], _fmt(r["adaptive"], r["kind"]), _fmt(r["scrapy"], r["kind"]), num(r["ratio"]), r["target"] or "",
         r["verdict"] or "")
        for r in rows
    ]
    return render(header, table)


def format_notes(r: dict[str, Any]) -> str:
    """Context under the table: fingerprint cost, harness overhead, workload."""
    a, s = r.get("adaptive") or {}, r.get("scrapy") or {}
    fp = a.get("fingerprint", {})
    notes = [
        f"workload: {r['params']['urls']:,} URLs over {a.get('hosts', '?')} hosts (largest host "
        f"{a.get('largest_host_urls', '?'):,} URLs, Zipf s={r['params']['zipf']})",
        "Scrapy RequestFingerprinter().fingerprint(Request(url)): "
        f"{fp.get('request_plus_fingerprint_us', 0):.2f} µs/URL "
        f"(Request() alone {fp.get('request_only_us', 0):.2f} µs, "
        f"fingerprint alone {fp.get('fingerprint_only_us', 0):.2f} µs)",
        loadavg_line(r.get("loadavg_start", ()), r.get("loadavg_end", ())) + ": other processes skew absolute figures",
        f"harness overhead in the adaptive add loops (URL f-string, dict): {a.get('harness_us_per_add', 0):.2f} µs/add "
        "(not subtracted)",
        "scrapy enqueue figures include fingerprinting (inherent to its enqueue_request), not Request construction; "
        "its dequeue is next_request only, while a cycle is next + fetch_ended + update (one LevelDB batch)",
    ]
    for label, figures in (("adaptive new adds/s", a.get("add_new")), ("adaptive next+update cycles/s",
                           a.get("cycles")), ("scrapy enqueue/s", s.get("enqueue"))):  # fmt: skip
        if figures:
            notes.append(f"{label} by decile: " + ", ".join(f"{x:,.0f}" for x in figures["per_s_by_decile"]))
    if s.get("enqueue"):
        notes.append(f"scrapy priority queue: {s.get('priority_queue')}; {s.get('queue_dirs', '?')} slot queue folders")
    for section in ("adaptive", "scrapy", "scrapy_restart"):
        for key, val in (r.get(section) or {}).items():
            if isinstance(val, dict) and val.get("truncated"):
                notes.append(f"NOTE: {section}/{key} hit --max-seconds after {val['count']:,} ops")
    return "\n".join(notes)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the benchmark (or, internally, one phase) and return its figures."""
    args = _parser().parse_args(argv)
    if args.phase:
        res = PHASES[args.phase](args, args.phase_dir)
        with open(args.phase_out, "w", encoding="utf-8") as f:
            json.dump(res, f)
        return res

    workdir = args.workdir or tempfile.mkdtemp(prefix="frontier-bench-")
    os.makedirs(workdir, exist_ok=True)
    adaptive_dir = os.path.join(workdir, "adaptive", "frontier.ldb")
    scrapy_dir = os.path.join(workdir, "scrapy", "jobdir")
    os.makedirs(os.path.dirname(adaptive_dir), exist_ok=True)
    os.makedirs(scrapy_dir, exist_ok=True)
    results: dict[str, Any] = {
        "params": {k: getattr(args, k) for k in (*_FORWARDED, "scrapy_pq", "cache_mb")},
        "targets": {"peak_rss_mb": ("<", args.target_rss_mb), "restart_s": ("<", args.target_restart_s)},
        "loadavg_start": os.getloadavg(),
    }
    started = time.perf_counter()
    try:
        results["adaptive"] = _run_phase("adaptive", args, adaptive_dir)
        clock = str(results["adaptive"]["clock_end"] + 2 * 86400.0)  # everything due again
        results["adaptive_restart"] = _run_phase("adaptive-restart", args, adaptive_dir, ["--clock", clock])
        if args.store:
            results["store"] = run_store_phases(args, os.path.join(workdir, "store", "unused"))
        if not args.no_baseline:
            results["scrapy"] = _run_phase("scrapy", args, scrapy_dir)
            results["scrapy_restart"] = _run_phase("scrapy-restart", args, scrapy_dir)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    results["total_s"] = time.perf_counter() - started
    results["loadavg_end"] = os.getloadavg()
    rows = build_rows(results)
    results["rows"] = rows
    if results.get("store"):
        results["store"]["rows"] = build_store_rows(results)
    results["passed"] = all(row["verdict"] != "FAIL" for row in rows)
    report = [format_table(rows), "", format_notes(results)]
    if results.get("store"):
        report += [format_store_table(results["store"]["rows"], args.store), format_store_notes(results["store"])]
    report.append(f"\ntotal {results['total_s']:.0f} s; targets {'all met' if results['passed'] else 'MISSED'}")
    return emit(results, args, "\n".join(report))


if __name__ == "__main__":
    main(sys.argv[1:])
