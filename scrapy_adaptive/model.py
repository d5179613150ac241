"""A URL's record: everything the crawl knows about one URL, across visits.

The frontier is the only writer.  Evaluators (change detection, wait
policies, validators) read a snapshot of it from ``request.meta`` and answer
with a :class:`Visit` verdict; the frontier folds the verdict into the record
in one atomic write together with the URL's new queue position.

Stored as compact JSON (never pickle: a state folder must not be able to run
code).  Short keys keep a million records small on disk.
"""

from __future__ import annotations

import copy
import json
import json.encoder
import json.scanner
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

#: "Never" as a time of next visit: the largest unsigned 64-bit value.  Failed
#: and robots-disallowed URLs stay in their queue with this time so that they
#: are not rediscovered (thesis 6.2).
NEVER_MS = 2**64 - 1

#: crawl-log annotation of a verification fetch that caught the host's
#: validators saying "no change" while the content changed
VALIDATOR_LIE = "validatorLie"
#: crawl-log annotations (and visit kinds) of pages that are not the URL's content
SOFT_404 = "soft404"
PARKED = "parked"
#: the annotations of a page that is the host's error or placeholder page, not the URL's content
NOT_CONTENT = frozenset({SOFT_404, PARKED})
#: crawl-log annotation of a sitemap or feed that could not be read (the
#: policy stack backs its wait off)
SIGNAL_UNREADABLE = "signalUnreadable"


class Outcome(StrEnum):
    """How one attempt at a URL ended (thesis 6.2)."""

    VISITED = "visited"  #: any HTTP response, 404 included
    RETRY = "retry"  #: a retriable error; tried again after the retry delay
    FAILED = "failed"  #: retries exhausted or not crawlable: never again
    DISREGARDED = "disregarded"  #: robots.txt or a late scope decision: never again


class RecordError(ValueError):
    """A stored record cannot be read (garbled bytes, wrong types)."""


class ChangeState(StrEnum):
    """What a visit says about the content (thesis 5.1)."""

    CHANGED = "changed"
    UNCHANGED = "unchanged"
    UNKNOWN = "unknown"


@dataclass
class Visit:
    """The verdict on one attempt, assembled by the evaluators.

    ``wait`` is the interval until the next visit, decided by the wait
    policy; the frontier only applies it.  For retriable errors
    ``host_level`` says the whole host is unreachable (connection refused,
    DNS), so the whole queue waits the retry delay, not just this URL.

    ``digest`` is the comparison digest of the content (rule-dependent) and
    ``payload_digest`` the SHA-1 of the exact body (WARC style).  When no
    body was seen (a 304, an aborted fetch, an empty body) both are None
    and the record keeps the previous ones.  ``annotations`` are short
    crawl-log words (``unchanged``, ``notModified``, ``midFetchAbort``).
    ``policy_state`` is a wait policy's own per-URL memory (a small
    JSON-safe dict); None keeps what the record had.

    ``fetched`` is when this visit's fetch ended (set by the scheduler; the
    simulator sets its own clock's time), for policies that measure the
    interval since the last visit.

    ``validation`` says how validators were used (``"verified"``: a full
    download to check them; ``"trusted"``: their "no change" was acted on),
    and ``prediction`` what the headers predicted on a verification fetch;
    the frontier folds a verification into the host's trust record.

    ``queue`` is the politeness queue the URL belongs to (the frontier's
    key, set on every verdict), so policies group URLs as politeness does.
    """

    outcome: Outcome
    wait: float | None = None
    status: int | None = None
    change: ChangeState = ChangeState.UNKNOWN
    content_type: str | None = None
    size: int | None = None
    digest: str | None = None
    payload_digest: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    duration: float | None = None
    reason: str | None = None
    host_level: bool = False
    url: str | None = None
    depth: int | None = None
    overdue: float | None = None
    annotations: list[str] = field(default_factory=list)
    policy_state: dict[str, Any] | None = None
    validation: str | None = None
    prediction: str | None = None
    fetched: float | None = None
    #: on a visit brought forward by a change hint, the probability the wait
    #: policy gave a change since the last visit *without* the hint, so the
    #: hint is credited only with what it adds (see hints.py)
    hint_base: float | None = None
    #: the politeness queue the URL belongs to (the record's ``queue``: a
    #: host, a registered domain or a download slot, per
    #: ``ADAPTIVE_POLITENESS_KEY``), set by whoever builds the verdict, so
    #: that policies group URLs exactly as the frontier queues them; None:
    #: unknown (policies then fall back to the URL's host name)
    queue: str | None = None
    #: what change detection learned about the page's noise (the record's
    #: ``noise``, :mod:`~..change.noise`); None keeps what the record had
    noise: dict[str, Any] | None = None
    #: a noise probe: visit again within this many seconds whatever the
    #: wait (the frontier's politeness still spaces it); None: no probe
    probe: float | None = None
    #: a redirect's target (the URL it sent the visit to)
    location: str | None = None
    #: items mode: the per-field summary of the page's items (the record's
    #: ``fields``, :mod:`..change.fields`; None keeps the record's), and what
    #: changed field by field since the last one (for the change event)
    fields: dict[str, Any] | None = None
    field_changes: dict[str, Any] | None = None
    #: the lifetime the response's caching headers grant (``Cache-Control:
    #: max-age``, or ``Expires`` minus ``Date``; seconds), rate evidence on a
    #: URL's first visit (:mod:`~.change.freshness`); None: none granted
    freshness: float | None = None
    #: when the site says the content was last modified outside HTTP (a
    #: sitemap ``<lastmod>`` or a feed's date on the request that found the
    #: URL; seconds since the epoch), rate evidence on a first visit without
    #: ``Last-Modified``; never a validator; None: not said
    claimed_modified: float | None = None


@dataclass
class FetchResult:
    """What the downloader's middlewares found on one fetch, before any body
    is judged: filled by the validators middleware over the fetch's life
    (request, headers, response) and read once by change detection.

    ``validation`` says how validators were used (``"verified"``: a full
    download to check them; ``"trusted"``: their "no change" may be acted
    on); ``prediction`` is what the headers predicted on a verification;
    ``change`` and ``annotation`` are the downloader's own verdict when it
    decided without a body (a 304, a download stopped after its headers).
    """

    validation: str | None = None
    validators_sent: bool = False
    #: the body length (or the last size) of a download stopped after its headers
    abort_length: int | None = None
    prediction: str | None = None
    change: ChangeState | None = None
    annotation: str | None = None


@dataclass(frozen=True)
class Plan:
    """What the wait policy decided after a visit: its part of the verdict.

    The policy reads the record and the visit and returns this; the runtime
    puts it beside the visit, and the frontier records both in one write.
    ``memory`` is the policy's new per-URL memory (None: keep the record's),
    ``hint_base`` what a hint-brought visit would have been credited without
    the hint, ``notes`` the crawl-log words the policy adds (a first-visit
    Last-Modified caught lying, the pace that moved).
    """

    wait: float
    memory: dict[str, Any] | None = None
    hint_base: float | None = None
    notes: tuple[str, ...] = ()


_NUMBERS = frozenset({int, float})
_INT = frozenset({int})
_TEXT = frozenset({str})
_DICT = frozenset({dict})
_LIST = frozenset({list})
_NONE = type(None)

#: what each stored field must be, beyond the few the frontier checks first
#: (a record that passes is safe to judge, report and write again; one that
#: does not is quarantined like an unreadable one): stored key -> the exact
#: types allowed (``type(v) in``: a bool is not a number here)
_FIELD_TYPES: dict[str, frozenset[type]] = {
    "dt": _NUMBERS,
    "vi": _INT,
    "ve": _INT,
    "fa": _INT,
    "st": _INT | {_NONE},
    "ct": _TEXT | {_NONE},
    "sz": _INT | {_NONE},
    "ft": _NUMBERS | {_NONE},
    "du": _NUMBERS | {_NONE},
    "ov": _NUMBERS | {_NONE},
    "dg": _TEXT | {_NONE},
    "pd": _TEXT | {_NONE},
    "et": _TEXT | {_NONE},
    "lm": _TEXT | {_NONE},
    "wt": _NUMBERS | {_NONE},
    "oc": _TEXT | {_NONE},
    "rs": _TEXT | {_NONE},
    "hi": _LIST,
    "ps": _DICT,
    "hn": _DICT | {_NONE},
    "vl": _LIST | {_NONE},
    "nz": _DICT | {_NONE},
    "pr": _LIST | {_NONE},
    "fd": _DICT | {_NONE},
}


def _wrong_fields(data: dict[str, Any]) -> list[str]:
    """The stored keys of *data* (a decoded record) whose values have the wrong type."""
    wrong = [key for key, value in data.items() if type(value) not in _FIELD_TYPES.get(key, (type(value),))]
    for entry in data.get("hi") or ():  # [time, change, status] each
        if type(entry) is not list or len(entry) != 3 or type(entry[0]) not in _NUMBERS or type(entry[1]) is not str:
            wrong.append("hi")
            break
    for key in ("vl", "pr"):
        ints = data.get(key)
        if type(ints) is list and any(type(x) is not int for x in ints):
            wrong.append(key)
    return wrong


@dataclass
class UrlRecord:
    """The persistent state of one URL.

    ``history`` holds the last visits as ``[time, change, status]`` triples
    (bounded by ``ADAPTIVE_HISTORY_SIZE``) for wait policies that look
    further back than one visit.
    """

    url: str
    queue: str
    request: dict[str, Any]
    next_ms: int
    directive: int = 0
    discovered: float = 0.0
    visits: int = 0
    versions: int = 0
    failures: int = 0
    status: int | None = None
    content_type: str | None = None
    size: int | None = None
    fetched: float | None = None
    duration: float | None = None
    overdue: float | None = None
    digest: str | None = None
    payload_digest: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    wait: float | None = None
    outcome: str | None = None
    reason: str | None = None
    history: list[list[Any]] = field(default_factory=list)
    policy: dict[str, Any] = field(default_factory=dict)
    #: an acted-on change hint waiting for its visit (keys: ``PENDING_*`` in hints.py)
    hint: dict[str, Any] | None = None
    #: this URL's own validator record, ``[lies, right since the last lie]``
    #: (None: never caught lying); see :func:`~..change.trust.url_trusted`
    validator_lies: list[int] | None = None
    #: the page's learned noise (the visit middleware's state, see
    #: ``spidermiddlewares/visit.py``): a fetch's sketch awaiting its probe,
    #: the learned exclusions, or why there are none
    noise: dict[str, Any] | None = None
    #: whether the URL is there, for its change events (:mod:`..change.events`):
    #: ``[content seen, gone answers in a row, gone said]``; None: not judged yet
    presence: list[int] | None = None
    #: items mode: the per-field summary of the page's last items (:mod:`..change.fields`)
    fields: dict[str, Any] | None = None

    # field name -> stored key; one table so encoding and decoding agree
    _KEYS = {
        "url": "u",
        "queue": "q",
        "request": "rq",
        "next_ms": "n",
        "directive": "d",
        "discovered": "dt",
        "visits": "vi",
        "versions": "ve",
        "failures": "fa",
        "status": "st",
        "content_type": "ct",
        "size": "sz",
        "fetched": "ft",
        "duration": "du",
        "overdue": "ov",
        "digest": "dg",
        "payload_digest": "pd",
        "etag": "et",
        "last_modified": "lm",
        "wait": "wt",
        "outcome": "oc",
        "reason": "rs",
        "history": "hi",
        "policy": "ps",
        "hint": "hn",
        "validator_lies": "vl",
        "noise": "nz",
        "presence": "pr",
        "fields": "fd",
    }

    #: what the frontier concluded at its last update of this record, beyond
    #: the verdict (a caught validator lie, a hint confirmed or refuted), for
    #: the crawl log and the stats; not saved
    notes: list[str] = field(default_factory=list, init=False, repr=False, compare=False)
    #: the request's stored bytes and the dict they were read into (not saved)
    _request_raw: bytes | None = field(default=None, init=False, repr=False, compare=False)
    _request_obj: object = field(default=None, init=False, repr=False, compare=False)

    @property
    def never(self) -> bool:
        return self.next_ms >= NEVER_MS

    @property
    def next_time(self) -> float:
        return math.inf if self.never else self.next_ms / 1000

    # Stored as two compact JSON documents separated by a newline (compact
    # JSON never contains a raw newline): the visit state, rewritten at every
    # visit, then the request, written once.  Keeping the request's bytes as
    # read spares re-encoding it at every visit.

    def to_bytes(self) -> bytes:
        d = self.__dict__
        data = {}
        for name, key in _STATE_KEYS:
            value = d[name]
            # left out: None, an empty list or dict, a directive of 0 (a
            # falsy value of any other field is kept: a count of 0 is a count)
            if value is None:
                continue
            if not value and (type(value) in _EMPTY_LEFT_OUT or (name == "directive" and value == 0)):
                continue
            data[key] = value
        head = _encode(data).encode("utf-8")
        raw = d.get("_request_raw")
        if raw is None or d.get("_request_obj") is not self.request:
            raw = _encode(self.request).encode("utf-8")
            self._request_raw, self._request_obj = raw, self.request
        return head + b"\n" + raw

    @classmethod
    def from_bytes(cls, raw: bytes) -> UrlRecord:
        """Read a stored record; :class:`RecordError` if it is unreadable.

        Only the fields the frontier cannot work without are type-checked
        (a record that passes can be issued, updated and re-written).
        """
        try:
            head, newline, tail = raw.partition(b"\n")
            data = _decode(head.decode("utf-8"))
            names = _NAMES
            kwargs = {names[key]: value for key, value in data.items() if key in names}
            request = _decode(tail.decode("utf-8")) if newline else kwargs.get("request", {})
            kwargs["request"] = request
            record = cls(**kwargs)
        except (ValueError, TypeError, AttributeError) as exc:
            raise RecordError(f"{type(exc).__name__}: {exc}") from exc
        if not (
            isinstance(record.url, str)
            and isinstance(record.queue, str)
            and isinstance(record.request, dict)
            and type(record.next_ms) is int
            and type(record.directive) is int
        ):
            raise RecordError("a field has the wrong type (url, queue, request, next_ms or directive)")
        if wrong := _wrong_fields(data):
            raise RecordError(f"a field has the wrong type ({', '.join(_NAMES.get(k, k) for k in wrong)})")
        record._request_raw = tail if newline else None
        record._request_obj = request
        return record

    def snapshot(self) -> dict[str, Any]:
        """What evaluators may read, as a plain dict copy: changing it cannot
        change the record.  :meth:`view` reads the same without copying."""
        return dict(RecordView(self))

    def view(self) -> RecordView:
        """The record, read-only, as the mapping evaluators and policies read
        (``response.meta["adaptive_record"]``): nothing is copied until read."""
        return RecordView(self)


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

    def __init__(self, record: UrlRecord) -> None:
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


#: the record's fields but the request, with their stored keys
_STATE_KEYS = tuple((name, key) for name, key in UrlRecord._KEYS.items() if name != "request")
#: stored key -> field name
_NAMES = {key: name for name, key in UrlRecord._KEYS.items()}
#: the types of fields left out of a stored record when empty
_EMPTY_LEFT_OUT = (list, dict)


def _compact_encoder() -> Callable[[Any], str]:
    """Compact JSON with non-ASCII text kept, the C encoder built once.

    ``json.dumps`` and ``JSONEncoder.encode`` build an encoder at every
    call, and a record is written at every verdict.  Without the circular
    check (one dict kept between calls would outlive a failed encode): a
    record holds plain data, and a cycle in it would raise RecursionError.
    """
    encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
    make = json.encoder.c_make_encoder
    if make is None:  # no C accelerator
        return encoder.encode
    try:
        chunks = make(None, encoder.default, json.encoder.encode_basestring, None, ":", ",", False, False, True)
    except TypeError:  # another Python's private signature
        return encoder.encode
    return lambda obj: "".join(chunks(obj, 0))


def _strict_decoder() -> Callable[[str], Any]:
    """``json.loads`` of text, scanned directly: a stored document has no
    whitespace around it, and any other text takes the full path (which
    accepts whitespace around a document and raises for anything else)."""
    decoder = json.JSONDecoder()
    scan = json.scanner.make_scanner(decoder)

    def decode(text: str) -> Any:
        try:
            value, end = scan(text, 0)
        except StopIteration:
            return decoder.decode(text)
        return value if end == len(text) else decoder.decode(text)

    return decode


#: built once (a record is written and read at every issue and verdict);
#: records are UTF-8 bytes, decoded before parsing: ``json.loads`` of bytes
#: first guesses their encoding
_encode = _compact_encoder()
_decode = _strict_decoder()
