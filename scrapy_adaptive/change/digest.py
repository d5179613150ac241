"""Content digests: the forms a page's digest takes.

What each digest rule reads of a page, and which rule applies, is
:mod:`.rules`'.  Its digest is prefixed with the rule (``exact:sha1:…``,
``regex:sha1:…``, ``text:sha1:…``, ``items:sha1:…``), so switching a URL to
another rule is recognised as "unknown", not as a change.  The WARC-style
payload digest of the exact body (``sha1:BASE32``, :func:`payload_digest`)
is kept beside it: a body byte for byte the last capture's did not change,
whatever rule digests it now (:func:`same_payload`).  The items a callback
yields are digested here too (:func:`items_digest`), in any order.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any


def payload_digest(body: bytes, exact_digest: str | None = None) -> str:
    """The WARC-Payload-Digest form: ``sha1:`` + base32 of the body's SHA-1.

    An ``exact`` digest of the same body already holds that SHA-1: reuse it
    rather than hash the body twice.
    """
    if exact_digest is not None and exact_digest.startswith("exact:sha1:"):
        raw = bytes.fromhex(exact_digest[len("exact:sha1:") :])
    else:
        raw = hashlib.sha1(body).digest()
    return "sha1:" + base64.b32encode(raw).decode("ascii")


def sha1_digest(prefix: str, data: bytes) -> str:
    return f"{prefix}:sha1:{hashlib.sha1(data).hexdigest()}"


def items_digest(items: Iterable[Any], fields: Sequence[str] = ()) -> str:
    """Order-independent digest of *items* (only *fields* if given)."""
    # itemadapter imports Scrapy when it is installed: only when items are digested
    from itemadapter import ItemAdapter

    canonical = []
    for item in items:
        data = ItemAdapter(item).asdict()
        if fields:
            data = {k: data.get(k) for k in fields}
        canonical.append(json.dumps(data, sort_keys=True, default=str, ensure_ascii=False))
    canonical.sort()
    return sha1_digest("items", "\n".join(canonical).encode("utf-8"))


def same_payload(record: Mapping[str, Any], payload: str | None) -> bool:
    """True if a body whose :func:`payload_digest` is *payload* is byte for
    byte the last visit's.

    Such a page did not change, whatever rule digests it now: a digest rule
    switch (a sibling's learned noise adopted, the settings edited) changes
    the digest's form, never the page.
    """
    last = record.get("payload_digest")
    return last is not None and payload == last
