# ruff: noqa: E501
"""Lab variant: the union with a learned tilt between its two families.

Each URL runs both families (as :class:`UnionWaitPolicy`); the wait is
min(e^{+θ}·w_burst, e^{−θ}·w_snap) with θ (log scale, bounded) learned
crawl-wide, or per class of URLs (``visit.queue``) shrunk to the crawl's.
Each revisit is attributed to the family whose (tilted) wait was the
smaller at the previous visit (``memory["mx"]``: 0 burst, 1 snap-back).
:class:`TiltLearner` keeps decayed counts of triggered revisits and
captures per family and moves θ toward the family that captures more per
triggered revisit.  The two budget loops keep the total on budget.

Modes (``mode``):

* ``"yield"``: integral control, θ += η·(ln ŷ_snap − ln ŷ_burst) at each
  revisit, so θ settles where the families' average yields are equal;
* ``"prop"``: θ follows k·(ln ŷ_snap − ln ŷ_burst) (no integration);
* ``"close"``: yields compared on comparable revisits only: revisits whose
  two (tilted) planned waits were within a factor ``near`` of each other
  (the marginal revisits, where the tilt decides), each family scored on
  the ones it triggered.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scrapy_adaptive.model import ChangeState, Visit
from scrapy_adaptive.policies.burst import BurstWaitPolicy
from scrapy_adaptive.policies.history import is_first_visit, visit_queue
from scrapy_adaptive.policies.snapback import SnapBackWaitPolicy
from scrapy_adaptive.policies.union import UnionWaitPolicy

#: the policy-memory key: [family that triggered the wait set at the last visit, comparable (0/1)]
KEY = "mx"
BURST, SNAP = 0, 1


class TiltLearner:
    """Decayed per-family tallies [revisits, captures] and the tilt θ, per class and crawl-wide."""

    def __init__(
        self,
        *,
        memory: float = 500.0,
        gain: float = 0.002,
        bound: float = math.log(4.0),
        mode: str = "yield",
        engage: float = 30.0,
        per_class: bool = False,
        shrink: float = 50.0,
        initial: float = 0.0,
    ) -> None:
        self.keep = 1.0 - 1.0 / memory
        self.gain = gain
        self.bound = bound
        self.mode = mode
        self.engage = engage
        self.per_class = per_class
        self.shrink = shrink
        self.tally: dict[str, list[float]] = {}  #: class → [n_b, c_b, n_s, c_s]
        self.theta: dict[str, float] = {"*": initial}

    def _log_ratio(self, t: list[float], prior: list[float] | None) -> float | None:
        if prior is not None:
            w = [p * self.shrink / max(self.shrink, prior[0] + prior[2]) for p in prior]
            t = [a + b for a, b in zip(t, w)]
        if t[0] < self.engage or t[2] < self.engage:
            return None
        y_b = (t[1] + 0.5) / (t[0] + 1.0)
        y_s = (t[3] + 0.5) / (t[2] + 1.0)
        return math.log(y_s) - math.log(y_b)

    def observe(self, key: str, family: int, changed: bool) -> None:
        for k in ("*", key) if self.per_class else ("*",):
            t = self.tally.setdefault(k, [0.0, 0.0, 0.0, 0.0])
            for i in range(4):
                t[i] *= self.keep
            t[2 * family] += 1.0
            t[2 * family + 1] += changed
            prior = None if k == "*" else self.tally["*"]
            lr = self._log_ratio(t, prior)
            if lr is None:
                continue
            if self.mode == "prop":
                theta = self.gain * lr
            else:
                theta = self.theta.get(k, self.theta.get("*", 0.0) if k != "*" else 0.0) + self.gain * lr
            self.theta[k] = max(-self.bound, min(self.bound, theta))

    def tilt(self, key: str) -> float:
        if self.per_class and key in self.theta:
            return self.theta[key]
        return self.theta.get("*", 0.0)


class MixWaitPolicy(UnionWaitPolicy):
    """The union, its two families weighed by a learned tilt."""

    def __init__(
        self,
        burst: BurstWaitPolicy,
        snap: SnapBackWaitPolicy,
        learner: TiltLearner | None = None,
        *,
        near: float | None = None,
    ) -> None:
        super().__init__(burst, snap)
        self.learner = learner or TiltLearner()
        self.near = near  #: "close" mode: a revisit counts when its two waits were within this factor

    def next_wait(self, history: Mapping[str, Any], visit: Visit) -> float:
        stored = (history.get("policy") or {}).get(KEY)
        w_burst, w_snap, memory = self.waits(history, visit)
        key = visit_queue(visit)
        if (
            stored is not None
            and not is_first_visit(history)
            and visit.change in (ChangeState.CHANGED, ChangeState.UNCHANGED)
            and (self.near is None or stored[1])
        ):
            self.learner.observe(key, int(stored[0]), visit.change is ChangeState.CHANGED)
        visit.policy_state = memory
        if self.burst.is_noise(memory) or not math.isfinite(w_snap):
            memory[KEY] = [BURST, 0]
            return w_burst
        theta = self.learner.tilt(key)
        a, b = w_burst * math.exp(theta), w_snap * math.exp(-theta)
        family = SNAP if b < a else BURST
        close = 1 if self.near is not None and max(a, b) <= self.near * min(a, b) else 0
        memory[KEY] = [family, close]
        return min(max(min(a, b), self.snap.minimum), self.snap.maximum)
