"""The noise learner: what one visit does to a URL's learned-noise state.

:mod:`.noise` cuts a page into segments, compares two fetches and masks
what it learned; this module decides, visit by visit, when to probe, what
two probe pairs teach, when a mask judges a visit and when it is dropped.
The state is the record's ``noise`` (JSON, stored as is).

Noise is what moved over two pairs of fetches in a row, each a probe
apart: a part that held still over either pair is content, a difference
that came with moved validators is an edit, a mask never hides the only
difference between two fetches whose validators differ, and a sibling's
mask judges nothing until the page's own probe confirms it
(docs/architecture.md, "Learned noise").

Pure: no Scrapy imports.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..model import ChangeState
from .noise import (
    MAX_PAGE_TOKENS,
    Exclusion,
    Segment,
    changed_since,
    date_of_clock,
    differences,
    exclusions_of,
    follow_edits,
    masked_digest,
    place,
    sketch,
    token_count,
    with_dates,
)

#: probes one URL may cost in its life: a learning takes two (two pairs of
#: fetches), a sibling's mask is confirmed by one; past that the wait
#: policy's guard alone
MAX_PROBES = 6

# the state's keys (the record's ``noise``, stored as is)
SKETCH = "b"  #: a fetch's sketch, waiting for its probe
SKETCHED_AT = "t"  #: when the sketched fetch was made (the probe must come within the window)
SKETCH_VALIDATORS = "v"  #: the sketched fetch's [ETag, Last-Modified]
TRIGGER = "g"  #: the sketch of the fetch that started a learning (the last probe is judged against it)
FIRST_PAIR = "c"  #: the tokens that moved over the first pair, by segment index
FIRST_MOVED = "m"  #: the validators moved over the first pair
EXCLUSIONS = "x"  #: the learned exclusions
PER_FETCH = "f"  #: the URL's validators moved over both pairs: they move at every fetch
ADOPTED = "a"  #: the exclusions came from a sibling and the page has not confirmed them yet
VERSION = "d"  #: while adopted: the rule's digest of the version last judged changed
SETTLED = "s"  #: "clean" (nothing moved at every fetch) or "hard" (not learnable)
PROBES = "r"  #: probes spent so far

#: why a mask was dropped, as the log says it
DROPPED_VALIDATORS = "its validators moved with a difference it hid"
DROPPED_UNCONFIRMED = "what it hides held still on this page"
DROPPED_UNVERIFIABLE = "its probe did not come in time"

Validators = tuple[str | None, str | None]  # (ETag, Last-Modified)


def validators_moved(before: Sequence[str | None] | None, after: Sequence[str | None]) -> bool:
    """True if an ETag or a Last-Modified both fetches sent differs.

    >>> validators_moved(('"a"', None), ('"b"', None))
    True
    >>> validators_moved((None, "Tue, 01 Jan 2013 00:00:00 GMT"), ('"b"', "Tue, 01 Jan 2013 00:00:00 GMT"))
    False
    """
    if not before:
        return False
    return any(old and new and old != new for old, new in zip(before, after, strict=False))


@dataclass(frozen=True)
class Seen:
    """What one digested visit shows the noise learner.

    ``changed``: the rule's digest differs from the record's; ``first``: the
    record has no digest yet; ``usable``: the response has validators that
    can tell "no change" (an ETag, or a Last-Modified that is a content
    date), so conditional requests deal with change and nothing is probed
    or adopted; ``validators`` / ``previous``: this response's and the
    record's ``(ETag, Last-Modified)``; ``digest``: the rule's digest of this
    visit; ``previous_digest``: the record's digest; ``same_payload``: the body
    is byte for byte the last visit's; ``now``: the visit's time.
    """

    segments: list[Segment] | None
    changed: bool
    first: bool
    usable: bool
    now: float
    validators: Validators = (None, None)
    previous: Validators = (None, None)
    digest: str | None = None
    previous_digest: str | None = None
    same_payload: bool = False


@dataclass(frozen=True)
class NoiseStep:
    """What one visit does to a URL's noise state.

    ``state``: the new state (None: as it was; ``{}``: forget it);
    ``digest``: the digest to store instead of the rule's (the page without
    its noise), and to judge the visit by unless ``verdict`` says otherwise;
    ``verdict``: the visit's change state, decided here; ``by_rule``: the
    verdict the rule's digest gave stands (a sibling's mask just adopted
    judges nothing); ``probe``: fetch again now; ``learned``: exclusions
    were learned (the change that started the learning was noise);
    ``confirmed``: a probe showed a sibling's mask right on this page;
    ``adopted``: a sibling's exclusions were taken (:class:`NoisePool`);
    ``dropped``: a mask was dropped, and why (said once in the log).
    """

    state: dict[str, Any] | None = None
    digest: str | None = None
    verdict: ChangeState | None = None
    by_rule: bool = False
    probe: bool = False
    learned: bool = False
    confirmed: bool = False
    adopted: bool = False
    dropped: str | None = None


def _verdict(changed: bool) -> ChangeState:
    return ChangeState.CHANGED if changed else ChangeState.UNCHANGED


def _sketched(state: dict[str, Any], segments: list[Segment], seen: Seen, probes: int) -> dict[str, Any]:
    """*state* waiting for a probe of this fetch."""
    return {
        **state,
        SKETCH: sketch(segments),
        SKETCHED_AT: seen.now,
        SKETCH_VALIDATORS: list(seen.validators),
        PROBES: probes + 1,
    }


def _learnable(segments: list[Segment] | None) -> bool:
    return bool(segments) and token_count(segments or ()) <= MAX_PAGE_TOKENS


def _without_mask(state: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in state.items() if k not in (EXCLUSIONS, ADOPTED, VERSION, PER_FETCH)}


def _unconfirmed(state: dict[str, Any], seen: Seen, reason: str, *, changed: bool | None = None) -> NoiseStep:
    """Drop a sibling's exclusions the page did not confirm.  The visit is
    judged against the version last judged changed (or as *changed* says),
    so a change the mask held back is delivered now."""
    if changed is None:
        version = state.get(VERSION)
        changed = version is None or version != seen.digest
    return NoiseStep(_without_mask(state), verdict=_verdict(changed), dropped=reason)


def step(
    state: dict[str, Any] | None, seen: Seen, *, window: float, pooled: Sequence[list[Exclusion]] = ()
) -> NoiseStep:
    """Fold one digested visit into the URL's noise *state*.

    *window*: the longest a probe may come after the fetch it checks (a
    later one could take a real change for noise); *pooled*: exclusions
    learned on the URL's siblings (:class:`NoisePool`).

    Noise is what moved over two pairs of fetches in a row, each a probe
    apart (the fetch found changed, two probes): a part that held still
    over either pair is kept, so an edit that lands inside one probe
    window is an edit.  Until the second pair tells, the first probe is
    held back (unchanged), and the second is judged against the fetch that
    started it all.  Once learned, a mask never hides the only difference
    between two fetches whose validators differ, unless they moved over
    both pairs (validators that move at every fetch); a sibling's mask
    judges nothing until one probe pair on the page shows it moving.
    """
    state = dict(state or {})
    probes = int(state.get(PROBES) or 0)
    sketched = state.pop(SKETCH, None)
    sketched_at = state.pop(SKETCHED_AT, None)
    sketch_validators = state.pop(SKETCH_VALIDATORS, None)
    if sketched is not None:
        in_time = isinstance(sketched_at, (int, float)) and 0 <= seen.now - sketched_at <= window
        if seen.segments is not None and in_time:
            return _probed(state, sketched, sketch_validators, seen, probes)
        # too late (a restart, a long politeness wait, an error between) or
        # no text: not a probe
        state.pop(FIRST_PAIR, None)
        state.pop(FIRST_MOVED, None)
        state.pop(TRIGGER, None)
        if state.get(ADOPTED):
            return _unconfirmed(state, seen, DROPPED_UNVERIFIABLE)
        state.pop(EXCLUSIONS, None)
    exclusions = state.get(EXCLUSIONS)
    if exclusions is not None and seen.segments is not None:
        return _masked(state, exclusions, seen, probes, restored=sketched is not None)
    if pooled and seen.segments and not seen.usable and SETTLED not in state:
        for exclusions in pooled:
            masked = masked_digest(seen.segments, exclusions)
            if masked.matched == len(exclusions):
                # stored as the page's digest form, but this visit is judged
                # by the rule (its verdict stands) until the page confirms it
                adopted = {EXCLUSIONS: list(exclusions), ADOPTED: 1, VERSION: seen.digest, PROBES: probes}
                return NoiseStep(adopted, digest=masked.digest, by_rule=True, adopted=True)
    if seen.changed and not seen.first and not seen.usable and SETTLED not in state and probes < MAX_PROBES:
        if _learnable(seen.segments):
            return NoiseStep(_sketched(state, seen.segments or [], seen, probes), probe=True)
    return NoiseStep(state if sketched is not None else None)


def _masked(
    state: dict[str, Any], exclusions: list[Exclusion], seen: Seen, probes: int, *, restored: bool
) -> NoiseStep:
    """A visit of a page with a mask: digest it without its noise, unless the
    mask would hide a difference it must not."""
    segments = seen.segments or []
    masked = masked_digest(segments, exclusions)
    adopted = bool(state.get(ADOPTED))
    if masked.edited:
        # the line that holds the noise was edited: a change, and the mask follows the edit
        followed = {**state, EXCLUSIONS: follow_edits(exclusions, masked.edited)}
        if adopted:
            followed[VERSION] = seen.digest
        return NoiseStep(followed, digest=masked.digest, verdict=ChangeState.CHANGED)
    hides = masked.digest == seen.previous_digest and not seen.same_payload
    if hides and not state.get(PER_FETCH) and validators_moved(seen.previous, seen.validators):
        return NoiseStep(_without_mask(state), verdict=ChangeState.CHANGED, dropped=DROPPED_VALIDATORS)
    if adopted:
        if hides:
            # the sibling's mask would hide this difference: held back until
            # a probe shows the masked parts move on this page too
            if probes < MAX_PROBES and _learnable(segments):
                sketched = {**_sketched(state, segments, seen, probes), TRIGGER: sketch(segments)}
                return NoiseStep(sketched, digest=masked.digest, probe=True)
            return _unconfirmed(state, seen, DROPPED_UNVERIFIABLE)
        if masked.digest != seen.previous_digest:
            # a change the sibling's mask does not touch: either an edit or
            # noise of the page's own that the sibling does not have (a
            # random token beside the clock); the page learns its own, as a
            # page without a mask does, instead of being "changed" at every visit
            if probes < MAX_PROBES and not seen.usable and _learnable(segments):
                # changed under the mask it was judged by last time (the
                # digests' forms differ: the rule cannot say it)
                sketched = _sketched(_without_mask(state), segments, seen, probes)
                return NoiseStep(sketched, verdict=ChangeState.CHANGED, probe=True)
            return NoiseStep({**state, VERSION: seen.digest}, digest=masked.digest)
    moved = masked.matched < len(exclusions)
    if moved and probes < MAX_PROBES and not seen.usable and _learnable(segments):
        # the template moved: learn again from this fetch and two probes
        return NoiseStep(_sketched(_without_mask(state), segments, seen, probes), digest=masked.digest, probe=True)
    return NoiseStep(state if restored else None, digest=masked.digest)


def _probed(
    state: dict[str, Any],
    sketched: list[str],
    sketch_validators: Sequence[str | None] | None,
    seen: Seen,
    probes: int,
) -> NoiseStep:
    """A probe of a sketched fetch: the first pair, the second, or a sibling's mask's test."""
    segments = seen.segments or []
    diff = differences(sketched, segments)
    moved = validators_moved(sketch_validators, seen.validators)
    first_pair = state.pop(FIRST_PAIR, None)
    first_moved = bool(state.pop(FIRST_MOVED, None))
    trigger = state.pop(TRIGGER, None) or sketched
    if state.get(ADOPTED):
        return _confirm(state, diff, seen, trigger)
    if diff is None:
        changed = first_pair is not None and changed_since(trigger, segments, {})
        return NoiseStep(
            {SETTLED: "hard", PROBES: probes}, verdict=_verdict(changed) if first_pair is not None else None
        )
    if first_pair is None:
        if not diff:
            if seen.changed:  # only the markup moved: the page is judged by its text
                masked = masked_digest(segments, [])
                return NoiseStep(
                    {EXCLUSIONS: [], PROBES: probes}, digest=masked.digest, verdict=ChangeState.UNCHANGED, learned=True
                )
            return NoiseStep({SETTLED: "clean", PROBES: probes})
        if probes >= MAX_PROBES or not _learnable(segments):
            return NoiseStep({PROBES: probes})
        # held back until the second pair tells whether what moved moves at every fetch
        second = {
            **_sketched(state, segments, seen, probes),
            FIRST_PAIR: {str(j): w for j, w in diff.items()},
            FIRST_MOVED: int(moved),
            TRIGGER: sketched,
        }
        return NoiseStep(second, verdict=ChangeState.UNCHANGED, probe=True)
    both = {j: sorted(set(w) & set(first_pair.get(str(j), ()))) for j, w in diff.items()}
    noise = with_dates(segments, {j: w for j, w in both.items() if w})
    changed = changed_since(trigger, segments, noise)
    if not noise:  # nothing moved twice: what moved was edits
        return NoiseStep({SETTLED: "clean", PROBES: probes}, verdict=_verdict(changed))
    exclusions = exclusions_of(segments, noise)
    if exclusions is None:
        return NoiseStep({SETTLED: "hard", PROBES: probes}, verdict=_verdict(changed))
    learned: dict[str, Any] = {EXCLUSIONS: exclusions, PROBES: probes}
    if moved and first_moved:
        learned[PER_FETCH] = 1
    masked = masked_digest(segments, exclusions)
    return NoiseStep(learned, digest=masked.digest, verdict=_verdict(changed), learned=True)


def _confirm(state: dict[str, Any], diff: dict[int, list[int]] | None, seen: Seen, trigger: list[str]) -> NoiseStep:
    """A sibling's mask's probe: every token it hides moved over the pair
    (or is the date beside a clock that moved), or the mask goes."""
    segments = seen.segments or []
    exclusions = state[EXCLUSIONS]
    if diff is None:
        return _unconfirmed({**state, SETTLED: "hard"}, seen, DROPPED_UNCONFIRMED)
    found, _ = place(segments, exclusions)
    noise: dict[int, list[int]] = {}
    for i, index in found.items():
        hidden = set(exclusions[index][2])
        moving = set(diff.get(i, ())) & hidden
        if not hidden <= moving | date_of_clock(segments[i], sorted(moving)):
            return _unconfirmed(state, seen, DROPPED_UNCONFIRMED, changed=True)
        noise[i] = sorted(hidden)
    if len(set(found.values())) < len(exclusions):
        return _unconfirmed(state, seen, DROPPED_UNCONFIRMED, changed=True)
    confirmed = {k: v for k, v in state.items() if k not in (ADOPTED, VERSION)}
    changed = changed_since(trigger, segments, noise)
    return NoiseStep(
        confirmed, digest=masked_digest(segments, exclusions).digest, verdict=_verdict(changed), confirmed=True
    )


def needs_text(state: dict[str, Any] | None, *, changed: bool, first: bool, usable: bool, pooled: bool = False) -> bool:
    """Whether :func:`step` needs this visit's segments (parsing is spared on
    the many visits it would change nothing for); *pooled*: siblings have
    exclusions to offer."""
    state = state or {}
    if SKETCH in state or EXCLUSIONS in state:
        return True
    if pooled and not usable and SETTLED not in state:
        return True
    return changed and not first and not usable and SETTLED not in state and int(state.get(PROBES) or 0) < MAX_PROBES


def probing(state: Any) -> bool:
    """True if a URL's noise state waits for a probe: the probe must be a
    full download (a 304 or an aborted fetch would show nothing)."""
    return isinstance(state, dict) and SKETCH in state
