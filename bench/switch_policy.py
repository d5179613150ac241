# ruff: noqa: E501
"""Lab variant (kept for the record): a per-URL switch between burst and snap-back.

Each URL runs both families; each family's planned wait w_f at a real visit
is judged on the real interval Δ that followed, verdict c (changed 1,
unchanged 0): the family would have spent Δ/w_f fetches on it, and those
fetches landed in a changed interval or not.  Its score is the share of its
(virtual) fetches that landed in changed intervals, Σγᵏ c Δ/w_f / Σγᵏ Δ/w_f,
which is scale-free (a family calibrated to spend more is not preferred for
it).  The URL is scheduled by snap-back while its score minus burst's, plus
its class's (host's) mean difference, is positive (:class:`FamilyPool`).
A first version scored captured − μ·spent with μ the allocator's marginal
value and min(1, Δ/w) captured per changed interval; it always preferred the
family in charge (its planned wait is the interval).  Both did worse than
either family alone on OTA half A (``docs/lab/policy-real-traces.md``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scrapy_adaptive.model import ChangeState, Visit
from scrapy_adaptive.policies.burst import BurstWaitPolicy
from scrapy_adaptive.policies.history import elapsed, is_first_visit, visit_queue
from scrapy_adaptive.policies.snapback import SnapBackWaitPolicy
from scrapy_adaptive.policies.union import UnionWaitPolicy

#: the policy-memory key of the switch's numbers: [planned burst wait, planned snap wait, D]
KEY = "sw"
#: how much of a URL's score each new interval keeps (about 10 intervals of memory)
FORGET = 0.9


class FamilyPool:
    """Crawl-wide: the mean score difference D of the URLs of each class.

    Each URL registers its D as it moves (the old value is replaced), so a
    class's mean is exact at every moment; a URL with no record of its own
    follows its class.  State is two numbers per class (JSON-safe).
    """

    def __init__(self) -> None:
        self.classes: dict[str, list[float]] = {}  #: class → [Σ D, URLs]

    def register(self, key: str, old: float | None, new: float) -> None:
        """A URL of class *key* moved its D from *old* (None: new URL) to *new*."""
        entry = self.classes.setdefault(key, [0.0, 0.0])
        entry[0] += new - (old or 0.0)
        entry[1] += old is None

    def mean(self, key: str) -> float:
        entry = self.classes.get(key)
        return entry[0] / entry[1] if entry and entry[1] else 0.0

    def state(self) -> dict[str, Any]:
        return {"classes": {k: list(v) for k, v in self.classes.items()}}

    def restore(self, state: Mapping[str, Any]) -> None:
        self.classes = {str(k): [float(v[0]), float(v[1])] for k, v in state["classes"].items()}


class SwitchWaitPolicy(UnionWaitPolicy):
    """Burst allocation or the snap-back rule per URL, by their scores on its visits."""

    def __init__(
        self,
        burst: BurstWaitPolicy,
        snap: SnapBackWaitPolicy,
        pool: FamilyPool | None = None,
        *,
        forget: float = FORGET,
    ) -> None:
        super().__init__(burst, snap)
        self.pool = pool or FamilyPool()
        self.forget = forget

    def score(self, history: Mapping[str, Any], visit: Visit, stored: list[float] | None) -> list[float]:
        """The URL's decayed tallies after this visit, the last planned waits
        judged on the interval just seen: [Σ hits, Σ fetches] per family."""
        if stored is None:
            return [0.0, 0.0, 0.0, 0.0]
        w_burst, w_snap, *tally = stored
        interval = elapsed(history, visit)
        if interval is None or interval <= 0 or visit.change not in (ChangeState.CHANGED, ChangeState.UNCHANGED):
            return tally
        changed = visit.change is ChangeState.CHANGED
        out = []
        for planned, (hits, fetches) in ((w_burst, tally[0:2]), (w_snap, tally[2:4])):
            spent = interval / max(planned, 1e-9)
            out += [self.forget * hits + spent * changed, self.forget * fetches + spent]
        return out

    @staticmethod
    def advantage(tally: list[float]) -> float:
        """Snap-back's precision minus burst's (0 without evidence)."""
        if tally[1] <= 0 or tally[3] <= 0:
            return 0.0
        return tally[2] / tally[3] - tally[0] / tally[1]

    def next_wait(self, history: Mapping[str, Any], visit: Visit) -> float:
        old = (history.get("policy") or {}).get(KEY)
        stored = None if is_first_visit(history) or old is None else [float(x) for x in old]
        w_burst, w_snap, memory = self.waits(history, visit)
        tally = self.score(history, visit, stored)
        diff = self.advantage(tally)
        key = visit_queue(visit)
        self.pool.register(key, None if stored is None else self.advantage(stored[2:]), diff)
        memory[KEY] = [w_burst, w_snap, *tally]
        visit.policy_state = memory
        if self.burst.is_noise(memory) or not math.isfinite(w_snap):
            return w_burst
        return self.choose(memory, w_burst, w_snap, diff + self.pool.mean(key))

    def choose(self, memory: dict[str, Any], w_burst: float, w_snap: float, advantage: float) -> float:
        """The family with the better record on this URL (its class's as a prior)."""
        return w_snap if advantage > 0 else w_burst
