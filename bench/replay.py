"""Real change histories as a simulator world, and the hindsight optimum on them.

The trace holds one JSON object per line, ``{"doc", "service",
"versions": [unix seconds, ...]}``.  Each document becomes a URL on the
host of its service, discovered at its first version (which the first
visit captures); its later versions are the changes to capture.  The world
ends at the last version in the file.  :mod:`bench.fastreplay` replays
policies on it at equal fetches.

**Hindsight optimum.**  The best *periodic* schedule chosen knowing the
change times: every document gets its own fixed interval (from a 2^(1/4)
geometric grid between one hour and ten years, or is never revisited),
versions captured are averaged over four phases, and the intervals are
chosen to maximise captured versions under the revisit budget (Lagrange
multiplier by bisection, mixing the two bracketing solutions to meet the
budget exactly).  A clairvoyant schedule free to fetch at any instant
would capture min(1, budget ÷ versions) – 100 % from K = 1 – which no
online policy can approach and which therefore says nothing; the periodic
hindsight optimum is the fair ceiling for schedules that do not know the
future, the quantity the Poisson theory optimises.

The same schedules can be chosen for **freshness** instead
(``objective="freshness"``): the share of the time, from each document's
first visit to the world's end, that the copy was the live version, the
copy being what the last visit fetched.  Cho and Garcia-Molina's
freshness optimum gives slow documents more and fast ones less than the
versions optimum does; this is its hindsight ceiling at a budget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .sim.intensity import CONSTANT
from .sim.world import DAY, HOUR, Host, Page, World, WorldSpec
from .traces.stats import read_trace

#: the policy the crawler ships as its default (ADAPTIVE_WAIT_POLICY); Heritrix's
#: rule stays available by name (docs/lab/policy-real-traces.md has the figures behind the choice)
DEFAULT_POLICY = "union"
#: a year: documents live for years and a budget of one fetch per version
#: leaves many of them months between visits; 28 days would be a floor the
#: budget cannot pay for
MAX_WAIT = 365 * DAY


# -- the trace as a world -------------------------------------------------------------------------


def _host_name(service: str, known: dict[str, str]) -> str:
    if service not in known:
        slug = "".join(c if c.isalnum() else "-" for c in service.lower()).strip("-") or "service"
        known[service] = f"{slug}-{len(known)}.trace"
    return known[service]


def load_trace(path: str) -> World:
    """Build a world from a trace file (one JSON document per line; ``.gz`` is read transparently)."""
    return world_from_docs(list(read_trace(path)), path)


def world_from_docs(rows: list[dict[str, Any]], label: str = "trace") -> World:
    """Build a world from trace rows ``{"doc", "service", "versions"}`` (versions sorted)."""
    docs = [{"doc": r["doc"], "service": r["service"], "v": r["versions"]} for r in rows if r["versions"]]
    if not docs:
        raise ValueError(f"{label}: no documents with versions")
    start = min(d["v"][0] for d in docs)
    end = max(d["v"][-1] for d in docs) + 1.0
    names: dict[str, str] = {}
    hosts: dict[str, Host] = {}
    pages: list[Page] = []
    for i, d in enumerate(docs):
        host = _host_name(d["service"], names)
        hosts.setdefault(host, Host(host))
        discovered = d["v"][0]
        changes = d["v"][1:]
        rate = len(changes) / max(end - discovered, 1.0)
        pages.append(Page(index=i, url=f"https://{host}/{i}", host=host, kind="poisson", rate=rate, scale=rate,
                          profile=CONSTANT, changes=changes, size=20_000, duration=0.5, created=discovered,
                          discovered=discovered))  # fmt: skip
    spec = WorldSpec(name="trace", urls=len(pages), hosts=len(hosts), days=(end - start) / DAY)
    return World(spec, hosts, pages, start, end)


# -- the hindsight optimum -----------------------------------------------------------------------


@dataclass
class Hindsight:
    revisits: float
    captured: float
    changes: int
    #: the optimum's (revisits, captured) for each page, in ``world.pages`` order
    per_page: tuple[tuple[float, float], ...] = ()
    #: seconds the chosen schedules kept the copies current, of ``observed`` seconds
    #: (each document from its first visit to the world's end)
    fresh: float = 0.0
    observed: float = 0.0

    @property
    def recall(self) -> float:
        return self.captured / self.changes if self.changes else 1.0

    @property
    def freshness(self) -> float:
        """The share of the time the copies were the live versions."""
        return self.fresh / self.observed if self.observed else 1.0


def _stale_seconds(changes: Sequence[float], visits: Sequence[float], end: float) -> float:
    """Seconds the copy was not the live version: from the first change
    after each visit to the next visit (or *end*); *visits* sorted, the
    first one the document's first visit."""
    stale, j = 0.0, 0
    for a, b in zip(visits, [*visits[1:], end]):
        while j < len(changes) and changes[j] <= a:
            j += 1
        if j < len(changes) and changes[j] < b:
            stale += b - changes[j]
    return stale


def _doc_options(page: Page, end: float, grid: list[float], phases: int) -> list[tuple[float, float, float]]:
    """(revisits, captured, fresh seconds) of periodic schedules at each grid interval, phase-averaged."""
    first = page.discovered or 0.0
    life = end - first
    options = [(0.0, 0.0, life - _stale_seconds(page.changes, [first], end))]
    for interval in grid:
        if interval > 2 * life and options[-1][0] <= 1.0:
            break
        fetches = captured = fresh = 0.0
        for k in range(phases):
            phase = interval * k / phases
            # visits at first (discovery), then first + phase + n·interval, n ≥ 1 (phase 0: n·interval)
            offset = phase if phase > 0 else interval
            n = 0 if offset > life else int((life - offset) // interval) + 1
            fetches += n
            visits = [first] + [first + offset + i * interval for i in range(n)]
            fresh += life - _stale_seconds(page.changes, visits, end)
            if n == 0:
                continue
            last = visits[-1]
            slots = set()
            for t in page.changes:
                if t > last:
                    break
                x = t - first - offset
                slots.add(-1 if x <= 0 else math.ceil(x / interval - 1e-12))
            captured += len(slots)
        options.append((fetches / phases, captured / phases, fresh / phases))
    return options


def hindsight_optimum(
    world: World, revisits: float, *, phases: int = 4, min_interval: float = HOUR, objective: str = "versions"
) -> Hindsight:
    """Best per-document periodic schedule, knowing the changes, at *revisits*:
    the one capturing the most versions, or with ``objective="freshness"``
    the one keeping the copies current the longest.

    The grid of intervals starts at *min_interval* (an hour for real
    histories; the politeness delay for a world compressed into minutes,
    :mod:`bench.changing_web`).
    """
    if objective not in ("versions", "freshness"):
        raise ValueError(f"objective must be versions or freshness, not {objective!r}")
    end = world.start + world.duration
    grid = [min_interval * 2 ** (k / 4) for k in range(0, 4 * 17)]
    docs = [_doc_options(p, end, grid, phases) for p in world.pages]
    changes = sum(len(p.changes) for p in world.pages)
    observed = sum(end - (p.discovered or 0.0) for p in world.pages)
    value = 2 if objective == "freshness" else 1

    def choose(mu: float) -> list[tuple[float, float, float]]:
        return [max(options, key=lambda o: o[value] - mu * o[0]) for options in docs]

    def pick(mu: float) -> tuple[float, float, float]:
        chosen = choose(mu)
        return sum(o[0] for o in chosen), sum(o[1] for o in chosen), sum(o[2] for o in chosen)

    lo, hi = 0.0, 1.0
    while pick(hi)[0] > revisits:
        hi *= 2
    f_lo, c_lo, s_lo = pick(lo)
    if f_lo <= revisits:
        return Hindsight(f_lo, c_lo, changes, tuple(o[:2] for o in choose(lo)), s_lo, observed)
    for _ in range(60):
        mid = (lo + hi) / 2
        if pick(mid)[0] > revisits:
            lo = mid
        else:
            hi = mid
    (f1, c1, s1), (f2, c2, s2) = pick(lo), pick(hi)
    w = 0.0 if f1 == f2 else (revisits - f2) / (f1 - f2)
    per_page = tuple((b[0] + w * (a[0] - b[0]), b[1] + w * (a[1] - b[1])) for a, b in zip(choose(lo), choose(hi)))
    return Hindsight(revisits, c2 + w * (c1 - c2), changes, per_page, s2 + w * (s1 - s2), observed)


def fmt_delay(hours: float | None) -> str:
    """A median capture delay for a table: hours below two days, days above."""
    if hours is None:
        return "–"
    return f"{hours:.1f} h" if hours < 48 else f"{hours / 24:.1f} d"


def best_of(row: dict[str, dict[str, Any]], peers: Sequence[str]) -> str | None:
    """The peer of *peers* with the highest recall among those that reached the fetch count
    (a rule whose knob could not reach it bought its recall with other fetches)."""
    eligible = [p for p in peers if p in row and row[p]["exact"]]
    return max(eligible, key=lambda p: row[p]["recall"]) if eligible else None
