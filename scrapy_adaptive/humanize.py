"""Durations, byte counts and clock times as a reader of a report wants them.

Shared by the console, the summary line and ``report.html``.
"""

from __future__ import annotations

import time


def human(seconds: float | None) -> str:
    """A duration in the largest unit that fits: ``45s``, ``12m``, ``3.5h``, ``2.0d``."""
    if seconds is None:
        return "-"
    s = abs(seconds)
    sign = "-" if seconds < 0 else ""
    if s < 1:
        return f"{sign}{s * 1000:.0f}ms"
    if s < 60:
        return f"{sign}{s:.0f}s" if s >= 10 else f"{sign}{s:.1f}s"
    if s < 3600:
        return f"{sign}{s / 60:.1f}m" if s < 600 else f"{sign}{s / 60:.0f}m"
    if s < 86_400:
        return f"{sign}{s / 3600:.1f}h"
    return f"{sign}{s / 86_400:.1f}d"


def human_bytes(n: float | None) -> str:
    """A byte count in the largest decimal unit that fits: ``512 B``, ``3.2 MB``."""
    if n is None:
        return "-"
    for unit in ("B", "kB", "MB", "GB"):
        if abs(n) < 1000:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n:.1f} TB"


def when(t: float | None) -> str:
    return "-" if t is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))
