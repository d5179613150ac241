"""What the WARC writer keeps of a URL's capture and of one HTTP transaction,
and how a 304's revisit record is written (:func:`updated_by_304`)."""

from __future__ import annotations

import json
from dataclasses import dataclass


@dataclass(frozen=True)
class Capture:
    """A URL's last archived ``response`` record, as revisits refer to it.

    Its status line and headers are kept too: a 304's revisit is written
    with them (see :func:`updated_by_304`).  None in a capture indexed
    before they were kept.
    """

    uri: str
    date: str
    record_id: str
    digest: str
    status: str | None = None
    protocol: str | None = None
    headers: tuple[tuple[str, str], ...] | None = None

    def to_json(self) -> bytes:
        headers = [list(pair) for pair in self.headers] if self.headers is not None else None
        fields = [self.uri, self.date, self.record_id, self.digest, self.status, self.protocol, headers]
        return json.dumps(fields).encode()

    @classmethod
    def from_json(cls, raw: bytes) -> Capture:
        uri, date, record_id, digest, *http = json.loads(raw)
        status, protocol, headers = (http + [None, None, None])[:3]
        pairs = tuple((str(name), str(value)) for name, value in headers) if headers is not None else None
        return cls(uri, date, record_id, digest, status, protocol, pairs)


#: fields of the stored response a 304 does not update: they describe the
#: stored body, which the revisit stands for (RFC 9111, 3.2 and 4.3.4)
KEPT_ON_304 = frozenset({"content-length", "content-encoding", "content-type", "content-range", "transfer-encoding"})


def updated_by_304(capture: Capture, exchange: HttpExchange) -> tuple[str, str, list[tuple[str, str]]]:
    """The status line, protocol and headers of a 304's revisit record.

    A 304 says "the response you stored is still good", and an HTTP cache
    then serves the stored response with the 304's fresh header fields
    (dates, validators).  The revisit is written the same way: the
    capture's status (200) and headers, updated by the 304's.  Replay tools
    serve a revisit with the status it records, and pywb serves a 3xx
    revisit as itself, empty: with the 304's status line every unchanged
    visit would replay blank.  The profile still says the server answered
    "not modified".
    """
    fresh = {name.lower() for name, _ in exchange.response_headers} - KEPT_ON_304
    if capture.status is None or capture.headers is None:  # indexed before the headers were kept
        return "200 OK", exchange.protocol, [(n, v) for n, v in exchange.response_headers if n.lower() in fresh]
    headers = [(n, v) for n, v in capture.headers if n.lower() not in fresh]
    headers += [(n, v) for n, v in exchange.response_headers if n.lower() in fresh]
    return capture.status, capture.protocol or exchange.protocol, headers


@dataclass
class HttpExchange:
    """One HTTP transaction as the archive stores it (plain values, no Scrapy)."""

    url: str
    method: str
    request_headers: list[tuple[str, str]]
    request_body: bytes
    status: int
    protocol: str
    response_headers: list[tuple[str, str]]
    body: bytes
    #: only the headers were seen (a 304, a download stopped after them)
    headers_only: bool
    fetched: float
    #: an embed's fetch: the page captures it came for, (page URL, page's
    #: fetched time) each; written as ``metadata`` records (``via``)
    pages: tuple[tuple[str, float], ...] = ()
