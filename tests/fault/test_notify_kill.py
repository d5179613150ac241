"""Notifications across ``kill -9`` (issue 50): a crawl killed while its
message is on its way to the channel (the webhook holds the request) sends
it again at the next start: nothing is lost, at least once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.crawlrunner import finish_crawl, start_crawl
from tests.e2e.test_change_events import PAGES, ScriptedSite, product, serving
from testsite.webhook import HOLD, receiving

pytestmark = [pytest.mark.e2e, pytest.mark.fault]


def test_a_kill_mid_delivery_sends_the_events_again_at_the_next_start(
    adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    scripted = ScriptedSite({f"/p/{name}.html": [product(name, "1.00")] for name in ("kettle", "toaster")})
    feed = tmp_state / "changes.jsonl"
    with serving(scripted) as base, receiving([HOLD, 200]) as receiver:
        settings = {
            **adaptive_settings,
            "ROBOTSTXT_OBEY": False,
            "ADAPTIVE_WAIT_DEFAULT": 600,  # one visit each: the second run makes no event of its own
            "ADAPTIVE_CHANGES_FEED": str(feed),
            "ADAPTIVE_NOTIFY": [{"to": receiver.url, "batch": 0}],
        }
        args = ["-a", "urls=" + " ".join(base + path for path in scripted.scripts)]
        with start_crawl(PAGES, settings, args=args) as proc:
            receiver.wait_for(1, timeout=30)  # a message is on its way, held by the webhook
            proc.kill_group()
        receiver.release()  # its answer goes to a dead connection
        assert not receiver.accepted()
        second = finish_crawl(start_crawl(PAGES, {**settings, "CLOSESPIDER_TIMEOUT": 1}, args=args), timeout=60)
        accepted = receiver.accepted()
    second.assert_ok()
    assert sum(scripted.requests.values()) == 2  # the second run fetched nothing: the events came from the state
    said = {line for post in accepted for line in post.body["message"].splitlines()}
    events = [json.loads(line) for line in feed.read_text().splitlines()]
    assert {e["url"] for e in events} == {base + "/p/kettle.html", base + "/p/toaster.html"}
    for event in events:  # every event, sent again after the kill
        assert f"new — {event['url']}" in said, (event, said)
    assert second.stats["adaptive/notify/sent"] >= 1 and "adaptive/notify/refused" not in second.stats
