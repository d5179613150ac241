"""Synthetic worlds: hosts, pages, and every page's change times, seeded.

Everything random is drawn here, once, from one ``random.Random(seed)``:
the engine only reads the result, so two runs of any policy on the same
world see exactly the same changes.

Page classes (``Page.kind``):

* ``poisson`` – constant rate, log-normal across pages;
* ``static`` – never changes;
* ``bursty`` – quiet spells (1–6 months) broken by active spells (2–20
  days, 3–30 changes): a two-state Markov-modulated Poisson process;
* ``diurnal`` – changes in the host's local working hours on weekdays only
  (a weekly profile, host time zones differ);
* ``noise`` – content as a slow Poisson page, but the bytes differ at every
  fetch (a timestamp, a token): raw-byte change detection sees a change at
  every visit, normalised detection sees the real ones.

Hosts have Zipf-distributed sizes; a share of them sets a robots.txt
Crawl-delay (a politeness cap); a share honours conditional GETs (an
unchanged page then costs a few hundred bytes); a share sends a truthful
Last-Modified.

A world may announce a share of its changes, as sitemaps and feeds do,
imperfectly (``hint_*`` fields, :func:`make_hints`): each true change is
hinted with probability ``hint_recall``, reaching the crawler an exponential
delay (mean ``hint_delay``) after the change and claiming the change's time
(so a hint that arrives after a visit saw the change is stale, and the
frontier drops it); false hints (a sitemap regenerated with fresh
``lastmod``s, a feed republishing old entries) are added so that true ÷ all
= ``hint_precision``, spread over pages and time.  Every host publishes under
one source name (``hint_source``), so trust is learned per host.  Hints draw
from their own generator, so a world's pages and change times do not depend
on them: the same policy with and without hints sees the same changes.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field

from .intensity import CONSTANT, Piecewise

DAY = 86_400.0
HOUR = 3_600.0
WEEK = 7 * DAY
#: Monday 2024-01-01 00:00 UTC: simulated time starts on a week boundary
EPOCH = 1_704_067_200.0

KINDS = ("poisson", "static", "bursty", "diurnal", "noise")


@dataclass
class Host:
    name: str
    crawl_delay: float | None = None  #: robots.txt Crawl-delay (seconds)
    conditional: bool = False  #: answers 304 to conditional GETs
    last_modified: bool = False  #: sends a truthful Last-Modified
    profile: Piecewise | None = None  #: weekly change profile (diurnal pages)


@dataclass
class Page:
    index: int
    url: str
    host: str
    kind: str
    #: mean change rate over the run (changes per second): the oracle's λ
    rate: float
    #: λ(t) = scale × profile.rate(t)
    scale: float
    profile: Piecewise
    changes: list[float]
    size: int
    duration: float  #: fetch duration (drives the politeness wait)
    created: float  #: time of the content's first version (before the run)
    #: when the crawler learns the URL (None: at the start of the run)
    discovered: float | None = None


@dataclass
class WorldSpec:
    """What to generate.  ``mix`` maps page kinds to shares."""

    name: str = "poisson"
    urls: int = 20_000
    hosts: int = 200
    days: float = 180.0
    seed: int = 1
    mix: dict[str, float] = field(default_factory=lambda: {"poisson": 1.0})
    #: log-normal mean change interval: median (days) and σ of ln(rate)
    median_interval_days: float = 14.0
    rate_sigma: float = 1.0
    zipf_s: float = 1.0
    crawl_delay_share: float = 0.0
    crawl_delay: float = 1_800.0  #: 2 fetches an hour
    conditional_share: float = 0.5
    last_modified_share: float = 0.0
    #: change hints (sitemaps, feeds; :func:`make_hints`): share of changes announced
    #: (0: none), share of hints that are true, mean delay (s), source name
    hint_recall: float = 0.0
    hint_precision: float = 1.0
    hint_delay: float = 3_600.0
    hint_source: str = "sitemap"


@dataclass(frozen=True)
class SimHint:
    time: float  #: when the crawler receives it
    page: int  #: page index
    modified: float | None  #: the modification time it claims
    true: bool  #: announces a real change (for the report only)


def make_hints(spec: WorldSpec, pages: list[Page], start: float, end: float) -> list[SimHint]:
    """The world's hints, sorted by arrival (empty without ``hint_recall``)."""
    if spec.hint_recall <= 0 or not pages:
        return []
    if not 0 < spec.hint_precision <= 1:
        raise ValueError(f"hint_precision ({spec.hint_precision!r}) must be in (0, 1]")
    rng = random.Random(spec.seed * 1_000_003 + 7)
    delay = spec.hint_delay
    out: list[SimHint] = []
    for page in pages:
        for t in page.changes:
            if rng.random() < spec.hint_recall:
                arrival = t + (rng.expovariate(1.0 / delay) if delay > 0 else 0.0)
                if arrival <= end:
                    out.append(SimHint(arrival, page.index, t, True))
    n_false = round(len(out) * (1.0 - spec.hint_precision) / spec.hint_precision)
    for _ in range(n_false):
        page = rng.choice(pages)
        arrival = rng.uniform(start, end)
        claimed = arrival - (rng.expovariate(1.0 / delay) if delay > 0 else 0.0)
        out.append(SimHint(arrival, page.index, claimed, False))
    out.sort(key=lambda h: (h.time, h.page))
    return out


@dataclass
class World:
    spec: WorldSpec
    hosts: dict[str, Host]
    pages: list[Page]
    start: float
    end: float
    #: change hints, sorted by arrival
    hints: list[SimHint] = field(default_factory=list)

    @property
    def duration(self) -> float:
        return self.end - self.start

    def total_rate(self) -> float:
        return sum(p.rate for p in self.pages)


def _zipf_sizes(total: int, hosts: int, s: float, rng: random.Random) -> list[int]:
    """Host sizes ∝ 1/rank^s, every host at least one URL, summing to *total*."""
    hosts = min(hosts, total)
    weights = [1.0 / (k**s) for k in range(1, hosts + 1)]
    norm = sum(weights)
    sizes = [max(1, int(total * w / norm)) for w in weights]
    k = 0
    while sum(sizes) < total:
        sizes[k % hosts] += 1
        k += 1
    while sum(sizes) > total:
        i = max(range(hosts), key=lambda j: sizes[j])
        sizes[i] -= 1
    rng.shuffle(sizes)
    return sizes


def _weekly_profile(offset_hours: int) -> Piecewise:
    """Weekdays 08:00–19:00 local time: intensity 1; otherwise 0.05.

    Normalised to a mean of 1 so ``scale`` is the page's mean rate.
    """
    times = [h * HOUR for h in range(168)]
    rates = []
    for h in range(168):
        local = (h + offset_hours) % 168
        weekday, hour = divmod(local, 24)
        rates.append(1.0 if weekday < 5 and 8 <= hour < 19 else 0.05)
    mean = sum(rates) / 168
    return Piecewise(times, [r / mean for r in rates], period=WEEK, origin=EPOCH)


def _bursty_profile(start: float, end: float, rng: random.Random) -> tuple[Piecewise, float]:
    """Quiet spells and bursts; returns the profile (mean 1 over the run) and the mean rate."""
    quiet_mean = math.exp(rng.uniform(math.log(30 * DAY), math.log(180 * DAY)))
    burst_mean = math.exp(rng.uniform(math.log(2 * DAY), math.log(20 * DAY)))
    per_burst = math.exp(rng.uniform(math.log(3.0), math.log(30.0)))
    burst_rate = per_burst / burst_mean
    quiet_rate = 0.02 * burst_rate * burst_mean / quiet_mean  # ~2 % of changes outside bursts
    times, rates = [], []
    t = start - rng.uniform(0, quiet_mean)  # the run starts somewhere in a spell
    bursting = rng.random() < burst_mean / (burst_mean + quiet_mean)
    while t < end + 60 * DAY:
        length = rng.expovariate(1.0 / (burst_mean if bursting else quiet_mean))
        times.append(t)
        rates.append(burst_rate if bursting else quiet_rate)
        t += length
        bursting = not bursting
    profile = Piecewise(times, rates)
    mean = (profile.cumulative(end) - profile.cumulative(start)) / (end - start)
    return profile, mean


def _changes(scale: float, profile: Piecewise, start: float, end: float, rng: random.Random) -> list[float]:
    """Change times in (start, end]: unit-rate arrivals in hazard time."""
    if scale <= 0:
        return []
    out = []
    h = profile.cumulative(start)
    while True:
        h += rng.expovariate(1.0) / scale
        t = profile.inverse(h)
        if t > end:
            return out
        out.append(t)


def build_world(spec: WorldSpec) -> World:
    """Draw hosts, pages and change times for *spec* (deterministic)."""
    rng = random.Random(spec.seed)
    start = EPOCH
    end = start + spec.days * DAY
    sizes = _zipf_sizes(spec.urls, spec.hosts, spec.zipf_s, rng)
    hosts: dict[str, Host] = {}
    kinds = list(spec.mix)
    weights = [spec.mix[k] for k in kinds]
    median_rate = 1.0 / (spec.median_interval_days * DAY)
    pages: list[Page] = []
    for h, size in enumerate(sizes):
        name = f"h{h:04d}.example"
        host = Host(name, crawl_delay=spec.crawl_delay if rng.random() < spec.crawl_delay_share else None,
                    conditional=rng.random() < spec.conditional_share,
                    last_modified=rng.random() < spec.last_modified_share,
                    profile=_weekly_profile(rng.randrange(-8, 10)))  # fmt: skip
        hosts[name] = host
        for _ in range(size):
            i = len(pages)
            kind = rng.choices(kinds, weights)[0]
            mean = median_rate * math.exp(rng.gauss(0.0, spec.rate_sigma))
            profile = CONSTANT
            if kind == "static":
                mean = 0.0
            elif kind == "diurnal":
                profile = host.profile or CONSTANT
            elif kind == "bursty":
                profile, mean = _bursty_profile(start, end, rng)
            scale = 1.0 if kind == "bursty" else mean
            changes = _changes(scale, profile, start, end, rng)
            size = max(500, int(20_000 * math.exp(rng.gauss(0.0, 1.0))))  # the rng's draws in the same order
            pages.append(Page(index=i, url=f"https://{name}/p/{i}", host=name, kind=kind, rate=mean, scale=scale,
                              profile=profile, changes=changes, size=size, duration=rng.uniform(0.1, 1.0),
                              created=start - rng.uniform(0, 365 * DAY)))  # fmt: skip
    return World(spec, hosts, pages, start, end, make_hints(spec, pages, start, end))


#: the named worlds of the lab (20,000 URLs, 200 hosts, 180 days unless scaled)
PRESETS: dict[str, dict[str, object]] = {
    "static": {"mix": {"static": 1.0}},
    "poisson": {"mix": {"poisson": 1.0}},
    "bursty": {"mix": {"bursty": 1.0}},
    "diurnal": {"mix": {"diurnal": 1.0}},
    "noise": {"mix": {"poisson": 0.95, "noise": 0.05}},
    "polite": {"mix": {"poisson": 1.0}, "crawl_delay_share": 0.2},
    "lastmod": {"mix": {"poisson": 1.0}, "last_modified_share": 0.5},
    "hints": {"mix": {"poisson": 1.0}, "hint_recall": 0.8, "hint_precision": 0.9},
    "web": {
        "mix": {"poisson": 0.4, "static": 0.2, "bursty": 0.15, "diurnal": 0.2, "noise": 0.05},
        "crawl_delay_share": 0.1,
        "last_modified_share": 0.5,
    },
}


def preset(name: str, *, seed: int = 1, scale: float = 1.0, days: float = 180.0) -> WorldSpec:
    """A named world; *scale* shrinks URLs and hosts together (for quick runs)."""
    if name not in PRESETS:
        raise KeyError(f"unknown world {name!r}; known: {', '.join(PRESETS)}")
    spec = WorldSpec(name=name, seed=seed, days=days, **PRESETS[name])  # type: ignore[arg-type]
    spec.urls = max(10, round(spec.urls * scale))
    spec.hosts = max(2, round(spec.hosts * scale))
    return spec
