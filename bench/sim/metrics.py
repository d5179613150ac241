"""What a run achieved, measured against the analytical optimum.

Definitions (per run; "changes" are true content changes after a URL's
first visit, "revisits" all fetches but the first of each URL):

* **recall** – changes whose version was captured ÷ changes, where a
  revisit captures (at most) one version: the one live when it fetches,
  if anything changed since the previous visit;
* **precision** – revisits that captured a version ÷ revisits;
* **efficiency** – recall ÷ the optimum's recall at the same realised
  revisit count, optimum = (1 − e^(−Λ/B))·B/Λ with Λ = changes and B =
  revisits over the same span (proportional allocation with exact rates
  and periodic visits);
* **freshness** – share of time the archived copy equalled the live page;
  **mean age** – time-average of (now − first uncaptured change), zero
  while fresh; **capture delay** – captured version's age when fetched
  (the mean, ``capture_delay_h``, and the median,
  ``median_capture_delay_h``: the median time from a version's
  appearance to its capture, the figure printed beside recall in every
  replay table; :func:`capture_delay` and :func:`median_delay`, shared by
  the replays);
* **violations** – two fetches of one host closer than its politeness
  floor (``min_delay`` or its Crawl-delay).

The first fetch of each URL is discovery: every policy pays it, so it is
reported (``first_visits``) but left out of precision and efficiency.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .world import DAY, KINDS, Page, World


def optimum_recall(changes: float, revisits: float) -> float:
    """(1 − e^(−Λ/B))·B/Λ: the best share of changes B fetches can capture."""
    if changes <= 0:
        return 1.0
    if revisits <= 0:
        return 0.0
    x = changes / revisits
    return -math.expm1(-x) / x


def capture_delay(changes: Sequence[float], k: int, j: int, now: float) -> float | None:
    """Seconds from the appearance of the version a fetch at *now* captures to *now*; None: nothing captured.

    ``changes[k:j]`` are a page's changes since its previous visit (``j``
    from ``bisect_right(changes, now)``).  The fetch captures the version
    live at *now*, the one the last of them made; the earlier ones were
    overwritten unseen and count against recall, not here.  The one
    definition of the replays (:mod:`bench.replay`, :mod:`bench.fastreplay`)
    and the simulator, so their delays mean the same thing.
    """
    return now - changes[j - 1] if j > k else None


def median_delay(delays: Sequence[float]) -> float | None:
    """The median of capture *delays* (in their unit); None when there is none (no version captured).

    The median, not the mean: a few versions found months late (a quiet
    document's rare change) would make the mean say little about the
    typical wait an archive's user sees.
    """
    return statistics.median(delays) if delays else None


@dataclass
class RunResult:
    name: str = ""
    world: str = ""
    detection: str = ""
    urls: int = 0
    days: float = 0.0
    first_visits: int = 0
    revisits: int = 0
    changes: int = 0
    captured: int = 0
    recall: float = 0.0
    precision: float = 0.0
    optimum: float = 0.0
    efficiency: float = 0.0
    freshness: float = 0.0
    mean_age_h: float = 0.0
    capture_delay_h: float = 0.0
    #: the median time from a captured version's appearance to its capture (None: nothing captured)
    median_capture_delay_h: float | None = None
    gigabytes: float = 0.0
    revisits_per_day: float = 0.0
    budget_per_day: float | None = None
    budget_error: float | None = None
    violations: int = 0
    #: efficiency over the second half of the run (after learning)
    late_efficiency: float = 0.0
    late_revisits_per_day: float = 0.0
    by_kind: dict[str, dict[str, float]] = field(default_factory=dict)
    curve: list[dict[str, float]] = field(default_factory=list)
    noise_fetches_per_day: float | None = None
    wall_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    def set_budget(self, per_day: float | None) -> None:
        self.budget_per_day = per_day
        if per_day:
            self.budget_error = self.revisits_per_day / per_day - 1.0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


class Metrics:
    """Accumulates a run's counts; :meth:`finish` turns them into a result."""

    def __init__(self, world: World, bin_days: float, min_delay: float) -> None:
        self.world = world
        self.bin = bin_days * DAY
        n = len(world.pages)
        self.first_time = [math.nan] * n
        self.first_j = [0] * n
        self.revisits_by_page = [0] * n
        self.captured_by_page = [0] * n
        self.stale = 0.0
        self.age = 0.0
        self.delays: list[float] = []
        self.bytes = 0
        bins = int(math.ceil(world.duration / self.bin))
        self.bin_revisits = [0] * bins
        self.bin_captured = [0] * bins
        self.floor = {h.name: max(min_delay, h.crawl_delay or 0.0) for h in world.hosts.values()}
        self.last_fetch: dict[str, float] = {}
        self.violations = 0

    def _bin(self, t: float) -> int:
        return min(len(self.bin_revisits) - 1, max(0, int((t - self.world.start) // self.bin)))

    def fetch(self, page: Page, now: float, size: int) -> None:
        self.bytes += size
        last = self.last_fetch.get(page.host)
        if last is not None and now - last < self.floor[page.host] - 1e-6:
            self.violations += 1
        self.last_fetch[page.host] = now

    def first_visit(self, page: Page, now: float, j: int) -> None:
        self.first_time[page.index] = now
        self.first_j[page.index] = j

    def revisit(self, page: Page, now: float, changes: list[float], k: int, j: int) -> None:
        i = page.index
        self.revisits_by_page[i] += 1
        self.bin_revisits[self._bin(now)] += 1
        delay = capture_delay(changes, k, j, now)
        if delay is not None:
            self.captured_by_page[i] += 1
            self.bin_captured[self._bin(now)] += 1
            first = changes[k]
            self.stale += now - first
            self.age += (now - first) ** 2 / 2
            self.delays.append(delay)

    def finish(self, ptr: list[int], seen: list[bool]) -> RunResult:
        w = self.world
        end = w.start + w.duration
        bin_changes = [0] * len(self.bin_revisits)
        kinds: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        observed = 0.0
        stale, age = self.stale, self.age
        noise_pages = 0
        total_changes = 0
        for page in w.pages:
            i = page.index
            start_j = self.first_j[i] if seen[i] else 0
            since = self.first_time[i] if seen[i] else (page.discovered or w.start)
            observed += end - since
            n_changes = len(page.changes) - start_j
            total_changes += n_changes
            for t in page.changes[start_j:]:
                bin_changes[self._bin(t)] += 1
            if ptr[i] < len(page.changes):
                first = max(page.changes[ptr[i]], since)
                stale += end - first
                age += (end - first) ** 2 / 2
            kd = kinds[page.kind]
            kd["pages"] += 1
            kd["changes"] += n_changes
            kd["revisits"] += self.revisits_by_page[i]
            kd["captured"] += self.captured_by_page[i]
            noise_pages += page.kind == "noise"
        revisits = sum(self.revisits_by_page)
        captured = sum(self.captured_by_page)
        days = w.duration / DAY
        median = median_delay(self.delays)
        r = RunResult(world=w.spec.name, urls=len(w.pages), days=days, first_visits=sum(seen), revisits=revisits,
                      changes=total_changes, captured=captured,
                      recall=captured / total_changes if total_changes else 1.0,
                      precision=captured / revisits if revisits else 0.0,
                      optimum=optimum_recall(total_changes, revisits),
                      freshness=1.0 - stale / observed if observed else 1.0,
                      mean_age_h=age / observed / 3_600 if observed else 0.0,
                      capture_delay_h=sum(self.delays) / captured / 3_600 if captured else 0.0,
                      median_capture_delay_h=None if median is None else median / 3_600,
                      gigabytes=self.bytes / 1e9, revisits_per_day=revisits / days,
                      violations=self.violations)  # fmt: skip
        r.efficiency = r.recall / r.optimum if r.optimum else 0.0
        half = len(self.bin_revisits) // 2
        late_c = sum(bin_changes[half:])
        late_f = sum(self.bin_revisits[half:])
        late_cap = sum(self.bin_captured[half:])
        if late_c and late_f:
            r.late_efficiency = (late_cap / late_c) / optimum_recall(late_c, late_f)
        span_days = (len(self.bin_revisits) - half) * self.bin / DAY
        r.late_revisits_per_day = late_f / span_days if span_days else 0.0
        for b in range(len(self.bin_revisits)):
            c, f, cap = bin_changes[b], self.bin_revisits[b], self.bin_captured[b]
            recall = cap / c if c else 0.0
            efficiency = recall / optimum_recall(c, f) if c and f else 0.0
            day = (b + 1) * self.bin / DAY
            r.curve.append({"day": day, "revisits": f, "changes": c, "recall": recall, "efficiency": efficiency})
        for kind in KINDS:
            if kind not in kinds:
                continue
            kd = kinds[kind]
            r.by_kind[kind] = {
                "pages": kd["pages"],
                "revisit_share": kd["revisits"] / revisits if revisits else 0.0,
                "recall": kd["captured"] / kd["changes"] if kd["changes"] else 1.0,
                "precision": kd["captured"] / kd["revisits"] if kd["revisits"] else 0.0,
                "revisits_per_page_day": kd["revisits"] / kd["pages"] / days,
            }
        if noise_pages:
            r.noise_fetches_per_day = kinds["noise"]["revisits"] / noise_pages / days
        return r
