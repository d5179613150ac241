"""The rescheduling strategies of Umbrich, Mrzelj and Polleres (section 4.1).

Each strategy looks at the change bits of recent snapshots (1 = the visit
saw a change) and divides or multiplies the revisit interval; the interval
is then clamped to [min, max] (their evaluation used 1 day and 6 months,
the defaults here).

* :class:`FixWaitPolicy` – the last 2 snapshots taken at the current
  interval: all changed → visit more often, none changed → less often.
* :class:`DynWaitPolicy` – the same, with 1, 2, 3 or 4 snapshots when the
  interval exceeds 2 months, 1 month, 1 week, or is shorter.
* :class:`WindowWaitPolicy` – the share of changes over the last 10
  snapshots (half the history while it is shorter than 20) mapped to a
  factor of 3, 2 or 1.5 either way.
* :class:`State1WaitPolicy` / :class:`State2WaitPolicy` – a per-URL Markov
  chain over the last 1 or 2 change bits, with counts kept separately for
  each interval the URL was visited at; the estimated probability of a
  change at the next visit is mapped to a factor as in *window*.

Where the paper leaves room we chose, and say so: fix/dyn speed up by 1.5
when the interval is above a month and by 2 otherwise, and slow down by 1.5
when the interval is below a month and by 2 otherwise (the paper's wording,
read literally); after any adjustment fix/dyn start counting snapshots at
the new interval afresh; window and state-* adjust at every visit.

Per-URL memory (``visit.policy_state``) is a few short strings and at most
eight small count tables: JSON-safe and bounded.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scrapy_adaptive.model import ChangeState, Visit
from scrapy_adaptive.policies.base import WaitParams, WaitPolicy
from scrapy_adaptive.policies.history import DAY, clamp, is_first_visit, policy_memory
from scrapy_adaptive.policies.memory import FIX_BITS, MARKOV_STATE, MARKOV_TABLES, WINDOW_BITS, WINDOW_SEEN

WEEK = 7 * DAY
MONTH = 30 * DAY

#: (threshold, factor) pairs applied to a change probability or ratio:
#: above the threshold the interval is divided by the factor ...
_SPEED_UP = ((0.9, 3.0), (0.75, 2.0), (0.6, 1.5))
#: ... below it the interval is multiplied by the factor.
_SLOW_DOWN = ((0.1, 3.0), (0.25, 2.0), (0.4, 1.5))


def ratio_factor(p: float) -> float:
    """Multiplier of the interval for a change ratio or probability *p*."""
    for threshold, factor in _SPEED_UP:
        if p > threshold:
            return 1.0 / factor
    for threshold, factor in _SLOW_DOWN:
        if p < threshold:
            return factor
    return 1.0


class _UmbrichPolicy(WaitPolicy):
    """Shared plumbing: bounds, first visit, unknown change, memory."""

    def __init__(
        self,
        initial: float = DAY,
        minimum: float = DAY,
        maximum: float = 180 * DAY,
        default: float | None = None,
    ) -> None:
        self.initial = initial
        self.minimum = minimum
        self.maximum = maximum
        self.default = initial if default is None else default

    @classmethod
    def from_params(cls, params: WaitParams) -> _UmbrichPolicy:
        """Initial, default and bounds from the configured wait numbers."""
        return cls(initial=params.initial, minimum=params.minimum, maximum=params.maximum, default=params.default)

    def next_wait(self, history: Mapping[str, Any], visit: Visit) -> float:
        memory = policy_memory(history)
        if is_first_visit(history):
            visit.policy_state = self.fresh_memory()
            return clamp(self.initial, self.minimum, self.maximum)
        if visit.change is ChangeState.UNKNOWN:
            return clamp(self.default, self.minimum, self.maximum)
        last = float(history["wait"])
        bit = "1" if visit.change is ChangeState.CHANGED else "0"
        factor = self.factor(memory, bit, last)
        wait = clamp(last * factor, self.minimum, self.maximum)
        visit.policy_state = memory
        return wait

    def fresh_memory(self) -> dict[str, Any]:
        return {}

    def factor(self, memory: dict[str, Any], bit: str, interval: float) -> float:
        """Record *bit* (seen after *interval*) in *memory*; return the factor."""
        raise NotImplementedError


class FixWaitPolicy(_UmbrichPolicy):
    """Adapt when the last *n* snapshots at the current interval agree."""

    def snapshots(self, interval: float) -> int:
        return 2

    def factor(self, memory: dict[str, Any], bit: str, interval: float) -> float:
        bits = (memory.get(FIX_BITS, "") + bit)[-4:]
        n = self.snapshots(interval)
        factor = 1.0
        if len(bits) >= n:
            recent = bits[-n:]
            if recent == "1" * n:
                factor = 1.0 / (1.5 if interval > MONTH else 2.0)
            elif recent == "0" * n:
                factor = 1.5 if interval < MONTH else 2.0
        memory[FIX_BITS] = "" if factor != 1.0 else bits
        return factor


class DynWaitPolicy(FixWaitPolicy):
    """*fix* with a snapshot count that grows as the interval shrinks."""

    def snapshots(self, interval: float) -> int:
        if interval > 2 * MONTH:
            return 1
        if interval > MONTH:
            return 2
        if interval > WEEK:
            return 3
        return 4


class WindowWaitPolicy(_UmbrichPolicy):
    """Map the share of changed snapshots in a window to a factor."""

    def __init__(self, *args: Any, window: int = 10, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.window = window

    def factor(self, memory: dict[str, Any], bit: str, interval: float) -> float:
        seen = int(memory.get(WINDOW_SEEN, 0)) + 1
        bits = (memory.get(WINDOW_BITS, "") + bit)[-self.window :]
        memory[WINDOW_BITS], memory[WINDOW_SEEN] = bits, seen
        size = min(self.window, max(1, math.ceil(seen / 2)))
        recent = bits[-size:]
        return ratio_factor(recent.count("1") / len(recent))


def interval_bucket(interval: float) -> str:
    """The interval a snapshot was taken at, on a 25 % geometric grid."""
    return str(round(math.log(max(interval, 1.0)) / math.log(1.25)))


class State1WaitPolicy(_UmbrichPolicy):
    """Markov chain over the last ``order`` change bits, per interval."""

    order = 1
    #: how many intervals' count tables a URL keeps (least recent dropped)
    max_tables = 8

    def factor(self, memory: dict[str, Any], bit: str, interval: float) -> float:
        past = memory.get(MARKOV_STATE, "")
        tables: dict[str, dict[str, list[int]]] = {k: dict(v) for k, v in memory.get(MARKOV_TABLES, {}).items()}
        key = interval_bucket(interval)
        table = tables.pop(key, {})
        if len(past) == self.order:
            counts = list(table.get(past, [0, 0]))
            counts[int(bit)] += 1
            table[past] = counts
        tables[key] = table  # re-inserted last: most recently used
        while len(tables) > self.max_tables:
            del tables[next(iter(tables))]
        state = (past + bit)[-self.order :]
        memory[MARKOV_STATE], memory[MARKOV_TABLES] = state, tables
        if len(state) < self.order:
            return 1.0
        seen = table.get(state)
        if not seen or sum(seen) == 0:
            return 1.0
        return ratio_factor(seen[1] / sum(seen))


class State2WaitPolicy(State1WaitPolicy):
    """*state-1* conditioned on the last two change bits."""

    order = 2
