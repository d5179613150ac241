"""The one path from a verdict to a URL's record.

The middlewares judge a fetch (validators, change detection, errors) and
hand their :class:`~.frontier.Visit` verdict here, through the small
:class:`FrontierServices` interface the scheduler gives them at start-up.
:meth:`Verdicts.commit` completes the verdict with what only the crawl knows
(which URL and queue the request was for, when, how overdue), asks the wait
policy for the wait, and has the frontier fold it into the record in one
atomic write; then it counts the visit in the stats and the crawl log.

Nothing here keeps state of its own: the frontier owns the records and the
hosts' trust, :class:`~.issued.IssuedRequests` the request objects.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from .. import meta
from ..change.freshness import PROBLEMS as HEADER_PROBLEMS
from ..change.trust import HEADER_LIED, HEADER_PACE
from ..config.matching import media_type
from ..config.spec import counted
from ..frontier import ChangeState, Frontier, Outcome, UrlRecord, Visit
from ..model import VALIDATOR_LIE
from ..store.base import StoreError
from .request_hints import count_settled

if TYPE_CHECKING:
    from scrapy import Request
    from scrapy.statscollectors import StatsCollector

    from ..policies import PolicyStack
    from .crawllog import CrawlLog
    from .delivery import Delivery
    from .issued import IssuedRequests

logger = logging.getLogger(__name__)


class FrontierServices(Protocol):
    """What the middlewares may ask of the frontier, and nothing more."""

    def commit(self, request: Request, visit: Visit) -> UrlRecord | None:
        """Record the verdict on an issued request (None: not ours)."""

    def verify(self, request: Request) -> bool:
        """Whether this fetch verifies its host's validators (True) or acts on them."""


class Verdicts:
    """Folds verdicts on issued requests into the frontier (a :class:`FrontierServices`)."""

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

    def verify(self, request: Request) -> bool:
        fp = self.issued.fp_of(request)
        return True if fp is None else self.frontier.hosts.verify_validators(fp)

    def commit(self, request: Request, visit: Visit) -> UrlRecord | None:
        """Fold a verdict on an issued request into its URL's record.

        The wait policy fills in ``visit.wait`` when the verdict has none.
        Returns the updated record, or None if the request was not ours.
        """
        fp = self.issued.fp_of(request)
        if fp is None:
            return None
        self.issued.pop(fp)
        visit.queue = self.frontier.leases.out_queue(fp) or (request.meta.get(meta.RECORD) or {}).get("queue")
        if visit.url is None:
            visit.url = request.url
        if visit.fetched is None:
            visit.fetched = self.clock()
        if visit.overdue is None:
            visit.overdue = request.meta.get(meta.OVERDUE)
        if visit.content_type is None and visit.digest is None:
            # a 304 or a fetch stopped before its body says no type: the URL
            # is what it last was, for the policy that waits it and the stats
            visit.content_type = (request.meta.get(meta.RECORD) or {}).get("content_type")
        if visit.outcome is Outcome.VISITED:
            self._soft_404(fp, visit)
            validation = request.meta.get(meta.VALIDATION)
            if validation in ("verified", "trusted"):
                visit.validation = validation
                visit.prediction = request.meta.get(meta.PREDICTION)
            if visit.wait is None:
                visit.wait = self._next_wait(request, visit)
        # a changed visit is a version only once its items are durable
        deliver = self.delivery is not None and visit.outcome is Outcome.VISITED and visit.change is ChangeState.CHANGED
        try:
            record = self.frontier.update(fp, visit, deliver=deliver)
        except StoreError as exc:
            self.on_store_error(exc)
            return None
        if deliver and record is not None and self.delivery is not None:
            self.delivery.open(request, fp, visit.digest)
        if record is not None and (HEADER_LIED in visit.annotations or HEADER_PACE in visit.annotations):
            self._replan_siblings(record, lie=HEADER_LIED in visit.annotations)
        if record is not None:
            self._report(request, record, visit, pending=int(deliver))
        self.on_change()
        return record

    def _next_wait(self, request: Request, visit: Visit) -> float:
        """The wait policy's next wait; a URL whose stored policy memory the
        policy cannot read (a state folder tampered with, or written by other
        code) starts it afresh, with one warning, instead of crashing the
        visit and leaving the URL without a verdict."""
        policy = self._policy_for(request)
        history = request.meta.get(meta.RECORD) or {}
        try:
            return policy.next_wait(history, visit)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
            logger.warning(
                "The stored wait-policy memory of %s cannot be read (%s: %s); it starts afresh.",
                request.url,
                type(exc).__name__,
                exc,
            )
            self.stats.inc_value("adaptive/errors/policy_memory")
            visit.policy_state = None
            return policy.next_wait({**history, "policy": {}}, visit)

    def _replan_siblings(self, record: UrlRecord, *, lie: bool) -> None:
        """A first-visit Last-Modified caught lying raised the odds that its
        siblings' unchecked ones lie too, or the siblings' pace rose, and with
        it what a lie would hide: their checks may now come sooner."""
        try:
            moved = self.frontier.replan_unchecked(record.queue, record.url, self.policy.recheck_wait, lie=lie)
        except StoreError as exc:
            self.on_store_error(exc)
            return
        if moved:
            self.stats.inc_value("adaptive/validators/age_checks_replanned", moved)

    def _soft_404(self, fp: bytes, visit: Visit) -> None:
        """A soft 404 or a parked page is recorded as such, never as a new
        version: the frontier knows the host's error and placeholder pages."""
        kind = self.frontier.page_kind(fp, visit)
        if kind is None:
            return
        visit.annotations.append(kind)
        if visit.change is ChangeState.CHANGED:
            visit.change = ChangeState.UNKNOWN
        self.stats.inc_value(f"adaptive/soft404/{kind}")

    def _policy_for(self, request: Request) -> Any:
        overrides = request.meta.get(meta.WAIT_POLICY)
        if not isinstance(overrides, dict):
            return self.policy
        policy = self.policy.with_overrides(overrides, request.url)
        if policy is self.policy:  # ignored (said once per policy or override), counted per request
            self.stats.inc_value("adaptive/wait_policy/overrides_ignored")
        return policy

    def _report(self, request: Request, record: UrlRecord, visit: Visit, *, pending: int = 0) -> None:
        self._count(record, visit)
        count_settled(self.stats, request.meta.get(meta.RECORD), visit)
        if VALIDATOR_LIE in visit.annotations:
            self.stats.inc_value("adaptive/validators/lies")
            lies = record.validator_lies[0] if record.validator_lies else 1
            # the first lie of a URL is news (its host's trust is reset); a
            # caught liar is downloaded in full from then on and lies at each
            # change, which a crawl of months would otherwise log every time
            if lies <= 1:
                logger.warning(
                    "%s: the validators said 'no change' but the content changed; %s is back to full "
                    "downloads until it proves reliable again (this URL's further lies: debug log, "
                    "adaptive/validators/lies).",
                    request.url,
                    record.queue,
                )
            else:
                logger.debug(
                    "%s: the validators lied again (%s); it stays on full downloads.", request.url, counted(lies, "lie")
                )
        if self.crawl_log is not None:
            # a version awaiting delivery is counted at its confirmation; the
            # line says what this visit found, so it counts it already
            self.crawl_log.write(record, visit, pending=pending)
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
