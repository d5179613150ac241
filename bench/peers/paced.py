"""A peer's rule held to a revisit budget, as the snap-back policy holds StormCrawler's.

The replay compares the default, which spends ``ADAPTIVE_BUDGET`` (revisits
per day), with the peers' rules at the one time scale that spends the same
number of fetches over the whole history, a scale chosen with hindsight of
years.  A crawler given a daily budget has no such hindsight; the fair peer
for it is the rule made budget-aware the same way the product makes
StormCrawler's (:class:`~scrapy_adaptive.policies.snapback.SnapBackWaitPolicy`):
the rule runs in normalised time and one crawl-wide scale from a
:class:`~scrapy_adaptive.policies.budget_pace.BudgetPace` turns its waits into
seconds.  Lab only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scrapy_adaptive.model import Plan, Visit
from scrapy_adaptive.policies.base import WaitPolicy
from scrapy_adaptive.policies.budget_pace import BudgetPace
from scrapy_adaptive.policies.history import clamp, is_first_visit, policy_memory, visit_time

#: the policy-memory key of the rule's last wait in normalised seconds
WAIT = "pu"


class PacedRule(WaitPolicy):
    """*rule* (built at scale 1) in normalised time, scaled by *pace* to its budget."""

    def __init__(self, rule: WaitPolicy, pace: BudgetPace, *, minimum: float, maximum: float) -> None:
        self.rule = rule
        self.pace = pace
        self.minimum = minimum
        self.maximum = maximum

    def plan(self, history: Mapping[str, Any], visit: Visit) -> Plan:
        memory = policy_memory(history)
        stored = memory.get(WAIT)
        old = None if stored is None else float(stored)
        u = self.rule.next_wait({**history, "wait": old, "policy": {}}, visit)
        self.pace.observe(old, u, visit_time(history, visit), revisit=not is_first_visit(history))
        memory[WAIT] = u
        return Plan(clamp(self.pace.scale() * u, self.minimum, self.maximum), memory)
