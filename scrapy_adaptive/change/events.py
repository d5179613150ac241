"""What a visit tells downstream: the change events of a URL's life.

A data team keeping a copy of a site needs to hear more than "changed": a
product page that starts answering 404 must be marked deleted, one that
comes back restored, one that moved followed.  :func:`transition` reads the
URL's record as issued and the visit's verdict and says which event, if
any, the visit makes:

* ``new``: the first capture of content (a 2xx answer with a body);
* ``changed``: a new version after the first;
* ``gone``: a 404, a 410, the host's soft-404 page, or a permanent
  redirect off the page (to the site's home or a folder above it: what
  shops do with a removed product), after the URL had content, on
  *confirmations* visits in a row
  (one 404 may be a glitch; a 5xx, a timeout or a 403 neither confirms nor
  breaks the row: they say nothing about whether the page exists);
* ``back``: content again after ``gone`` was said;
* ``moved``: a permanent redirect (301, 308) to another page, said once
  per target (the same redirect again finds no change).

The URL's presence is kept in its record (``presence``, a list of three
ints: content seen, gone answers in a row, gone said) and updated with the
visit in the same write.  Pure: no clock, no I/O.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ..model import NOT_CONTENT, ChangeState, Outcome, Visit
from .noise_learner import HELD_BACK

NEW = "new"
CHANGED = "changed"
GONE = "gone"
BACK = "back"
MOVED = "moved"
#: every event kind, in the order of a URL's life
KINDS = (NEW, CHANGED, GONE, BACK, MOVED)

#: statuses that say the page is not there
ABSENT_STATUSES = frozenset({404, 410})
#: redirects that say the page has a new home (or none)
PERMANENT_REDIRECTS = frozenset({301, 308})


@dataclass(frozen=True)
class Transition:
    """The event a visit makes (None: none) and the URL's presence after it."""

    kind: str | None
    presence: list[int]


def presence_of(record: Mapping[str, Any]) -> list[int]:
    """``[content seen, gone answers in a row, gone said]`` of a record as
    issued; a record from before presence was kept has seen content if
    its last answer was a 2xx with a body."""
    stored = record.get("presence")
    if isinstance(stored, list) and len(stored) == 3 and type(stored[0]) is type(stored[1]) is type(stored[2]) is int:
        return list(stored)
    status = record.get("status")
    seen = int(record.get("digest") is not None and isinstance(status, int) and 200 <= status < 300)
    return [seen, 0, 0]


def said_gone(presence: list[int] | None) -> bool:
    """Whether a record's *presence* says its page is gone (said, and not back)."""
    return presence is not None and len(presence) == 3 and presence[2] == 1


def removal_redirect(url: str | None, target: str | None) -> bool:
    """True when a redirect from *url* to *target* takes the page away
    rather than giving it a new home: the target is the home page of a
    site, or a folder above the page on the same site (``/shop/item/42``
    to ``/shop/``)."""
    if not url or not target:
        return False
    page, to = urlsplit(url), urlsplit(target)
    path = to.path or "/"
    if path == "/" and not to.query:
        return True
    if to.netloc.lower() != page.netloc.lower() or to.query:
        return False
    folder = path if path.endswith("/") else path + "/"
    return page.path.startswith(folder) and page.path.rstrip("/") != path.rstrip("/")


def transition(record: Mapping[str, Any], visit: Visit, confirmations: int) -> Transition:
    """The event *visit* makes for the URL whose record (as issued) is *record*."""
    seen, row, said = presence_of(record)
    status = visit.status
    if visit.outcome is not Outcome.VISITED or status is None:
        return Transition(None, [seen, row, said])  # an error says nothing about the page
    if HELD_BACK in visit.annotations:
        # a difference held back for its probe: the probe's verdict says what it was
        return Transition(None, [seen, row, said])
    error_page = not NOT_CONTENT.isdisjoint(visit.annotations)
    if 200 <= status < 300 and visit.change is not ChangeState.UNKNOWN and not error_page:
        if said:
            return Transition(BACK, [1, 0, 0])
        if visit.change is ChangeState.CHANGED:
            return Transition(CHANGED if seen else NEW, [1, 0, 0])
        return Transition(None, [1, 0, 0])
    if status == 304:  # our validators answered: the content is still there
        return Transition(BACK if said else None, [seen, 0, 0])
    redirect = status in PERMANENT_REDIRECTS
    if redirect and not removal_redirect(visit.url, visit.location):
        moved = seen and visit.change is not ChangeState.UNCHANGED and visit.location is not None
        return Transition(MOVED if moved else None, [seen, 0, said])
    if status in ABSENT_STATUSES or redirect or error_page:
        if not seen or said:
            return Transition(None, [seen, row + 1 if seen else 0, said])
        row += 1
        if row >= confirmations:
            return Transition(GONE, [seen, row, 1])
        return Transition(None, [seen, row, 0])
    return Transition(None, [seen, row, said])  # 403, 5xx, a temporary redirect: neither confirms nor breaks


@dataclass
class ChangeEvent:
    """A change event as an item: what the spider's own item pipelines get
    with ``ADAPTIVE_CHANGES_AS_ITEMS`` (``isinstance(item, ChangeEvent)``
    tells it from the spider's items; ``itemadapter`` reads it as any
    dataclass).  Its fields are the feed's, in the feed's order."""

    kind: str
    url: str
    time: float
    version: int | None = None
    status: int | None = None
    reason: str | None = None
    digest: str | None = None
    previous_time: float | None = None
    previous_digest: str | None = None
    location: str | None = None
    fields: dict[str, Any] | None = None
    text_diff: str | None = None


#: an event's fields, in the order a feed writes them
FIELDS = tuple(field.name for field in dataclasses.fields(ChangeEvent))


def event_row(
    kind: str,
    url: str,
    time: float,
    *,
    version: int,
    status: int | None,
    reason: str | None,
    digest: str | None,
    previous_time: float | None,
    previous_digest: str | None,
    location: str | None = None,
    fields: dict[str, Any] | None = None,
    text_diff: str | None = None,
) -> bytes:
    """One event as the outbox keeps it and the feed writes it: a JSON
    object of :data:`FIELDS` (``version``: the URL's versions captured so
    far, this one included; ``previous_*``: the capture before this visit,
    None for a first visit; ``location``: a redirect's target; ``fields``:
    items mode, which fields of which items changed, :func:`.fields.diff`;
    ``text_diff``: with ``ADAPTIVE_TEXT_DIFF``, the unified diff of the
    page's visible text since ``previous_digest``, :func:`.text_diff.diff`)."""
    event = {
        "kind": kind,
        "url": url,
        "time": round(time, 3),
        "version": version,
        "status": status,
        "reason": reason,
        "digest": digest,
        "previous_time": None if previous_time is None else round(previous_time, 3),
        "previous_digest": previous_digest,
        "location": location,
        "fields": fields,
        "text_diff": text_diff,
    }
    return json.dumps(event, separators=(",", ":")).encode()


def read_event(raw: bytes) -> dict[str, Any] | None:
    """An outbox row's event, or None if it is not one (garbled bytes)."""
    try:
        return event_of(json.loads(raw))
    except ValueError:
        return None


def event_of(data: Any) -> dict[str, Any] | None:
    """The event's :data:`FIELDS` out of decoded JSON, or None if it is not an event."""
    if not isinstance(data, dict) or data.get("kind") not in KINDS or not isinstance(data.get("url"), str):
        return None
    return {name: data.get(name) for name in FIELDS}
