"""An embed's own visits, planned net of the refreshes its pages bring.

Composite captures (``ADAPTIVE_REVISIT_EMBEDS_ON_CHANGE``,
:func:`~..frontier.adding.refetch_embed`) fetch an embed again whenever a
page that shows it is captured anew.  Those fetches are outside the embed's
own plan: the allocator (:mod:`.allocator`) gives every URL its fetch rate
f from its change rate under either objective as if the URLs were refreshed
independently, so an embed planned at f by its own wait and refreshed on top
of it by its pages is fetched more often than its share, and the feedback
loop takes the difference from every other URL's share (the pages' first).

The rule: a URL's total revisit rate is what the plan gives it; refreshes
others bring count towards it, and its own visits make up only the rest.
Each visit, own or brought, starts the URL's wait afresh, so with refreshes
arriving at a rate ρ (independent of the wait) the intervals are
min(W, an exponential of rate ρ), whose mean is (1 − e^(−ρW))/ρ.  For the
total rate to be the plan's f, the own wait is

    W = −ln(1 − ρ/f) / ρ          (ρ < f; ρ ≥ f: no own visit is needed)

which is 1/f without refreshes and grows as they cover more of the share
(ρ = f/2: 1.39/f).  Only the wait changes: the URL's registered rate, hence
the plan's demand, stays f, and the realised fetches the feedback loop
counts (own and brought) now add up to it.  Nothing here knows the objective
or the policy: the wait in is whatever the policy planned.

ρ is learned from the URL's own record, not told by the frontier: a visit
that comes before the wait planned for it (by more than a twentieth; an own
visit comes at or after it) was brought by something else, in practice a
page's capture.  Visits a change hint brought (the allocator counts those
apart), noise probes (timed by the noise guard) and the checks of an
unchecked first-visit Last-Modified (the policy itself may move those
forward, ``recheck_wait``) are not counted.  The estimate is a censored
Poisson one: brought visits over the time the URL was exposed to them (each
interval up to its planned wait), both forgotten with the rate estimator's
half-life, with one planned wait without a refresh as its prior; a URL
never brought forward keeps no state at all.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..change.noise_learner import PROBED
from ..model import Visit
from .hint_decisions import hinted_visit
from .history import elapsed, visit_time
from .memory import AGE_UNCHECKED, REFRESHES

#: a visit before this share of its planned wait was brought by another URL's capture
EARLY_SHARE = 0.95


def refresh_rate(memory: Mapping[str, Any], planned: float | None) -> float:
    """ρ: brought visits per second, from the counts in *memory* (0: none seen)."""
    state = memory.get(REFRESHES)
    if not (isinstance(state, list) and len(state) == 3):
        return 0.0
    brought, exposure = float(state[0]), float(state[1])
    prior = planned if planned and planned > 0 else 0.0
    return brought / (exposure + prior) if exposure + prior > 0 else 0.0


def observe_refreshes(
    memory: dict[str, Any], history: Mapping[str, Any], visit: Visit, half_life: float | None
) -> float:
    """Fold this visit into the URL's count of brought visits (in *memory*); ρ after it."""
    planned = history.get("wait")
    planned = float(planned) if isinstance(planned, int | float) and planned > 0 else None
    interval, now = elapsed(history, visit), visit_time(history, visit)
    before = history.get("policy") or {}
    if (
        planned is None
        or interval is None
        or now is None
        or hinted_visit(history)
        or PROBED in visit.annotations
        or before.get(AGE_UNCHECKED)
    ):
        return refresh_rate(memory, planned)
    brought = interval < EARLY_SHARE * planned
    state = memory.get(REFRESHES)
    if isinstance(state, list) and len(state) == 3:
        count, exposure, last = float(state[0]), float(state[1]), float(state[2])
        decay = 0.5 ** (max(0.0, now - last) / half_life) if half_life else 1.0
        count, exposure = count * decay, exposure * decay
    elif brought:
        # the first brought visit: the URL's visits before it came as planned
        count, exposure = 0.0, max(0, int(history.get("visits") or 1) - 1) * planned
    else:
        return 0.0  # never brought forward: nothing kept
    memory[REFRESHES] = [round(count + brought, 6), round(exposure + min(interval, planned), 3), round(now, 3)]
    return refresh_rate(memory, planned)


def net_wait(wait: float, rate: float, max_wait: float) -> float:
    """The own wait that, with refreshes at *rate* restarting it, revisits a
    URL at 1/*wait* on the whole (at most *max_wait*; never below *wait*)."""
    if rate <= 0 or wait <= 0 or wait >= max_wait:
        return wait
    covered = rate * wait
    if covered >= 1.0:
        return max_wait
    return min(max_wait, max(wait, -math.log1p(-covered) / rate))
