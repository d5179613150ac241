"""Counts in messages agree with their nouns: "holds 1 request", not "1 requests".

A fixed plural after a count field (``"%d requests"``, ``f"{n} URLs"``)
is wrong whenever the count is 1; messages say counts with
:func:`scrapy_adaptive.config.spec.counted` (or :func:`plural` after the
number).  This test reads every string literal of the package (docstrings
aside) and names each count written before a fixed plural.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from scrapy_adaptive.config.spec import counted, plural

PACKAGE = Path(__file__).resolve().parents[2] / "scrapy_adaptive"

#: the nouns counts go with in the package's messages
NOUNS = (
    "URLs bytes classes downloads entries failures fetches hosts lies queues records requests retries "
    "revisits times versions visits"
).split()
#: a %-style integer field before a plural noun ("%d URLs", "%d download(s)")
_PERCENT = re.compile(r"%\d*d (?P<noun>[A-Za-z]+(?:\(s\)|s\b))(?!/)")
#: an f-string field that is an integer count before one of the nouns (a
#: float with a precision is a rate or a mean: "0.5 fetches at once")
_FSTRING = re.compile(r"\{(?P<expr>[^{}:!]+)(?P<spec>[:!][^{}]*)?\} (?P<noun>" + "|".join(NOUNS) + r")\b(?!/)")


def _literals() -> list[tuple[str, str]]:
    """(where, source text) of each string literal that is not a docstring."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        docstrings = set()
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
                if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                    docstrings.add(id(body[0].value))
        for node in ast.walk(tree):
            where = f"{path.relative_to(PACKAGE.parent)}:{getattr(node, 'lineno', 0)}"
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                out.append((where, node.value))
            elif isinstance(node, ast.JoinedStr):
                out.append((where, ast.get_source_segment(source, node) or ""))
    return out


def _fixed_plurals(text: str) -> list[str]:
    found = [m.group() for m in _PERCENT.finditer(text) if m["noun"] not in ("is", "was", "has")]
    for m in _FSTRING.finditer(text):
        spec = m["spec"] or ""
        if re.search(r"\.\d+f", spec) and "0f" not in spec:
            continue  # "{r.threads:.1f} fetches at once": a mean, not a count
        found.append(m.group())
    return found


def test_no_message_puts_a_fixed_plural_after_a_count():
    wrong = [f"{where}: {hit}" for where, text in _literals() for hit in _fixed_plurals(text)]
    assert not wrong, "counts before a fixed plural (use counted()):\n" + "\n".join(wrong)


@pytest.mark.parametrize(
    ("text", "hits"),
    [
        ("%s holds %d requests pending", ["%d requests"]),
        ("Abandoned %d download(s) still running", ["%d download(s)"]),
        ('f"{len(body)} bytes"', ["{len(body)} bytes"]),
        ("%.0f visits/h", []),  # a rate
        ('f"{r.threads:.1f} fetches at once"', []),
        ("%s holds %s", []),
    ],
)
def test_the_check_finds_fixed_plurals(text, hits):
    assert _fixed_plurals(text) == hits


def test_counted_says_the_noun_as_the_count_wants():
    assert counted(1, "request") == "1 request" and counted(0, "URL") == "0 URLs"
    assert counted(2, "entry", "entries") == "2 entries" and plural(1, "entry", "entries") == "entry"
