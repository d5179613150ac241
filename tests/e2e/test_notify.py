"""Notifications end to end (issue 50): a real crawl of a local shop whose
price changes, its change events sent with Apprise to a real webhook
receiver on 127.0.0.1 (``json://``), which refuses the first message.

What a user must see: the message with "price 9.50 → 8.00" and the URL;
the refused message said in one WARNING naming the channel, and sent again
after the retry, so every event reaches the receiver (at least once).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.crawlrunner import run_crawl
from tests.e2e.test_change_events import PAGES, ScriptedSite, product, serving
from testsite.webhook import receiving

pytestmark = pytest.mark.e2e

#: the items rule of the shop's product pages, keeping the price's values
PRODUCTS = {"url": "/p/", "rule": "items", "fields": ["name", "price"], "key": "url", "values": ["price"]}


def test_a_price_change_reaches_the_webhook_after_a_refusal(
    adaptive_settings: dict[str, object], tmp_state: Path
) -> None:
    scripted = ScriptedSite(
        {
            "/p/kettle.html": [product("Kettle", "9.50")] * 2 + [product("Kettle", "8.00")],
            "/p/toaster.html": [product("Toaster", "20.00")],
        }
    )
    feed = tmp_state / "changes.jsonl"
    with serving(scripted) as base, receiving([500, 200]) as receiver:
        result = run_crawl(
            PAGES,
            {
                **adaptive_settings,
                "ROBOTSTXT_OBEY": False,
                "ADAPTIVE_WAIT_DEFAULT": 0.5,
                "ADAPTIVE_DIGEST_RULES": [PRODUCTS],
                "ADAPTIVE_CHANGES_FEED": str(feed),
                "ADAPTIVE_NOTIFY": [{"to": receiver.url, "batch": 0.5}],
                "CLOSESPIDER_TIMEOUT": 5,
            },
            timeout=60,
            args=["-a", f"urls={base}/p/kettle.html {base}/p/toaster.html"],
        )
        posts = list(receiver.posts)
    result.assert_ok()
    kettle = base + "/p/kettle.html"
    events = [json.loads(line) for line in feed.read_text().splitlines()]
    assert sorted((e["url"], e["kind"]) for e in events) == [
        (kettle, "changed"),
        (kettle, "new"),
        (base + "/p/toaster.html", "new"),
    ]
    # the first message was refused, said once, and sent again
    assert posts[0].status == 500 and all(post.status == 200 for post in posts[1:])
    warnings = [line for line in result.log.splitlines() if " WARNING: " in line and "notification channel" in line]
    assert len(warnings) == 1, warnings
    assert f"json://127.0.0.1:{receiver.url.split(':')[2]}" in warnings[0] and "error=500" in warnings[0]
    assert "sent again in 2 seconds" in warnings[0]
    assert not any("apprise" in line for line in result.log.splitlines() if " WARNING: " in line or " DEBUG: " in line)
    accepted = "\n".join(post.body["message"] for post in posts[1:])
    assert f"changed: price 9.50 → 8.00 — {kettle}" in accepted.splitlines()
    assert f"new — {kettle}" in accepted.splitlines()  # the refused message's events came again
    assert f"new — {base}/p/toaster.html" in accepted.splitlines()
    host = base.removeprefix("http://")
    assert all(
        post.path == "/hook" and re.match(rf"\d+ changes? on {host}: \d+ new", post.body["title"]) for post in posts
    )
    stats = result.stats
    assert stats["adaptive/notify/refused"] == 1
    assert stats["adaptive/notify/sent"] == 3 and stats["adaptive/notify/queued"] == 3
    assert "adaptive/notify/waiting" not in stats
    # nothing left in the spool
    spools = list((tmp_state / "adaptive" / "notify").glob("*.jsonl"))
    assert len(spools) == 1 and spools[0].stat().st_size == 0
