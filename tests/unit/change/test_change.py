"""Digest rules: what counts as a change, and refusing bad rules by name."""

from __future__ import annotations

import pytest
from scrapy.http import HtmlResponse, Response, TextResponse

from scrapy_adaptive.change import DigestRules, items_digest, payload_digest
from scrapy_adaptive.change.answer import Answer
from scrapy_adaptive.change.rules import Digester, ItemsDigester, RegexDigester, TextDigester
from scrapy_adaptive.change.text_diff import visible_text
from scrapy_adaptive.change.rules import build_digester
from scrapy_adaptive.config.patterns import UserPattern
from scrapy_adaptive.config.spec import ConfigError
from scrapy_adaptive.integration.spidermiddlewares.reading import answer_of


def html(body: str, url: str = "http://example.com/p") -> Answer:
    return answer_of(HtmlResponse(url, body=body.encode(), encoding="utf-8", headers={"Content-Type": "text/html"}))


def test_exact_digest_sees_any_byte_and_ignores_nothing() -> None:
    d = Digester()
    assert d.digest(html("<p>a</p>")) != d.digest(html("<p>a</p> "))
    assert d.digest(html("")) is None


def test_regex_digest_blanks_the_operator_patterns() -> None:
    d = build_digester({"rule": "regex", "patterns": [r"Generated at [^<]*"]}, "t", 1_000_000)
    a = d.digest(html("<p>News</p><p>Generated at 12:00:01 (render #1)</p>"))
    b = d.digest(html("<p>News</p><p>Generated at 12:00:02 (render #2)</p>"))
    c = d.digest(html("<p>Other</p><p>Generated at 12:00:02 (render #2)</p>"))
    assert a == b != c
    assert a is not None and a.startswith("regex:sha1:")


def test_regex_digest_falls_back_to_exact_over_the_size_limit() -> None:
    d = RegexDigester([UserPattern("x", "pattern")], max_size=10)
    digest = d.digest(html("<p>" + "y" * 20 + "</p>"))
    assert digest is not None and digest.startswith("exact:")


def test_text_digest_ignores_markup_scripts_styles_comments_and_attributes() -> None:
    d = TextDigester()
    a = d.digest(html('<html><head><script>var a=1</script></head><body class="x"><p>Hello  world</p></body></html>'))
    b = d.digest(
        html(
            "<html><head><style>p{}</style><script>var a=2</script></head>"
            '<body class="y"><!-- build 9 --><div data-x="2"><p>Hello\nworld</p></div>'
            "<script>track()</script></body></html>"
        )
    )
    c = d.digest(html("<html><body><p>Hello there</p></body></html>"))
    assert a == b != c


def test_visible_text_keeps_tail_text_after_dropped_elements() -> None:
    assert visible_text("<p>a<script>x</script>b <!--c--> d</p>") == "ab d"


def test_text_digest_on_non_html_is_exact() -> None:
    response = TextResponse("http://example.com/a.txt", body=b"plain", headers={"Content-Type": "text/plain"})
    digest = TextDigester().digest(answer_of(response))
    assert digest is not None and digest.startswith("exact:")


def test_items_digest_is_order_independent_and_field_selective() -> None:
    a = [{"name": "x", "price": 1, "seen": 1}, {"name": "y", "price": 2, "seen": 1}]
    b = [{"name": "y", "price": 2, "seen": 9}, {"name": "x", "price": 1, "seen": 9}]
    assert items_digest(a, ["name", "price"]) == items_digest(b, ["name", "price"])
    assert items_digest(a) != items_digest(b)
    assert items_digest(a, ["name", "price"]) != items_digest([{"name": "x", "price": 3}], ["name", "price"])


def test_payload_digest_is_warc_style_base32() -> None:
    assert payload_digest(b"") == "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"
    body = b"<p>same body</p>"
    exact = Digester().digest(html(body.decode()))
    assert payload_digest(body, exact_digest=exact) == payload_digest(body)
    assert payload_digest(body, exact_digest="text:sha1:00") == payload_digest(body)


def test_rules_first_match_wins_then_the_default() -> None:
    rules = DigestRules.from_settings(
        [
            {"hosts": "*.news.example", "rule": "text"},
            {"url": r"/product/", "rule": "items", "fields": ["price"]},
            {"content_type": "text/*", "rule": "regex", "patterns": ["\\d+"]},
        ],
        "exact",
        1000,
    )
    assert isinstance(rules.select("http://a.news.example/x", "a.news.example", "text/html"), TextDigester)
    items = rules.select("http://shop.example/product/1", "shop.example", "text/html")
    assert isinstance(items, ItemsDigester) and items.fields == ("price",)
    assert isinstance(rules.select("http://b.example/", "b.example", "text/plain; charset=utf-8"), RegexDigester)
    assert type(rules.select("http://b.example/i.png", "b.example", "image/png")) is Digester


@pytest.mark.parametrize(
    ("rules", "default", "message"),
    [
        ([{"url": "x", "rule": "fuzzy"}], "exact", "ADAPTIVE_DIGEST_RULES[0]: unknown digest rule 'fuzzy'"),
        ([{"url": "x", "rule": "regex", "patterns": ["(unclosed"]}], "exact", "pattern '(unclosed' is not a valid"),
        ([{"url": "x", "rule": "regex"}], "exact", "the regex rule needs 'patterns'"),
        ([{"url": "x", "rule": "regex", "patterns": "abc"}], "exact", "a list of regular expressions, not 'abc'"),
        ([{"rule": "text"}], "exact", "ADAPTIVE_DIGEST_RULES[0] names none of"),
        ([{"url": "x", "rule": "items", "fields": "price"}], "exact", "'fields' must be a list"),
        ([{"url": "x", "rule": "items", "fields": 5}], "exact", "'fields' must be a list of field names, not 5"),
        ([{"url": "x", "rule": "items", "fields": {"price": 1}}], "exact", "'fields' must be a list"),
        ([{"url": "x", "rule": "items", "values": 5}], "exact", "'values' must be a list of field names, not 5"),
        ([{"url": "x", "rule": "regex", "patterns": ["a"], "max_size": True}], "exact", "'max_size' (True) must be"),
        ([{"url": "x", "rule": "text", "colour": 1}], "exact", "unknown key(s) colour"),
        ([], "md5", "ADAPTIVE_DIGEST_DEFAULT: unknown digest rule 'md5'"),
        ('[{"url": "x"', "exact", "ADAPTIVE_DIGEST_RULES is not valid JSON"),
        ([], '{"rule": "regex"', "ADAPTIVE_DIGEST_DEFAULT is not valid JSON"),
        ([], '{"rule": "regex"}', "ADAPTIVE_DIGEST_DEFAULT: the regex rule needs 'patterns'"),
    ],
)
def test_bad_rules_are_refused_at_start_up_by_name(rules: object, default: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        DigestRules.from_settings(rules, default, 1000)
    assert message in str(info.value)


def test_a_default_rule_given_as_json_reads_as_the_dict() -> None:
    """As ``-s 'ADAPTIVE_DIGEST_DEFAULT={"rule": "regex", ...}'`` gives it."""
    rules = DigestRules.from_settings([], '{"rule": "regex", "patterns": ["[0-9]+"]}', 1000)
    assert isinstance(rules.default, RegexDigester)


@pytest.mark.parametrize("spec", [42, ["text"], None])
def test_a_rule_of_the_wrong_kind_is_refused_by_name(spec: object) -> None:
    with pytest.raises(ConfigError, match=r"meta\['adaptive_digest_rule'\]: a digest rule is a rule name or an entry"):
        build_digester(spec, "meta['adaptive_digest_rule']", 1000)  # type: ignore[arg-type]


def test_a_response_without_body_has_no_digest() -> None:
    assert Digester().digest(answer_of(Response("http://example.com/", status=304))) is None
