"""The event loop: the real frontier, a fake clock, one wait policy.

Every URL of the world is added to a :class:`Frontier` over a
:class:`MemoryStore` at the start.  The loop asks the frontier for the next
URL (``next``), "fetches" it instantly at the current simulated time,
reports the end of the fetch (``fetch_ended``, which starts the host's
politeness wait exactly as in the crawler), builds the :class:`Visit` the
evaluators would build, asks the policy for the wait and hands the verdict
back (``update``).  When nothing is ready the clock jumps to the frontier's
next ready time.  Ordering, politeness and crawl-delays are therefore the
crawler's own code, not a model of it.

Fetches take no simulated time (the politeness wait is computed from the
page's fetch duration, as after a real fetch).  An optional global token
bucket (``fetch_cap``, fetches per second) models a crawler whose total
throughput is capped: URLs then wait in their queues and are issued late.
The bucket starts with one token per URL known at the start, so the cap
limits revisits, not the first crawl.  This is how a rule with no budget
knob (Heritrix's) is held to a budget: "capped at B".

Change hints of the world (:func:`.world.make_hints`) are handed to
:meth:`Frontier.hosts.hint` with the policy's ``hint_wait`` when the clock reaches
them, exactly as the crawler's scheduler does for a request's
``adaptive_hint``; their fate is counted in ``result.extra["hints"]``.
"""

from __future__ import annotations

import bisect
import math
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any

from scrapy_adaptive.change.noise import NOISE_LEARNED
from scrapy_adaptive.frontier import ChangeState, Frontier, MemoryStore, Outcome, Politeness, Visit
from scrapy_adaptive.frontier.hints import CONFIRMED, REFUTED, Hint
from scrapy_adaptive.model import Plan
from scrapy_adaptive.policies.base import WaitPolicy

from .metrics import Metrics, RunResult
from .world import World

_FP = struct.Struct(">I")
NOT_MODIFIED_BYTES = 300
DETECTIONS = ("normalised", "raw", "learned")
_UNPROBED, _PROBING, _CONFIRMING, _SETTLED = 0, 1, 2, 3


@dataclass
class RunConfig:
    """How the crawler sees the world."""

    #: "normalised": the digest ignores noise; "raw": any byte change is a
    #: change; "learned": raw until the crawler's noise learner
    #: (``change/noise.py``) has probed the page: a page without usable
    #: validators is probed twice (due at once, politeness spaces them) after
    #: its first changed revisit, and a noise page is normalised from the second probe on
    detection: str = "normalised"
    history_size: int = 16
    #: total fetches per second the crawler can make (None: unlimited)
    fetch_cap: float | None = None
    politeness: Politeness = field(default_factory=lambda: Politeness(delay_factor=5.0, min_delay=2.0, max_delay=5.0))
    bin_days: float = 15.0


def simulate(
    world: World,
    policy: WaitPolicy,
    config: RunConfig | None = None,
    *,
    name: str = "",
    on_discover: Callable[[int], None] | None = None,
) -> RunResult:
    """Run *policy* over *world*; return the metrics.

    Pages with a ``discovered`` time are added to the frontier when the
    clock reaches it; *on_discover* is then called with the number of URLs
    known so far (the replay uses it to grow the budget with the crawl).
    """
    cfg = config or RunConfig()
    if cfg.detection not in DETECTIONS:
        raise ValueError(f"detection must be one of {', '.join(DETECTIONS)}")
    raw = cfg.detection == "raw"
    learning = cfg.detection == "learned"
    clock = [world.start]
    frontier = Frontier(MemoryStore(), cfg.politeness, history_size=cfg.history_size, clock=lambda: clock[0])
    pages = world.pages
    pending = sorted((p for p in pages if p.discovered is not None), key=lambda p: (p.discovered, p.index))
    pending.reverse()  # pop() from the end: earliest first
    known = 0
    for page in pages:
        if page.discovered is None:
            frontier.add(_FP.pack(page.index), page.url, page.host, {"url": page.url})
            known += 1
    delays = {h.name: h.crawl_delay for h in world.hosts.values() if h.crawl_delay is not None}

    def discover(now: float) -> None:
        nonlocal known
        grew = False
        while pending and (pending[-1].discovered or 0.0) <= now:
            page = pending.pop()
            frontier.add(_FP.pack(page.index), page.url, page.host, {"url": page.url})
            known += 1
            grew = True
        for host, delay in list(delays.items()):
            if any(q.name == host for q in frontier.queues()):
                frontier.hosts.set_crawl_delay(host, delay)
                del delays[host]
        if grew and on_discover is not None:
            on_discover(known)

    discover(world.start)

    metrics = Metrics(world, cfg.bin_days, cfg.politeness.min_delay)
    ptr = [0] * len(pages)  # first change not yet seen by a visit
    seen = [False] * len(pages)
    probing = [_UNPROBED] * len(pages)  # the noise learner's state per page
    hosts = world.hosts
    end = world.start + world.duration
    cap = cfg.fetch_cap
    bucket = max(1.0, cap * 3_600.0) if cap else 0.0  # one hour of fetches may be saved up
    tokens = float(known)  # the cap limits revisits: the first crawl is paid up front
    t_tokens = world.start
    wall = time.perf_counter()
    hints, h_next = world.hints, 0
    hint_counts: dict[str, int] = {}
    source = world.spec.hint_source

    while True:
        now = clock[0]
        if now > end:
            break
        if pending and (pending[-1].discovered or 0.0) <= now:
            discover(now)
        while h_next < len(hints) and hints[h_next].time <= now:
            h = hints[h_next]
            h_next += 1
            hint = Hint(pages[h.page].url, h.modified, source)
            fate = frontier.hosts.hint(pages[h.page].host, _FP.pack(h.page), hint, policy.hint_wait).value
            hint_counts[fate] = hint_counts.get(fate, 0) + 1
        if cap:
            if tokens < bucket:
                tokens = min(bucket, tokens + (now - t_tokens) * cap)
            t_tokens = now
            if tokens < 1.0 - 1e-9:
                # at least a millisecond: a step below the clock's resolution would never end
                clock[0] = now + max((1.0 - tokens) / cap, 1e-3)
                continue
        issued = frontier.next()
        if issued is None:
            ready = frontier.next_ready_time()
            if pending:
                upcoming = pending[-1].discovered or 0.0
                ready = upcoming if ready is None else min(ready, upcoming)
            if h_next < len(hints):
                ready = hints[h_next].time if ready is None else min(ready, hints[h_next].time)
            if ready is None or ready > end:
                break
            clock[0] = max(now, ready)
            continue
        tokens -= 1.0
        i = _FP.unpack(issued.fp)[0]
        page = pages[i]
        host = hosts[page.host]
        changes = page.changes
        k = ptr[i]
        j = bisect.bisect_right(changes, now, lo=k)
        ptr[i] = j
        first = not seen[i]
        seen[i] = True
        really_changed = j > k and not first
        probe = probed = False
        if first:
            change = ChangeState.CHANGED  # a new URL: its first version
            metrics.first_visit(page, now, j)
        elif learning and probing[i] == _PROBING:
            # the first probe: held back (unchanged) while a second pair tells
            probing[i], probe = _CONFIRMING, True
            change = ChangeState.UNCHANGED
            metrics.revisit(page, now, changes, k, j)
        elif learning and probing[i] == _CONFIRMING:
            # the second probe: what moved over both pairs is learned as noise
            # (a real change within those seconds is rare enough to ignore here)
            probing[i], probed = _SETTLED, True
            change = ChangeState.UNCHANGED
            metrics.revisit(page, now, changes, k, j)
        else:
            noisy = page.kind == "noise" and (raw or (learning and probing[i] != _SETTLED))
            change = ChangeState.CHANGED if (really_changed or noisy) else ChangeState.UNCHANGED
            metrics.revisit(page, now, changes, k, j)
            validators = page.kind != "noise" and (host.conditional or host.last_modified)
            if learning and change is ChangeState.CHANGED and probing[i] == _UNPROBED and not validators:
                probing[i], probe = _PROBING, True
        status, size = 200, page.size
        if change is ChangeState.UNCHANGED and host.conditional and page.kind != "noise":
            status, size = 304, NOT_MODIFIED_BYTES
        last_modified = None
        if host.last_modified:
            modified = now if page.kind == "noise" else (changes[j - 1] if j > 0 else page.created)
            last_modified = formatdate(modified, usegmt=True)
        metrics.fetch(page, now, size)
        frontier.downloads.fetch_ended(issued.fp, page.duration)
        # a learned noise page is marked as the visit middleware marks it
        learned = (NOISE_LEARNED,) if learning and page.kind == "noise" and probed else ()
        visit = Visit(Outcome.VISITED, status=status, change=change, content_type="text/html", size=page.size,
                      last_modified=last_modified, duration=page.duration, url=page.url, queue=page.host, depth=0,
                      overdue=issued.overdue, fetched=now, annotations=learned,
                      probe=0.0 if probe else None)  # fmt: skip
        plan: Plan = policy.plan(issued.record.snapshot(), visit)
        if not (plan.wait >= 0 and math.isfinite(plan.wait)):
            raise ValueError(f"{type(policy).__name__} returned an invalid wait {plan.wait!r} for {page.url}")
        record = frontier.update(issued.fp, visit, plan)
        for word in (CONFIRMED, REFUTED):  # what the frontier concluded of the hint
            if record is not None and word in record.notes:
                hint_counts[word] = hint_counts.get(word, 0) + 1

    result = metrics.finish(ptr, seen)
    if hints:
        result.extra["hints"] = {"received": h_next, **hint_counts}
    result.name = name or type(policy).__name__
    result.wall_seconds = time.perf_counter() - wall
    return result


def describe(result: RunResult) -> dict[str, Any]:
    """The result as a JSON-safe dict."""
    return result.as_dict()
