"""What the callback sees of a verdict, written onto the Scrapy request.

The visit middleware reads a response (:mod:`.reading`), the judge decides
(``change/``), the frontier records; what comes back is attached here, for
the callback and the requests it yields: ``meta["adaptive_change"]``, an
unchanged page's or the host's error page's callback replaced by one that
does nothing (``ADAPTIVE_UNCHANGED = "skip"``), a 304 let through
``HttpErrorMiddleware`` as the visit it is, and the mark that a changed
page's embeds may have changed with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from scrapy import Request
from scrapy.http import Response

from ... import meta
from ...change.difference import not_content
from ...config.spec import UNCHANGED_MODES
from ...model import ChangeState, Visit

if TYPE_CHECKING:
    from scrapy.statscollectors import StatsCollector


def attach_verdict(
    request: Request, visit: Visit, *, unchanged: str, revisit_embeds: bool, stats: StatsCollector
) -> None:
    """*visit*, the verdict as recorded, shown to the callback of *request*
    (*unchanged*: ``ADAPTIVE_UNCHANGED``; *revisit_embeds*:
    ``ADAPTIVE_REVISIT_EMBEDS_ON_CHANGE``)."""
    request.meta[meta.CHANGE] = visit.change.value
    if revisit_embeds and visit.change is ChangeState.CHANGED:
        # the page is captured anew: its embeds may have changed with it
        request.meta[meta.PAGE_CHANGED] = True
    else:
        request.meta.pop(meta.PAGE_CHANGED, None)
    if visit.change is ChangeState.UNCHANGED and skips(request, unchanged):
        request.callback = skip_unchanged
        stats.inc_value("adaptive/unchanged/skipped")
    elif not_content(visit) and skips(request, unchanged):
        request.callback = skip_unchanged  # the host's error or placeholder page: nothing to deliver
        stats.inc_value("adaptive/soft404/skipped")
    if visit.status == 304:
        # a 304 answering our validators is a visit, never an HttpError
        allowed = list(request.meta.get("handle_httpstatus_list") or [])
        request.meta["handle_httpstatus_list"] = [*allowed, 304]


def skips(request: Request, unchanged: str) -> bool:
    """True if an unchanged page of *request* is kept from its callback
    (*unchanged*: ``ADAPTIVE_UNCHANGED``, which ``meta["adaptive_unchanged"]``
    overrides).  A request the spider asked for is not a revisit the
    crawler chose: its callback always runs."""
    if request.meta.get("deltafetch_enabled") is False or request.meta.get(meta.ASKED):
        return False
    mode = request.meta.get(meta.UNCHANGED)
    return (mode if mode in UNCHANGED_MODES else unchanged) == "skip"


def skip_unchanged(response: Response, **kwargs: Any) -> tuple[()]:
    """Stands in for the callback of an unchanged page: nothing to do."""
    return ()
