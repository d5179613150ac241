"""Deterministic change schedules for the demo site's pages.

Every page owns one schedule.  Given a *demo time* ``t`` (seconds since the
site started, already multiplied by ``--speed``) a schedule answers which
version of the page is current, when that version began and when the next one
will begin.  The answer depends only on ``(schedule parameters, seed, t)``, so
every request inside one version sees byte-identical content and tests can
predict changes exactly instead of sleeping and hoping.
"""

from __future__ import annotations

import math
import random
from bisect import bisect_right
from dataclasses import dataclass, field
from typing import Protocol

__all__ = [
    "Never",
    "PerRequest",
    "Periodic",
    "Poisson",
    "Schedule",
    "VersionSpan",
]


@dataclass(frozen=True)
class VersionSpan:
    """The version current at some demo time and the interval it covers.

    ``started`` and ``ends`` are demo seconds; ``ends`` is ``None`` for a
    version that never ends (a page that never changes).
    """

    version: int
    started: float
    ends: float | None


class Schedule(Protocol):
    """What the site needs from a change schedule."""

    @property
    def kind(self) -> str:
        """Schedule family: ``never``, ``per-request``, ``periodic`` or ``poisson``."""
        ...

    def at(self, t: float) -> VersionSpan:
        """The version span containing demo time ``t`` (``t < 0`` acts as 0)."""
        ...

    def describe(self, speed: float) -> dict[str, object]:
        """JSON-ready parameters, in demo seconds and wall-clock seconds."""
        ...


@dataclass(frozen=True)
class Never:
    """A page that keeps version 0 forever (docs, legal pages, most images)."""

    kind: str = field(default="never", init=False)

    def at(self, t: float) -> VersionSpan:
        return VersionSpan(0, 0.0, None)

    def describe(self, speed: float) -> dict[str, object]:
        return {"kind": self.kind}


@dataclass(frozen=True)
class PerRequest:
    """A page whose *meaningful* content never changes, yet whose bytes do.

    Used for the timestamp page: the version stays 0 because nothing a crawler
    should care about changes, while the rendered "Generated at ..." noise is
    different on every request.
    """

    kind: str = field(default="per-request", init=False)

    def at(self, t: float) -> VersionSpan:
        return VersionSpan(0, 0.0, None)

    def describe(self, speed: float) -> dict[str, object]:
        return {"kind": self.kind}


@dataclass(frozen=True)
class Periodic:
    """A page that changes every ``period`` demo seconds.

    ``phase`` (``0 <= phase < period``) staggers pages that share a period, so
    the fifteen-second pages do not all flip in the same instant: version
    ``v`` covers ``[v * period - phase, (v + 1) * period - phase)``, clipped at
    0 for the first version.
    """

    period: float
    phase: float = 0.0
    kind: str = field(default="periodic", init=False)

    def __post_init__(self) -> None:
        if self.period <= 0:
            raise ValueError("period must be positive")
        if not 0 <= self.phase < self.period:
            raise ValueError("phase must be in [0, period)")

    def at(self, t: float) -> VersionSpan:
        t = max(t, 0.0)
        version = math.floor((t + self.phase) / self.period)
        started = max(version * self.period - self.phase, 0.0)
        return VersionSpan(version, started, (version + 1) * self.period - self.phase)

    def describe(self, speed: float) -> dict[str, object]:
        return {
            "kind": self.kind,
            "period": self.period,
            "phase": self.phase,
            "period_wall": self.period / speed,
        }


class Poisson:
    """A page that changes at random, memoryless instants (a Poisson process).

    The inter-change gaps are exponential with mean ``mean_interval`` demo
    seconds, drawn from an RNG seeded with ``key`` (derived from the site seed
    and the page path), so the change instants form one fixed sequence: the
    version at ``t`` is simply the number of instants ``<= t``.  The sequence
    is generated lazily and memoised per instance; memory grows by one float
    per change, i.e. a few thousand floats per day of demo time.
    """

    kind = "poisson"

    def __init__(self, mean_interval: float, key: str) -> None:
        if mean_interval <= 0:
            raise ValueError("mean_interval must be positive")
        self.mean_interval = mean_interval
        self._rng = random.Random(key)
        self._instants: list[float] = []

    def _extend_beyond(self, t: float) -> None:
        """Draw change instants until one lies strictly after ``t``."""
        last = self._instants[-1] if self._instants else 0.0
        while last <= t:
            last += self._rng.expovariate(1.0 / self.mean_interval)
            self._instants.append(last)

    def at(self, t: float) -> VersionSpan:
        t = max(t, 0.0)
        self._extend_beyond(t)
        version = bisect_right(self._instants, t)
        started = self._instants[version - 1] if version else 0.0
        return VersionSpan(version, started, self._instants[version])

    def describe(self, speed: float) -> dict[str, object]:
        return {
            "kind": self.kind,
            "mean_interval": self.mean_interval,
            "mean_interval_wall": self.mean_interval / speed,
        }

    def __repr__(self) -> str:
        return f"Poisson(mean_interval={self.mean_interval!r})"
