"""The frontier: URL records and per-queue priority queues, storage-agnostic."""

from ..model import ChangeState, Outcome, UrlRecord, Visit
from ..store.base import Batch, MemoryStore, Store, StoreError
from .frontier import AddResult, Frontier, Issued
from .hostqueue import HostQueue, Politeness, QueueState

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
