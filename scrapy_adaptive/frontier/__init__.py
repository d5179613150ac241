"""The frontier: URL records and per-queue priority queues, storage-agnostic.

The names below are loaded on first use, so a module of ``hosts`` or
``store`` may import ``frontier.hostqueue`` without pulling in the whole
frontier (which imports them back).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..model import ChangeState, Outcome, UrlRecord, Visit
    from ..store.base import Batch, MemoryStore, Store, StoreError
    from .frontier import AddResult, Frontier, Issued
    from .hostqueue import HostQueue, Politeness, QueueState

_HOMES = {
    "AddResult": ".frontier",
    "Frontier": ".frontier",
    "Issued": ".frontier",
    "HostQueue": ".hostqueue",
    "Politeness": ".hostqueue",
    "QueueState": ".hostqueue",
    "ChangeState": "..model",
    "Outcome": "..model",
    "UrlRecord": "..model",
    "Visit": "..model",
    "Batch": "..store.base",
    "MemoryStore": "..store.base",
    "Store": "..store.base",
    "StoreError": "..store.base",
}

__all__ = [
    "AddResult",
    "Batch",
    "ChangeState",
    "Frontier",
    "HostQueue",
    "Issued",
    "MemoryStore",
    "Outcome",
    "Politeness",
    "QueueState",
    "Store",
    "StoreError",
    "UrlRecord",
    "Visit",
]


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(home, __name__), name)
