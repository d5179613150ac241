"""What the frontier knows of each host besides its queue of URLs.

Per host: the robots.txt ``Crawl-delay``, how far its HTTP validators can be
believed (:mod:`scrapy_adaptive.change.trust`), and the track record of its
change-hint sources (:mod:`.hints`).  All of it is stored with the queue's
counters (``h/`` keys) and written with the queue's next counters write; the
frontier is its only owner, evaluators ask for decisions and hand in
verdicts.

:class:`HostFacts` is a component of the frontier: it reads the queues from
the frontier's :class:`~scrapy_adaptive.frontier.queues.QueueBook` and what is
out from its :class:`~scrapy_adaptive.frontier.leases.Leases`, and holds the
crawl-wide parts of these facts (hint sources pooled over hosts, the index
of unchecked first-visit ages).  The crawl sees it as :class:`Hosts`
(``Frontier.hosts``): what it learns of hosts and asks of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol

from ..change.trust import (
    HEADER_UNCHECKED,
    TrustBook,
    TrustParams,
    observe_url,
    url_decide,
    url_trusted,
    url_verify_rate,
)
from ..change.url_class import url_class
from ..config.matching import media_type
from ..model import PARKED, SOFT_404, VALIDATOR_LIE, ChangeState, Outcome, Plan, RecordError, UrlRecord, Visit
from ..store.base import Batch, Store
from ..store.keys import time_to_ms
from . import hints
from .hints import Hint, HintResult
from .hostqueue import MAX_SHARED_DIGESTS, Entry, HostQueue

if TYPE_CHECKING:
    from .leases import Leases
    from .queues import QueueBook

#: the media types soft-404 and parked pages are served as
WEB_PAGES = frozenset(("text/html", "application/xhtml+xml"))
#: URLs with an unchecked first-visit age kept per sibling class for
#: re-planning (:meth:`HostFacts.replan_unchecked`): the most recently planned
UNCHECKED_PER_CLASS = 1000


class Hosts(Protocol):
    """What the crawl tells the frontier of hosts and asks of them
    (``Frontier.hosts``); :class:`HostFacts` holds it."""

    def set_crawl_delay(self, queue: str, seconds: float | None) -> None:
        """Honour (or, with None, stop honouring) a robots.txt ``Crawl-delay``
        for *queue*; kept with the host's counters."""

    def verify_validators(self, fp: bytes, doubtful: Callable[[Mapping[str, Any]], bool] | None = None) -> bool:
        """Whether the fetch of out URL *fp* downloads in full to verify its
        host's validators, rather than act on them; *doubtful*: the wait
        policy's ``header_doubtful``."""

    def page_kind(self, fp: bytes, visit: Visit) -> str | None:
        """``"soft404"``, ``"parked"`` or None for the page out URL *fp* got; learns."""

    def replan_unchecked(
        self, queue: str, url: str, decide: Callable[[Mapping[str, Any]], float | None], *, lie: bool = True
    ) -> int:
        """Replan the URLs of *queue* planned on validators a lie of *url*
        put in doubt; how many moved."""

    def hint(
        self, queue: str, fp: bytes, hint: Hint, decide: Callable[[Mapping[str, Any], Hint], float | None] | None = None
    ) -> HintResult:
        """A change hint (sitemap ``lastmod``, a feed entry) for a known URL."""

    def trust_report(self) -> dict[str, TrustBook]:
        """Every host's validator track record, by host (for reports)."""

    def hint_report(self) -> dict[str, dict[str, list[float]]]:
        """Every host's hint track record (source -> [confirmed, refuted, Σq])."""


class HostFacts:
    """The per-host facts of a frontier (:class:`Hosts` to the crawl)."""

    def __init__(
        self,
        book: QueueBook,
        leases: Leases,
        clock: Callable[[], float],
        trust_params: TrustParams,
        soft404_urls: int,
    ) -> None:
        self.book = book
        self.store: Store = book.store
        self.leases = leases
        self.clock = clock
        self.trust_params = trust_params
        #: URLs of one host sharing a page before it is "parked" (0: never)
        self.soft404_urls = soft404_urls
        #: hint source -> [confirmed, refuted, Σq] over every queue
        self._hint_pooled: dict[str, list[float]] = {}
        #: (queue, sibling class) -> fps whose first-visit age is unchecked (an ordered set)
        self._unchecked: dict[tuple[str, str], dict[bytes, None]] = {}
        #: (queue, sibling class) -> first-visit ages caught lying since the start
        self._unchecked_lies: dict[tuple[str, str], int] = {}

    def pool_hints(self, q: HostQueue) -> None:
        """Count a queue's hint track records, just read from the store, in the pooled ones."""
        for source, counts in q.hint_trust.items():
            hints.pool(self._hint_pooled.setdefault(source, [0.0, 0.0, 0.0]), counts)

    # -- robots.txt ----------------------------------------------------------------

    def set_crawl_delay(self, queue: str, seconds: float | None) -> None:
        """Honour a robots.txt ``Crawl-delay`` for *queue* (persisted)."""
        q = self.book.find(queue)
        if q is None or q.crawl_delay == seconds:
            return
        q.crawl_delay = seconds
        self.book.write(Batch(hosts={queue: self.book.counters(q)}), q)

    # -- soft-404s and parked pages ------------------------------------------------

    def page_kind(self, fp: bytes, visit: Visit) -> str | None:
        """``"soft404"``, ``"parked"`` or None for the page an out URL got; learns.

        A 404/410 page's digest becomes its host's *not-found* page; a
        successful page with that digest is a soft 404.  A digest that
        ``soft404_urls`` different URLs of the host got is a *parked* page
        (a placeholder served for everything), from that URL on.  Only web
        pages are judged: an image or a file that many URLs share (a spacer, a
        default avatar) is content like any other, not a placeholder page.
        """
        out = self.leases.lent(fp)
        q = self.book.find(out.queue) if out is not None else None
        if q is None or visit.outcome is not Outcome.VISITED or visit.digest is None or visit.status is None:
            return None
        if media_type(visit.content_type) not in WEB_PAGES:
            return None
        facts = q.soft404
        if visit.status in (404, 410):
            facts.not_found = visit.digest
            return None
        if not 200 <= visit.status < 300:
            return None
        if visit.digest == facts.not_found:
            return SOFT_404
        if self.soft404_urls <= 0:
            return None
        urls = facts.shared.get(visit.digest)
        if urls is None:
            if len(facts.shared) >= MAX_SHARED_DIGESTS:
                del facts.shared[next(iter(facts.shared))]  # the oldest
            urls = facts.shared[visit.digest] = set()
        if len(urls) < self.soft404_urls:
            urls.add(fp)
        return PARKED if len(urls) >= self.soft404_urls else None

    # -- validators ----------------------------------------------------------------

    def verify_validators(self, fp: bytes, doubtful: Callable[[Mapping[str, Any]], bool] | None = None) -> bool:
        """Whether the fetch of out URL *fp* verifies its validators (a full
        download despite them) or acts on them.

        A URL that is not out is verified: nothing is trusted blind; nor is
        a URL caught lying until it has earned trust again (:func:`.url_trusted`),
        nor one whose wait policy still doubts its header: *doubtful* (the
        policy's ``header_doubtful``) gets its snapshot; without it, while
        the policy checks it at all.
        Otherwise the laxer of two schedules decides: the URL's own record
        (:func:`.url_verify_rate`), once it has proved right, and its
        sibling class's (:class:`.TrustBook`), so a class's liars do not
        cost its honest pages their conditional requests, and a page not
        verified yet follows its class.  The decision is counted at once in
        the record that made it (the URL's, persisted with its verdict; the
        class's, with the queue's next counters write).
        """
        out = self.leases.lent(fp)
        if out is None:
            return True
        record = out.record
        if not url_trusted(record.validator_trust, self.trust_params):
            return True
        # asked only while the policy checks the header at all (a snapshot
        # and the policy's lookup per fetch otherwise for nothing)
        if record.policy.get(HEADER_UNCHECKED) and (doubtful is None or doubtful(out.view)):
            return True
        own = url_verify_rate(record.validator_trust, self.trust_params)
        verify = TrustBook(self.book.get(out.queue).trust).decide(record.url, self.trust_params, own)
        if verify is None:  # the URL's own schedule is the laxer: it decides
            assert own is not None
            verify, record.validator_trust = url_decide(record.validator_trust, own)
        return verify

    def observe_validation(self, q: HostQueue, visit: Visit, record: UrlRecord) -> str | None:
        """Fold a verification fetch into the URL's, its class's and its
        host's trust records; a caught lie is said (``validatorLie``)."""
        if visit.validation != "verified" or visit.change is ChangeState.UNKNOWN:
            return None
        known_liar = not url_trusted(record.validator_trust, self.trust_params)
        before = record.validator_trust[0] if record.validator_trust else 0
        record.validator_trust = observe_url(record.validator_trust, visit.prediction, visit.change.value)
        if known_liar:
            # verified because of the URL's own record: its lies are not news
            # about the host, whose other URLs keep their trust
            lied = bool(record.validator_trust) and record.validator_trust[0] > before  # type: ignore[index]
            return VALIDATOR_LIE if lied else None
        if TrustBook(q.trust).observe_verified(record.url, visit.prediction, visit.change.value):
            return VALIDATOR_LIE
        return None

    def trust_report(self) -> dict[str, TrustBook]:
        """Every host's validator track record, by host, over a copy (for
        reports): the host-wide record (under ``""``) and each URL class's."""
        books = {q.name: {k: dict(v) for k, v in q.trust.items()} for q in self.book if q.trust}
        return {host: TrustBook(data) for host, data in sorted(books.items())}

    @staticmethod
    def _stage_move(batch: Batch, fp: bytes, record: UrlRecord, new_ms: int) -> tuple[Entry, Entry]:
        """Put the move of *record*'s queue entry to *new_ms*, and the record
        itself, in *batch*; the (old, new) entries for :meth:`_moved` once
        the batch is written."""
        old_entry: Entry = (record.directive, record.next_ms, fp)
        new_entry: Entry = (record.directive, new_ms, fp)
        batch.move_entry((record.queue, *old_entry), (record.queue, *new_entry))
        record.next_ms = new_ms
        batch.records[record.queue, fp] = record.to_bytes()
        return old_entry, new_entry

    # -- first-visit ages ------------------------------------------------------------

    def track_unchecked(self, fp: bytes, record: UrlRecord) -> None:
        """Keep the index of URLs whose wait policy still checks their
        first-visit Last-Modified (its memory says so), per sibling class.

        In memory only: after a restart a URL enters it again at its next
        visit, and until then keeps the plan it was given."""
        unchecked = record.policy.get(HEADER_UNCHECKED) and not record.never
        if not unchecked and not self._unchecked:
            return
        key = (record.queue, url_class(record.url))
        fps = self._unchecked.get(key)
        if unchecked:
            if fps is None:
                fps = self._unchecked[key] = {}
            fps.pop(fp, None)
            fps[fp] = None
            if len(fps) > UNCHECKED_PER_CLASS:
                del fps[next(iter(fps))]
        elif fps is not None:
            fps.pop(fp, None)
            if not fps:
                del self._unchecked[key]

    def replan_unchecked(
        self, queue: str, url: str, decide: Callable[[Mapping[str, Any]], float | None], *, lie: bool = True
    ) -> int:
        """Plan again the visits of *url*'s siblings whose first-visit age is
        still unchecked, after a check of one of them moved the odds that
        such headers lie (the wait policy's ``HeaderBelief``).

        A URL's first check is timed at its first visit, by the odds known
        then: in a fresh crawl every URL is first visited before any header
        is checked, so each old header of a class whose headers turn out to
        lie would wait twice the population's interval for its check.
        *decide* (the wait policy's ``recheck_wait``) gets each sibling's
        snapshot and answers the wait it would plan now, in seconds after
        the URL's last fetch, or None; only a visit earlier than the planned
        one is applied (a later one waits for the URL's own turn: an
        earlier plan costs a fetch, a later one may lose a version).
        Returns how many visits moved.

        A class is re-planned at its 1st, 2nd, 4th, 8th ... caught lie: the
        odds move less with each, and a host whose every old page lies
        costs O(log n) passes over its class, not one per lie.  With *lie*
        False the policy asks because the pace a lie would hide rose (it
        asks once per doubling, ``HEADER_PACE``): no lie is counted.
        """
        key = (queue, url_class(url))
        fps = self._unchecked.get(key)
        q = self.book.find(queue)
        if lie:
            lies = self._unchecked_lies[key] = self._unchecked_lies.get(key, 0) + 1
            if lies & (lies - 1):
                return 0
        if not fps or q is None:
            return 0
        now_ms = time_to_ms(self.clock())
        batch = Batch()
        moves: list[tuple[Entry, Entry]] = []
        for fp in list(fps):
            if fp in self.leases:
                continue
            raw = self.store.get_record(queue, fp)
            try:
                record = UrlRecord.from_bytes(raw) if raw is not None else None
            except RecordError:
                continue  # its queue quarantines it when its turn comes
            if record is None or record.never or record.fetched is None or record.hint:
                fps.pop(fp, None)
                continue
            wait = decide(record.snapshot())
            if wait is None or not (wait >= 0 and math.isfinite(wait)):
                continue
            new_ms = max(now_ms, time_to_ms(record.fetched + wait))
            if new_ms >= record.next_ms:
                continue
            moves.append(self._stage_move(batch, fp, record, new_ms))
        if moves:
            self.book.write(batch, q)
            for old, new in moves:
                self.book.moved(q, old, new)
            self.book.schedule(q)
        return len(moves)

    # -- change hints ----------------------------------------------------------------

    def hint(
        self,
        queue: str,
        fp: bytes,
        hint: Hint,
        decide: Callable[[Mapping[str, Any], Hint], float | None] | None = None,
    ) -> HintResult:
        """Take a change hint for a known URL; maybe move its visit earlier.

        What cannot be news is dropped here, for every policy alike: an
        unknown or out URL, one that will never be visited again, a claimed
        modification not later than the last visit (the visit saw it), and a
        second hint while an acted-on one still waits.  Otherwise *decide*
        (the wait policy's ``hint_wait``) gets the record's snapshot and the
        hint, completed with its receipt time and its source's track record,
        and answers the seconds from now until the visit, or None.  Only a
        visit earlier than the planned one is applied; the hint is then kept
        on the record until that visit settles it (see :meth:`update`).
        """
        raw = self.store.get_record(queue, fp)
        if raw is None:
            return HintResult.UNKNOWN
        if fp in self.leases:
            return HintResult.OUT
        try:
            record = UrlRecord.from_bytes(raw)
        except RecordError:
            return HintResult.UNKNOWN  # its queue quarantines it when its turn comes
        if record.never:
            return HintResult.NEVER
        if hint.modified is not None and record.fetched is not None and hint.modified <= record.fetched:
            return HintResult.STALE
        if record.hint:
            return HintResult.PENDING
        now = self.clock()
        q = self.book.get(record.queue)
        own = hints.counts(q.hint_trust.get(hint.source))
        pooled = hints.counts(self._hint_pooled.get(hint.source))
        hint = replace(hint, received=now, trust=(own[0], own[1], own[2]), pooled=(pooled[0], pooled[1], pooled[2]))
        wait = decide(record.snapshot(), hint) if decide is not None else None
        if wait is None or not (wait >= 0 and math.isfinite(wait)):
            return HintResult.DECLINED
        new_ms = time_to_ms(now + wait)
        if new_ms >= record.next_ms:
            return HintResult.LATER
        record.hint = hints.pending(now, hint.modified, hint.source, own, pooled)
        batch = Batch()
        old_entry, new_entry = self._stage_move(batch, fp, record, new_ms)
        self.book.write(batch, q)
        self.book.moved(q, old_entry, new_entry)
        self.book.schedule(q)
        return HintResult.ACTED

    def settle_hint(self, q: HostQueue, record: UrlRecord, visit: Visit, plan: Plan | None) -> str | None:
        """Score an acted-on hint by the visit it caused, per host and source
        (credited beyond what the policy expected without it: its *plan*'s
        ``hint_base``); say whether the visit confirmed or refuted it."""
        if record.hint is None or visit.outcome is Outcome.RETRY:
            return None  # a retry is not the visit yet
        source = str(record.hint.get(hints.PENDING_SOURCE))
        record.hint = None
        if visit.outcome is not Outcome.VISITED or visit.change is ChangeState.UNKNOWN:
            return None
        confirmed = visit.change is ChangeState.CHANGED
        old = hints.counts(q.hint_trust.get(source))
        new = hints.observe(old, confirmed, (plan.hint_base if plan is not None else None) or 0.0)
        q.hint_trust[source] = new
        pooled = self._hint_pooled.setdefault(source, [0.0, 0.0, 0.0])
        hints.pool(pooled, old, -1)
        hints.pool(pooled, new)
        return hints.CONFIRMED if confirmed else hints.REFUTED

    def hint_report(self) -> dict[str, dict[str, list[float]]]:
        """Every queue's hint track record (source -> [confirmed, refuted, Σq])."""
        return {q.name: {s: list(c) for s, c in q.hint_trust.items()} for q in self.book if q.hint_trust}
