"""Memory of the frontier's head windows (``frontier/readahead.py``).

Run::

    python -m bench.window_memory --hosts 10000 --urls-per-host 60 --cycles-per-host 1,3,20

Each queue that has issued keeps a few entries past its head so the next
heads need no seek.  This loads ``hosts × urls-per-host`` URLs into a real
LevelDB frontier, runs next + update cycles (each URL revisited a day later,
so queues keep their heads) and prints the windows' deep size: total, per
queue and per entry, after each number of cycles per host.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from typing import Any

from scrapy_adaptive.frontier import ChangeState, Frontier, Outcome, Visit
from scrapy_adaptive.store.leveldb import LevelDBStore

from .frontier_bench import FakeClock, _politeness, request_dict


def deep_size(obj: Any) -> int:
    """Bytes of *obj* and, for lists and tuples, of everything in them."""
    size = sys.getsizeof(obj)
    if isinstance(obj, (list, tuple)):
        size += sum(deep_size(x) for x in obj)
    return size


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--hosts", type=int, default=10_000)
    p.add_argument("--urls-per-host", type=int, default=60)
    p.add_argument("--cycles-per-host", default="1,3,20", help="comma-separated, increasing")
    args = p.parse_args(argv)
    clock = FakeClock(time.time())
    with tempfile.TemporaryDirectory() as state:
        store = LevelDBStore(state)
        frontier = Frontier(store, _politeness(), clock=clock)
        for h in range(args.hosts):
            for i in range(args.urls_per_host):
                url = f"http://h{h}.test/p{i}"
                fp = hashlib.sha1(url.encode()).digest()
                frontier.add(fp, url, f"h{h}.test", request_dict(url))
        done = 0
        for per_host in sorted(int(x) for x in args.cycles_per_host.split(",")):
            empty = 0
            while done < args.hosts * per_host and empty < 1_000:
                issued = frontier.next()
                if issued is None:
                    empty += 1
                    clock.now += 0.001
                    continue
                frontier.leases.fetch_ended(issued.fp, 0.1)
                visit = Visit(Outcome.VISITED, wait=86_400.0, status=200, change=ChangeState.UNCHANGED, size=1000)
                frontier.update(issued.fp, visit)
                clock.now += 0.001
                done += 1
            windows = [q.window for q in frontier.book]
            size = sum(deep_size(w) for w in windows)
            entries = sum(len(w) for w in windows)
            print(
                f"{args.hosts} hosts × {args.urls_per_host} URLs, {done} cycles: windows {size / 1e6:.2f} MB, "
                f"{entries} entries, {size / max(len(windows), 1):.0f} B per queue, "
                f"{size / max(entries, 1):.0f} B per entry"
            )
        store.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
