"""The frontier: URL records and per-queue priority queues, storage-agnostic."""

from .frontier import AddResult, Frontier, Issued
from .hostqueue import HostQueue, Politeness, QueueState
from .record import ChangeState, Outcome, UrlRecord, Visit
from .store import Batch, MemoryStore, Store, StoreError

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
