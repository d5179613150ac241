"""One response as change detection reads it: a plain value, no Scrapy.

The visit middleware reads the Scrapy response once into an
:class:`Answer` (``integration/spidermiddlewares/reading.py``): its URL,
status and body, the few headers a verdict reads, what the downloader's
middlewares found (:class:`~..model.FetchResult`) and the request's own
facts (its depth, an archive note, a sitemap's claimed date).  Everything
in this package that judges a response takes this value: the digest rules
(:mod:`.digest`), the verdict (:mod:`.judge`), learned noise
(:mod:`.noise`, :mod:`.noise_learner`) and the text diff
(:mod:`.text_diff`).

Its dates are read once, with the headers (``served_at``, ``modified_at``,
``expires_at``, ``claimed_at``): a header's text stays as sent, for the
record and the validators, and its instant is what the rules compare.

The decoded text and the parsed tree are read on demand, through the
callables the adapter gives: the response decodes its body once (its
encoding read from headers, a BOM or the page itself) and parses it once
(the spider's callback reuses the tree), so no digest rule that does not
need them pays for either.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..config.matching import media_type as _media_type
from ..model import FetchResult


def _nothing() -> Any:
    return None


@dataclass(frozen=True)
class Answer:
    """What one response says, as change detection reads it.

    Headers are text (latin-1, as HTTP headers are), the last line of each;
    ``cache_control`` holds every line, joined by commas as HTTP allows.
    ``location`` is a 3xx's target, resolved against the response.
    ``read_text`` returns the decoded body (None: a binary response) and
    ``read_tree`` an lxml tree the spider already parsed (None: there is
    none, the text is parsed when a tree is needed).
    """

    url: str
    status: int
    body: bytes = b""
    content_type: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    date: str | None = None
    expires: str | None = None
    cache_control: str | None = None
    location: str | None = None
    #: the request's crawl depth, its archive note, and the content date its
    #: ``adaptive_hint`` claims, as given (read by :mod:`.judge`)
    depth: int | None = None
    note: str | None = None
    hinted_modified: Any = None
    #: the instants of ``Date``, ``Last-Modified`` and ``Expires`` and of the
    #: hint's claimed date (None: none, or unreadable), read once with the headers
    served_at: float | None = None
    modified_at: float | None = None
    expires_at: float | None = None
    claimed_at: float | None = None
    #: the request's own digest rule (``meta["adaptive_digest_rule"]``), as given
    digest_rule: Any = None
    #: what the downloader's middlewares found on this fetch
    fetch: FetchResult | None = None
    read_text: Callable[[], str | None] = field(default=_nothing, repr=False, compare=False)
    read_tree: Callable[[], Any] = field(default=_nothing, repr=False, compare=False)

    @functools.cached_property
    def media_type(self) -> str:
        """The content type without its parameters, lower case; ``text/html``
        when the response names none.  Read once: the digest rules, learned
        noise and the text diff each ask which parser the body takes."""
        return _media_type(self.content_type or "text/html")

    @property
    def text(self) -> str | None:
        """The decoded body of a text response, None for a binary one."""
        return self.read_text()

    def tree(self) -> Any:
        """The lxml tree the spider parsed already, or None."""
        return self.read_tree()
