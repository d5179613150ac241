"""Content digests: what "the page changed" means, per rule.

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
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..config.patterns import UserPattern
    from .answer import Answer


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


class Digester:
    """One digest rule, configured; ``digest`` returns None for an empty body."""

    name = "exact"

    def digest(self, answer: Answer) -> str | None:
        body = answer.body
        return sha1_digest("exact", body) if body else None


class RegexDigester(Digester):
    name = "regex"

    def __init__(self, patterns: Sequence[UserPattern], max_size: int) -> None:
        self.patterns = tuple(patterns)
        self.max_size = max_size

    def digest(self, answer: Answer) -> str | None:
        """The digest of the text once every pattern's matches are blanked;
        of the whole body (``exact``) past ``max_size`` or when a pattern
        runs out of time on this page (:mod:`..config.patterns`)."""
        body = answer.body
        if not body:
            return None
        if len(body) > self.max_size:
            return sha1_digest("exact", body)
        text: str | None = answer.text
        if text is None:
            text = body.decode("latin-1")
        for pattern in self.patterns:
            text = pattern.sub(" ", text, on=answer.url, fallback="pages it cannot finish on are digested exactly")
            if text is None:
                return sha1_digest("exact", body)
        return sha1_digest("regex", text.encode("utf-8"))


_INVISIBLE = ("script", "style", "noscript", "template", "head")
_SPACES = re.compile(r"\s+")


class TextDigester(Digester):
    name = "text"

    def digest(self, answer: Answer) -> str | None:
        body = answer.body
        if not body:
            return None
        text = answer.text
        if text is None or "html" not in answer.media_type:
            return sha1_digest("exact", body)
        return sha1_digest("text", visible_text(text).encode("utf-8"))


#: characters XML text may not hold (all controls but tab, newline and carriage return)
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def visible_root(html: str) -> Any:
    """The parsed page without what a reader does not see (scripts, styles,
    comments, the head), or None if it cannot be parsed."""
    import lxml.etree
    import lxml.html

    # control characters a page may carry (a form feed, a vertical tab, or
    # binary bytes served as HTML) are parsed into text that lxml then refuses
    # to move when an element is dropped; no reader sees them
    html = _CONTROL.sub(" ", html)
    try:
        root = lxml.html.document_fromstring(html)
    except (lxml.etree.ParserError, ValueError):
        return None
    # collect first: dropping while iterating would skip siblings
    for element in list(root.iter(lxml.etree.Comment, *_INVISIBLE)):
        if element.getparent() is not None:
            element.drop_tree()  # keeps the element's tail text
    return root


def visible_text(html: str) -> str:
    """The text a reader sees, in document order, whitespace-normalised."""
    root = visible_root(html)
    if root is None:
        return _SPACES.sub(" ", html).strip()
    return _SPACES.sub(" ", root.text_content()).strip()


class ItemsDigester(Digester):
    """Digests the items of a page; the body is not looked at."""

    name = "items"

    def __init__(self, fields: Sequence[str] = (), key: str | None = None, values: Sequence[str] = ()) -> None:
        self.fields = tuple(fields)
        #: the field that identifies an item across versions (None: its position)
        self.key = key
        #: fields whose old and new values a change event carries
        self.values = tuple(values)

    def digest(self, answer: Answer) -> str | None:  # pragma: no cover - not used for items
        raise TypeError("the items rule digests items, not responses: use items_digest()")


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


DIGESTERS = ("exact", "regex", "text", "items")


def same_payload(record: Mapping[str, Any], payload: str | None) -> bool:
    """True if a body whose :func:`payload_digest` is *payload* is byte for
    byte the last visit's.

    Such a page did not change, whatever rule digests it now: a digest rule
    switch (a sibling's learned noise adopted, the settings edited) changes
    the digest's form, never the page.
    """
    last = record.get("payload_digest")
    return last is not None and payload == last
