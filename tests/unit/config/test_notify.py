"""``ADAPTIVE_NOTIFY`` parsed: the forms a user writes, and one clear
refusal naming the setting and the entry for each mistake."""

from __future__ import annotations

from typing import Any

import pytest

from scrapy_adaptive.config.notify import DEFAULT_BATCH, EVENT_KINDS, notify_channels
from scrapy_adaptive.config.spec import ConfigError

HOOK = "json://127.0.0.1:8000/hook"
SLACK = "slack://T1JJ3T3L2/A1BRTD4JD/TIiajkdnlazkcOXrIdevi7FQ/#general"


def test_the_simple_forms_are_apprise_urls_with_every_event() -> None:
    for value in (HOOK, f" {HOOK}  {SLACK} ", [HOOK, SLACK], f'["{HOOK}"]', {"to": HOOK}):
        channels = notify_channels(value)
        assert channels[0].to == HOOK and channels[0].kinds == frozenset(EVENT_KINDS)
        assert channels[0].batch == DEFAULT_BATCH and channels[0].where == "ADAPTIVE_NOTIFY[0]"
    for unset in (None, "", [], " "):
        assert notify_channels(unset) == ()


def test_an_entry_filters_by_kind_url_host_and_field() -> None:
    (channel,) = notify_channels(
        [{"to": HOOK, "url": r"/p/\d+", "hosts": ["shop.example"], "kinds": ["changed", "gone"],
          "fields": ["price"], "batch": "5m"}]
    )  # fmt: skip
    assert channel.batch == 300.0
    price = {"changed": [{"item": "A", "fields": ["name", "price"]}], "added": [], "removed": []}
    name = {"changed": [{"item": "A", "fields": ["name"]}], "added": [], "removed": []}
    wants = channel.wants
    assert wants({"kind": "changed", "url": "http://shop.example/p/1", "fields": price})
    assert channel.changed_fields({"fields": price}) == {"price"}
    assert not wants({"kind": "changed", "url": "http://shop.example/p/1", "fields": name})
    assert not wants({"kind": "changed", "url": "http://shop.example/p/1", "fields": None})  # no field to tell
    assert wants({"kind": "gone", "url": "http://shop.example/p/1"})  # fields filter changed events only
    assert not wants({"kind": "new", "url": "http://shop.example/p/1"})
    assert not wants({"kind": "gone", "url": "http://shop.example/about"})
    assert not wants({"kind": "gone", "url": "http://other.example/p/1"})


@pytest.mark.parametrize(
    ("value", "said"),
    [
        (5, "ADAPTIVE_NOTIFY must be an Apprise URL, a list of them, or a list of dicts, not 5."),
        ("[nope", "ADAPTIVE_NOTIFY is not valid JSON"),
        ([HOOK, 3], "ADAPTIVE_NOTIFY[1] must be an Apprise URL (a string) or a dict with 'to', not 3."),
        ([{"url": "/p/"}], "ADAPTIVE_NOTIFY[0]: 'to' (None) must be an Apprise URL"),
        (["mail.example.com"], "ADAPTIVE_NOTIFY[0]: 'to' (…) must be an Apprise URL"),
        ([{"to": HOOK, "urls": "/p/"}], "ADAPTIVE_NOTIFY[0] has unknown keys ['urls'] (known: to, url, hosts,"),
        ([{"to": HOOK, "kinds": ["price"]}], "ADAPTIVE_NOTIFY[0]: 'kinds' names ['price'], which are not event kinds"),
        ([{"to": HOOK, "fields": []}], "ADAPTIVE_NOTIFY[0]: 'fields' must be a non-empty list of strings"),
        ([{"to": HOOK, "batch": -1}], "ADAPTIVE_NOTIFY[0]: 'batch' (-1) must be a number of seconds"),
        ([{"to": HOOK, "url": "(["}], "ADAPTIVE_NOTIFY[0]: 'url' ('([')"),
        ([HOOK, {"to": HOOK}], "ADAPTIVE_NOTIFY[1] sends to the same Apprise URL as ADAPTIVE_NOTIFY[0]"),
    ],
)
def test_a_mistake_is_refused_in_one_line_naming_the_entry(value: Any, said: str) -> None:
    with pytest.raises(ConfigError) as raised:
        notify_channels(value)
    assert str(raised.value).startswith(said), str(raised.value)


def test_a_refusal_never_shows_the_credentials() -> None:
    secret = "mailto://user:hunter2@example.com"
    with pytest.raises(ConfigError) as raised:
        notify_channels([secret, secret])
    assert "hunter2" not in str(raised.value) and "mailto://example.com/…" in str(raised.value)
