"""A read-only view of a URL's record, for the user's code."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator, Mapping
from typing import Any


class RecordView(Mapping[str, Any]):
    """A read-only mapping over a :class:`UrlRecord` (its public fields).

    Each read answers from the record as it is: the view given with a
    response shows the record as this visit left it.  Lists and dicts are
    copied as they are read, so changing what was read cannot change the
    record.
    """

    __slots__ = ("_record",)

    KEYS = (
        "url",
        "queue",
        "visits",
        "versions",
        "failures",
        "status",
        "content_type",
        "size",
        "fetched",
        "digest",
        "payload_digest",
        "etag",
        "last_modified",
        "wait",
        "reason",
        "discovered",
        "history",
        "policy",
        "hint",
        "noise",
        "presence",
        "fields",
    )
    _KEYSET = frozenset(KEYS)

    def __init__(self, record: Any) -> None:  # a .record.UrlRecord (not imported: it makes views)
        self._record = record

    def __getitem__(self, key: str) -> Any:
        if key not in self._KEYSET:
            raise KeyError(key)
        value = getattr(self._record, key)
        copier = _COPIES.get(key)
        return value if copier is None or value is None else copier(value)

    def get(self, key: str, default: Any = None) -> Any:
        """As :meth:`__getitem__`, in one call (policies read a few fields
        several times per visit)."""
        if key not in self._KEYSET:
            return default
        value = getattr(self._record, key)
        copier = _COPIES.get(key)
        return value if copier is None or value is None else copier(value)

    def __iter__(self) -> Iterator[str]:
        return iter(self.KEYS)

    def __len__(self) -> int:
        return len(self.KEYS)

    def __repr__(self) -> str:
        return f"RecordView({self._record.url!r})"


#: how a field that holds a list or a dict is copied as it is read
_COPIES: dict[str, Callable[[Any], Any]] = {
    "history": lambda value: [list(h) for h in value],
    "policy": dict,
    "hint": dict,
    "presence": list,
    "fields": copy.deepcopy,
}
