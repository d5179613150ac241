"""Learned noise: which parts of a page change at every fetch.

A page with a server clock or a random token in its text "changes" at every
fetch under any digest rule short of an operator-written regex.  Fetched
twice a few seconds apart, it shows which parts those are: real content
seldom changes within a politeness delay, noise always does.  This module
compares the two fetches and learns an **exclusion** per URL, from then on
digesting the page without the excluded parts, so a real change elsewhere
is still a change (Heritrix needed an operator-written regex for this).

**Segments.**  The text is cut into segments (the visible text nodes of an
HTML page, the lines of any other text) and each segment into
whitespace-separated tokens.  The earlier fetch is kept only as a
*sketch*: a 4-hex-digit hash per token, tokens of one segment concatenated
(a segment of more than :data:`MAX_SEGMENT_TOKENS` tokens is kept as one
hash and cannot be learned from).

**Learning.**  The sketch and the later fetch's segments are aligned
(``difflib``); every segment replaced by one of the same token count is a
noise segment, and its tokens that differ are *wildcards*.  So that a date
beside a clock does not break the exclusion at midnight, every token that
holds a digit in a segment with a wildcard is a wildcard too.  A segment
inserted or deleted, or of a different token count, cannot be described
that way: the page is "not learnable" and the wait policy's noise guard
(``policies/noise.py``) stays its only defence.

**An exclusion** identifies its segment by what composes and precedes it,
not by its value: ``[anchor, n, wildcards, fixed]``: the token count, the
wildcard positions, the hash of the other tokens, and the hash of the
preceding segment (its text, or which exclusion it matched).  A segment
with fixed text (``Server time * UTC``) matches wherever it is; one that
is all wildcards (a lone token) only after its anchor.  A matching segment
is left out of the digest; a segment of the same shape but other fixed
text (a real edit of the line that holds the clock) is kept, so the edit
is seen.  A lone token is told from a stable one-word segment by its
anchor only: in a page that repeats the same text before both, the stable
one is left out too (a repeated navigation bar with a token in one copy).

Pure: no Scrapy imports; the response is duck-typed as in :mod:`.digest`.
"""

from __future__ import annotations

import difflib
import hashlib
import posixpath
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..config.matching import media_type
from .digest import sha1_digest, text_of, visible_root

if TYPE_CHECKING:
    from scrapy.http import Response

#: the digest rule name of a page digested without its learned noise
RULE = "noise"

#: crawl-log annotation of the probe that learned a page's noise (the wait
#: policies then retract the change the revisit before it counted)
NOISE_LEARNED = "noiseLearned"

#: a longer segment is sketched as one hash: a token in a long paragraph
#: cannot be learned (the guard handles such a page)
MAX_SEGMENT_TOKENS = 48

#: a page of more tokens is not probed (its sketch would weigh on the record)
MAX_PAGE_TOKENS = 20_000

#: at most this many exclusions per URL (more is a page that is mostly noise)
MAX_EXCLUSIONS = 32

Segment = tuple[str, ...]
Exclusion = list[Any]  # [anchor, n, wildcards, fixed], JSON-safe

_DIGIT = re.compile(r"\d")


def _token_hash(token: str) -> str:
    return hashlib.blake2s(token.encode("utf-8"), digest_size=2).hexdigest()


def _hash(text: str) -> str:
    return hashlib.blake2s(text.encode("utf-8"), digest_size=4).hexdigest()


def segments_of(response: Response) -> list[Segment] | None:
    """The page's text segments (tokens each), or None for a binary body."""
    if not response.body:
        return None
    text = text_of(response)
    if text is None:
        return None
    content_type = (response.headers.get("Content-Type") or b"text/html").decode("latin-1")
    return segments_of_text(text, html="html" in media_type(content_type))


def segments_of_text(text: str, *, html: bool) -> list[Segment]:
    """Segments of *text*: visible text nodes of HTML, else lines."""
    if html:
        root = visible_root(text)
        parts: Sequence[str] = list(root.itertext()) if root is not None else text.splitlines()
    else:
        parts = text.splitlines()
    return [tuple(tokens) for tokens in (part.split() for part in parts) if tokens]


def sketch(segments: Sequence[Segment]) -> list[str]:
    """The compact form of a fetch kept in the record until its probe."""
    out = []
    for segment in segments:
        if len(segment) > MAX_SEGMENT_TOKENS:
            out.append("#" + _hash(" ".join(segment)))
        else:
            out.append("".join(_token_hash(t) for t in segment))
    return out


def token_count(segments: Sequence[Segment]) -> int:
    return sum(len(s) for s in segments)


def _fixed(segment: Segment, wildcards: Sequence[int]) -> str:
    skip = set(wildcards)
    return _hash(" ".join(t for i, t in enumerate(segment) if i not in skip))


@dataclass(frozen=True)
class Learned:
    """What two fetches taught: ``exclusions`` (None: not learnable) and
    whether they differed at all."""

    exclusions: list[Exclusion] | None
    differed: bool


def learn(before: Sequence[str], after: Sequence[Segment]) -> Learned:
    """Learn the exclusions from a sketch (*before*) and a later fetch's segments."""
    now = sketch(after)
    matcher = difflib.SequenceMatcher(None, list(before), now, autojunk=False)
    noise: dict[int, list[int]] = {}
    differed = False
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        differed = True
        if tag != "replace" or i2 - i1 != j2 - j1:
            return Learned(None, True)
        for old, j in zip(before[i1:i2], range(j1, j2), strict=True):
            new = now[j]
            if old.startswith("#") or new.startswith("#") or len(old) != len(new):
                return Learned(None, True)
            segment = after[j]
            wildcards = [k for k in range(len(segment)) if old[4 * k : 4 * k + 4] != new[4 * k : 4 * k + 4]]
            wildcards = sorted(set(wildcards) | {k for k, t in enumerate(segment) if _DIGIT.search(t)})
            noise[j] = wildcards
    if not differed:
        return Learned([], False)
    exclusions: list[Exclusion] = []
    anchor = _hash("")
    for j, segment in enumerate(after):
        if j in noise:
            exclusion = [anchor, len(segment), noise[j], _fixed(segment, noise[j])]
            if exclusion not in exclusions:  # two lone tokens after the same text: one rule
                exclusions.append(exclusion)
            anchor = _excluded_anchor(exclusions.index(exclusion))
        else:
            anchor = _hash(" ".join(segment))
    if len(exclusions) > MAX_EXCLUSIONS:
        return Learned(None, True)
    return Learned(exclusions, True)


def _excluded_anchor(index: int) -> str:
    """The anchor after an excluded segment: which exclusion, not its value."""
    return _hash(f"\x00{index}")


def _excluded(segment: Segment, anchor_hash: str, exclusions: Sequence[Exclusion]) -> int | None:
    """The index of the exclusion *segment* matches, or None.

    A segment with fixed text (``Server time * UTC``) is recognised by it
    wherever it is, so a real edit of its neighbour does not hide it; one
    that is all wildcards (a lone token) only right after its anchor.
    """
    anywhere = None
    for index, (anchor, n, wildcards, fixed) in enumerate(exclusions):
        if n == len(segment) and fixed == _fixed(segment, wildcards):
            if anchor == anchor_hash:
                return index  # in its place: the exclusion learned there
            if anywhere is None and n > len(wildcards):
                anywhere = index
    return anywhere


@dataclass(frozen=True)
class Masked:
    """A page digested without its noise: the digest, and how many learned
    exclusions found their segment (fewer than all: the template moved)."""

    digest: str
    matched: int


def masked_digest(segments: Sequence[Segment], exclusions: Sequence[Exclusion]) -> Masked:
    """The ``noise`` digest of *segments* without the segments *exclusions* match."""
    kept: list[str] = []
    anchor = _hash("")
    found: set[int] = set()
    for segment in segments:
        index = _excluded(segment, anchor, exclusions) if exclusions else None
        if index is not None:
            found.add(index)
            anchor = _excluded_anchor(index)
            continue
        text = " ".join(segment)
        kept.append(text)
        if exclusions:
            anchor = _hash(text)
    return Masked(sha1_digest(RULE, "\n".join(kept).encode("utf-8")), len(found))


# -- the per-URL state machine ---------------------------------------------------

#: probes one URL may cost in its life (a first learning and two re-learnings
#: after its template moved); past that the wait policy's guard alone
MAX_PROBES = 3

# the state's keys (the record's ``noise``, stored as is)
SKETCH = "b"  #: a fetch's sketch, waiting for its probe
EXCLUSIONS = "x"  #: the learned exclusions
SETTLED = "s"  #: "clean" (the probe found no change) or "hard" (not learnable)
PROBES = "r"  #: probes spent so far


@dataclass(frozen=True)
class NoiseStep:
    """What one visit does to a URL's noise state.

    ``state``: the new state (None: as it was; ``{}``: forget it);
    ``digest``: the digest to judge the visit by instead of the rule's (the
    page without its noise); ``unchanged``: the visit is a probe whose
    differences were all learned as noise; ``probe``: fetch again now;
    ``learned``: exclusions were learned.
    """

    state: dict[str, Any] | None = None
    digest: str | None = None
    unchanged: bool = False
    probe: bool = False
    learned: bool = False
    #: the exclusions were taken from a sibling (:class:`NoisePool`), no probe spent
    adopted: bool = False


def step(
    state: dict[str, Any] | None,
    segments: list[Segment] | None,
    *,
    changed: bool,
    first: bool,
    validators: bool,
    elapsed: float | None,
    window: float,
    pooled: Sequence[list[Exclusion]] = (),
) -> NoiseStep:
    """Fold one digested visit into the URL's noise *state*.

    *changed*: the rule's digest differs from the last one; *first*: no
    earlier digest; *validators*: the response has an ETag or a
    Last-Modified (then conditional requests and the validator trust deal
    with change, and no probe is spent); *elapsed*: seconds since the last
    visit; *window*: the longest interval a probe may come after the fetch
    it checks (a later one could take a real change for noise); *pooled*:
    exclusions learned on the URL's siblings (:class:`NoisePool`), adopted
    if every one of them finds its segment in this page.
    """
    state = dict(state or {})
    probes = int(state.get(PROBES) or 0)
    sketched = state.pop(SKETCH, None)
    if sketched is not None:
        if segments is not None and elapsed is not None and elapsed <= window:
            learned = learn(sketched, segments)
            if not learned.differed and not changed:
                return NoiseStep({SETTLED: "clean", PROBES: probes})
            if learned.exclusions is None:
                return NoiseStep({SETTLED: "hard", PROBES: probes})
            masked = masked_digest(segments, learned.exclusions)
            return NoiseStep(
                {EXCLUSIONS: learned.exclusions, PROBES: probes}, digest=masked.digest, unchanged=True, learned=True
            )
        # too late (a restart, a long politeness wait) or no text: not a probe
        state.pop(EXCLUSIONS, None)
    exclusions = state.get(EXCLUSIONS)
    if exclusions is not None and segments is not None:
        masked = masked_digest(segments, exclusions)
        moved = masked.matched < len(exclusions)
        if moved and probes < MAX_PROBES and not validators and token_count(segments) <= MAX_PAGE_TOKENS:
            # the template moved: learn again from this fetch and a probe
            return NoiseStep(
                {SKETCH: sketch(segments), EXCLUSIONS: exclusions, PROBES: probes + 1}, digest=masked.digest, probe=True
            )
        return NoiseStep(state if sketched is not None else None, digest=masked.digest)
    if pooled and segments and not validators and SETTLED not in state:
        for exclusions in pooled:
            masked = masked_digest(segments, exclusions)
            if masked.matched == len(exclusions):
                return NoiseStep({EXCLUSIONS: list(exclusions), PROBES: probes}, digest=masked.digest, adopted=True)
    if (
        changed
        and not first
        and not validators
        and SETTLED not in state
        and probes < MAX_PROBES
        and segments
        and token_count(segments) <= MAX_PAGE_TOKENS
    ):
        return NoiseStep({SKETCH: sketch(segments), PROBES: probes + 1}, probe=True)
    return NoiseStep(state if sketched is not None else None)


def needs_text(
    state: dict[str, Any] | None, *, changed: bool, first: bool, validators: bool, pooled: bool = False
) -> bool:
    """Whether :func:`step` needs this visit's segments (parsing is spared on
    the many visits it would change nothing for); *pooled*: siblings have
    exclusions to offer."""
    state = state or {}
    if SKETCH in state or EXCLUSIONS in state:
        return True
    if pooled and not validators and SETTLED not in state:
        return True
    return (
        changed and not first and not validators and SETTLED not in state and int(state.get(PROBES) or 0) < MAX_PROBES
    )


# -- siblings share a template -----------------------------------------------------

#: distinct exclusion sets kept per pool key (templates of one directory)
POOL_SETS = 4
#: pool keys kept (the least recently learned are dropped)
POOL_KEYS = 10_000


def pool_key(url: str) -> str:
    """Where siblings likely share a template: host, directory, extension.

    >>> pool_key("https://news.example/p/12.html")
    'news.example/p/*.html'
    >>> pool_key("https://news.example/story?id=3")
    'news.example/*'
    """
    parts = urlsplit(url)
    directory, name = posixpath.split(parts.path or "/")
    return f"{(parts.hostname or '').lower()}{directory.rstrip('/')}/*{posixpath.splitext(name)[1]}"


class NoisePool:
    """Exclusions learned on one page, offered to its siblings.

    Pages of one directory of a host are usually made from one template,
    and a clock or a token in the template is noise on every one of them.
    Learning it costs a page three fetches (the first, the changed revisit,
    the probe); a sibling that holds every segment a learned set excludes
    takes that set instead, from its first visit, and is never probed.  A
    sibling whose text lacks one of them (another template) learns its own.

    A cache, not state: each URL keeps the exclusions it adopted or learned
    in its own record (the frontier's), and the pool is refilled from those
    as the pages are visited, so it needs no saving and a restart only
    costs the first sibling visits their offer.  Bounded: :data:`POOL_SETS`
    sets per key, :data:`POOL_KEYS` keys.
    """

    def __init__(self) -> None:
        self._sets: OrderedDict[str, list[list[Exclusion]]] = OrderedDict()

    def offer(self, url: str) -> list[list[Exclusion]]:
        """The exclusion sets learned on *url*'s siblings (newest first)."""
        return list(self._sets.get(pool_key(url), ()))

    def add(self, url: str, exclusions: list[Exclusion]) -> None:
        """Remember the exclusions *url* learned or adopted."""
        if not exclusions:
            return
        key = pool_key(url)
        sets = [s for s in self._sets.pop(key, []) if s != exclusions]
        self._sets[key] = [exclusions, *sets][:POOL_SETS]
        while len(self._sets) > POOL_KEYS:
            self._sets.popitem(last=False)
