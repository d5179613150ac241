"""The crawl's own small state, kept beside its URLs (``Frontier.notes``).

The hourly progress, the schedules given on the console and the visits they
forced: a few values by key, in the frontier's store so that they survive a
restart with the URLs they speak of.
"""

from __future__ import annotations

from ..store.base import Batch, Store


class Notes:
    """Values the crawl keeps by key in the frontier's store."""

    def __init__(self, store: Store) -> None:
        self._store = store

    def read(self, key: str) -> bytes | None:
        """What the crawl keeps under *key*; None if never written."""
        return self._store.get_meta(key)

    def write(self, key: str, value: bytes) -> None:
        """Keep *value* under *key*: one atomic write (:class:`.StoreError` if it fails)."""
        self._store.write(Batch(meta={key: value}))
