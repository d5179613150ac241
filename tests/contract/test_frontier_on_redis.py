"""The frontier's unit tests again on Redis and Redis Cluster.

``tests/unit`` runs them on the embedded stores only (no server); here the
same tests run on the networked backends, whose batches, scans and counters
are implemented differently.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

from scrapy_adaptive.store.base import Store
from tests.conftest import open_store
from tests.unit.frontier import test_frontier, test_urgency


def _store_tests(module: object) -> dict[str, object]:
    """The module's tests that take the ``store`` fixture (the rest need no rerun)."""
    return {
        name: test
        for name, test in vars(module).items()
        if name.startswith("test_") and "store" in inspect.signature(test).parameters
    }


globals().update(_store_tests(test_frontier))
globals().update(_store_tests(test_urgency))


@pytest.fixture(params=["redis", "redis-cluster"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """Redis and Redis Cluster, each emptied for the test."""
    yield from open_store(request, tmp_path)
