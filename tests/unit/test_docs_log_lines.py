"""Log lines the docs quote are the lines the code writes.

A page that quotes a message its reader will never see (docs/signals.md
said a bad sitemap "is revisited as usual" while the log said "its re-reads
are backed off") sends the reader grepping for nothing.  This test reads
every page (``docs/*.md`` and ``README.md``) and checks every quote of a log
line against the package's own text, read from its source:

* a line written as the log shows it, ``[scrapy_adaptive.x.y] LEVEL:
  message`` (in a code block or inline), must be a message of a ``logger``
  call in module ``x.y`` at that level;
* any other quote (an inline code span or a "double-quoted" phrase, not a
  command line) that shares three words in a row with a log message or
  with an exception's message (which log lines carry) is taken for a quote
  of a log line, and must be all or part of a message some ``logger`` call
  writes.

In a quote ``…`` (or ``...``) stands for whatever the line has there.  A
format's fields (``%s``, ``%d``, an f-string's ``{...}``) stand for a value
(text without spaces: a number, a URL, a name; a list of such, "www,
case, slash"; a number and its unit, "3.5 MB"), or for a message another
string literal of the package builds (an exception's text, a clause passed
as an argument), as deep as two such levels.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "scrapy_adaptive"
PAGES = (*sorted((ROOT / "docs").glob("*.md")), ROOT / "README.md")
LEVELS = ("debug", "info", "warning", "error", "critical", "exception")

#: a format's field, or a quote's elision
FIELD = None
#: %-style conversions (``%%`` is a literal ``%``) and str.format fields
_PERCENT = re.compile(r"%%|%(?:\([^)]*\))?[-+ #0]*\d*(?:\.\d+)?[sdifrxeg]|\{[^{}]*\}")
_ELISION = re.compile(r"…|\.\.\.")
_NUMBER_UNIT = re.compile(r"(?<![\w.])(?P<number>[-+]?\d[\d.]*) [A-Za-z]+\b")
_WORD = re.compile(r"[A-Za-z][\w'-]*")
#: the prefix of a line as Scrapy's log shows it
_LOG_LINE = re.compile(r"^\[(?P<logger>scrapy_adaptive[\w.]*)\] (?P<level>[A-Z]+): (?P<message>.*)$")


@dataclass(frozen=True, eq=False)
class Text:
    """A string literal of the package: its characters, FIELD for a field."""

    tokens: tuple[str | None, ...]
    where: str

    @cached_property
    def literal(self) -> str:
        """The text with NUL for each field."""
        return "".join(t if t is not FIELD else "\0" for t in self.tokens)

    @cached_property
    def trigrams(self) -> set[tuple[str, ...]]:
        return _trigrams(self.literal)

    @cached_property
    def head(self) -> str:
        """The first run of literal text (after a leading field)."""
        return self.literal.lstrip("\0").split("\0")[0]


def _tokens(node: ast.AST, percent: bool) -> tuple[str | None, ...] | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        out: list[str | None] = []
        text, at = node.value, 0
        for m in _PERCENT.finditer(text) if percent else ():
            out.extend(text[at : m.start()])
            out.append("%" if m.group() == "%%" else FIELD)
            at = m.end()
        out.extend(text[at:])
        return tuple(out)
    if isinstance(node, ast.JoinedStr):
        out = []
        for part in node.values:
            out.extend(part.value if isinstance(part, ast.Constant) else [FIELD])
        return tuple(out)
    return None


def _read_package() -> tuple[dict[tuple[str, str], list[Text]], list[Text], list[Text]]:
    """(module, level) -> the messages of its logger calls; every other
    string literal that is not a docstring (the pieces messages are built
    of); those of them an exception is raised with."""
    calls: dict[tuple[str, str], list[Text]] = {}
    pieces: list[Text] = []
    errors: list[Text] = []
    for path in sorted(PACKAGE.rglob("*.py")):
        module = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip: set[int] = set()
        raised = {id(inner) for node in ast.walk(tree) if isinstance(node, ast.Raise) for inner in ast.walk(node)}
        for node in ast.walk(tree):
            body = getattr(node, "body", None)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
                if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                    skip.add(id(body[0].value))  # a docstring
            if isinstance(node, ast.JoinedStr):
                skip.update(id(part) for part in node.values)  # read with their f-string
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in LEVELS
                and isinstance(node.func.value, ast.Name)
                and node.func.value.id == "logger"
                and node.args
            ):
                tokens = _tokens(node.args[0], percent=True)
                assert tokens is not None, f"{path}:{node.lineno}: a log message that is not a string literal"
                level = "error" if node.func.attr == "exception" else node.func.attr
                calls.setdefault((module, level), []).append(Text(tokens, f"{module}:{node.lineno}"))
                skip.add(id(node.args[0]))
            elif id(node) not in skip and isinstance(node, (ast.Constant, ast.JoinedStr)):
                tokens = _tokens(node, percent=True)
                if tokens and any(t is not FIELD and t.isalpha() for t in tokens):
                    pieces.append(Text(tokens, f"{module}:{node.lineno}"))
                    if id(node) in raised:
                        errors.append(pieces[-1])
    return calls, pieces, errors


CALLS, PIECES, ERRORS = _read_package()
MESSAGES = [text for texts in CALLS.values() for text in texts]


def _trigrams(literal: str) -> set[tuple[str, ...]]:
    out: set[tuple[str, ...]] = set()
    for run in literal.split("\0"):
        words = [w.lower() for w in _WORD.findall(run)]
        out.update(tuple(words[i : i + 3]) for i in range(len(words) - 2))
    return out


#: three words in a row of a log message, or of an exception's (a log line quotes it)
_MESSAGE_TRIGRAMS = set().union(*(_trigrams(t.literal) for t in (*MESSAGES, *ERRORS)))
#: a command line, not a log line
_COMMAND = re.compile(r"^(scrapy|python|pip) ")


class Quote:
    """Matches one quote against formats whose fields may hold values or
    other pieces of text (two-sided: the quote's elisions are wild too)."""

    def __init__(self, text: str) -> None:
        self.text = text
        tokens: list[str | None] = []
        for i, run in enumerate(_ELISION.split(text)):
            if i:
                tokens.append(FIELD)
            tokens.extend(run)
        self.q = tokens
        self.n = len(tokens)
        # value_end[p]: the furthest end of a value that begins at p: text
        # without spaces, a list of such ("www, case, slash"), or a number
        # and its unit ("3.5 MB")
        self.value_end = list(range(self.n + 1))
        for p in range(self.n - 1, -1, -1):
            if tokens[p] is FIELD or not tokens[p].isspace():
                end = self.value_end[p + 1]
                if (
                    end + 1 < self.n
                    and tokens[end - 1] == ","
                    and tokens[end] == " "
                    and self.value_end[end + 1] > end + 1
                ):
                    end = self.value_end[end + 1]
                self.value_end[p] = end
        self.flat = "".join(t if t is not FIELD else "\0" for t in tokens)
        for m in _NUMBER_UNIT.finditer(self.flat):
            for p in range(m.start(), m.end("number")):
                self.value_end[p] = max(self.value_end[p], m.end())
        self.anchors = self._anchors()
        #: the pieces with three words in a row of the quote
        words = _trigrams(text)
        self.sharing = [piece for piece in PIECES if piece.trigrams & words]
        self._memo: dict[tuple[int, int, int], frozenset[int]] = {}

    def _anchors(self) -> dict[int, list[Text]]:
        """The pieces that may begin at each position: their first literal
        run is there, or, for a piece that begins with a field, after a
        value that begins there."""
        flat = self.flat
        out: dict[int, list[Text]] = {}
        for piece in PIECES:
            led = piece.tokens[0] is FIELD
            head = piece.head
            if not head.strip():  # "{n} {unit}" could begin anywhere
                continue
            at = flat.find(head)
            while at >= 0:
                begin = at
                while led and begin > 0 and self.value_end[begin - 1] >= at:
                    begin -= 1
                for p in range(begin, at + 1) if led else (at,):
                    out.setdefault(p, []).append(piece)
                at = flat.find(head, at + 1)
        return out

    def _close(self, states: set[int]) -> set[int]:
        """An elision may end at once: it matches the empty string too."""
        todo = [p for p in states if p < self.n and self.q[p] is FIELD]
        while todo:
            p = todo.pop()
            if p + 1 not in states:
                states.add(p + 1)
                if p + 1 < self.n and self.q[p + 1] is FIELD:
                    todo.append(p + 1)
        return states

    def ends(self, text: Text, start: set[int], depth: int) -> set[int]:
        """The quote positions where *text* can end, begun at any of *start*."""
        states = self._close(set(start))
        for token in text.tokens:
            if not states:
                break
            nxt: set[int] = set()
            if token is FIELD:
                for p in states:
                    nxt.add(p)
                    nxt.update(range(p + 1, self.value_end[p] + 1))
                    if depth:
                        for piece in self.anchors.get(p, ()):
                            nxt |= self._piece_ends(piece, p, depth - 1)
                    if depth and p == 0 and self.q[0] is FIELD:
                        # a quote that begins inside a message another
                        # literal builds ("…'modified' (…) is not an HTTP date")
                        for piece in self.sharing:
                            nxt |= self._piece_ends(piece, 0, 0)
            else:
                for p in states:
                    if p < self.n:
                        if self.q[p] is FIELD:
                            nxt.add(p)  # the elision takes this character too
                        elif self.q[p] == token:
                            nxt.add(p + 1)
            states = self._close(nxt)
        return states

    def _piece_ends(self, piece: Text, at: int, depth: int) -> frozenset[int]:
        key = (id(piece), at, depth)
        if key not in self._memo:
            self._memo[key] = frozenset(self.ends(piece, {at}, depth))
        return self._memo[key]

    @classmethod
    def part(cls, text: str) -> Quote:
        """A quote of all or part of a line: an elision either side of it."""
        return cls(f"…{text}…")

    def whole(self, text: Text) -> bool:
        """Whether the quote is all of a line *text* writes."""
        return self.n in self.ends(text, {0}, depth=2)


def _quotes() -> list[tuple[str, str, str | None, str | None]]:
    """(page:line, quote, logger, level) for every quote of a log line."""
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        name = page.relative_to(ROOT).as_posix()
        fenced = False
        spans: list[tuple[int, str]] = []
        paragraph: list[tuple[int, str]] = []
        for number, line in enumerate(text.splitlines(), 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
                continue
            if fenced:  # code, commands, a log excerpt: only its log lines are read
                if _LOG_LINE.match(line.strip()):
                    spans.append((number, line.strip()))
                continue
            if line.strip():
                paragraph.append((number, line))
                continue
            spans.extend(_inline(paragraph))
            paragraph = []
        spans.extend(_inline(paragraph))
        for number, quote in spans:
            quote = " ".join(quote.replace("\\|", "|").split())
            m = _LOG_LINE.match(quote)
            if m:
                out.append((f"{name}:{number}", m["message"], m["logger"], m["level"].lower()))
            elif _trigrams(quote) & _MESSAGE_TRIGRAMS and not _COMMAND.match(quote):
                out.append((f"{name}:{number}", quote, None, None))
    return out


def _inline(paragraph: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """A paragraph's code spans and "double-quoted" phrases (they may run over lines)."""
    if not paragraph:
        return []
    joined = " ".join(line for _, line in paragraph)
    starts = []
    at = 0
    for number, line in paragraph:
        starts.append((at, number))
        at += len(line) + 1

    def line_of(offset: int) -> int:
        return max(n for s, n in starts if s <= offset)

    found = [(line_of(m.start()), m.group(1)) for m in re.finditer(r"`([^`]+)`", joined)]
    prose = re.sub(r"`[^`]*`", lambda m: " " * len(m.group()), joined)
    found += [(line_of(m.start()), m.group(1)) for m in re.finditer(r"\"([^\"]+)\"", prose)]
    return found


QUOTES = _quotes()


def test_the_pages_quote_log_lines():
    """The check below reads something: the pages' log quotes are found."""
    assert len(QUOTES) >= 10
    assert any(logger for _, _, logger, _ in QUOTES)


@pytest.mark.parametrize(("where", "quote", "logger", "level"), QUOTES, ids=[q[0] for q in QUOTES])
def test_a_quoted_log_line_is_one_the_code_writes(where, quote, logger, level):
    q = Quote(quote)
    if logger is not None:
        texts = CALLS.get((logger, level), [])
        assert texts, f"{where}: no {level} message in {logger}"
        assert any(q.whole(t) for t in texts), f"{where}: {logger} writes no {level} line like {quote!r}"
    else:
        part = Quote.part(quote)
        assert any(part.whole(t) for t in MESSAGES), f"{where}: no log message reads like {quote!r}"


# -- the matcher itself --------------------------------------------------------


def _message(text: str) -> Text:
    node = ast.parse(text, mode="eval").body
    return Text(_tokens(node, percent=True), "test")


@pytest.mark.parametrize(
    ("quote", "fmt", "whole", "within"),
    [
        ("a 3 b", "'a %d b'", True, True),
        ("a … b", "'a %d b'", True, True),
        ("a … b", "'a x y z b'", True, True),  # an elision may stand for words
        ("a x y b", "'a %s b'", False, False),  # a field alone is one value, no spaces
        ("a 3 b c", "'a %d b'", False, False),
        ("3 b", "'a %d b c'", False, True),  # a part of the line
        ("b c", "'a %d b c'", False, True),
        ("b d", "'a %d b c'", False, False),
    ],
)
def test_matching(quote, fmt, whole, within):
    assert Quote(quote).whole(_message(fmt)) is whole
    assert Quote.part(quote).whole(_message(fmt)) is within


def test_a_field_holds_a_message_built_elsewhere():
    """The sitemap warning: its field holds the exception's own text."""
    warning = next(t for t in CALLS[("scrapy_adaptive.integration.spidermiddlewares.sitemaps", "warning")])
    good = Quote("sitemap http://… is not XML (…); its re-reads are backed off, the crawl goes on.")
    assert good.whole(warning)
    stale = Quote("sitemap http://… is not XML (…); it is revisited as usual")
    stale = Quote.part(stale.text)
    assert not any(stale.whole(t) for t in MESSAGES)
