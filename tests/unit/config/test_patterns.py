"""Users' regular expressions run on what servers send in bounded time:
a catastrophic pattern costs at most its bound per text, is said once, and
the caller falls back."""

from __future__ import annotations

import logging
import re
import time

import pytest
from scrapy.http import HtmlResponse

from scrapy_adaptive.change.answer import Answer
from scrapy_adaptive.change.rules import DigestRules
from scrapy_adaptive.config import patterns
from scrapy_adaptive.config.matching import Matcher
from scrapy_adaptive.config.patterns import UserPattern
from scrapy_adaptive.config.spec import ConfigError
from scrapy_adaptive.integration.spidermiddlewares.reading import answer_of

#: a pattern that backtracks without end in ``re`` and in ``regex`` alike,
#: and a page it meets: a long run of x's that is not followed by a y
CATASTROPHIC = "(x|xx)+y"
PAGE = "<html><body><p>" + "x" * 100_000 + "</p></body></html>"


@pytest.fixture(autouse=True)
def short_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(patterns, "PATTERN_TIMEOUT", 0.2)


def page(url: str = "http://127.0.0.1/p") -> Answer:
    return answer_of(HtmlResponse(url, body=PAGE.encode(), encoding="utf-8"))


def test_a_catastrophic_pattern_gives_up_after_its_bound_and_says_so_once(caplog: pytest.LogCaptureFixture) -> None:
    pattern = UserPattern(CATASTROPHIC, "ADAPTIVE_DIGEST_RULES[0]: pattern '(x|xx)+y'")
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="scrapy_adaptive.config.patterns"):
        for _ in range(2):
            assert pattern.sub(" ", PAGE, on="http://127.0.0.1/p", fallback="digested exactly") is None
    # unbounded, the pattern would run for ages; the bound itself is the regex module's (a loaded machine
    # overshoots it, so only a hang is caught here)
    assert time.monotonic() - started < 30
    assert pattern.timeouts == 2
    [warning] = [r.getMessage() for r in caplog.records]
    assert warning.startswith(
        "ADAPTIVE_DIGEST_RULES[0]: pattern '(x|xx)+y' ran past 0.2 s on http://127.0.0.1/p: digested exactly."
    )


def test_the_issue_s_nested_pattern_runs_in_bounded_time_on_a_long_page() -> None:
    rules = DigestRules.from_settings([{"url": "/p", "rule": "regex", "patterns": ["(a+)+$", "(x+)+$"]}], None, 2**20)
    digester = rules.select("http://127.0.0.1/p", "127.0.0.1", "text/html")
    started = time.monotonic()
    digest = digester.digest(page())
    assert time.monotonic() - started < 30  # a hang, not a figure: the bound is the regex module's
    assert digest is not None and digest.startswith("exact:")  # the page a pattern gave up on: every byte counts
    assert digester.digest(answer_of(HtmlResponse("http://127.0.0.1/p", body=b"<p>1</p>aaa"))) == digester.digest(
        answer_of(HtmlResponse("http://127.0.0.1/p", body=b"<p>1</p>aaaa"))
    )  # where it finishes, the rule does its work


def test_a_url_pattern_that_runs_out_of_time_does_not_match(caplog: pytest.LogCaptureFixture) -> None:
    matcher = Matcher.parse({"url": CATASTROPHIC}, "ADAPTIVE_WAIT_POLICIES[1]")
    url = "http://127.0.0.1/page/" + "x" * 60
    with caplog.at_level(logging.WARNING, logger="scrapy_adaptive.config.patterns"):
        assert matcher.matches(url, "127.0.0.1", "text/html") is False
        assert matcher.matches(url + "y", "127.0.0.1", "text/html") is True
    [warning] = [r.getMessage() for r in caplog.records]
    assert f"ADAPTIVE_WAIT_POLICIES[1]: 'url' ('(x|xx)+y') ran past 0.2 s on {url}" in warning
    assert "URLs it cannot finish on are taken as not matching" in warning


@pytest.mark.parametrize(
    "source",
    [
        r"Updated \d\d:\d\d",
        r"sid=\w+",
        r"<script.*?</script>",
        r"(?s)<!--.*?-->",
        r"\s+",
        r"x*",
        r"(?i)csrf[^>]*",
        r"\b",
    ],
)
def test_a_pattern_blanks_what_re_blanked(source: str) -> None:
    """Digests made before patterns ran in bounded time stay the same."""
    text = '<p>Updated 12:07 sid=abc123 <script>var t = 1;</script><!-- a\nb --> <input name="CSRF" x></p>'
    assert UserPattern(source, "p").sub(" ", text, on="t", fallback="f") == re.sub(source, " ", text)


def test_a_bad_pattern_is_one_line_naming_the_setting() -> None:
    with pytest.raises(
        ConfigError, match=r"^ADAPTIVE_DIGEST_RULES\[0\]: pattern '\(' is not a valid regular expression"
    ):
        DigestRules.from_settings([{"url": "/p", "rule": "regex", "patterns": ["("]}], None, 2**20)
    with pytest.raises(ConfigError, match=r"^ADAPTIVE_WAIT_POLICIES\[0\]: 'url' \('\['\) is not a valid regular"):
        Matcher.parse({"url": "["}, "ADAPTIVE_WAIT_POLICIES[0]")
