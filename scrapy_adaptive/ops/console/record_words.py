"""A URL's record in words, for ``scrapy frontier url``: what is known of
it, its visits, its next visit, and what the wait policy and the noise
learner hold for it, said as a reader can act on it (the stored short keys
and raw numbers mean nothing to a person).

No Scrapy import.
"""

from __future__ import annotations

from typing import Any

from ...change import noise, noise_learner
from ...config.spec import counted, plural
from ...frontier import UrlRecord
from ...humanize import human, when
from ...policies import memory
from ...policies.estimator import CHANGED, EXACT


def policy_in_words(policy: dict[str, Any]) -> list[str]:
    """What the wait policy learned of a URL, in words.

    The memory's short keys and raw numbers (observation lists, allocator
    and prior bookkeeping) mean nothing to a reader; only what a person can
    act on is said, the rest is left out.
    """
    lines = []
    rate = policy.get(memory.ESTIMATE)
    observations = policy.get(memory.OBSERVATIONS)
    evidence = isinstance(observations, list) and bool(observations)
    if isinstance(rate, (int, float)) and not isinstance(rate, bool):
        if not evidence:
            # before any revisit (or a first-visit Last-Modified age) the
            # "estimate" is the crawl's prior, often its time scale: no
            # reading of this page, and its raw figure misleads
            lines.append(
                "the policy's estimated change rate: none yet (no revisit has yet told whether the page "
                "changed; the wait comes from the crawl's prior)"
            )
        elif rate > 0:
            lines.append(
                f"the policy's estimated change rate: {rate * 86_400:.3g} per day (about one change every "
                f"{human(1 / rate)})"
            )
        else:
            lines.append("the policy's estimated change rate: no change seen yet")
    if evidence:
        n = len(observations)
        changed = any(isinstance(o, list) and o[1:2] in ([CHANGED], [EXACT]) for o in observations)
        lines.append(
            f"the estimate rests on the last {n} {plural(n, 'interval')} between visits"
            + ("" if changed else ", none with a change seen: it falls as quiet visits add up")
        )
    agreement = policy.get(memory.LAST_MODIFIED_AGREEMENT)
    if isinstance(agreement, list) and len(agreement) == 2:
        good, bad = agreement
        lines.append(f"Last-Modified agreed with the content {counted(good, 'time')}, disagreed {counted(bad, 'time')}")
    if policy.get(memory.AGE_UNCHECKED) is not None:
        lines.append("the first visit's Last-Modified is not checked yet: its fetches are verified")
    return lines


def describe(record: UrlRecord, now: float) -> list[str]:
    """A URL's record in words: what is known, its visits, and its next visit."""
    lines = [
        f"URL {record.url}",
        f"host queue {record.queue}; discovered {when(record.discovered)}",
        f"{counted(record.visits, 'visit')}, {counted(record.versions, 'version')}, "
        f"{counted(record.failures, 'failure')} in a row",
    ]
    if record.fetched is not None:
        lines.append(
            f"last fetched {when(record.fetched)}: status {record.status}, {record.content_type or 'no type'}, "
            f"{'? bytes' if record.size is None else counted(record.size, 'byte')}, took {human(record.duration)}"
            + (f", {human(record.overdue)} overdue" if record.overdue else "")
        )
    validators = [f"ETag {record.etag}"] if record.etag else []
    if record.last_modified:
        validators.append(f"Last-Modified {record.last_modified}")
    lines.append("validators: " + (", ".join(validators) if validators else "none"))
    if record.history:
        lines.append(f"last {counted(len(record.history), 'visit')}:")
        previous = None
        for t, change, status in record.history:
            gap = f" ({human(t - previous)} after the one before)" if previous is not None else ""
            lines.append(f"  {when(t)}: status {status}, {change}{gap}")
            previous = t
    if record.outcome:
        lines.append(f"last outcome: {record.outcome}" + (f" ({record.reason})" if record.reason else ""))
    if record.never:
        lines.append("next visit: never (failed or disregarded)")
    else:
        due = record.next_ms / 1000
        rel = "due now" if due <= now else f"in {human(due - now)}"
        why = f"wait {human(record.wait)} chosen by the wait policy" if record.wait is not None else "a new URL"
        lines.append(f"next visit: {when(due)} ({rel}); {why}")
    lines += policy_in_words(record.policy)
    if record.noise:
        lines.append(f"learned noise: {noise_in_words(record.noise)}")
    return lines


def noise_in_words(state: dict[str, Any]) -> str:
    """What the noise learner holds for a URL (:mod:`~scrapy_adaptive.change.noise_learner`'s
    short keys), said as a reader can act on it."""
    probes = state.get(noise_learner.PROBES)
    spent = f"; {counted(int(probes), 'probe')} spent" if isinstance(probes, int) and probes else ""
    if state.get(noise_learner.UNLEARNABLE):
        return "none: the page cannot be compared by its structure, so every byte counts" + spent
    if noise_learner.probing(state):
        held = ", a difference held back until it answers" if noise_learner.held(state) else ""
        return f"being learned (a probe is due{held}){spent}"
    masks = noise.Masks.of(state)
    if not masks:
        return "none (every part of the page is compared)" + spent
    parts = []
    whole = sum(1 for v in masks.fields.values() if v == noise.WHOLE)
    tokens = sum(len(v) for v in masks.fields.values() if v != noise.WHOLE)
    if tokens:
        parts.append(counted(tokens, "token"))
    if whole:
        parts.append(counted(whole, "field"))
    if masks.regions:
        parts.append(counted(len(masks.regions), "region") + f" ({', '.join(masks.regions)})")
    return " and ".join(parts) + " left out of the comparison, everything else compared" + spent
