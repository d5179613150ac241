"""The one path from a verdict to a URL's record.

The downloader's middlewares leave a fetch result, change detection (the
visit middleware) judges it into a :class:`~.frontier.Visit`, and hands it
here through the small :class:`FrontierServices` interface the scheduler
gives them at start-up.  Verdicts without a response (a lapsed lease, a
stored request that cannot be rebuilt) come here too, through
:meth:`Verdicts.settle`: nothing else calls :meth:`Frontier.update`.

:meth:`Verdicts.settle` completes the verdict with what only the crawl
knows (which URL and queue, when, how overdue, whether the frontier knows
the page as the host's error page) as a new verdict, asks the policy stack
for its :class:`~.model.Plan` on a visit, and has the frontier record the
verdict and the plan in one atomic write (:meth:`Frontier.update`, the one
place they meet); then it counts the visit in the stats and the crawl log.
Verdict and plan are frozen values: the judging layers' verdict is never
changed after them, the policy's plan is its own, and the callers get back
both as recorded (:class:`Recorded`).

Nothing here keeps state of its own: the frontier owns the records (the
record as issued is in its lease; requests carry the fingerprint only) and
the hosts' trust, :class:`~.issued_requests.IssuedRequests` the request objects.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Protocol

from .. import meta
from ..change import events as change_events
from ..change.freshness import PROBLEMS as HEADER_PROBLEMS
from ..change.trust import HEADER_LIED, HEADER_PACE
from ..config.matching import media_type
from ..config.spec import counted
from ..config.table import DEFAULTS
from ..frontier import ChangeState, Frontier, Outcome, UrlRecord, Visit
from ..model import VALIDATOR_LIE, Plan, delivers_content
from ..store.base import StoreError
from .request_hints import count_settled

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.statscollectors import StatsCollector

    from ..policies import PolicyStack
    from ..policies.base import WaitPolicy
    from .crawllog import CrawlLog
    from .delivery import Delivery
    from .issued_requests import IssuedRequests

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Recorded:
    """A verdict as the frontier recorded it, the policy's plan recorded
    beside it (None for a verdict that is not a visit: its outcome set its
    next time), and the record they made."""

    visit: Visit
    plan: Plan | None
    record: UrlRecord


class FrontierServices(Protocol):
    """What the middlewares may ask of the frontier, and nothing more."""

    def commit(self, request: Request, visit: Visit) -> Recorded | None:
        """Record the verdict on an issued request (None: not ours)."""

    def verify(self, request: Request) -> bool:
        """Whether this fetch verifies its host's validators (True) or acts on them."""

    def record(self, request: Request) -> Mapping[str, Any] | None:
        """The URL's record as issued, read-only (None: not ours)."""


class Verdicts:
    """Folds verdicts on issued URLs into the frontier (a :class:`FrontierServices`)."""

    def __init__(
        self,
        frontier: Frontier,
        policy: PolicyStack,
        issued: IssuedRequests,
        stats: StatsCollector,
        *,
        crawl_log: CrawlLog | None = None,
        delivery: Delivery | None = None,
        on_store_error: Callable[[StoreError], None],
        on_change: Callable[[], None] = lambda: None,
        clock: Callable[[], float] = time.time,
        events: bool = False,
        gone_confirmations: int = DEFAULTS["ADAPTIVE_GONE_CONFIRMATIONS"],
    ) -> None:
        self.frontier = frontier
        self.policy = policy
        self.issued = issued
        self.stats = stats
        self.crawl_log = crawl_log
        #: None: versions count at the verdict, with no delivery guarantee
        self.delivery = delivery
        self.on_store_error = on_store_error
        self.on_change = on_change
        self.clock = clock
        #: change events go to the outbox (a feed or a signal takes them)
        self.events = events
        self.gone_confirmations = gone_confirmations

    def verify(self, request: Request) -> bool:
        fp = self.issued.fp_of(request)
        return True if fp is None else self.frontier.hosts.verify_validators(fp, self.policy.header_doubtful)

    def record(self, request: Request) -> Mapping[str, Any] | None:
        fp = self.issued.fp_of(request)
        out = self.frontier.lent(fp) if fp is not None else None
        return out.view if out is not None else None

    def commit(self, request: Request, visit: Visit) -> Recorded | None:
        """Record a verdict on an issued request (see :meth:`settle`), and
        give the request the record's view as the visit left it; None if
        the request is not ours."""
        fp = self.issued.fp_of(request)
        if fp is None:
            return None
        recorded = self.settle(fp, visit, request)
        if recorded is not None:
            # the callback, its errback and the user's middlewares see the record as the visit left it
            request.meta[meta.RECORD] = recorded.record.view()
        return recorded

    def settle(self, fp: bytes, visit: Visit, request: Request | None = None) -> Recorded | None:
        """Record *visit* as the verdict on the URL *fp*: the one way into the
        frontier's update.  *request* is the issued request, if one is left
        (a lapsed lease's may be gone, a stored request that cannot be
        rebuilt never had one).  A visit gets the policy's plan; any other
        verdict (a retry, a failure, a disregarded URL) has none, the
        frontier times it by its outcome.  Returns the verdict, plan and
        record as recorded, or None for a URL the frontier does not know (or
        a write that failed)."""
        self.issued.pop(fp)
        out = self.frontier.lent(fp)
        issued = out.record if out is not None else None
        completed = self._complete(fp, visit, request, out.queue if out else None, issued, out.overdue if out else None)
        hint = issued.hint if issued is not None else None
        # the record as issued, read-only: what the policy and the change events read
        history = out.view if out is not None else None
        plan = self._plan(request, history, completed) if completed.outcome is Outcome.VISITED else None
        # a changed visit is a version only once its items are durable
        deliver = self.delivery is not None and completed.outcome is Outcome.VISITED
        deliver = deliver and completed.change is ChangeState.CHANGED
        # the URL's presence is kept whether events are on or not, so that
        # turning them on later knows which pages had content
        # (a verdict on a URL not out, after a restart, keeps the record's)
        transition = None if history is None else change_events.transition(history, completed, self.gone_confirmations)
        presence = None if transition is None else transition.presence
        event = transition.kind if transition is not None and self.events else None
        try:
            record = self.frontier.update(fp, completed, plan, deliver=deliver, presence=presence, event=event)
        except StoreError as exc:
            self.on_store_error(exc)
            return None
        if record is None:
            return None
        if deliver and request is not None and self.delivery is not None:
            self.delivery.open(request, fp, completed.digest)
        if event is not None:
            self.stats.inc_value(f"adaptive/events/{event}")
        notes = plan.notes if plan is not None else ()
        if HEADER_LIED in notes or HEADER_PACE in notes:
            self._replan_siblings(record, lie=HEADER_LIED in notes)
        self._report(record, completed, plan, hint)
        self.on_change()
        return Recorded(completed, plan, record)

    def _complete(
        self,
        fp: bytes,
        visit: Visit,
        request: Request | None,
        queue: str | None,
        issued: UrlRecord | None,
        overdue: float | None,
    ) -> Visit:
        """The verdict with what only the crawl knows, as a new object."""
        context: dict[str, Any] = {"queue": queue or visit.queue or (issued.queue if issued else None)}
        if visit.url is None:
            context["url"] = request.url if request is not None else issued.url if issued is not None else None
        if visit.fetched is None:
            context["fetched"] = self.clock()
        if visit.overdue is None:
            context["overdue"] = overdue
        if visit.content_type is None and visit.digest is None and issued is not None:
            # a 304 or a fetch stopped before its body says no type: the URL
            # is what it last was, for the policy that waits it and the stats
            context["content_type"] = issued.content_type
        # the host's error or placeholder page (judged on what the response itself said)
        if visit.outcome is Outcome.VISITED and (kind := self._soft_404(fp, visit)) is not None:
            context["annotations"] = (*visit.annotations, kind)
            if visit.change is ChangeState.CHANGED:
                context["change"] = ChangeState.UNKNOWN
        if visit.change is ChangeState.CHANGED and visit.status is not None and not delivers_content(visit.status):
            # a version is new content, and only a 2xx carries content,
            # whichever layer judged the visit
            context["change"] = ChangeState.UNKNOWN
        return replace(visit, **context)

    def _plan(self, request: Request | None, history: Mapping[str, Any] | None, visit: Visit) -> Plan:
        """The policy stack's plan, or the request's own policy's
        (``meta["adaptive_wait_policy"]``); a URL whose stored policy memory
        the policy cannot read (a state folder tampered with, or written by
        other code) starts it afresh, with one warning, instead of crashing
        the visit and leaving the URL without a verdict."""
        overrides = request.meta.get(meta.WAIT_POLICY) if request is not None else None
        override: WaitPolicy | None = None
        if isinstance(overrides, dict):
            override = self.policy.with_overrides(overrides, visit.url or "")
            if override is self.policy:  # ignored (said once per policy or override), counted per request
                self.stats.inc_value("adaptive/wait_policy/overrides_ignored")
        history = history if history is not None else {}
        try:
            return self.policy.plan(history, visit, override=override)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
            logger.warning(
                "The stored wait-policy memory of %s cannot be read (%s: %s); it starts afresh.",
                visit.url,
                type(exc).__name__,
                exc,
            )
            self.stats.inc_value("adaptive/errors/policy_memory")
            return self.policy.plan({**history, "policy": {}}, visit, override=override)

    def _replan_siblings(self, record: UrlRecord, *, lie: bool) -> None:
        """A first-visit Last-Modified caught lying raised the odds that its
        siblings' unchecked ones lie too, or the siblings' pace rose, and with
        it what a lie would hide: their checks may now come sooner."""
        try:
            moved = self.frontier.hosts.replan_unchecked(record.queue, record.url, self.policy.recheck_wait, lie=lie)
        except StoreError as exc:
            self.on_store_error(exc)
            return
        if moved:
            self.stats.inc_value("adaptive/validators/age_checks_replanned", moved)

    def _soft_404(self, fp: bytes, visit: Visit) -> str | None:
        """The kind of page the frontier knows this one as (a soft 404 or a
        parked page: the host's error or placeholder page), counted; such a
        visit is recorded as such, never as a new version."""
        kind = self.frontier.hosts.page_kind(fp, visit)
        if kind is not None:
            self.stats.inc_value(f"adaptive/soft404/{kind}")
        return kind

    def _report(self, record: UrlRecord, visit: Visit, plan: Plan | None, hint: Mapping[str, Any] | None) -> None:
        self._count(record, visit)
        if record.notes:  # (most visits: none)
            count_settled(self.stats, hint, record.notes)
        if VALIDATOR_LIE in record.notes:
            self.stats.inc_value("adaptive/validators/lies")
            lies = record.validator_trust[0] if record.validator_trust else 1
            # the first lie of a URL is news (its host's trust is reset); a
            # caught liar is downloaded in full from then on and lies at each
            # change, which a crawl of months would otherwise log every time
            if lies <= 1:
                logger.warning(
                    "%s: the validators said 'no change' but the content changed; %s is back to full "
                    "downloads until it proves reliable again (this URL's further lies: debug log, "
                    "adaptive/validators/lies).",
                    record.url,
                    record.queue,
                )
            else:
                logger.debug(
                    "%s: the validators lied again (%s); it stays on full downloads.", record.url, counted(lies, "lie")
                )
        if self.crawl_log is not None:
            # the record counts a version awaiting delivery already
            self.crawl_log.write(record, visit, plan)
        if visit.outcome is Outcome.RETRY and record.outcome == Outcome.RETRY.value:
            logger.debug("Will retry %s in %.0fs: %s", record.url, self.frontier.politeness.retry_delay, visit.reason)
        elif record.outcome in (Outcome.FAILED.value, Outcome.DISREGARDED.value):
            logger.info(
                "%s %s: %s; it stays known but is not visited again.",
                record.outcome.capitalize(),
                record.url,
                record.reason,
            )

    def _count(self, record: UrlRecord, visit: Visit) -> None:
        inc = self.stats.inc_value
        if record.outcome != Outcome.VISITED.value:
            inc(f"adaptive/outcome/{record.outcome}")
            return
        kind = media_type(visit.content_type).split("/", 1)[0]
        kind = kind if kind in ("text", "image") else "other"
        for key in _visit_stats(kind, visit.change):
            inc(key)
        for word in visit.annotations:
            if word in HEADER_PROBLEMS:  # caching headers read and ignored (change/freshness.py)
                inc(f"adaptive/headers/{word}")


@functools.cache
def _visit_stats(kind: str, change: ChangeState) -> tuple[str, ...]:
    """The stats one visit of this kind and change counts (built once per pair:
    this runs at every visit)."""
    keys = [
        f"adaptive/outcome/{Outcome.VISITED.value}",
        "adaptive/visits",
        f"adaptive/visits/{kind}",
        f"adaptive/change/{change.value}",
        f"adaptive/change/{change.value}/{kind}",
    ]
    if change is ChangeState.CHANGED:
        keys.append("adaptive/versions")
    return tuple(keys)
