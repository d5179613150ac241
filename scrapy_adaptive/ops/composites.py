"""Composite captures: how far apart a page's capture and its embeds' are.

A page captured anew (its first capture, or a changed one) replays in an
archive with the embeds (images, stylesheets, scripts) stored nearest its
moment; only if those were fetched with it does it replay as it was.
:class:`CompositeWatch` follows each such page capture until every embed it
yielded was fetched (any answer: a 304 confirms the copy) or until it gives
up on it, and counts:

* ``pages``: page captures with embeds, settled (every embed came, or the
  watch gave up);
* ``within``: of those, the ones with every embed fetched or confirmed within
  :data:`WINDOW_S` seconds of the page.  An embed fetched up to that long
  *before* the page (a stylesheet a sibling page's capture brought a moment
  earlier, whose copy the frontier lets stand) counts with that fetch, unless
  it comes again within the window: then that later fetch is the page's;
* ``late``: every embed came, but one later than that;
* ``missing``: an embed had not come :data:`EXPIRY_S` after the page (an
  embed whose stored copy the frontier let stand, one out of the crawl's
  scope, one that failed);
* ``dropped``: captures no longer followed because :data:`MAX_PAGES` were
  pending at once (not counted in the others);
* the median gap: over the last :data:`KEPT_GAPS` complete captures, the
  seconds from the page to its farthest embed.

Bounded for a crawl that runs for months: only the pages whose embeds are
pending are kept (at most :data:`MAX_PAGES`, each at most :data:`EXPIRY_S`),
with the embeds fetched in the last :data:`WINDOW_S` (at most
:data:`MAX_RECENT`) and the last :data:`KEPT_GAPS` gaps; the counters are
plain integers.

Pure: URLs and times in, figures out.  The Scrapy glue that feeds it is
:mod:`scrapy_adaptive.integration.composites`.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Any

#: seconds apart within which an embed counts as captured with its page
WINDOW_S = 60.0
#: seconds after a page's capture the watch gives up on its missing embeds
EXPIRY_S = 600.0
#: page captures followed at once (the oldest is dropped past it)
MAX_PAGES = 10_000
#: embeds remembered as fetched in the last WINDOW_S seconds
MAX_RECENT = 10_000
#: complete captures the median gap is taken over (the most recent)
KEPT_GAPS = 1_000
#: seconds a capture whose embeds all came stays open for embeds its page
#: yields after them (a callback's output is read while downloads go on)
SETTLE_S = 2.0

#: the stats the watch keeps, under ``adaptive/embeds/``
COUNTS = ("pages", "within", "late", "missing", "dropped")


@dataclass
class Pending:
    """One page capture whose embeds are awaited."""

    page: str
    captured: float
    #: embed URLs not fetched yet
    waiting: set[str] = field(default_factory=set)
    #: embed URL -> seconds after the page it was fetched
    gaps: dict[str, float] = field(default_factory=dict)
    #: awaited embeds fetched up to the window before the page: the seconds
    #: before it (negative), standing for the embed if none comes within the window
    before: dict[str, float] = field(default_factory=dict)
    #: when the last awaited embed came (None: some still awaited)
    done_at: float | None = None


@dataclass(frozen=True)
class Settled:
    """A page capture the watch stopped following, and how it ended."""

    page: str
    captured: float
    #: ``within``, ``late`` or ``missing``
    outcome: str
    #: embed URL -> seconds after the page (negative: before)
    gaps: dict[str, float]
    missing: tuple[str, ...] = ()

    @property
    def span(self) -> float | None:
        """The seconds from the page to its farthest embed (None: one is missing)."""
        if self.missing or not self.gaps:
            return None
        return max(abs(g) for g in self.gaps.values())


class CompositeWatch:
    """Page captures with their embeds pending, and the figures of those settled."""

    def __init__(
        self,
        *,
        window: float = WINDOW_S,
        expiry: float = EXPIRY_S,
        max_pages: int = MAX_PAGES,
        max_recent: int = MAX_RECENT,
        kept_gaps: int = KEPT_GAPS,
        settle: float = SETTLE_S,
    ) -> None:
        self.window = window
        self.expiry = expiry
        self.max_pages = max_pages
        self.max_recent = max_recent
        self.settle = settle
        #: (page URL, capture time) -> its pending embeds, oldest capture first
        self.pending: OrderedDict[tuple[str, float], Pending] = OrderedDict()
        #: embed URL -> the pending captures awaiting it
        self.awaiting: dict[str, list[tuple[str, float]]] = {}
        #: embed URL -> when it was last fetched, for the last *window* seconds
        self.recent: OrderedDict[str, float] = OrderedDict()
        #: captures whose embeds all came, in the order they did (settled after *settle*)
        self._done: deque[tuple[str, float]] = deque()
        #: (page capture + window, capture) of captures with embeds fetched just before
        self._fallback: deque[tuple[float, tuple[str, float]]] = deque()
        self.counts: dict[str, int] = dict.fromkeys(COUNTS, 0)
        #: the last *kept_gaps* spans of complete captures, and their median
        #: (taken when one is added: the figures are read at every signal)
        self.gaps: deque[float] = deque(maxlen=kept_gaps)
        self._gap_p50: float | None = None

    # -- in ----------------------------------------------------------------------

    def expect(self, page: str, captured: float, embed: str, now: float) -> list[Settled]:
        """The page captured at *captured* embeds *embed*: await it, unless it
        was fetched within the window before (then it is with the page
        already).  Returns the captures settled meanwhile."""
        settled = self.sweep(now)
        key = (page, captured)
        entry = self.pending.get(key)
        if entry is None:
            entry = self.pending[key] = Pending(page, captured)
            if len(self.pending) > self.max_pages:
                _, oldest = self.pending.popitem(last=False)
                self._forget(oldest)
                self.counts["dropped"] += 1
        if embed in entry.gaps or embed in entry.waiting:
            return settled
        fetched = self.recent.get(embed)
        if fetched is not None and captured <= fetched:
            # fetched since the page's capture, before the page let it out
            entry.gaps[embed] = fetched - captured
            if not entry.waiting and entry.done_at is None:
                entry.done_at = now
                self._done.append(key)
            return settled
        if fetched is not None and captured - self.window <= fetched:
            # fetched a moment before the page (a sibling page's capture brought
            # it): that copy stands unless the embed comes again within the window
            if not entry.before:
                self._fallback.append((captured + self.window, key))
            entry.before[embed] = fetched - captured
        entry.waiting.add(embed)
        entry.done_at = None
        self.awaiting.setdefault(embed, []).append(key)
        return settled

    def fetched(self, url: str, at: float, *, embed: bool = True) -> tuple[list[tuple[str, float]], list[Settled]]:
        """*url* was fetched at *at*: the page captures (URL, capture time) it
        came for, and the captures settled meanwhile.  *embed*: remember it
        for pages that yield it within the window after."""
        settled = self.sweep(at)
        if embed:
            self.recent[url] = at
            self.recent.move_to_end(url)
            while len(self.recent) > self.max_recent:
                self.recent.popitem(last=False)
        keys = self.awaiting.pop(url, None)
        if not keys:
            return [], settled
        pages = []
        for key in keys:
            entry = self.pending.get(key)
            if entry is None or url not in entry.waiting:
                continue
            entry.waiting.discard(url)
            entry.before.pop(url, None)
            entry.gaps[url] = at - entry.captured
            pages.append(key)
            if not entry.waiting:
                entry.done_at = at
                self._done.append(key)
            elif entry.waiting <= entry.before.keys():
                # only embeds fetched just before are left: they stand after the window
                self._fallback.append((entry.captured + self.window, key))
        return pages, settled

    def sweep(self, now: float) -> list[Settled]:
        """Settle the captures whose embeds all came (a moment ago) and
        those past their expiry; forget embeds fetched before the window."""
        settled: list[Settled] = []
        while self._done:
            key = self._done[0]
            entry = self.pending.get(key)
            if entry is None or entry.done_at is None:
                self._done.popleft()  # dropped, or awaiting an embed yielded since
                continue
            if now - entry.done_at < self.settle:
                break
            self._done.popleft()
            del self.pending[key]
            settled.append(self._settle(entry))
        while self._fallback and self._fallback[0][0] <= now:
            _, key = self._fallback.popleft()
            entry = self.pending.get(key)
            if entry is not None and entry.waiting and entry.waiting <= entry.before.keys():
                # what it awaited did not come again: the copies from just before stand
                del self.pending[key]
                self._forget(entry)
                settled.append(self._settle(entry))
        while self.pending:
            key, entry = next(iter(self.pending.items()))
            if now - entry.captured < self.expiry:
                break
            del self.pending[key]
            self._forget(entry)
            settled.append(self._settle(entry))
        while self.recent:
            url, at = next(iter(self.recent.items()))
            if now - at <= self.window:
                break
            del self.recent[url]
        return settled

    def close(self) -> list[Settled]:
        """The crawl stops: settle what can be (complete captures); the
        others are left uncounted (the crawl, not the capture, ended)."""
        settled = [
            self._settle(e) for e in self.pending.values() if (e.gaps or e.before) and e.waiting <= e.before.keys()
        ]
        self.pending.clear()
        self.awaiting.clear()
        self._done.clear()
        self._fallback.clear()
        return settled

    # -- out -----------------------------------------------------------------------

    def figures(self) -> dict[str, Any]:
        """The counts, the share within the window, the median gap, the pending."""
        counts = self.counts
        return {
            **counts,
            "pending": len(self.pending),
            "share_within": counts["within"] / counts["pages"] if counts["pages"] else None,
            "gap_p50": self._gap_p50,
            "window": self.window,
        }

    # -- inside ------------------------------------------------------------------------

    def _forget(self, entry: Pending) -> None:
        key = (entry.page, entry.captured)
        for url in entry.waiting:
            keys = self.awaiting.get(url)
            if keys is None:
                continue
            keys[:] = [k for k in keys if k != key]
            if not keys:
                del self.awaiting[url]

    def _settle(self, entry: Pending) -> Settled:
        gaps = {**entry.gaps, **{url: entry.before[url] for url in entry.waiting if url in entry.before}}
        missing = tuple(sorted(url for url in entry.waiting if url not in entry.before))
        if missing:
            outcome = "missing"
        elif all(abs(g) <= self.window for g in gaps.values()):
            outcome = "within"
        else:
            outcome = "late"
        result = Settled(entry.page, entry.captured, outcome, gaps, missing)
        self.counts["pages"] += 1
        self.counts[outcome] += 1
        span = result.span
        if span is not None:
            self.gaps.append(span)
            self._gap_p50 = median(self.gaps)
        return result


def median(values: Any) -> float | None:
    """The median of *values* (None for none)."""
    ordered = sorted(values)
    if not ordered:
        return None
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def figures_words(figures: dict[str, Any]) -> str | None:
    """The summary's words for the figures (None before any capture settled):
    the captures settled, the share with every embed within the window, the
    late and missing ones, the median gap, the pending ones."""
    pages = figures.get("pages") or 0
    if not pages:
        return None
    gap = figures.get("gap_p50")
    words = (
        f"{pages} page {'capture' if pages == 1 else 'captures'} with embeds settled: "
        f"{figures['within']} ({100 * figures['share_within']:.0f} %) with every embed fetched or confirmed "
        f"within {figures['window']:.0f} s of the page, {figures['late']} later, {figures['missing']} missing; "
        f"median gap {'-' if gap is None else f'{gap:.1f} s'}; {figures['pending']} pending"
    )
    if figures.get("dropped"):
        words += f"; {figures['dropped']} not followed (over {MAX_PAGES} pending at once)"
    return words
