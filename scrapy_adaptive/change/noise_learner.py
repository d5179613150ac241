"""The noise learner: what one visit does to a URL's learned-noise state.

:mod:`.noise` cuts a page into fields and compares sketches; this module
decides, visit by visit, what a difference means.  Its contract:

* **Nothing lost.**  A part of a page is hidden only once it is *proven* to
  move without an edit: a clock, by moving exactly as the time between two
  fetches (one pair of fetches suffices, whatever its gap); anything else,
  by moving over three intervals in a row: from the last version to the
  fetch that found the difference, and over each of two probes right
  after it.  A real edit that lands inside a probe window moves once, not
  three times, so it is never learned as noise; a part that held still
  over any of the three is content.
* **No false change.**  The first difference of a page that cannot be
  explained by what is already learned is *held*: the visit is recorded
  unchanged and not delivered, and a probe is asked for at once (the
  host's politeness delay).  The probe settles it: if the difference held
  still, it was an edit and the probe's response is delivered as the new
  version (with the edit, one politeness delay late); if it moved again, a
  second probe decides what is noise.  A part that moved once only in the
  first interval is an edit and is delivered at the first probe.
* **Nothing parked by doubt.**  No outcome gives up on a page: a
  difference the learner cannot prove to be noise is a change, delivered,
  and the policy's wait follows what was delivered.  A page that cannot be
  cut into fields (binary, unparsable, more than :data:`.noise.MAX_FIELDS`)
  is judged by its rule's digest, which cannot lose an edit.
* **Probes are bounded**: :data:`MAX_PROBES` in a page's life; past them
  a difference is delivered at once (clocks are still learned, they need
  no probe).

Siblings (:class:`NoisePool`): a difference that lies inside a mask
a sibling learned is held and probed like any other, but one probe that
shows it moving again proves it.

The state is the record's ``noise`` (JSON, stored as is).  Whether a visit
is the learner's and the page's fields (its validators as two more) are
read by :mod:`.noise` (:func:`.noise.learns_from`, :func:`.noise.page_fields`);
:func:`learn_noise` is one visit's step: it reads the answer's server time,
calls :func:`step` with the masks the URL's siblings learned
(:class:`NoisePool`), and folds its answer into a new verdict from the one
being judged: the change state, the digest to store, a probe due at once,
one annotation per thing that happened.  Pure: no Scrapy imports.
"""

from __future__ import annotations

import json
import logging
import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..model import ChangeState, Visit
from . import noise
from .answer import Answer
from .noise import (
    ETAG_FIELD,
    LAST_MODIFIED_FIELD,
    PENDING,
    RULE,
    UNLEARNABLE,
    VERSION,
    Field,
    Masks,
    Moves,
    Sketch,
    by_hash,
    compare,
    date_beside,
    masked_digest,
    name_hash,
    pack,
    region_of,
    sketch,
    under,
    unpack,
)

logger = logging.getLogger(__name__)

#: probes one URL may cost in its life (a learning takes one or two, an edit
#: held back one); past that a difference is delivered at once
MAX_PROBES = 8

# the state's keys (the record's ``noise``, stored as is; VERSION, PENDING and
# UNLEARNABLE, which say whether a visit reads the page's fields, are :mod:`.noise`'s)
PENDING_AT = "tt"  #: when that fetch was made (its probe must come within the window)
CANDIDATES = "c"  #: what moved in every interval so far, per name hash
REGION = "cr"  #: the region whose fields came and went in every interval so far
STAGE = "n"  #: which probe comes next (1 or 2)
HELD = "hd"  #: the difference is still held back (not delivered)
PROBES = "r"  #: probes spent so far
OFFERED = "o"  #: a sibling's mask the held difference lies in
GUARD = "pd"  #: the SHA-1 of the version last delivered without what the masks hide
GUARD_MASKS = "pm"  #: the masks that SHA-1 was taken under
DELIVERED = "dg"  #: the digest the record gave the version last delivered
SHORT = "q"  #: per part of a field (``hash:part``), how many probe pairs (seconds apart) it moved over

#: fields whose moves within probe pairs are counted
MAX_SHORT = 64

#: the validators' fields, by name hash
_ETAG = name_hash(ETAG_FIELD)
_LAST_MODIFIED = name_hash(LAST_MODIFIED_FIELD)

#: a candidate's move: the field came or went
CAME_WENT = "c"

_PENDING_KEYS = (PENDING, PENDING_AT, CANDIDATES, REGION, STAGE, HELD, OFFERED)

#: annotations: a difference held back for a probe, and a probe that
#: delivers a held difference (the change belongs to the interval before
#: the held fetch: the wait policies count it there)
HELD_BACK = "noiseHeld"
HELD_CHANGE = "heldChange"
#: annotation of a visit that asks for a probe now
PROBE_ASKED = "noiseProbe"
#: annotation of a probe fetch (not a revisit: the wait policies do not
#: count its few seconds as an interval)
PROBED = "noiseProbed"


@dataclass(frozen=True)
class Seen:
    """What one visit shows the noise learner.

    ``fields``: the page's fields (None: not learnable); ``now``: when the
    response arrived;
    ``at``: the server's time of the response (its ``Date``, else *now*),
    which its clocks are read against; ``digest``: the rule's digest of the
    response; ``previous_digest``: the record's; ``content_dated``: its
    Last-Modified is a content date (not the fetch's own second).
    """

    fields: list[Field] | None
    now: float
    at: float
    digest: str | None = None
    previous_digest: str | None = None
    content_dated: bool = False


@dataclass(frozen=True)
class NoiseStep:
    """What one visit does to a URL's noise state.

    ``state``: the new state (None: as it was); ``verdict``: the visit's
    change state (None: the rule's stands); ``digest``: the digest to store
    (None: the rule's); ``probe``: fetch again now; ``held``: a difference
    was held back for a probe; ``released``: a held difference is delivered
    by this visit; ``learned``: part of the page was proven noise;
    ``confirmed``: by a sibling's mask and one probe; ``unlearnable``: the
    page cannot be learned from, said once.
    """

    state: dict[str, Any] | None = None
    verdict: ChangeState | None = None
    digest: str | None = None
    probe: bool = False
    held: bool = False
    released: bool = False
    learned: bool = False
    confirmed: bool = False
    unlearnable: bool = False
    probed: bool = False


def _names_of(fields: Sequence[Field]) -> dict[str, str]:
    return {name_hash(name): value for name, value in fields}


def _learn_clocks(masks: Masks, moves: Moves, fields: Sequence[Field], hashed: bool) -> bool:
    """Hide the tokens that moved as clocks (and the dates written beside
    them); True if that hid anything new."""
    if not moves.clocks:
        return False
    values = _names_of(fields)
    before = masks.state()
    for key, positions in moves.clocks.items():
        name_key = key if hashed else name_hash(key)
        extra: list[int] = []
        for position in positions:
            extra += date_beside(values, name_key, position)
        masks.add_tokens(name_key, sorted(positions | set(extra)))
    return masks.state() != before


def _hashed(moves: Mapping[str, Any]) -> dict[str, set[Any]]:
    return {name_hash(name): set(parts) for name, parts in moves.items()}


def step(state: dict[str, Any] | None, seen: Seen, *, window: float, pooled: Sequence[Masks] = ()) -> NoiseStep:
    """Fold one digested visit into the URL's noise *state*.

    *window*: the longest a probe may come after the fetch it checks (a
    later one could take a real change for noise); *pooled*: masks learned
    on the URL's siblings.
    """
    state = dict(state or {})
    if seen.fields is None:
        # binary, unparsable or too large: judged by its rule from now on
        said = bool(state.get(UNLEARNABLE))
        return NoiseStep({UNLEARNABLE: 1, PROBES: state.get(PROBES, 0)}, unlearnable=not said)
    state.pop(UNLEARNABLE, None)
    pending = {k: state.pop(k) for k in _PENDING_KEYS if k in state}
    masks = Masks.of(state)
    named = sketch(seen.fields, seen.at, masks, names=True)
    version = unpack(state.get(VERSION))
    if version is None:
        # no version sketched yet: this one is.  A first visit is a version
        # (the rule's verdict stands); after a version was taken back (its
        # items never confirmed), the masks still say what the page was
        started = _based({**state, VERSION: pack(by_hash(named)), DELIVERED: seen.digest}, masks, seen)
        previous = seen.previous_digest
        if masks and isinstance(previous, str) and previous.startswith(RULE + ":"):
            digest = started[GUARD]
            verdict = ChangeState.UNCHANGED if digest == previous else ChangeState.CHANGED
            if verdict is ChangeState.UNCHANGED:
                started[DELIVERED] = previous
            else:
                started[DELIVERED] = digest
            return NoiseStep(started, verdict=verdict, digest=digest)
        return NoiseStep(started)
    sketched_at = pending.get(PENDING_AT)
    in_time = isinstance(sketched_at, (int, float)) and 0 <= seen.now - sketched_at <= window
    if isinstance(pending.get(PENDING), dict) and in_time and pending.get(STAGE) in (1, 2):
        return replace(_probed(state, pending, masks, named, seen), probed=True)
    # a visit, or a probe too late to prove anything: the difference is judged now
    return _visit(state, masks, version, named, seen, pooled, held=bool(pending.get(HELD)))


def _with_masks(state: Mapping[str, Any], masks: Masks) -> dict[str, Any]:
    """*state* with *masks* as they are now (the ones it held replaced)."""
    return {**{k: v for k, v in state.items() if k not in ("m", "g")}, **masks.state()}


def _delivered(
    state: dict[str, Any], masks: Masks, now: Sketch, seen: Seen, *, released: bool = False, learned: bool = False
) -> NoiseStep:
    """The visit is a new version: delivered, and the version compared from now on."""
    out = _based({**_with_masks(state, masks), VERSION: pack(now)}, masks, seen)
    digest = out[GUARD] if masks else seen.digest
    out[DELIVERED] = digest
    return NoiseStep(out, verdict=ChangeState.CHANGED, digest=digest, released=released, learned=learned)


def _unchanged(state: dict[str, Any], masks: Masks, seen: Seen, **flags: Any) -> NoiseStep:
    """The visit is the version last delivered: its digest stays the record's."""
    out = {**_with_masks(state, masks)}
    if out.get(GUARD_MASKS) != _masks_key(masks):
        out = _based(out, masks, seen)  # the masks grew: the guard is taken again under them
    return NoiseStep(out, verdict=ChangeState.UNCHANGED, digest=_delivered_digest(state, seen), **flags)


def _delivered_digest(state: Mapping[str, Any], seen: Seen) -> str | None:
    """The digest of the version last delivered: an unchanged visit keeps it
    (whatever answered in between, a 404's body say, is not the page)."""
    digest = state.get(DELIVERED)
    return digest if isinstance(digest, str) else seen.previous_digest


def _masks_key(masks: Masks) -> str:
    return name_hash(json.dumps(masks.state(), sort_keys=True))


def _based(state: dict[str, Any], masks: Masks, seen: Seen) -> dict[str, Any]:
    """*state* with the guard taken on this fetch: the SHA-1 of its fields
    without what the masks hide (the version last delivered, as compared)."""
    return {**state, GUARD: masked_digest(seen.fields or [], masks), GUARD_MASKS: _masks_key(masks)}


def _guard_moved(state: Mapping[str, Any], masks: Masks, seen: Seen) -> bool:
    """True if the fetch differs from the version last delivered outside the
    masks by the SHA-1, where the sketch found nothing (a short hash's
    collision): *whether* a page changed is never left to a short hash."""
    return (
        state.get(GUARD_MASKS) == _masks_key(masks)
        and isinstance(state.get(GUARD), str)
        and state[GUARD] != masked_digest(seen.fields or [], masks)
    )


def _visit(
    state: dict[str, Any],
    masks: Masks,
    version: Sketch,
    named: Sketch,
    seen: Seen,
    pooled: Sequence[Masks],
    *,
    held: bool,
) -> NoiseStep:
    """A visit (or a probe too late to prove anything): unchanged, delivered,
    or its difference held back for a probe; *named*: its sketch by full name."""
    now = by_hash(named)
    moves = compare(version, now, masks)
    learned = _learn_clocks(masks, moves, seen.fields or [], hashed=True)
    if not moves:
        if _guard_moved(state, masks, seen):
            # the sketch's short hashes missed a move the SHA-1 sees: a change
            return _delivered(state, masks, now, seen, released=held, learned=learned)
        return _unchanged(state, masks, seen, learned=learned)
    probes = int(state.get(PROBES) or 0)
    if probes >= MAX_PROBES or _ETAG in moves.keys() or (seen.content_dated and _LAST_MODIFIED in moves.keys()):
        # the server says so too (another ETag, a Last-Modified that is a
        # content date, not a clock): an edit, delivered at once
        return _delivered(state, masks, now, seen, released=held, learned=learned)
    # held back until a probe shows what moves at every fetch
    candidates = {key: sorted(parts, key=str) for key, parts in moves.fields.items()}
    for key in moves.added | moves.removed:
        candidates[key] = [CAME_WENT]
    held_state = {
        **{k: v for k, v in state.items() if k not in ("m", "g")},
        **masks.state(),
        PENDING: named,
        PENDING_AT: seen.now,
        CANDIDATES: candidates,
        STAGE: 1,
        HELD: 1,
        PROBES: probes + 1,
    }
    if moves.added or moves.removed:
        held_state[REGION] = "?"  # fields came or went: where, the probes say
    for offered in pooled:
        if _inside(moves, offered):
            held_state[OFFERED] = offered.state()
            break
    return NoiseStep(
        held_state,
        verdict=ChangeState.UNCHANGED,
        digest=_delivered_digest(state, seen),
        probe=True,
        held=True,
        learned=learned,
    )


def _inside(moves: Moves, masks: Masks) -> bool:
    """True if every difference of *moves* lies inside *masks*."""
    if moves.added or moves.removed:
        return False
    for key, parts in moves.fields.items():
        hidden = masks.hidden(key)
        if hidden != "*" and (parts & {"s", "n", CAME_WENT} or not parts <= set(hidden)):
            return False
    return True


def _probed(state: dict[str, Any], pending: dict[str, Any], masks: Masks, named: Sketch, seen: Seen) -> NoiseStep:
    """A probe of a held (or just delivered) difference."""
    before: Sketch = pending[PENDING]
    moves = compare(before, named, None)
    hidden_now = {name for name in named if masks.hidden(name_hash(name)) == "*"}
    for name in hidden_now:
        moves.fields.pop(name, None)
    learned = _learn_clocks(masks, moves, seen.fields or [], hashed=False)
    moved = _hashed(moves.fields)
    for name in moves.added | moves.removed:
        moved[name_hash(name)] = {CAME_WENT}
    candidates = {key: set(parts) for key, parts in (pending.get(CANDIDATES) or {}).items()}
    again = {key: parts & moved[key] for key, parts in candidates.items() if key in moved and parts & moved[key]}
    region = _region_again(pending, before, named, moves, candidates)
    if region is None and (moves.added or moves.removed):
        # fields came or went where values were already moving at every
        # fetch (a list whose items rotated, then shrank): that is the region
        here = region_of(sorted(moves.added | moves.removed))
        moving = [n for n in (*before, *named) if name_hash(n) in again]
        if here is not None and any(under(n, here) for n in moving):
            region = here
    if region is not None:
        # what the region explains is not an edit, nor a field's own noise
        present = [*before, *named]
        gone = set(candidates) - {name_hash(n) for n in present}
        inside = {name_hash(n) for n in (*present, *_named(gone, present)) if under(n, region)}
        again = {key: parts for key, parts in again.items() if key not in inside}
        candidates = {key: parts for key, parts in candidates.items() if key not in inside}
    # a field seen moving within a probe pair before (seconds apart, in
    # another learning) and moving again now: it moves far faster than
    # edits come, even if not at every fetch (a counter of every other hit)
    short = {k: v for k, v in (state.get(SHORT) or {}).items() if isinstance(v, int)}
    for key, parts in moved.items():
        for part in parts:
            short[f"{key}:{part}"] = min(9, short.get(f"{key}:{part}", 0) + 1)
    state = {**state, SHORT: dict(sorted(short.items(), key=lambda kv: -kv[1])[:MAX_SHORT])}
    recurrent = {}
    for key, parts in candidates.items():
        fast = {part for part in parts - again.get(key, set()) if short.get(f"{key}:{part}", 0) >= 2}
        if fast and fast == parts - again.get(key, set()):
            recurrent[key] = fast  # every part that held still now moved within seconds before
    if recurrent:
        for key, parts in recurrent.items():
            _mask(masks, key, parts, seen)
        for key, fast in recurrent.items():
            again[key] = again.get(key, set()) | fast
        learned = True
    # the parts that moved before but held still over this pair: edits
    edits = any(parts - again.get(key, set()) for key, parts in candidates.items())
    held = bool(pending.get(HELD))
    version: Sketch = unpack(state.get(VERSION)) or {}
    now = by_hash(named)
    offered = Masks.of(pending.get(OFFERED) or {})
    if not again and region is None:
        # nothing moved twice: the held difference was edits
        return _settle(state, masks, version, now, seen, held=held, learned=learned)
    if pending.get(STAGE) == 2 or (offered and _all_again(candidates, again)):
        for key, parts in again.items():
            _mask(masks, key, parts, seen)
        stale: set[str] = set()
        if region is not None:
            masks.add_region(region)
            seen_names = [*before, *named]
            # the version's fields of the region, by name where this pair has them,
            # else found among their siblings' names (an item gone since)
            guessed = _named(set(version) - set(by_hash(named)), seen_names)
            stale = {name_hash(n) for n in (*seen_names, *guessed) if masks.in_region(n)}
        named = sketch(seen.fields or [], seen.at, masks, names=True)
        now = by_hash(named)
        version = {k: v for k, v in version.items() if k not in stale}
        return _settle(
            state,
            masks,
            version,
            now,
            seen,
            held=held,
            learned=True,
            confirmed=bool(offered) and pending.get(STAGE) == 1,
        )
    # moved again: a second probe tells; an edit beside it is delivered now
    out = {
        **{k: v for k, v in state.items() if k not in ("m", "g")},
        **masks.state(),
        PENDING: named,
        PENDING_AT: seen.now,
        CANDIDATES: {key: sorted(parts, key=str) for key, parts in again.items()},
        STAGE: 2,
        PROBES: int(state.get(PROBES) or 0) + 1,
    }
    if region is not None:
        out[REGION] = region
    if edits:
        return replace(_delivered(out, masks, now, seen, released=held, learned=learned), probe=True)
    if held:
        out[HELD] = 1
    return NoiseStep(
        out, verdict=ChangeState.UNCHANGED, digest=_delivered_digest(state, seen), probe=True, learned=learned
    )


def _region_again(
    pending: Mapping[str, Any], before: Sketch, named: Sketch, moves: Moves, candidates: Mapping[str, set[Any]]
) -> str | None:
    """The region whose fields came and went, if its content moved again over this pair.

    At the first probe the region is found where fields came or went (over
    this pair, else over the interval before, by the fields the held fetch
    gained); at the second it must still be moving.  A region is only ever
    a candidate when fields came or went: a value that moves is a field's
    own noise, hidden alone.
    """
    region = pending.get(REGION)
    if region is None:
        return None
    came_went = sorted(moves.added | moves.removed)
    if region == "?":
        structural = {key for key, parts in candidates.items() if parts == {CAME_WENT}}
        gained = [n for n in before if name_hash(n) in structural]
        region = region_of(came_went or gained or _named(structural, [*before, *named]))
        if region is None:
            return None
    elif came_went and (here := region_of(came_went)) is not None:
        region = _common(region, here) or region
    moved = [*moves.fields, *came_went]
    return region if any(under(n, region) for n in moved) else None


_STEP = re.compile(r"^(.*/)([a-z][a-z0-9]*)(?:\[(\d+)\])?([@#$].*)$")


def _named(hashes: set[str], names: Sequence[str], spread: int = 40) -> list[str]:
    """The names of fields that went (known only by their hash): looked for
    among the siblings of the fields still there, as a list's items are
    (``li[3]`` beside ``li[1]``)."""
    out = []
    tried: set[str] = set()
    for name in names:
        match = _STEP.match(name)
        if match is None:
            continue
        head, tag, index, tail = match.groups()
        for k in range(max(0, int(index or 0) - spread), int(index or 0) + spread):
            guess = f"{head}{tag}{'' if k == 0 else f'[{k}]'}{tail}"
            if guess in tried:
                continue
            tried.add(guess)
            if name_hash(guess) in hashes:
                out.append(guess)
    return out


def _mask(masks: Masks, key: str, parts: set[Any], seen: Seen) -> None:
    """Hide what was proven to move in the field *key*: the whole field if
    its shape or its number of tokens moved, else those tokens (and the
    dates written beside them)."""
    if parts & {"s", "n", CAME_WENT}:
        masks.add_whole(key)
        return
    ints = sorted(p for p in parts if isinstance(p, int))
    extra: list[int] = []
    values = _names_of(seen.fields or [])
    for position in ints:
        extra += date_beside(values, key, position)
    masks.add_tokens(key, sorted(set(ints) | set(extra)))


def _all_again(candidates: Mapping[str, set[Any]], again: Mapping[str, set[Any]]) -> bool:
    return set(candidates) == set(again) and all(candidates[k] == again[k] for k in candidates)


def _common(a: str, b: str) -> str | None:
    """The region holding both *a* and *b* (None: only the page does)."""
    steps = []
    for x, y in zip(a.split("/"), b.split("/"), strict=False):
        if x != y:
            break
        steps.append(x)
    return "/".join(steps) if len(steps) >= 3 else None


def _settle(
    state: dict[str, Any],
    masks: Masks,
    version: Sketch,
    now: Sketch,
    seen: Seen,
    *,
    held: bool,
    learned: bool,
    confirmed: bool = False,
) -> NoiseStep:
    """The probes are over: the fetch is judged against the version last delivered."""
    moves = compare(version, now, masks)
    learned = _learn_clocks(masks, moves, seen.fields or [], hashed=True) or learned
    if moves:
        return replace(_delivered(state, masks, now, seen, released=held, learned=learned), confirmed=confirmed)
    out = {**_with_masks(state, masks), VERSION: pack(version)}
    if learned or out.get(GUARD_MASKS) != _masks_key(masks):
        out = _based(out, masks, seen)
    return NoiseStep(
        out, verdict=ChangeState.UNCHANGED, digest=_delivered_digest(state, seen), learned=learned, confirmed=confirmed
    )


def forget_version(state: Any) -> dict[str, Any] | None:
    """*state* without its sketch of the last version, nor a pending probe:
    that version was taken back (never confirmed delivered), so the next
    fetch is compared with the one delivered before, by its digest.  What
    was learned stays."""
    if not isinstance(state, dict):
        return None
    kept = {k: v for k, v in state.items() if k not in (VERSION, GUARD, GUARD_MASKS, DELIVERED, *_PENDING_KEYS)}
    return kept or None


def probing(state: Any) -> bool:
    """True if a URL's noise state waits for a probe: the probe must be a
    full download (a 304 or an aborted fetch would show nothing)."""
    return isinstance(state, dict) and PENDING in state


def held(state: Any) -> bool:
    """True if a URL holds back a difference for its probe."""
    return isinstance(state, dict) and bool(state.get(HELD))


#: a Last-Modified this close to the fetch (or later) is a generation time,
#: not a content date: it says nothing about change, as on a noise page
FRESH_LAST_MODIFIED = 2.0


def usable_last_modified(modified: float | None, now: float) -> bool:
    """True if a Last-Modified read as *modified* (None: none, or
    unreadable) can tell "no change" at *now*."""
    return modified is not None and modified < now - FRESH_LAST_MODIFIED


#: distinct masks kept per pool key (templates of one directory)
POOL_SETS = 4
#: pool keys kept (the least recently learned are dropped)
POOL_KEYS = 10_000


class NoisePool:
    """Masks learned on one page, offered to its siblings.

    Pages of one directory of a host are usually made from one template, and
    a clock or a token in the template is noise on every one of them.  A
    sibling whose difference lies inside a mask offered here still holds it
    back and probes (nothing is judged by another page's word), but one
    probe that shows the same fields moving proves it, where a page on its
    own needs two.  A cache, not state: each URL keeps its masks in its own
    record, and the pool is refilled from them as pages are visited.
    Bounded: :data:`POOL_SETS` masks per key, :data:`POOL_KEYS` keys.
    """

    def __init__(self) -> None:
        #: per URL class (:func:`.url_class.url_class`), the masks learned
        #: there, newest first, each with its state for comparing (read only)
        self._sets: OrderedDict[str, list[tuple[dict[str, Any], Masks]]] = OrderedDict()

    def offer(self, key: str) -> list[Masks]:
        """The masks learned on the pages of URL class *key* (newest first)."""
        return [masks for _, masks in self._sets.get(key, ())]

    def add(self, key: str, state: Mapping[str, Any]) -> None:
        """Remember the masks a page of URL class *key* learned (*state*: its noise state)."""
        masks = Masks.of(state)
        if not masks:
            return
        learned = masks.state()
        sets = [(s, m) for s, m in self._sets.pop(key, []) if s != learned]
        self._sets[key] = [(learned, masks), *sets][:POOL_SETS]
        while len(self._sets) > POOL_KEYS:
            self._sets.popitem(last=False)


# -- one visit's step -------------------------------------------------------------------


def learn_noise(
    answer: Answer,
    record: Mapping[str, Any],
    visit: Visit,
    fields: list[Field] | None,
    *,
    key: str,
    pool: NoisePool,
    window: float,
    now: float,
) -> tuple[Visit, list[str]]:
    """*visit* with the learner's answer for *answer* folded in, as a new
    verdict (*record*: the URL's record as issued; *fields*: the page's, as
    :func:`.noise.page_fields` reads them, None: it cannot be cut into
    fields; *key*: its URL's class, under which *pool* keeps the masks its
    siblings learned; *window*: the longest a probe may come after the fetch
    it checks), and what happened, one word each (``held``, ``probes``,
    ``released``, ``learned``, ``confirmed``, ``unlearnable``), for the
    crawl's stats.  The visit is one the learner takes (:func:`.noise.learns_from`)."""
    date = answer.served_at
    at = now if date is None else date
    seen = Seen(
        fields,
        now=now,
        at=at,
        digest=visit.digest,
        previous_digest=record.get("digest"),
        # a content date, not the fetch's own second (a page generated per request)
        content_dated=usable_last_modified(answer.modified_at, at),
    )
    result = step(record.get("noise"), seen, window=window, pooled=pool.offer(key))
    changes: dict[str, Any] = {}
    if result.state is not None:
        changes["noise"] = result.state
        pool.add(key, result.state)
    if result.verdict is not None:
        changes["change"] = result.verdict
        if result.digest is not None:
            changes["digest"] = result.digest
    annotations = list(visit.annotations)
    happened = []
    for flag, annotation, word in (
        (result.held, HELD_BACK, "held"),
        (result.probe, PROBE_ASKED, "probes"),
        (result.released, HELD_CHANGE, "released"),
        (result.learned, noise.NOISE_LEARNED, "learned"),
        (result.confirmed, "noiseConfirmed", "confirmed"),
    ):
        if flag:
            annotations.append(annotation)
            happened.append(word)
    if result.probed:
        annotations.append(PROBED)
    if result.held:
        # whether its validators told the truth is the probe's to say, once it is settled
        changes["validation"] = changes["prediction"] = None
    if result.probe:
        changes["probe"] = 0.0  # due now: the frontier's politeness spaces it
    if result.unlearnable:
        happened.append("unlearnable")
        logger.info(
            "%s cannot be compared by its structure (unparsable, or more fields than %s): "
            "it is judged by its digest rule, every byte counting (said once per URL).",
            answer.url,
            f"{noise.MAX_FIELDS:,}",
        )
    return replace(visit, annotations=tuple(annotations), **changes), happened
