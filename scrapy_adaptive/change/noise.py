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
noise segment, and its tokens that differ are *wildcards*.  A token that
held still over the pair is kept, whatever it holds (a price beside an
"as of 12:03" line), with one exception: the calendar date written beside a
clock that moved, which turns with it at midnight.  A segment inserted or
deleted, or of a different token count, cannot be described that way: the
page is "not learnable" and the wait policy's noise guard
(``policies/noise_guard.py``) stays its only defence.

**What is never noise.**  A real edit can land between the two fetches.
The probe is a full download (a 304 or an aborted fetch would show
nothing) and must come within the probe window of the fetch it checks,
measured from that fetch, not from whatever visit came between.  A
difference that came with moved validators (another ETag or
Last-Modified) is an edit, unless a second pair shows the validators move
at every fetch.  Once learned, a mask that would hide the only difference
between two fetches whose validators differ is dropped and the visit is a
change.  A sibling's mask (:class:`NoisePool`) is stored but judges nothing
until the page's own probe shows the masked parts move there too; if they
held still, the change it held back is delivered with the probe.

**An exclusion** identifies its segment by what composes and precedes it,
not by its value: ``[anchor, n, wildcards, fixed, follower]``: the hash of
the preceding segment (its text, or which exclusion it matched), the token
count, the wildcard positions, the hash of the other tokens, and the hash
of the next segment that is not noise.  A segment with fixed text
(``Server time * UTC``) matches wherever it is; one that is all wildcards
(a lone token) only after its anchor or before its follower, so an edit of
the text on one side of it does not lose it.  A matching segment is left
out of the digest; a segment in an exclusion's place with its shape but
other fixed text (a price edited in the line that holds the clock) makes
the visit a change, and the exclusion takes the new text over.  A lone
token is told from a stable one-word segment by its place only: in a page
that repeats the same text around both, the stable one is left out too (a
repeated navigation bar with a token in one copy).

When to probe, what two probe pairs teach and when a mask judges a visit
is :mod:`.noise_learner`'s.

Pure: no Scrapy imports; the response is duck-typed as in :mod:`.digest`.
"""

from __future__ import annotations

import difflib
import hashlib
import re
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config.matching import media_type
from .digest import sha1_digest, text_of, visible_root
from .url_class import url_class

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
Exclusion = list[Any]  # [anchor, n, wildcards, fixed, follower], JSON-safe (older ones lack the follower)

#: a time of day in a token (12:03, 12:03:04.5, 2026-11-27T12:03:04Z)
_CLOCK = re.compile(r"\d{1,2}:\d{2}")
#: a whole date in one token (2026-11-27, 27.11.2026, 11/27/26)
_NUMERIC_DATE = re.compile(r"^(\d{4}-\d{1,2}-\d{1,2}|\d{1,2}[./-]\d{1,2}[./-](\d{4}|\d{2}))\b")
_YEAR = re.compile(r"^(19|20)\d{2}[,;.)]?$")
_DAY = re.compile(r"^\d{1,2}(st|nd|rd|th)?[,.]?$")
_MONTHS = frozenset(
    "jan feb mar apr may jun jul aug sep sept oct nov dec january february march april june july august "
    "september october november december".split()
)
_WEEKDAYS = frozenset(
    "mon tue tues wed thu thur thurs fri sat sun monday tuesday wednesday thursday friday saturday sunday".split()
)
#: tokens a date and its clock are written across ("27 Nov 2026 at 12:03")
_CONNECTORS = frozenset(["at", "on", "-", "\u2013", "|", "@", ",", "/"])


def _word(token: str) -> str:
    return token.lower().strip(".,;:()[]")


def _calendar(segment: Segment, k: int) -> bool:
    """True if token *k* is part of a calendar date (a day of the month only beside a month's name)."""
    token = segment[k]
    word = _word(token)
    if word in _MONTHS or word in _WEEKDAYS or _YEAR.match(token) or _NUMERIC_DATE.match(token):
        return True
    if _DAY.match(token):
        return any(0 <= j < len(segment) and _word(segment[j]) in _MONTHS for j in (k - 1, k + 1))
    return False


def date_of_clock(segment: Segment, changed: Sequence[int]) -> set[int]:
    """The calendar date written beside a clock that moved.

    It held still over the probe pair only because both fetches fell on one
    day: it turns with the clock at midnight, so it is the clock's, not the
    page's.  Nothing else that held still is noise (a price beside an
    "as of 12:03" is kept).
    """
    out: set[int] = set()
    for k in changed:
        if not _CLOCK.search(segment[k]):
            continue
        for direction in (-1, 1):
            j = k + direction
            while 0 <= j < len(segment):
                if _calendar(segment, j):
                    out.add(j)
                elif _word(segment[j]) not in _CONNECTORS and segment[j] not in _CONNECTORS:
                    break
                j += direction
    return out


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


def differences(before: Sequence[str], after: Sequence[Segment]) -> dict[int, list[int]] | None:
    """The tokens of each segment of *after* that differ from the sketch *before*.

    ``{segment index: [token positions]}`` for the segments that differ
    (``{}``: none); None if the two cannot be aligned segment by segment
    (a segment inserted or deleted, another token count, a long segment
    that changed).  Aligned fetches have the same segments in the same
    order, so their indices are the same.
    """
    now = sketch(after)
    matcher = difflib.SequenceMatcher(None, list(before), now, autojunk=False)
    out: dict[int, list[int]] = {}
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if tag != "replace" or i2 - i1 != j2 - j1:
            return None
        for old, j in zip(before[i1:i2], range(j1, j2), strict=True):
            new = now[j]
            if old.startswith("#") or new.startswith("#") or len(old) != len(new):
                return None
            out[j] = [k for k in range(len(after[j])) if old[4 * k : 4 * k + 4] != new[4 * k : 4 * k + 4]]
    return out


def exclusions_of(segments: Sequence[Segment], noise: dict[int, list[int]]) -> list[Exclusion] | None:
    """The exclusions of the *noise* tokens of *segments* (None: too many to be a template's)."""
    exclusions: list[Exclusion] = []
    anchor = _hash("")
    for j, segment in enumerate(segments):
        if noise.get(j):
            follower = _follower(segments, j, noise)
            exclusion = [anchor, len(segment), noise[j], _fixed(segment, noise[j]), follower]
            if exclusion not in exclusions:  # two lone tokens between the same texts: one rule
                exclusions.append(exclusion)
            anchor = _excluded_anchor(exclusions.index(exclusion))
        else:
            anchor = _hash(" ".join(segment))
    return None if len(exclusions) > MAX_EXCLUSIONS else exclusions


def with_dates(segments: Sequence[Segment], noise: dict[int, list[int]]) -> dict[int, list[int]]:
    """*noise* with the calendar date beside each moving clock (:func:`_date_of_clock`)."""
    return {j: sorted(set(w) | date_of_clock(segments[j], w)) for j, w in noise.items() if w}


def learn(before: Sequence[str], after: Sequence[Segment]) -> Learned:
    """The exclusions one pair of fetches suggests: a sketch (*before*) and a
    later fetch's segments.  The crawl learns from two pairs in a row
    (:func:`step`), keeping what moved in both."""
    diff = differences(before, after)
    if diff is None:
        return Learned(None, True)
    if not diff:
        return Learned([], False)
    return Learned(exclusions_of(after, with_dates(after, diff)), True)


def changed_since(before: Sequence[str], after: Sequence[Segment], noise: dict[int, list[int]]) -> bool:
    """True if *after* differs from the sketch *before* outside the *noise* tokens."""
    now = sketch(after)
    if len(now) != len(before):
        return True
    for j, (old, new) in enumerate(zip(before, now, strict=True)):
        if old == new:
            continue
        if old.startswith("#") or new.startswith("#") or len(old) != len(new):
            return True
        skip = set(noise.get(j, ()))
        if any(old[4 * k : 4 * k + 4] != new[4 * k : 4 * k + 4] for k in range(len(old) // 4) if k not in skip):
            return True
    return False


def _excluded_anchor(index: int) -> str:
    """The anchor after an excluded segment: which exclusion, not its value."""
    return _hash(f"\x00{index}")


#: the follower of a segment that ends the page
_END = "\x01end"


def _follower(segments: Sequence[Segment], j: int, excluded: Any) -> str:
    """The hash of the first segment after *j* that is not noise (the page's end if none)."""
    for k in range(j + 1, len(segments)):
        if k not in excluded:
            return _hash(" ".join(segments[k]))
    return _hash(_END)


def _excluded(segment: Segment, anchor_hash: str, exclusions: Sequence[Exclusion]) -> int | None:
    """The index of the exclusion *segment* matches after *anchor_hash*, or None.

    A segment with fixed text (``Server time * UTC``) is recognised by it
    wherever it is, so a real edit of its neighbour does not hide it; one
    that is all wildcards (a lone token) only right after its anchor (or,
    below, right before its follower).
    """
    anywhere = None
    for index, (anchor, n, wildcards, fixed, *_) in enumerate(exclusions):
        if n == len(segment) and fixed == _fixed(segment, wildcards):
            if anchor == anchor_hash:
                return index  # in its place: the exclusion learned there
            if anywhere is None and n > len(wildcards):
                anywhere = index
    return anywhere


@dataclass(frozen=True)
class Masked:
    """A page digested without its noise.

    ``digest``: the page without the segments its exclusions found;
    ``matched``: how many exclusions found their segment (fewer than all:
    the template moved); ``edited``: exclusions whose segment sits in its
    place with its shape but other fixed text (the line that holds the clock
    was edited: a change), by index, with the new fixed text's hash.
    """

    digest: str
    matched: int
    edited: dict[int, str]


def place(segments: Sequence[Segment], exclusions: Sequence[Exclusion]) -> tuple[dict[int, int], dict[int, int]]:
    """Which segments the exclusions find ``{segment: exclusion}``, and which
    sit in an exclusion's place with other fixed text.

    First by anchor (or fixed text anywhere), in page order; then an
    exclusion not found is looked for right before its follower, so a lone
    token after a line that was edited is still found, and a segment in its
    place but with other fixed text is an edit of that line.
    """
    found: dict[int, int] = {}
    anchor = _hash("")
    for i, segment in enumerate(segments):
        index = _excluded(segment, anchor, exclusions)
        if index is not None:
            found[i] = index
            anchor = _excluded_anchor(index)
        else:
            anchor = _hash(" ".join(segment))
    edited: dict[int, int] = {}
    missing = sorted(set(range(len(exclusions))) - set(found.values()))
    for index in missing:
        anchor, n, wildcards, fixed, *rest = exclusions[index]
        follower = rest[0] if rest else None
        for i, segment in enumerate(segments):
            if i in found or i in edited or len(segment) != n:
                continue
            before = (
                _hash("")
                if i == 0
                else (_excluded_anchor(found[i - 1]) if i - 1 in found else _hash(" ".join(segments[i - 1])))
            )
            if before != anchor and (follower is None or _follower(segments, i, found) != follower):
                continue
            if _fixed(segment, wildcards) == fixed:
                found[i] = index
            elif n > len(wildcards):
                edited[i] = index
            break
    return found, edited


def masked_digest(segments: Sequence[Segment], exclusions: Sequence[Exclusion]) -> Masked:
    """The ``noise`` digest of *segments* without the segments *exclusions* find."""
    if not exclusions:
        return Masked(sha1_digest(RULE, "\n".join(" ".join(s) for s in segments).encode("utf-8")), 0, {})
    found, edited = place(segments, exclusions)
    kept = [" ".join(segment) for i, segment in enumerate(segments) if i not in found and i not in edited]
    changes = {index: _fixed(segments[i], exclusions[index][2]) for i, index in edited.items()}
    return Masked(sha1_digest(RULE, "\n".join(kept).encode("utf-8")), len(set(found.values())), changes)


def follow_edits(exclusions: Sequence[Exclusion], edited: dict[int, str]) -> list[Exclusion]:
    """*exclusions* with the fixed text of the lines edited in place taken over."""
    out = [list(e) for e in exclusions]
    for index, fixed in edited.items():
        out[index][3] = fixed
    return out


# -- siblings share a template -----------------------------------------------------

#: distinct exclusion sets kept per pool key (templates of one directory)
POOL_SETS = 4
#: pool keys kept (the least recently learned are dropped)
POOL_KEYS = 10_000


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
        return list(self._sets.get(url_class(url), ()))

    def add(self, url: str, exclusions: list[Exclusion]) -> None:
        """Remember the exclusions *url* learned or adopted."""
        if not exclusions:
            return
        key = url_class(url)
        sets = [s for s in self._sets.pop(key, []) if s != exclusions]
        self._sets[key] = [exclusions, *sets][:POOL_SETS]
        while len(self._sets) > POOL_KEYS:
            self._sets.popitem(last=False)
