"""Change hints in the simulated worlds: sitemap / feed announcements.

A world with ``hint_recall`` > 0 announces a share of its changes, as
sitemaps and feeds do, imperfectly:

* **recall** – each true change is hinted with probability ``hint_recall``;
* **delay** – a hint reaches the crawler an exponential delay (mean
  ``hint_delay`` seconds) after the change; it claims the change's time as
  its modification time, so a hint that arrives after a visit already saw
  the change is stale and the frontier drops it;
* **precision** – false hints (a sitemap regenerated with fresh
  ``lastmod``s, a feed republishing old entries) are added so that
  true ÷ all = ``hint_precision``, spread evenly over pages and time,
  each claiming to be a change at its own time less a delay.

Every host publishes under one source name (``hint_source``), so trust is
learned per host.  The draws use their own generator (seeded from the world's
seed), so a world's pages and change times do not depend on its hints: the
same policy with and without hints sees the same changes.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .world import Page, WorldSpec


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
