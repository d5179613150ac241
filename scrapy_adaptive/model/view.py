"""A read-only copy of a URL's record, for the user's code and the policies."""

from __future__ import annotations

import copy
from typing import Any, NoReturn


class RecordView(dict[str, Any]):
    """The public fields of a :class:`~.record.UrlRecord`, copied when the view
    is made, in a dict that refuses writes.

    A copy, not a window on the record: what was read cannot change the
    record (its lists and dicts are copies too), and a policy that reads a
    field several times per visit reads a plain dict (no call of ours per
    read: the policies read about thirty fields per visit).  A view shows
    the record as it was when made: the one given with a response is made
    again after the verdict, as the visit left it.
    """

    __slots__ = ()

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

    @classmethod
    def of(cls, record: Any) -> RecordView:  # a .record.UrlRecord (not imported: it makes views)
        """The view of *record* as it is now."""
        r = record
        return cls(
            url=r.url,
            queue=r.queue,
            visits=r.visits,
            versions=r.versions,
            failures=r.failures,
            status=r.status,
            content_type=r.content_type,
            size=r.size,
            fetched=r.fetched,
            digest=r.digest,
            payload_digest=r.payload_digest,
            etag=r.etag,
            last_modified=r.last_modified,
            wait=r.wait,
            reason=r.reason,
            discovered=r.discovered,
            history=list(map(list, r.history)) if r.history is not None else None,
            policy=dict(r.policy) if r.policy is not None else None,
            hint=dict(r.hint) if r.hint is not None else None,
            noise=r.noise,
            presence=list(r.presence) if r.presence is not None else None,
            fields=copy.deepcopy(r.fields) if r.fields else r.fields,
        )

    def _refuse(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("a URL's record view is read-only (the frontier owns the record)")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _refuse  # type: ignore[assignment]

    def __reduce__(self) -> tuple[Any, ...]:
        # copied and pickled through its items, never through the refused writes
        return (RecordView, (dict(self),))

    def __repr__(self) -> str:
        return f"RecordView({self.get('url')!r})"
