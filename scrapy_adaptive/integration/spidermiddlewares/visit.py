"""VisitMiddleware: change detection on every response a frontier URL got.

Outermost in the spider middleware chain, so it sees each response before
``HttpErrorMiddleware`` can turn a 404 into an error: any HTTP response is a
visit (thesis 6.2).  It reads each one once into an
:class:`~...change.answer.Answer` (:mod:`.reading`); what a difference means
is decided in ``change/`` (:mod:`...change.judge`), by one call that

1. picks the digest rule (``ADAPTIVE_DIGEST_RULES``, or the request's
   ``adaptive_digest_rule`` meta) and digests the content, unless a
   downloader middleware already decided the state (a 304, an aborted fetch:
   a private ``meta`` verdict), in which case that state stands and the
   last digest is kept;
2. compares with the last digest of the URL's record as issued (asked of
   the frontier's services): changed / unchanged / unknown (no body);
   a page without validators that changed on a revisit is probed twice
   (fetched again as soon as politeness allows) and what moved over both
   pairs of fetches is learned as noise and left out of its digest from
   then on (:mod:`..change.noise_learner`);

and the middleware

3. hands the verdict to the frontier's services (bound by the scheduler
   at open): the policy stack plans the wait and the frontier records both,
   in one atomic write; what comes back is the verdict as recorded (a page
   the frontier knows as the host's error page is not a version);
4. keeps an unchanged page away from the callback (:mod:`.callback`,
   ``ADAPTIVE_UNCHANGED = "skip"``, the default): no links re-extracted,
   no items re-emitted.  With ``"deliver"`` (or
   ``meta["adaptive_unchanged"] = "deliver"``) the callback runs and reads
   ``response.meta["adaptive_change"]``.

A page the frontier judges a soft 404 or a parked page (at commit,
:meth:`~..frontier.hostfacts.Hosts.page_kind`) is kept from the callback the same
way: it is the host's error or placeholder page, not a new version.

In ``items`` mode the callback always runs: the page's items are digested
after it, and dropped when they did not change.

On the way out it marks embedded resources (images, stylesheets, scripts)
with their embed-hop count (``ADAPTIVE_EMBED_HOPS``) and, with
``ADAPTIVE_REVISIT_EMBEDS_ON_CHANGE``, marks the embeds of a changed page so
that those that may have changed too are due at once, and the page and its
resources are captured together (thesis ch. 8); the frontier decides which
(:meth:`~..frontier.Frontier.add`): a stylesheet every page shares and that
never changes is not fetched again at each change of each page.  An embed of
a page captured anew (first or changed) carries the page's URL and capture
time (``_adaptive_page``, set in :meth:`VisitMiddleware._child`), for
:mod:`..composites` to follow how far apart the two are captured.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from itemadapter import is_item
from scrapy import Request
from scrapy.http import Response

from ... import meta
from ...change.difference import not_content
from ...change.judge import Judging, judge, judge_by_items
from ...change.noise_learner import NoisePool
from ...change.rules import Digester, DigestRules, ItemsDigester
from ...config.spec import ConfigError
from ...config.table import DEFAULTS
from ...model import ChangeState, Visit
from ...runtime.delivery import Ticket, ticket_of
from ...runtime.wiring import FRONTIER_OPENED, crawl_config
from ..composites import CompositeCaptures
from ..downloadermiddlewares.errors import describe, settle_component_error
from .callback import attach_verdict, skips
from .reading import answer_of, is_embed
from .sitemaps import read_before_verdict

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.statscollectors import StatsCollector

    from ...runtime.verdicts import FrontierServices

logger = logging.getLogger(__name__)


class VisitMiddleware:
    """Judges each frontier-issued response and commits the verdict."""

    def __init__(
        self,
        stats: StatsCollector,
        services: FrontierServices | None = None,
        *,
        embed_hops: int = DEFAULTS["ADAPTIVE_EMBED_HOPS"],
        rules: DigestRules | None = None,
        unchanged: str = DEFAULTS["ADAPTIVE_UNCHANGED"],
        revisit_embeds: bool = DEFAULTS["ADAPTIVE_REVISIT_EMBEDS_ON_CHANGE"],
        max_size: int = DEFAULTS["ADAPTIVE_DIGEST_MAX_SIZE"],
        probe_window: float = 30.0,
        noise_learning: bool = DEFAULTS["ADAPTIVE_NOISE_LEARNING"],
        signal_max_size: int = 0,
        field_diffs: bool = False,
        text_diff: int = 0,
        clock: Any = time.time,
    ) -> None:
        self.stats = stats
        #: the frontier's services, handed over when the scheduler opens it
        #: (None: not an adaptive crawl, the middleware stays out of the way)
        self.services = services
        self.embed_hops = embed_hops
        self.unchanged = unchanged
        self.revisit_embeds = revisit_embeds
        #: DOWNLOAD_MAXSIZE: the most a gzip sitemap may inflate to (0: no limit)
        self.signal_max_size = signal_max_size
        #: what the judge needs beyond one answer (change/judge.py): learned
        #: noise and its pool of masks offered to siblings, what a changed page keeps
        self.judging = Judging(
            rules=rules or DigestRules((), Digester()),
            max_size=max_size,
            noise=NoisePool() if noise_learning else None,
            # the longest a noise probe may come after the fetch it checks
            probe_window=probe_window,
            clock=clock,
            # ADAPTIVE_TEXT_DIFF with change events on: a changed page's visible text goes with its verdict
            keep_text=bool(text_diff),
            # items mode: say which fields changed (change events are on)
            field_diffs=field_diffs,
        )
        #: follows page captures with their embeds (with embeds on; set by from_crawler)
        self.composites: CompositeCaptures | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> VisitMiddleware:
        config = crawl_config(crawler)
        try:
            rules = (
                None
                if config is None
                else DigestRules.from_settings(config.digest_rules, config.digest_default, config.digest_max_size)
            )
        except ConfigError:
            rules = None  # the scheduler refuses the start, naming the setting, before anything is opened
        if config is None or rules is None:
            mw = cls(crawler.stats)  # type: ignore[arg-type]
        else:
            mw = cls(
                crawler.stats,  # type: ignore[arg-type]
                rules=rules,
                embed_hops=config.embed_hops,
                unchanged=config.unchanged,
                revisit_embeds=config.revisit_embeds_on_change,
                max_size=config.digest_max_size,
                # a probe waits the host's politeness delay; ten of them is still
                # short next to the change rates noise learning must not mistake
                probe_window=max(30.0, 10 * config.min_delay),
                noise_learning=config.noise_learning,
                signal_max_size=crawler.settings.getint("DOWNLOAD_MAXSIZE"),
                field_diffs=config.events_on,
                text_diff=config.text_diff if config.events_on else 0,
            )
        crawler.signals.connect(mw.frontier_opened, FRONTIER_OPENED)
        if config is not None and (config.embed_hops > 0 or config.revisit_embeds_on_change):
            # how far apart pages and their embeds are captured (kept here: signals hold handlers weakly)
            mw.composites = CompositeCaptures.connect(crawler)
        return mw

    def frontier_opened(self, services: FrontierServices) -> None:
        """The scheduler opened the frontier: verdicts go to *services*."""
        self.services = services

    # -- input: judge and commit -------------------------------------------------

    def process_spider_input(self, response: Response) -> None:
        """Read the response, have it judged, record the verdict, show it to
        the callback: each step once, in that order."""
        request = response.request
        if request is None or self.services is None or meta.FP not in request.meta:
            return
        record = self.services.record(request)
        if record is None:
            return  # not an issued URL (a child request that copied the tag)
        answer = answer_of(response)
        judged = judge(answer, record, self.judging)
        for key in judged.counts:
            self.stats.inc_value(f"adaptive/{key}")
        visit = judged.visit
        if judged.items is not None:
            # items mode: judged once the callback's items are known (process_spider_output)
            request.meta[meta.PENDING_VISIT] = (visit, judged.items, record)
            request.meta[meta.CHANGE] = judged.before
            return
        if request.meta.get(meta.SIGNAL) in ("sitemap", "feed"):
            visit = read_before_verdict(request, response, visit, self.signal_max_size, self.stats)
        recorded = self.services.commit(request, visit)
        attach_verdict(
            request,
            visit if recorded is None else recorded.visit,  # None: the URL was forgotten meanwhile, or unwritable
            unchanged=self.unchanged,
            revisit_embeds=self.revisit_embeds,
            stats=self.stats,
        )

    def process_spider_exception(self, response: Response, exception: Exception) -> None:
        """A response no one judged, because a spider middleware before this
        one raised in ``process_spider_input``: its URL is settled with that
        error now, as a fetch a downloader middleware failed is, not when its
        lease lapses.  (A callback's error comes after the verdict: nothing
        to do.)  The exception goes on to Scrapy as it came."""
        request = response.request
        if request is not None and self.services is not None and self.services.record(request) is not None:
            settle_component_error(self.services, request, exception, describe(exception))
        return None

    # -- output: items mode, embeds ------------------------------------------------

    # Both a sync and an async form ("universal" middleware): with an
    # async-only form Scrapy turns every callback's output into one asyncio
    # task per object, which costs more than the rest of the crawl.

    def process_spider_output(self, response: Response, result: Iterable[Any]) -> Iterator[Any]:
        pending = self._pop_pending(response)
        ticket = ticket_of(response)
        items: list[Any] = []
        try:
            for obj in result:
                if pending is not None and is_item(obj):
                    items.append(obj)
                else:
                    yield self._out(obj, response, ticket)
        except BaseException as exc:
            self._callback_failed(response, pending)
            if isinstance(exc, Exception):  # not an abandoned output (GeneratorExit)
                self._callback_raised(response)
            raise
        for obj in self._finish_items(response, pending, items):
            yield self._out(obj, response, ticket_of(response))
        # items mode: the visit's ticket was made at its commit, in _finish_items
        self._output_done(ticket if pending is None else ticket_of(response))

    async def process_spider_output_async(self, response: Response, result: AsyncIterator[Any]) -> AsyncIterator[Any]:
        pending = self._pop_pending(response)
        ticket = ticket_of(response)
        items: list[Any] = []
        try:
            async for obj in result:
                if pending is not None and is_item(obj):
                    items.append(obj)
                else:
                    yield self._out(obj, response, ticket)
        except BaseException as exc:
            self._callback_failed(response, pending)
            if isinstance(exc, Exception):  # not an abandoned output (GeneratorExit)
                self._callback_raised(response)
            raise
        for obj in self._finish_items(response, pending, items):
            yield self._out(obj, response, ticket_of(response))
        # items mode: the visit's ticket was made at its commit, in _finish_items
        self._output_done(ticket if pending is None else ticket_of(response))

    def _out(self, obj: Any, response: Response, ticket: Ticket | None) -> Any:
        """What goes on: items counted on the visit's delivery ticket, requests marked."""
        # a request is never an item, and most objects are requests:
        # is_item asks every item adapter in turn
        if ticket is not None and not isinstance(obj, Request) and is_item(obj):
            ticket.item_yielded()
            return obj
        return self._child(obj, response)

    @staticmethod
    def _output_done(ticket: Ticket | None) -> None:
        """The callback's output ended (*ticket*: its visit's).  An output
        abandoned half way (the crawl stopping) leaves the ticket open, and
        one ended by a callback error fails it: either way the version is
        delivered again after a restart."""
        if ticket is not None:
            ticket.output_done()

    @staticmethod
    def _callback_raised(response: Response) -> None:
        """The callback raised: its version is not confirmed (see :meth:`.Ticket.callback_failed`)."""
        ticket = ticket_of(response)
        if ticket is not None:
            ticket.callback_failed()

    @staticmethod
    def _pop_pending(response: Response) -> tuple[Visit, ItemsDigester, Mapping[str, Any]] | None:
        request = response.request
        return request.meta.pop(meta.PENDING_VISIT, None) if request is not None else None

    def _callback_failed(self, response: Response, pending: tuple[Visit, Any, Any] | None) -> None:
        if pending is not None and response.request is not None and self.services is not None:
            self.services.commit(response.request, pending[0])  # unknown: the callback failed

    def _finish_items(
        self, response: Response, pending: tuple[Visit, ItemsDigester, Mapping[str, Any]] | None, items: list[Any]
    ) -> Iterator[Any]:
        """Items mode: judge the page by its items, commit, and let the items
        through only if they changed."""
        if pending is None or response.request is None:
            return
        request = response.request
        before, rule, record = pending
        judged = judge_by_items(answer_of(response), record, before, rule, items, self.judging)
        for key in judged.counts:
            self.stats.inc_value(f"adaptive/{key}")
        visit = judged.visit
        recorded = self.services.commit(request, visit) if self.services is not None else None
        if recorded is not None:
            visit = recorded.visit
        request.meta[meta.CHANGE] = visit.change.value
        if (visit.change is ChangeState.UNCHANGED or not_content(visit)) and skips(request, self.unchanged):
            self.stats.inc_value("adaptive/unchanged/items_dropped", len(items))
            return
        yield from items

    def _child(self, obj: Any, response: Response) -> Any:
        if not isinstance(obj, Request) or (self.embed_hops <= 0 and not self.revisit_embeds):
            return obj
        embed = is_embed(obj)
        page = response.request.meta if response.request is not None else {}
        if self.embed_hops > 0:
            if embed:
                obj.meta[meta.EMBED_HOPS] = (page.get(meta.EMBED_HOPS) or 0) + 1
            else:
                obj.meta.pop(meta.EMBED_HOPS, None)
        if self.revisit_embeds:
            if embed and meta.PAGE_CHANGED in page:
                # due now if it may have changed too (Frontier.add decides)
                obj.meta[meta.PAGE_CHANGED] = page[meta.PAGE_CHANGED]
            else:  # a copied parent meta must not make another request an embed of a change
                obj.meta.pop(meta.PAGE_CHANGED, None)
        captured = page.get(meta.DOWNLOADED)
        if embed and page.get(meta.CHANGE) == ChangeState.CHANGED.value and isinstance(captured, float):
            # an embed of a page captured anew: the composite capture it belongs to
            # (followed by integration.composites; the WARC's via records)
            obj.meta[meta.PAGE] = (response.url, captured)
        else:
            obj.meta.pop(meta.PAGE, None)
        return obj
