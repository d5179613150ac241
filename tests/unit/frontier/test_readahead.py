"""A queue's window (frontier/readahead.py) stays what the store holds in its range,
whatever the frontier writes, so the heads it gives are the store's."""

from __future__ import annotations

import hashlib
import random

from scrapy_adaptive.frontier import ChangeState, Frontier, Outcome, Politeness, Visit
from scrapy_adaptive.frontier.hostqueue import HostQueue, order
from scrapy_adaptive.frontier.readahead import AHEAD, GROWTH
from scrapy_adaptive.model import Plan
from scrapy_adaptive.store.base import Store

from .test_frontier import Clock


def _check(store: Store, q: HostQueue) -> None:
    scan = list(store.queue_entries(q.name, limit=10_000))
    head = next((e for e in scan if e[2] not in q.out), None)
    if q.head is not None:  # the head the frontier keeps is the store's first entry not out
        assert q.head == head
    window = q.window
    if window:
        assert window == sorted(window, key=order)
        assert q.window_keys == [order(entry) for entry in window]
        first = scan.index(window[0])
        if q.window_to_end:
            assert scan[first:] == window
        else:
            assert scan[first : first + len(window)] == window
        assert len(window) <= len(q.out) + 1 + AHEAD + GROWTH


def test_windows_follow_every_write_of_the_frontier(store: Store) -> None:
    rng = random.Random(11)
    clock = Clock(1_800_000_000.0)
    frontier = Frontier(store, Politeness(min_delay=0, max_delay=0, delay_factor=0, valence=2), clock=clock)
    urls = [(f"http://h{i % 3}/{i}", f"h{i % 3}") for i in range(60)]
    fps = [hashlib.sha1(url.encode()).digest() for url, _ in urls]
    for (url, queue), fp in zip(urls[:40], fps[:40], strict=True):
        frontier.add(fp, url, queue, {"url": url})
    issued = 0
    for _ in range(1500):
        clock.t += rng.choice([0.0, 0.5, 5.0])
        action = rng.random()
        if action < 0.55:
            out = frontier.next()
            if out is not None:
                issued += 1
                frontier.downloads.fetch_ended(out.fp, 0.1)
                outcome = rng.choice([Outcome.VISITED, Outcome.VISITED, Outcome.RETRY, Outcome.FAILED])
                plan = Plan(rng.choice([0.0, 1.0, 30.0]))
                visit = Visit(outcome, status=200, change=ChangeState.CHANGED)
                frontier.update(out.fp, visit, plan if outcome is Outcome.VISITED else None)
        elif action < 0.8:
            i = rng.randrange(len(urls))
            frontier.add(fps[i], urls[i][0], urls[i][1], {"url": urls[i][0]}, directive=rng.choice([0, 0, 1]))
        elif action < 0.9:
            i = rng.randrange(len(urls))
            frontier.add(fps[i], urls[i][0], urls[i][1], {"url": urls[i][0]}, force=True)
        else:
            i = rng.randrange(len(urls))
            frontier.forget([(urls[i][1], fps[i])])
        for q in frontier.queues():
            _check(store, q)
    assert issued > 300
    assert any(q.window for q in frontier.queues())
