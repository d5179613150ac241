"""Verdicts: what a committed visit counts and which policy waits it."""

from __future__ import annotations

import hashlib

from scrapy import Request
from scrapy.settings import Settings
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from scrapy_adaptive.config.settings import AdaptiveConfig
from scrapy_adaptive.frontier import ChangeState, Frontier, MemoryStore, Outcome, Politeness, Visit
from scrapy_adaptive.policies import load_wait_policy
from scrapy_adaptive.runtime.verdicts import Verdicts
from tests.standins import OneIssued

URL = "http://a.example/logo.png"
FP = hashlib.sha1(URL.encode()).digest()
DAY = 86_400.0


def test_a_304_counts_and_waits_as_the_urls_last_known_type() -> None:
    """A 304 carries no Content-Type: it was counted under
    ``adaptive/visits/other`` and waited by the catch-all policy, not by the
    entry for the URL's type.  It is the URL's last known type."""
    clock = [1_000_000.0]
    f = Frontier(MemoryStore(), Politeness(min_delay=0, max_delay=0, delay_factor=0), clock=lambda: clock[0])
    f.load()
    f.add(FP, URL, "a.example", {"url": URL})
    stats = MemoryStatsCollector(get_crawler())
    # images wait a day or more; anything else at most an hour
    entries = [{"content_type": "image/*", "initial": DAY, "min": DAY, "max": 30 * DAY}]
    settings = Settings({"ADAPTIVE_WAIT_POLICIES": entries, "ADAPTIVE_WAIT_MAX": 3600})
    policy = load_wait_policy(AdaptiveConfig.from_settings(settings))
    verdicts = Verdicts(f, policy, OneIssued(FP), stats, on_store_error=lambda exc: None, clock=lambda: clock[0])  # type: ignore[arg-type]

    assert f.next() is not None
    image = Visit(Outcome.VISITED, status=200, content_type="image/png", change=ChangeState.CHANGED, digest="sha1:1")
    recorded = verdicts.commit(Request(URL), image)
    assert recorded is not None and recorded.record.wait is not None and recorded.record.wait >= DAY

    clock[0] += recorded.record.wait
    assert f.next() is not None
    not_modified = Visit(Outcome.VISITED, status=304, change=ChangeState.UNCHANGED)
    recorded = verdicts.commit(Request(URL), not_modified)
    assert recorded is not None
    record = recorded.record
    assert record.wait is not None and record.wait >= DAY  # the image entry's wait
    assert recorded.visit.content_type == "image/png" and not_modified.content_type is None  # a new object
    assert record.content_type == "image/png"
    assert stats.get_value("adaptive/visits/image") == 2 and stats.get_value("adaptive/visits/other") is None
    assert stats.get_value("adaptive/change/unchanged/image") == 1
