"""A URL's record, stored as compact JSON, and the checks that make a stored one safe to use."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .codec import decode as _decode
from .codec import encode as _encode
from .verdict import NEVER_MS
from .view import RecordView


class RecordError(ValueError):
    """A stored record cannot be read (garbled bytes, wrong types)."""


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
    wrong = []
    for key, value in data.items():  # a loop: every record issued is checked
        if type(value) not in _FIELD_TYPES.get(key, (type(value),)):
            wrong.append(key)
    for entry in data.get("hi") or ():  # [time, change, status] each
        if type(entry) is not list or len(entry) != 3 or type(entry[0]) not in _NUMBERS or type(entry[1]) is not str:
            wrong.append("hi")
            break
    for key in ("vl", "pr"):
        ints = data.get(key)
        if type(ints) is list and not set(map(type, ints)) <= _INT:  # a set, not a generator: read at every issue
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
    #: this URL's own validator record, ``[lies, right since the last lie,
    #: predictions acted on since its last verification]`` (None: never
    #: verified; two items when written by older code); see
    #: :func:`~..change.trust.url_verify_rate`
    validator_trust: list[int] | None = None
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
        "validator_trust": "vl",
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
    #: the record's read-only view, made once: a view reads the record as it
    #: is, so one serves every reader (the request's meta, the middlewares,
    #: the policy, the events); not saved

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
        change the record."""
        return dict(RecordView.of(self))

    def view(self) -> RecordView:
        """The record as it is now, read-only, as evaluators and policies read
        it (``response.meta["adaptive_record"]``): a copy, made at each call."""
        return RecordView.of(self)


def ranking_fields(raw: bytes) -> tuple[int, float | None]:
    """``(visits, wait)`` of a stored record, read from its visit state
    alone: the urgency weighing (``frontier/urgency.py``) reads them for
    each due URL it compares and never needs the rest, nor the request (the
    larger half).  :class:`RecordError` if either is unreadable (the whole
    record is checked when it is issued)."""
    try:
        data = _decode(raw.partition(b"\n")[0].decode("utf-8"))
        visits, wait = data.get("vi", 0), data.get("wt")
    except (ValueError, TypeError, AttributeError) as exc:
        raise RecordError(f"{type(exc).__name__}: {exc}") from exc
    if type(visits) not in _FIELD_TYPES["vi"] or type(wait) not in _FIELD_TYPES["wt"]:
        raise RecordError("a field has the wrong type (visits or wait)")
    return visits, wait


#: the record's fields but the request, with their stored keys
_STATE_KEYS = tuple((name, key) for name, key in UrlRecord._KEYS.items() if name != "request")
#: stored key -> field name
_NAMES = {key: name for name, key in UrlRecord._KEYS.items()}
#: the types of fields left out of a stored record when empty
_EMPTY_LEFT_OUT = (list, dict)
