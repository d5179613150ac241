"""A visit's learned-noise step: probe, learn, or digest the page without its noise.

A page without validators whose digest moved on a revisit may hold noise (a
clock, a token): the learner (:mod:`...change.noise_learner`) asks for
probes, learns what moved over two probe pairs, and from then on digests the
page without it.  This step feeds it what the visit saw and folds its answer
into the visit the middleware is making: the digest, the change state, a
probe due at once, and one annotation and stat per thing learned.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...change import noise, noise_learner
from ...model import ChangeState, Visit
from .judging import compare, same_payload, usable_last_modified

if TYPE_CHECKING:
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)


def learn_noise(
    response: Response,
    record: Mapping[str, Any],
    visit: Visit,
    *,
    pool: noise.NoisePool,
    window: float,
    now: float,
    stats: StatsCollector,
) -> None:
    """Fold the learner's answer for this response into *visit* (*record*:
    the URL's record as issued; *pool*: exclusions siblings learned; *window*:
    the longest a probe may come after the fetch it checks)."""
    state = record.get("noise")
    changed = visit.change is ChangeState.CHANGED
    first = record.get("digest") is None
    usable = visit.etag is not None or usable_last_modified(visit.last_modified, now)
    # siblings' exclusions are for pages without validators (step() ignores them otherwise)
    pooled = [] if usable else pool.offer(response.url)
    if visit.digest is None or not noise_learner.needs_text(
        state, changed=changed, first=first, usable=usable, pooled=bool(pooled)
    ):
        return
    seen = noise_learner.Seen(
        noise.segments_of(response),
        changed=changed,
        first=first,
        usable=usable,
        now=now,
        validators=(visit.etag, visit.last_modified),
        previous=(record.get("etag"), record.get("last_modified")),
        digest=visit.digest,
        previous_digest=record.get("digest"),
        same_payload=same_payload(record, visit),
    )
    result = noise_learner.step(state, seen, window=window, pooled=pooled)
    if result.state is not None:
        visit.noise = result.state
    current = state if result.state is None else result.state
    exclusions = (current or {}).get(noise_learner.EXCLUSIONS)
    if exclusions and not (current or {}).get(noise_learner.ADOPTED):
        pool.add(response.url, exclusions)  # only a mask the page showed right is offered on
    if result.digest is not None:
        visit.digest = result.digest
    if result.verdict is not None:
        visit.change = result.verdict
    elif result.digest is not None and not result.by_rule:
        unchanged = seen.same_payload
        visit.change = ChangeState.UNCHANGED if unchanged else compare(record.get("digest"), result.digest)
    for flag, annotation, stat in (
        (result.adopted, "noiseAdopted", "adopted"),
        (result.probe, "noiseProbe", "probes"),
        (result.learned, noise.NOISE_LEARNED, "learned"),
        (result.confirmed, "noiseConfirmed", "confirmed"),
        (result.dropped is not None, "noiseDropped", "dropped"),
    ):
        if flag:
            visit.annotations.append(annotation)
            stats.inc_value(f"adaptive/noise/{stat}")
    if result.probe:
        visit.probe = 0.0  # due now: the frontier's politeness spaces it
    if result.dropped is not None:
        logger.info(
            "Learned noise of %s dropped: %s; the visit is judged %s.",
            response.url,
            result.dropped,
            visit.change.value,
        )
