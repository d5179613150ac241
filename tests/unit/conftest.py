"""Unit tests run on the embedded stores only, so ``pytest tests/unit`` needs
no server and stays fast; ``tests/contract`` runs the frontier's tests again
on Redis and Redis Cluster."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from scrapy_adaptive.store.base import Store
from tests.conftest import EMBEDDED_STORES, open_store


@pytest.fixture(params=EMBEDDED_STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """The frontier's unit tests on the in-memory and LevelDB stores."""
    yield from open_store(request, tmp_path)
