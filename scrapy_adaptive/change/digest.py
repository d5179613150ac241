"""Content digests: the forms a page's digest takes.

What each rule reads of a page is :mod:`.rules`'; the digests are these:

* ``exact`` – SHA-1 of the body bytes.
* ``regex`` – the thesis's HTTPContentDigest: on a copy of the text, every
  match of the operator's regular expressions is replaced by one blank
  before hashing (clocks, session ids, counters stop counting as change);
  bodies over ``max_size`` fall back to ``exact``.
* ``text`` – the visible text of an HTML page, whitespace-normalised, with
  scripts, styles, comments and attributes dropped: markup, layout and
  script noise stop counting as change.  Non-HTML falls back to ``exact``.
* ``items`` – the digest of the items the callback yields for the page
  (through itemadapter, optionally only some fields): the page changed when
  its data changed.  Computed by the visit middleware after the callback.

Digests are prefixed with the rule (``text:sha1:…``), so switching a URL
to another rule is recognised as "unknown", not as a change.  The WARC-style
payload digest of the exact body (``sha1:BASE32``) is kept beside it.
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
