"""The text diff of a changed page (``ADAPTIVE_TEXT_DIFF``): visible lines,
a diff that never passes its cap and is always valid UTF-8, the stored blob."""

from __future__ import annotations

import zlib

from hypothesis import given, settings
from hypothesis import strategies as st
from scrapy.http import HtmlResponse, Response, TextResponse

from scrapy_adaptive.change import text_diff
from scrapy_adaptive.integration.spidermiddlewares.reading import answer_of
from tests.hypo import examples

PAGE = """<html><head><title>Shop</title><style>p {color: red}</style><script>var t = 1;</script></head>
<body><h1>Kettle</h1><!-- build 42 --><p>Price <b>10.00</b> EUR</p>
<table><tr><td>Stock</td><td>3</td></tr><tr><td>Colour</td><td>blue</td></tr></table>
<ul><li>fast</li><li>quiet</li></ul><script>track()</script><noscript>enable JS</noscript></body></html>"""


def test_visible_lines_are_one_per_block_without_scripts_styles_or_the_head() -> None:
    lines = text_diff.html_lines(PAGE)
    assert lines == ["Kettle", "Price 10.00 EUR", "Stock 3", "Colour blue", "fast", "quiet"]


def test_a_response_gives_its_lines_by_its_type_and_none_when_binary_or_empty() -> None:
    html = HtmlResponse("http://a/", body=PAGE.encode(), headers={"Content-Type": "text/html"})
    assert text_diff.text_lines(answer_of(html)) == text_diff.html_lines(PAGE)
    plain = TextResponse("http://a/t", body=b"one\n\n  two  \n", headers={"Content-Type": "text/plain"})
    assert text_diff.text_lines(answer_of(plain)) == ["one", "two"]
    assert text_diff.text_lines(answer_of(Response("http://a/b", body=b"\x89PNG"))) is None
    assert text_diff.text_lines(answer_of(HtmlResponse("http://a/e", body=b""))) is None


def test_a_diff_shows_the_changed_lines_with_one_line_of_context() -> None:
    old = text_diff.html_lines(PAGE)
    new = text_diff.html_lines(PAGE.replace("10.00", "11.50"))
    assert text_diff.diff(old, new, 4096) == "@@ -1,3 +1,3 @@\n Kettle\n-Price 10.00 EUR\n+Price 11.50 EUR\n Stock 3"
    assert text_diff.changed_lines(text_diff.diff(old, new, 4096)) == ["-Price 10.00 EUR", "+Price 11.50 EUR"]


def test_a_diff_past_its_cap_is_cut_and_says_so() -> None:
    old = [f"line {i}" for i in range(200)]
    new = [f"line {i} edited" for i in range(200)]
    cut = text_diff.diff(old, new, 300)
    assert len(cut.encode()) <= 300 and cut.endswith(text_diff.CUT)
    shown = text_diff.changed_lines(cut, most=3, width=12)
    assert shown[:3] == ["-line 0", "-line 1", "-line 2"] and shown[3].endswith("more changed lines")
    assert text_diff.shorten("a" * 100, 10) == "a" * 9 + "…"


@settings(max_examples=examples(120), deadline=None)
@given(
    st.lists(st.text(max_size=40), max_size=30),
    st.lists(st.text(max_size=40), max_size=30),
    st.integers(min_value=0, max_value=600),
)
def test_a_diff_never_passes_its_cap_is_valid_utf8_and_is_empty_for_equal_texts(
    old: list[str], new: list[str], cap: int
) -> None:
    # lines as a page gives them (lone surrogates replaced, no line breaks inside)
    old, new = text_diff.plain_lines("\n".join(old)), text_diff.plain_lines("\n".join(new))
    made = text_diff.diff(old, new, cap)
    data = made.encode("utf-8")  # raises on a lone surrogate
    assert len(data) <= cap
    assert data.decode("utf-8") == made
    assert text_diff.diff(old, list(old), cap) == ""
    if old != new and cap >= 200:
        assert made  # something is said whenever there is room


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(st.tuples(st.text(min_size=1, max_size=20), st.lists(st.text(max_size=30), max_size=10)), max_size=2))
def test_the_stored_blob_gives_back_each_digests_lines(texts: list[tuple[str, list[str]]]) -> None:
    texts = [(digest, text_diff.plain_lines("\n".join(lines))) for digest, lines in texts]
    assert text_diff.unpack(text_diff.pack(texts)) == dict(texts)


def test_a_garbled_blob_is_no_text_and_none_is_inflated_past_its_bound() -> None:
    assert text_diff.unpack(b"not zlib") == {} and text_diff.unpack(None) == {}
    assert text_diff.unpack(zlib.compress(b'{"not": "a list"}')) == {}
    bomb = zlib.compress(b"[" + b" " * (text_diff.MAX_INFLATED + 10) + b"]")
    assert text_diff.unpack(bomb) == {}
