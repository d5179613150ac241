"""The thesis's WaitEvaluator (Sigurðsson 2005, 6.3.2), with its defaults.

* first visit (no wait yet): the initial wait, halved when the server sends
  no Last-Modified (such pages are about twice as likely to change, thesis
  ch. 5) and scaled per link hop from the seed if a depth factor is set;
* changed: the last wait ÷ ``changed_factor``;
* unchanged: the last wait × ``unchanged_factor``;
* unknown (no body to compare): the fixed default wait;
* optionally the time the visit was overdue is added to the last wait
  before the factor (the wait really observed);
* always clamped to [min, max];
* with a noise guard (:class:`~.noise.NoiseDetector`; on when built from
  settings, off when constructed directly): under raw-byte comparison a
  page that differs at every fetch drives the rule to the minimum wait, and
  the guard holds it at the maximum instead once short probes have shown
  it (``docs/lab/policy-lab.md``, "The noise guard").  With normalised
  detection the guard has nothing to do.

A multiplicative rule settles where P(change per visit) =
ln a / (ln a + ln b): one change in two visits with the 1.5/1.5 defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..model import ChangeState, Plan, Visit
from .base import WaitParams, WaitPolicy
from .history import policy_memory
from .noise_guard import NoiseDetector, probe_wait


class HeritrixWaitPolicy(WaitPolicy):
    """Multiplicative wait adjustment on change / no change."""

    def __init__(self, params: WaitParams, *, noise: NoiseDetector | None = None) -> None:
        self.params = params
        self.noise = noise

    @classmethod
    def from_params(cls, params: WaitParams) -> HeritrixWaitPolicy:
        """The crawler's Heritrix: the thesis's rule plus the noise guard, probing at the minimum wait."""
        return cls(params, noise=NoiseDetector(probe_wait(params.minimum)))

    def initial_wait(self, visit: Visit) -> float:
        params = self.params
        wait = params.initial
        if not visit.last_modified:
            wait *= params.no_last_modified_factor
        if visit.depth:
            wait *= params.depth_factor**visit.depth
        return wait

    def plan(self, history: Mapping[str, Any], visit: Visit) -> Plan:
        params = self.params
        last = history.get("wait")
        if visit.change is ChangeState.UNKNOWN:
            wait = params.default
        elif not history.get("visits") or last is None:
            wait = self.initial_wait(visit)
        else:
            base = float(last)
            if params.use_overdue and visit.overdue:
                base += visit.overdue
            if visit.change is ChangeState.CHANGED:
                wait = base / params.changed_factor
            else:
                wait = base * params.unchanged_factor
        if self.noise is None:
            return Plan(params.clamp(wait))
        memory = policy_memory(history)
        verdict = self.noise.observe_visit(memory, history, visit)
        return Plan(self.noise.wait(memory, verdict, params.clamp(wait), params.maximum), memory)
