"""Which queue a request belongs to, and what robots.txt asks of it.

The queue key is the unit of politeness: one queue, one valence, one wait
between fetches.  ``host`` (the default) matches Scrapy's own download slots;
``domain`` groups ``a.example.com`` and ``b.example.com`` under their
registered domain (public suffix list bundled with tldextract, never fetched
at run time); ``slot`` honours a ``download_slot`` set in ``meta`` by the
project, falling back to the host.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from protego import Protego
from scrapy import Request
from scrapy.utils.httpobj import urlparse_cached

logger = logging.getLogger(__name__)


class QueueKeyer:
    """Maps a request to its politeness queue name."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self._domain_of: Callable[[str], str] | None = None
        if mode == "domain":
            import tldextract

            # suffix_list_urls=() : use the bundled snapshot, no network access
            extract = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

            def domain_of(host: str) -> str:
                parts = extract(host)
                return parts.top_domain_under_public_suffix or host

            self._domain_of = domain_of

    def key(self, request: Request) -> str:
        host = (urlparse_cached(request).hostname or "").lower()
        if self.mode == "slot":
            slot = request.meta.get("download_slot")
            return str(slot) if slot else host
        if self._domain_of is not None and host:
            return self._domain_of(host)
        return host


def parse_crawl_delay(body: bytes, user_agent: str | None) -> float | None:
    """The ``Crawl-delay`` robots.txt gives *user_agent*, if any, in seconds."""
    try:
        text = body.decode("utf-8", errors="replace")
        delay = Protego.parse(text).crawl_delay(user_agent or "*")
    except Exception:  # a broken robots.txt must not break the crawl
        logger.debug("Unparsable robots.txt", exc_info=True)
        return None
    if delay is None:
        return None
    try:
        value = float(delay)
    except (TypeError, ValueError):
        return None
    return value if value >= 0 else None
