"""Every ``Request.meta`` key scrapy-adaptive reads or writes, in one table.

Scrapy's convention: public keys are lower snake case (``dont_retry``),
private ones start with an underscore (``_dont_cache``).  The public keys
below are documented in docs/settings.md's "Request.meta keys" table (a test keeps
the two in step); the private ones are the per-fetch tags the scheduler and
the middlewares pass each other, and may change between releases.

No key is ever stored with a request: private keys are dropped as Scrapy's
``_`` keys are, and :data:`PER_FETCH` lists the public ones that describe
one fetch only.
"""

from __future__ import annotations

# -- public: set by you ---------------------------------------------------------

#: ``"skip"`` or ``"deliver"``: overrides ``ADAPTIVE_UNCHANGED`` for this request
UNCHANGED = "adaptive_unchanged"
#: a digest rule name or entry dict overriding ``ADAPTIVE_DIGEST_RULES``
DIGEST_RULE = "adaptive_digest_rule"
#: a dict of wait keys (``initial``, ``min``, ...) overriding the policy stack
WAIT_POLICY = "adaptive_wait_policy"
#: ``{"modified": ..., "source": ...}``: the site says this URL changed
HINT = "adaptive_hint"
#: True / False: whether the request is an embedded resource (default: by URL)
EMBED = "adaptive_embed"
#: ``"sitemap"`` or ``"feed"``: the response is read by scrapy-adaptive, not the callback
SIGNAL = "adaptive_signal"

# -- public: set by scrapy-adaptive, for your callbacks and middlewares ---------

#: a read-only view of the URL's record (:class:`~.model.RecordView`): as
#: issued before the verdict, as the visit left it after; scrapy-adaptive's
#: own components ask the frontier, never this key
RECORD = "adaptive_record"
#: what this visit found: ``"changed"``, ``"unchanged"`` or ``"unknown"``
CHANGE = "adaptive_change"

# -- private: per-fetch tags between the scheduler and the middlewares ----------

#: hex fingerprint of the URL an issued request is for
FP = "_adaptive_fp"
#: the downloader's :class:`~.model.FetchResult`: how validators were used,
#: what the headers predicted, and its own verdict (a 304, an aborted fetch)
FETCH = "_adaptive_fetch"
#: the WARC writer's crawl-log annotation for this fetch (a cross-URL duplicate)
ARCHIVE_NOTE = "_adaptive_archive_note"
#: items mode: the visit waiting for the callback's items
PENDING_VISIT = "_adaptive_visit"
#: embed hops from the last page (``ADAPTIVE_EMBED_HOPS``)
EMBED_HOPS = "_adaptive_embed_hops"
#: on a page captured anew and on its embeds (``ADAPTIVE_REVISIT_EMBEDS_ON_CHANGE``):
#: True, the embeds come with it unless their copies stand for its moment
PAGE_CHANGED = "_adaptive_page_changed"
#: on an embed a page captured anew lets out: ``(page URL, the page's
#: DOWNLOADED time)``; on the fetch of an embed's URL, from its download on:
#: the page captures it came for, a tuple of such pairs (the WARC writer's
#: ``via`` metadata records; :mod:`~scrapy_adaptive.integration.composites`)
PAGE = "_adaptive_page"
#: when the response came from the downloader (``response_downloaded``): the
#: WARC-Date of its records, and a page's capture time for its embeds
DOWNLOADED = "_adaptive_downloaded"
#: a sitemap or feed read before its verdict (a ``sitemaps.SignalRead``)
SIGNAL_READ = "_adaptive_signal_read"
#: a changed visit's :class:`~scrapy_adaptive.runtime.delivery.Ticket`: its items on their way to the user's store
DELIVERY = "_adaptive_delivery"
#: a request the spider asked for (``dont_filter``) for a URL already known:
#: fetched as it is and delivered to its own callback, changed or not
ASKED = "_adaptive_asked"

#: the public keys, as documented in docs/settings.md
PUBLIC = (UNCHANGED, DIGEST_RULE, WAIT_POLICY, HINT, EMBED, SIGNAL, RECORD, CHANGE)
#: the private keys
PRIVATE = (
    FP,
    FETCH,
    ARCHIVE_NOTE,
    PENDING_VISIT,
    EMBED_HOPS,
    PAGE_CHANGED,
    PAGE,
    DOWNLOADED,
    DELIVERY,
    SIGNAL_READ,
    ASKED,
)
#: public keys that belong to one fetch and are never stored with the request
PER_FETCH = frozenset({RECORD, CHANGE, HINT})
