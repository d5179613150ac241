"""Stand-ins for the frontier's services, as the middlewares see them, and
for the table of issued requests, as the verdicts see it.

The runtime's :class:`~scrapy_adaptive.runtime.verdicts.Verdicts` answers
the middlewares from the frontier; a middleware's unit test needs only what
it asks: the record a request was issued with, whether a fetch verifies,
and somewhere to put the verdicts.
"""

from __future__ import annotations

from typing import Any

from scrapy import Request

from scrapy_adaptive import meta
from scrapy_adaptive.model import Visit


class Services:
    """Issues requests with a record, answers ``verify`` as told, keeps the verdicts."""

    def __init__(self, verify: bool = True) -> None:
        self.answer = verify
        self.visits: list[Visit] = []
        self.asked: list[str] = []
        self._issued: dict[int, dict[str, Any]] = {}

    def issue(self, request: Request, record: dict[str, Any] | None = None, fp: bytes = b"fp") -> Request:
        """Tag *request* as issued for *fp* with *record* (the lease's record, standing in)."""
        request.meta[meta.FP] = fp.hex()
        self._issued[id(request)] = {} if record is None else record
        return request

    def record(self, request: Request) -> dict[str, Any] | None:
        return self._issued.get(id(request))

    def verify(self, request: Request) -> bool:
        self.asked.append(request.url)
        return self.answer

    def commit(self, request: Request, visit: Visit) -> None:
        """Keeps the verdict; records nothing (the middleware goes on with its own)."""
        self.visits.append(visit)


class OneIssued:
    """The table of issued requests with one request out: *fp*'s, whatever
    request object a verdict comes with (for :class:`~scrapy_adaptive.runtime.verdicts.Verdicts`)."""

    def __init__(self, fp: bytes) -> None:
        self.fp = fp

    def fp_of(self, request: Request) -> bytes:
        return self.fp

    def pop(self, fp: bytes) -> None:
        return None
