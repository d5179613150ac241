"""Public meta values of the wrong kind: removed as the request enters, said once."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from scrapy import Request, Spider
from scrapy.statscollectors import MemoryStatsCollector
from scrapy.utils.test import get_crawler

from scrapy_adaptive import meta
from scrapy_adaptive.integration.metacheck import CHECKS, MetaCheck


def check() -> MetaCheck:
    return MetaCheck(MemoryStatsCollector(get_crawler(Spider)))


@pytest.mark.parametrize(
    ("key", "bad", "good"),
    [
        (meta.UNCHANGED, "maybe", "deliver"),
        (meta.DIGEST_RULE, 42, {"rule": "text"}),
        (meta.DIGEST_RULE, ["text"], "text"),
        (meta.DIGEST_RULE, {"rule": "regex", "patterns": ["("]}, {"rule": "regex", "patterns": ["<time>.*</time>"]}),
        (meta.DIGEST_RULE, "fuzzy", "exact"),
        (meta.WAIT_POLICY, "fast", {"initial": 600}),
        (meta.EMBED, "no", False),
        (meta.EMBED, 1, True),
        (meta.SIGNAL, "rss", "feed"),
    ],
)
def test_a_misfit_is_removed_and_a_fitting_value_kept(key: str, bad: Any, good: Any) -> None:
    c = check()
    refused = Request("http://example.com/a", meta={key: bad, "mine": 1})
    kept = Request("http://example.com/b", meta={key: good})
    c(refused)
    c(kept)
    assert key not in refused.meta and refused.meta["mine"] == 1  # the request and the user's own keys stay
    assert kept.meta[key] == good
    assert c.stats.get_value("adaptive/meta/ignored") == 1


def test_unset_keys_and_none_are_left_alone() -> None:
    c = check()
    plain = Request("http://example.com/", meta={"depth": 2})
    unset = Request("http://example.com/x", meta=dict.fromkeys(CHECKS))
    c(plain)
    c(unset)
    assert plain.meta == {"depth": 2}
    assert unset.meta == dict.fromkeys(CHECKS)
    assert c.stats.get_value("adaptive/meta/ignored") is None


def test_each_misfit_is_said_once_with_the_key_the_url_and_what_it_takes(caplog: pytest.LogCaptureFixture) -> None:
    c = check()
    with caplog.at_level(logging.WARNING, logger="scrapy_adaptive.integration.metacheck"):
        for n in range(5):
            c(Request(f"http://example.com/{n}", meta={meta.EMBED: "no"}))
        c(Request("http://example.com/other", meta={meta.EMBED: "yes"}))
    messages = [r.getMessage() for r in caplog.records]
    assert len(messages) == 2
    assert "meta['adaptive_embed'] of http://example.com/0 is 'no'" in messages[0]
    assert "but it takes True or False" in messages[0] and "the request is kept" in messages[0]
    assert c.stats.get_value("adaptive/meta/ignored") == 6


def test_every_public_key_you_set_is_checked_but_the_per_fetch_hint() -> None:
    set_by_you = {meta.UNCHANGED, meta.DIGEST_RULE, meta.WAIT_POLICY, meta.HINT, meta.EMBED, meta.SIGNAL}
    assert set(CHECKS) == set_by_you - {meta.HINT}


def test_a_digest_rule_that_does_not_build_is_named_with_why(caplog: pytest.LogCaptureFixture) -> None:
    c = check()
    with caplog.at_level(logging.WARNING, logger="scrapy_adaptive.integration.metacheck"):
        c(Request("http://example.com/", meta={meta.DIGEST_RULE: {"rule": "regex", "patterns": ["("]}}))
    [record] = caplog.records
    assert "but pattern '(' is not a valid regular expression" in record.getMessage()


def test_a_misspelt_key_is_said_once_with_the_closest_one_and_left_alone(caplog: pytest.LogCaptureFixture) -> None:
    """``adaptive_wait_polcy`` meant nothing and said nothing: the request
    crawled with the settings' waits and nobody knew why."""
    c = check()
    with caplog.at_level(logging.WARNING, logger="scrapy_adaptive.integration.metacheck"):
        for n in range(3):
            c(Request(f"http://example.com/{n}", meta={"adaptive_wait_polcy": {"min": 60}, "adaptive_xyzzy": 1}))
        c(Request("http://example.com/ok", meta={meta.WAIT_POLICY: {"min": 60}, meta.RECORD: {}, "mine": 1}))
    messages = sorted(r.getMessage() for r in caplog.records)
    assert len(messages) == 2, messages
    assert messages[0].startswith("meta['adaptive_wait_polcy'] of http://example.com/0 is not a scrapy-adaptive")
    assert "did you mean 'adaptive_wait_policy'?" in messages[0]
    assert messages[1].startswith("meta['adaptive_xyzzy'] of http://example.com/0")
    assert "did you mean" not in messages[1]
    assert c.stats.get_value("adaptive/meta/ignored") is None
