"""What the spider middlewares read off Scrapy's objects.

A response becomes an :class:`~...change.answer.Answer` here, once, for
change detection to judge (:mod:`...change.judge`): its headers as text, a
redirect's target resolved as Scrapy resolves it, the request's meta values
a verdict reads, and its text and parsed tree on demand (Scrapy decodes and
parses a response once, for this and for the spider's callback alike).
What a difference means is decided in ``change/``, not here.  Also read
here: whether a request is an embedded resource.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from scrapy import Request
from scrapy.http import Response

from ... import meta
from ...change.answer import Answer
from ...dates import parse_claimed, parse_http_date
from ...model import FetchResult

#: path endings of resources a page embeds rather than links to
EMBED_EXTENSIONS = frozenset(
    ".png .jpg .jpeg .gif .webp .avif .svg .ico .bmp .css .js .mjs .woff .woff2 .ttf .otf .eot".split()
)

#: the headers every visit's verdict reads, in :class:`Answer`'s order
_ANSWER_HEADERS = ("Content-Type", "ETag", "Last-Modified", "Date", "Expires")


def answer_of(response: Response) -> Answer:
    """*response* as change detection reads it (this runs at every response:
    the headers are read in one pass, without a call each)."""
    headers = response.headers
    content_type, etag, last_modified, date, expires = [
        None if v is None else v.decode("latin-1") for v in map(headers.get, _ANSWER_HEADERS)
    ]
    status = response.status
    location = None
    if 300 <= status < 400 and (target := header(response, "Location")):
        location = response.urljoin(target)
    depth = note = hint = fetch = rule = None
    request = response.request
    if request is not None:
        request_meta = request.meta
        depth = request_meta.get("depth")
        note = request_meta.get(meta.ARCHIVE_NOTE)
        hint = request_meta.get(meta.HINT)
        fetch = request_meta.get(meta.FETCH)
        rule = request_meta.get(meta.DIGEST_RULE)
    cache_control = joined_header(response, "Cache-Control")
    # the dates read once, here: every rule that compares one reads the instant
    served_at = parse_http_date(date)
    modified_at = parse_http_date(last_modified)
    expires_at = None if expires is None else parse_http_date(expires.strip())
    hinted = hint.get("modified") if isinstance(hint, dict) else None
    claimed_at = None if hinted is None else parse_claimed(hinted)
    return Answer(
        url=response.url,
        status=status,
        body=response.body,
        content_type=content_type,
        etag=etag,
        last_modified=last_modified,
        date=date,
        expires=expires,
        cache_control=cache_control,
        location=location,
        depth=depth if isinstance(depth, int) else None,
        note=note if isinstance(note, str) else None,
        hinted_modified=hinted,
        served_at=served_at,
        modified_at=modified_at,
        expires_at=expires_at,
        claimed_at=claimed_at,
        fetch=fetch if isinstance(fetch, FetchResult) else None,
        digest_rule=rule,
        read_text=lambda: text_of(response),
        read_tree=lambda: spider_tree(response),
    )


def header(response: Response, name: str) -> str | None:
    """A response header as text (latin-1, as HTTP headers are), or None."""
    value = response.headers.get(name)
    return value.decode("latin-1") if value is not None else None


def joined_header(response: Response, name: str) -> str | None:
    """Every line of a list-valued header, joined by commas as HTTP allows."""
    values = response.headers.getlist(name)
    return ", ".join(v.decode("latin-1") for v in values) if values else None


def text_of(response: Response) -> str | None:
    """The decoded text of a text response, None for a binary one (Scrapy's
    ``Response.text`` raises AttributeError on those)."""
    try:
        text = response.text
    except AttributeError:
        return None
    return text if isinstance(text, str) else None


def spider_tree(response: Response) -> Any:
    """The page's lxml tree as the spider's callback sees it (Scrapy's
    cached selector, so the page is parsed once), or None."""
    selector = getattr(response, "selector", None)
    root = getattr(selector, "root", None)
    if root is not None and hasattr(root, "iter"):
        return root.getroottree().getroot()
    return None


def is_embed(request: Request) -> bool:
    """True for resources a page embeds (by ``adaptive_embed`` meta or URL)."""
    flag = request.meta.get(meta.EMBED)
    if isinstance(flag, bool):  # any other value was refused at enqueue (metacheck)
        return flag
    # the URL parsed as urlparse_cached would, without keeping the result
    # with the request: most links a page yields are duplicates never fetched
    path = urlparse(request.url).path.lower()
    dot = path.rfind(".")
    return dot != -1 and path[dot:] in EMBED_EXTENSIONS
