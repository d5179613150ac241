"""How many examples a hypothesis test runs.

``pytest tests/unit`` is what a developer runs on every change, so it runs a
third of each test's examples; ``scripts/test.sh`` (the README's command, and
CI's) sets ``ADAPTIVE_TEST_EXAMPLES=full`` and runs them all.
"""

from __future__ import annotations

import os

FULL = os.environ.get("ADAPTIVE_TEST_EXAMPLES", "") == "full"


def examples(n: int) -> int:
    """*n* in a full run, a third of it (at least 10) otherwise."""
    return n if FULL else max(10, n // 3)
