"""A DNS resolver for end-to-end crawls that need host *names*.

Tests may only talk to loopback addresses, and this machine's resolver knows
no names for them besides ``localhost``.  Crawls that must see two names for
one site (``www.site.test`` and ``site.test``) set
``DNS_RESOLVER = "tests.loopback_resolver.LoopbackResolver"``: every name under
the reserved ``.test`` top-level domain (RFC 6761) resolves to 127.0.0.1, and
any other name goes to Scrapy's own resolver, so nothing can leave the machine
through a ``.test`` name.
"""

from __future__ import annotations

from collections.abc import Sequence

from scrapy.resolver import CachingThreadedResolver
from twisted.internet import defer


class LoopbackResolver(CachingThreadedResolver):
    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> defer.Deferred[str]:  # noqa: N802 (Twisted's name)
        if name == "test" or name.endswith(".test"):
            return defer.succeed("127.0.0.1")
        return super().getHostByName(name, timeout)
