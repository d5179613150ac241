"""Which Scrapy request is out for which URL: the bookkeeping Scrapy forces.

The frontier knows which *URLs* are out (by fingerprint); Scrapy hands back
*request objects*: quick retries and redirects come back through
``enqueue_request``, verdicts arrive on whatever request a middleware holds.
This table maps one to the other.  An issued request carries its URL's
fingerprint in ``meta["_adaptive_fp"]``; users copy ``response.meta`` into
child requests, so the tag is believed only when the request is the issued
one, has the same fingerprint (a retry), or was redirected from it.

A request's fingerprint is computed once: the issued request is known by
its object (:meth:`IssuedRequests.fp_of` looks it up, at each of the
signals and middlewares that ask during its fetch), and the identity of any
other request object is kept with the object (:func:`url_identity`).
"""

from __future__ import annotations

import hashlib
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING
from weakref import WeakKeyDictionary

from .. import meta
from ..frontier.canonical import Canonical

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.utils.request import RequestFingerprinterProtocol


def url_identity(
    fingerprinter: RequestFingerprinterProtocol, canonical: Canonical | None = None
) -> Callable[[Request], bytes]:
    """The URL's identity of a request: Scrapy's request fingerprint (of the
    URL's canonical spelling, ``ADAPTIVE_CANONICAL``), or the page identity a
    project migrating from scrapy-deltafetch set in ``meta["deltafetch_key"]``
    (requests sharing a key share a record).

    Computed once per request object (a retry, a redirect or a child request
    is asked for by the scheduler more than once), as Scrapy's own
    fingerprints are: kept with the object while it lives, and computed again
    only if its ``deltafetch_key`` changed."""
    known: WeakKeyDictionary[Request, tuple[object, bytes]] = WeakKeyDictionary()
    canonical = canonical if canonical else None  # asked once: its rules do not change

    def compute(request: Request, key: object) -> bytes:
        if key is not None:
            return hashlib.sha1(b"deltafetch_key:" + str(key).encode("utf-8")).digest()
        if canonical is not None:
            url = canonical.url(request.url)
            if url != request.url:
                return fingerprinter.fingerprint(request.replace(url=url))
        return fingerprinter.fingerprint(request)

    def identity(request: Request) -> bytes:
        key = request.meta.get("deltafetch_key")
        seen = known.get(request)
        if seen is not None and seen[0] == key:
            return seen[1]
        fp = compute(request, key)
        known[request] = (key, fp)
        return fp

    return identity


class IssuedRequests:
    """Issued request objects by fingerprint, and re-sends waiting to go out."""

    def __init__(self, identity: Callable[[Request], bytes]) -> None:
        self.identity = identity
        self._issued: dict[bytes, Request] = {}
        #: id of each issued request object -> its fingerprint and the tag it
        #: was given; an id is here only while its object is issued (held in
        #: ``_issued``), so it names that object alone
        self._by_object: dict[int, tuple[bytes, str]] = {}
        self._resend: dict[bytes, Request] = {}
        self._asked: dict[bytes, deque[Request]] = {}
        self._asked_count = 0
        self._first: dict[bytes, Request] = {}

    def add(self, fp: bytes, request: Request) -> None:
        """*request* goes out for *fp*: tag it."""
        tag = request.meta[meta.FP] = fp.hex()
        self._drop(fp, self._issued.get(fp))
        self._issued[fp] = request
        self._by_object[id(request)] = (fp, tag)

    def _drop(self, fp: bytes, request: Request | None) -> None:
        """*request* is no longer issued for *fp*."""
        if request is not None and (known := self._by_object.get(id(request))) is not None and known[0] == fp:
            del self._by_object[id(request)]

    def fp_of(self, request: Request) -> bytes | None:
        """The fingerprint *request* was issued for, or None if it is not ours.

        The issued object itself, with its tag as given, is known at once:
        asked at every signal and middleware of its fetch, its tag is not
        read again."""
        known = self._by_object.get(id(request))
        if known is not None and request.meta.get(meta.FP) is known[1]:
            return known[0]
        tag = request.meta.get(meta.FP)
        if not isinstance(tag, str):
            return None
        try:
            fp = bytes.fromhex(tag)
        except ValueError:
            return None
        issued = self._issued.get(fp)
        if issued is None:
            return None
        if issued is request or self.identity(request) == fp:
            return fp
        if self.redirected_from(request, issued):
            return fp
        return None

    @staticmethod
    def redirected_from(request: Request, issued: Request) -> bool:
        """True when *request* is a redirect of *issued*."""
        redirect_urls = request.meta.get("redirect_urls") or []
        return bool(redirect_urls) and redirect_urls[-1] == issued.url

    def get(self, fp: bytes) -> Request | None:
        return self._issued.get(fp)

    def pop(self, fp: bytes) -> Request | None:
        """Forget the request out for *fp* (its verdict came, or its lease ran out)."""
        request = self._issued.pop(fp, None)
        self._drop(fp, request)
        return request

    def resend(self, fp: bytes, request: Request) -> None:
        """*request* came back unchanged: issue this very object again."""
        self.pop(fp)
        self._resend[fp] = request

    def ask(self, fp: bytes, request: Request) -> bool:
        """The spider asked for a known URL with *request* (``dont_filter``):
        its next fetch goes out as this very object, to its own callback,
        errback, ``cb_kwargs`` and meta.  False when :data:`MAX_ASKED` such
        requests already wait (the stored request is fetched instead)."""
        if self._asked_count >= MAX_ASKED:
            return False
        request.meta[meta.ASKED] = True
        self._asked.setdefault(fp, deque()).append(request)
        self._asked_count += 1
        return True

    def hold_first(self, fp: bytes, request: Request, *, credentials: Callable[[], bool]) -> bool:
        """Keep *request*, which made the URL *fp* known, for the URL's first
        fetch: it goes out as this very object, as from Scrapy's memory queue
        (its headers and cookies with it, which the state folder does not
        keep unless told to; no rebuilding from the store).  The oldest are
        kept: a crawl issues a host's URLs in the order they came.  Past
        :data:`MAX_FIRST` objects only requests carrying credentials (asked
        of *credentials* then, not for every new URL) are kept, up to
        :data:`MAX_FIRST_WITH_CREDENTIALS`; False when *request* carries
        credentials and is not kept (its first fetch goes without them)."""
        held = len(self._first)
        if held >= MAX_FIRST:
            if not credentials():
                return True  # rebuilt from the store, nothing lost
            if held >= MAX_FIRST_WITH_CREDENTIALS:
                return False
        self._first[fp] = request
        return True

    def take_for_issue(self, fp: bytes, *, tried: bool) -> tuple[Request | None, bool, bool]:
        """The object held to go out for *fp* now that it is issued, of those
        waiting for it: ``(request, first, more)``.  A re-send comes first;
        then, for a URL fetched or tried before (*tried*), the oldest request
        asked for it; else the request kept for its first fetch (*first*
        True: it comes from the spider as it was yielded).  None: nothing
        held, the stored request goes.  *more*: another asked request still
        waits behind this one.  The request kept for the first fetch is let
        go whatever goes: a URL issued once has had its first fetch."""
        first = self._first.pop(fp, None)
        request = self._resend.pop(fp, None)
        is_first = False
        if request is None:
            if tried:
                request = self.take_asked(fp)
            elif first is not None:
                request, is_first = first, True
        return request, is_first, fp in self._asked

    def take_asked(self, fp: bytes) -> Request | None:
        """The oldest request asked for *fp*, if one waits."""
        waiting = self._asked.get(fp)
        if not waiting:
            return None
        request = waiting.popleft()
        self._asked_count -= 1
        if not waiting:
            del self._asked[fp]
        return request

    def asked(self, fp: bytes) -> Request | None:
        """The oldest request still asked for *fp* (not taken)."""
        waiting = self._asked.get(fp)
        return waiting[0] if waiting else None

    def __len__(self) -> int:
        return len(self._issued)


#: requests held for their URL's first fetch (about 1-2 kB each)
MAX_FIRST = 10_000

#: of which requests carrying credentials, kept past :data:`MAX_FIRST`
MAX_FIRST_WITH_CREDENTIALS = 100_000

#: requests asked for known URLs held in memory at most (each is a live
#: Request with whatever the spider put in it; past that, the stored one goes)
MAX_ASKED = 10_000
