"""What ETag and Last-Modified predict about a page, robustly.

Pure functions over raw header values (bytes, possibly repeated, possibly
garbage).  A header that cannot be read — malformed or future dates, several
different ETags, huge values, undecodable bytes — counts as *no prediction*,
never as an error: bad headers must not crash or stall a crawl, and must not
make it skip a change.

Schemes (Clausen 2004; thesis 5.1):

* ``etag`` – the ETags are equal (weak comparison: ``W/`` ignored, and the
  ``-gzip`` / ``-br`` suffixes some servers add per content-coding dropped);
* ``timestamp`` – the Last-Modified dates are equal;
* ``both`` – both say "no change"; when only one is available, it alone;
* ``either`` – one of the available ones says "no change".

Heritrix 1's mid-fetch filter looked up a header named "last-etag" and so
never compared ETags; these compare both.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from enum import StrEnum

from ..config.spec import VALIDATOR_SCHEMES
from ..dates import parse_http_date

#: the scheme names, defined once beside ADAPTIVE_VALIDATOR_SCHEME that chooses one
SCHEMES = VALIDATOR_SCHEMES

#: longest header value we are willing to read (huge headers: no prediction)
MAX_HEADER = 8192
#: dates further than this in the future are not believed
FUTURE_TOLERANCE = 86_400.0

_COMPRESSION_SUFFIX = re.compile(r"[-;](?:gzip|br|deflate|zstd)$", re.IGNORECASE)


class Prediction(StrEnum):
    UNCHANGED = "unchanged"
    CHANGED = "changed"
    NONE = "none"


def _text(value: bytes | str | None) -> str | None:
    if value is None:
        return None
    if isinstance(value, bytes):
        if len(value) > MAX_HEADER:
            return None
        try:
            value = value.decode("latin-1")
        except UnicodeDecodeError:  # pragma: no cover - latin-1 decodes anything
            return None
    value = value.strip()
    if not value or len(value) > MAX_HEADER or "\r" in value or "\n" in value or "\x00" in value:
        return None
    return value


def _single(values: Sequence[bytes | str] | bytes | str | None) -> str | None:
    """The one value of a header; None if absent, unreadable or ambiguous."""
    if values is None:
        return None
    if isinstance(values, (bytes, str)):
        values = [values]
    texts = {_text(v) for v in values}
    texts.discard(None)
    if len(texts) != 1:
        return None
    return texts.pop()


def etag_key(value: bytes | str | Sequence[bytes | str] | None) -> str | None:
    """The comparable core of an ETag, or None.

    >>> etag_key('W/"abc-gzip"') == etag_key('"abc"') == etag_key(b'"abc"')
    True
    >>> etag_key('"a", "b"') is None  # a list of tags in one header
    True
    """
    text = _single(value)
    if text is None:
        return None
    if text[:2] in ("W/", "w/"):
        text = text[2:].strip()
    if text.startswith('"'):
        if not text.endswith('"') or len(text) < 2 or '"' in text[1:-1]:
            return None
        text = text[1:-1]
    elif "," in text or " " in text:
        return None
    text = _COMPRESSION_SUFFIX.sub("", text)
    return text or None


def http_date(value: bytes | str | Sequence[bytes | str] | None, now: float | None = None) -> float | None:
    """Seconds since the epoch of an HTTP date, or None if unreadable or in the future."""
    stamp = parse_http_date(_single(value))
    if stamp is None:
        return None
    if stamp > (time.time() if now is None else now) + FUTURE_TOLERANCE or stamp <= 0:
        return None
    return stamp


def _compare(a: object, b: object) -> Prediction:
    if a is None or b is None:
        return Prediction.NONE
    return Prediction.UNCHANGED if a == b else Prediction.CHANGED


def predict(
    scheme: str,
    *,
    old_etag: str | None,
    old_last_modified: str | None,
    etag: bytes | str | Sequence[bytes | str] | None,
    last_modified: bytes | str | Sequence[bytes | str] | None,
    now: float | None = None,
) -> Prediction:
    """What the new headers say about the content, compared with the old ones."""
    by_etag = _compare(etag_key(old_etag), etag_key(etag))
    by_date = _compare(http_date(old_last_modified, now), http_date(last_modified, now))
    if scheme == "etag":
        return by_etag
    if scheme == "timestamp":
        return by_date
    known = [p for p in (by_etag, by_date) if p is not Prediction.NONE]
    if not known:
        return Prediction.NONE
    if scheme == "both":
        return Prediction.UNCHANGED if all(p is Prediction.UNCHANGED for p in known) else Prediction.CHANGED
    if scheme == "either":
        return Prediction.UNCHANGED if any(p is Prediction.UNCHANGED for p in known) else Prediction.CHANGED
    raise ValueError(f"unknown validator scheme {scheme!r}")


def request_validators(etag: str | None, last_modified: str | None) -> dict[str, bytes]:
    """``If-None-Match`` / ``If-Modified-Since`` with the stored values verbatim,
    for the values that are safe to send back."""
    headers: dict[str, bytes] = {}
    for name, value in (("If-None-Match", etag), ("If-Modified-Since", last_modified)):
        text = _text(value)
        if text is None:
            continue
        try:
            headers[name] = text.encode("latin-1")
        except UnicodeEncodeError:
            continue
    return headers
