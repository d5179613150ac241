"""Resident memory of the frontier over many visits: does it level off?

``python -m bench.memory_plateau [--visits 900000] [--cache-mb 64] [--urls 300]``

The frontier alone (LevelDB in a temporary folder, no Scrapy, a fake
clock) runs issue → fetch end → verdict for ``--visits`` visits of
``--urls`` URLs on three hosts, a third of the verdicts "changed", and
prints the process's resident memory every ``--every`` visits.  A store
that leaked would grow without end; LevelDB's block cache grows to
``--cache-mb`` (``ADAPTIVE_STATE_CACHE_MB``) and stops.  Bounded by
``--visits`` and ``--max-seconds``.  Figures: docs/reliability.md.
"""

from __future__ import annotations

import argparse
import hashlib
import tempfile
import time

from scrapy_adaptive.frontier import ChangeState, Frontier, Outcome, Visit
from scrapy_adaptive.store.leveldb import CACHE_MB, LevelDBStore

from .frontier_bench import FakeClock, _politeness, rss_mb


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.memory_plateau")
    ap.add_argument("--visits", type=int, default=900_000)
    ap.add_argument("--urls", type=int, default=300)
    ap.add_argument("--cache-mb", type=int, default=CACHE_MB)
    ap.add_argument("--every", type=int, default=100_000)
    ap.add_argument("--max-seconds", type=float, default=600.0)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        store = LevelDBStore(folder, cache_mb=args.cache_mb)
        clock = FakeClock(time.time())
        frontier = Frontier(store, _politeness(), clock=clock)
        for i in range(args.urls):
            url = f"http://h{i % 3}.example/p/{i}.html"
            request = {"url": url, "method": "GET", "meta": {}, "callback": "parse"}
            frontier.add(hashlib.sha1(url.encode()).digest(), url, f"h{i % 3}.example", request)
        print(f"cache {args.cache_mb} MiB, {args.urls} URLs: {rss_mb():.1f} MB before the first visit", flush=True)
        done, start = 0, time.monotonic()
        while done < args.visits and time.monotonic() - start < args.max_seconds:
            issued = frontier.next()
            if issued is None:
                clock.now += 0.5
                continue
            frontier.leases.fetch_ended(issued.fp, 0.1)
            change = ChangeState.CHANGED if done % 3 == 0 else ChangeState.UNCHANGED
            digest = f"sha1:{done:040x}"
            frontier.update(issued.fp, Visit(Outcome.VISITED, wait=5.0, status=200, change=change, digest=digest))
            clock.now += 0.01
            done += 1
            if done % args.every == 0:
                print(f"{done:>9} visits  {rss_mb():6.1f} MB  {time.monotonic() - start:5.0f} s", flush=True)
        if done < args.visits:
            print(f"stopped by --max-seconds after {done} visits", flush=True)
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
