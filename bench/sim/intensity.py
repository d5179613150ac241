"""Piecewise-constant change intensities and their cumulative hazard.

A page's change process is an inhomogeneous Poisson process with intensity
λ(t) = scale × m(t).  Everything the simulator and the oracles need is the
cumulative hazard H(t) = ∫m and its inverse: change times are unit-rate
arrivals in "hazard time" mapped back through H⁻¹, and the hazard oracle
visits when scale × (H(t) − H(last visit)) reaches its threshold.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass, field


@dataclass
class Piecewise:
    """m(t) = rates[i] on [times[i], times[i+1]); the last rate runs on.

    With ``period`` set the pattern repeats (times relative to a period
    start at ``origin``), so a weekly profile costs 168 pieces however long
    the simulation.
    """

    times: list[float]
    rates: list[float]
    period: float | None = None
    origin: float = 0.0
    cum: list[float] = field(init=False)
    per_period: float = field(init=False)

    def __post_init__(self) -> None:
        if not self.times or len(self.times) != len(self.rates):
            raise ValueError("times and rates must be non-empty and equally long")
        if self.period is not None and self.times[0] != 0.0:
            raise ValueError("a periodic profile starts at offset 0")
        self.cum = [0.0]
        for i in range(1, len(self.times)):
            self.cum.append(self.cum[-1] + self.rates[i - 1] * (self.times[i] - self.times[i - 1]))
        end = self.period if self.period is not None else self.times[-1]
        self.per_period = self.cum[-1] + self.rates[-1] * (end - self.times[-1])

    def _local(self, t: float) -> float:
        i = bisect.bisect_right(self.times, t) - 1
        if i < 0:
            return self.rates[0] * (t - self.times[0])
        return self.cum[i] + self.rates[i] * (t - self.times[i])

    def cumulative(self, t: float) -> float:
        """H(t): hazard accumulated since the profile's origin."""
        if self.period is None:
            return self._local(t)
        k, offset = divmod(t - self.origin, self.period)
        return k * self.per_period + self._local(offset)

    def rate(self, t: float) -> float:
        if self.period is not None:
            t = (t - self.origin) % self.period
        i = max(0, bisect.bisect_right(self.times, t) - 1)
        return self.rates[i]

    def _local_inverse(self, h: float) -> float:
        i = bisect.bisect_right(self.cum, h) - 1
        i = max(i, 0)
        # a zero-rate piece shares its cum with the next start: move past it
        while self.rates[i] <= 0 and i + 1 < len(self.times):
            i += 1
        if self.rates[i] <= 0:
            return math.inf
        return self.times[i] + (h - self.cum[i]) / self.rates[i]

    def inverse(self, h: float) -> float:
        """The earliest t with H(t) = h."""
        if self.period is None:
            return self._local_inverse(h)
        if self.per_period <= 0:
            return math.inf
        k, rest = divmod(h, self.per_period)
        return self.origin + k * self.period + self._local_inverse(rest)


CONSTANT = Piecewise([0.0], [1.0])
