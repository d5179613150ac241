"""A read-only view of a URL's record, for the user's code."""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
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
        if key == "history":
            return [list(h) for h in value]
        if key in ("policy", "hint") and value is not None:
            return dict(value)
        if key == "presence" and value is not None:
            return list(value)
        if key == "fields" and value is not None:
            return copy.deepcopy(value)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self.KEYS)

    def __len__(self) -> int:
        return len(self.KEYS)

    def __repr__(self) -> str:
        return f"RecordView({self._record.url!r})"
