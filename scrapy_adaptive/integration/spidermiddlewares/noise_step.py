"""A visit's learned-noise step: the Scrapy side of :mod:`...change.noise_learner`.

Reads what the learner needs off the response (its fields, its server time,
its validators as two more fields), calls it, and folds its answer into
the visit the middleware is making: the change state, the digest to store,
a probe due at once, and one annotation and stat per thing that happened.
What a difference means is decided in ``change/``, not here.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ...change import noise, noise_learner
from ...change.digest import text_of
from ...dates import parse_http_date
from ...model import Visit
from .judging import header, same_payload, usable_last_modified

if TYPE_CHECKING:
    from scrapy.http import Response
    from scrapy.statscollectors import StatsCollector

logger = logging.getLogger(__name__)



def page_fields(response: Response, *, visible: bool) -> list[noise.Field] | None:
    """The page's fields and, unless only the visible text counts, its
    validators: one that moves with an edit says so (the edit is delivered at
    once), one that moves at every fetch is learned as noise."""
    fields = noise.fields_of(response, visible=visible)
    if fields is None or visible:
        return fields
    etag = header(response, "ETag")
    if etag is not None:
        fields.append((noise.ETAG_FIELD, etag))
    last_modified = header(response, "Last-Modified")
    if last_modified is not None:
        fields.append((noise.LAST_MODIFIED_FIELD, _as_compared(last_modified)))
    return fields


def _as_compared(value: str) -> str:
    """A Last-Modified as the learner compares it: its instant, in a form no
    clock reading matches (two fetches a few seconds after two edits read
    alike against their Date: the header must not be hidden as a clock)."""
    stamp = parse_http_date(value)
    return value if stamp is None else f"instant {int(stamp):x}"


def learn_noise(
    response: Response,
    record: Mapping[str, Any],
    visit: Visit,
    *,
    pool: noise.NoisePool,
    window: float,
    now: float,
    stats: StatsCollector,
    visible: bool = False,
) -> None:
    """Fold the learner's answer for this response into *visit* (*record*:
    the URL's record as issued; *pool*: masks siblings learned; *window*:
    the longest a probe may come after the fetch it checks; *visible*: the
    ``text`` rule, only the visible text is compared)."""
    if visit.digest is None or not 200 <= response.status < 300 or text_of(response) is None:
        # no body, a binary one, or not the page (an error page, a redirect's
        # body): its rule's digest judges it, and the version compared stays
        return
    state = record.get("noise")
    if not noise_learner.needs_fields(state, same_payload=same_payload(record, visit)):
        return
    date = parse_http_date(header(response, "Date"))
    at = now if date is None else date
    seen = noise_learner.Seen(
        page_fields(response, visible=visible),
        now=now,
        at=at,
        digest=visit.digest,
        previous_digest=record.get("digest"),
        # a content date, not the fetch's own second (a page generated per request)
        content_dated=usable_last_modified(visit.last_modified, at),
    )
    result = noise_learner.step(state, seen, window=window, pooled=pool.offer(response.url))
    if result.state is not None:
        visit.noise = result.state
        masks = noise.Masks.of(result.state)
        if masks:
            pool.add(response.url, masks)
    if result.verdict is not None:
        visit.change = result.verdict
        visit.digest = result.digest if result.digest is not None else visit.digest
    for flag, annotation, stat in (
        (result.held, noise_learner.HELD_BACK, "held"),
        (result.probe, noise_learner.PROBE_ASKED, "probes"),
        (result.released, noise_learner.HELD_CHANGE, "released"),
        (result.learned, noise.NOISE_LEARNED, "learned"),
        (result.confirmed, "noiseConfirmed", "confirmed"),
    ):
        if flag:
            visit.annotations.append(annotation)
            stats.inc_value(f"adaptive/noise/{stat}")
    if result.probed:
        visit.annotations.append(noise_learner.PROBED)
    if result.held:
        # whether its validators told the truth is the probe's to say, once it is settled
        visit.validation = visit.prediction = None
    if result.probe:
        visit.probe = 0.0  # due now: the frontier's politeness spaces it
    if result.unlearnable:
        stats.inc_value("adaptive/noise/unlearnable")
        logger.info(
            "%s cannot be compared by its structure (unparsable, or more fields than %s): "
            "it is judged by its digest rule, every byte counting (said once per URL).",
            response.url,
            f"{noise.MAX_FIELDS:,}",
        )
