"""A fixed revisit interval for every URL (the "uniform" baseline).

Uniform allocation maximises average freshness, not captured versions;
it is the reference every adaptive policy must beat.  An optional jitter
(deterministic per URL, from a hash of the URL, so runs are repeatable)
spreads URLs discovered together so they are not all due at once; the
mean interval is unchanged.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import Any

from ..model import Visit
from .base import WaitParams, WaitPolicy


class FixedWaitPolicy(WaitPolicy):
    """Every visit waits ``interval`` seconds (± ``jitter`` × interval)."""

    def __init__(self, interval: float = 86_400.0, *, jitter: float = 0.0) -> None:
        if interval <= 0 or not 0.0 <= jitter < 1.0:
            raise ValueError("interval must be positive and 0 <= jitter < 1")
        self.interval = interval
        self.jitter = jitter

    @classmethod
    def from_params(cls, params: WaitParams) -> FixedWaitPolicy:
        """The configured default wait, for every URL."""
        return cls(params.default)

    def next_wait(self, history: Mapping[str, Any], visit: Visit) -> float:
        if not self.jitter or not visit.url:
            return self.interval
        u = zlib.crc32(visit.url.encode("utf-8")) / 0xFFFFFFFF  # uniform in [0, 1]
        return self.interval * (1.0 + self.jitter * (2.0 * u - 1.0))
