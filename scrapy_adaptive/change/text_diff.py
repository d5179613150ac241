"""A changed page's text diff: what a reader of the page sees moved.

A ``changed`` event names the new digest; a data team wants to see the
edit without fetching both versions.  With ``ADAPTIVE_TEXT_DIFF`` (a cap in
bytes; 0, the default, is off) each new version's *visible text* is kept,
compressed, beside the URL's record, and the event of the next version
carries a unified diff of the two texts' lines, cut to the cap.

* :func:`text_lines`: a page's visible text as lines: an HTML page parsed
  as the ``text`` digest rule parses it (no scripts, styles, comments or
  head), one line per block (a paragraph, a heading, a list item, a table
  row, its cells side by side), whitespace-normalised; another text
  response line by line.  Bounded: :data:`MAX_LINES` lines of at most
  :data:`MAX_LINE_CHARS` characters are kept, the rest is not compared.
* :func:`diff`: the hunks of a unified diff (``@@ -3 +3 @@``, ``-old``,
  ``+new``, one line of context), never longer than the cap in UTF-8 bytes,
  with :data:`CUT` ending one that was cut; empty when the texts are equal.
* :func:`pack` / :func:`unpack`: the stored blob, zlib-compressed JSON of
  ``[[digest, text], ...]``.  It holds the text of the version just
  captured and, while that version awaits delivery, the text of the last
  version delivered: a restart that takes the pending version back (the
  record's digest goes back to the delivered one, :mod:`..frontier.pending`)
  still finds the text its next diff must start from.  Both texts in one
  zlib stream: the second costs little more than what differs.
* :func:`changed_lines`: a few shortened lines of a diff, for the console.

Pure: no Scrapy imports (a response is read as an :class:`~.answer.Answer`).
"""

from __future__ import annotations

import difflib
import json
import re
import zlib
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..model import ChangeState, Visit, delivers_content

if TYPE_CHECKING:
    from .answer import Answer

#: lines of a page's text kept and compared (a longer page: its first lines)
MAX_LINES = 4000
#: characters kept of one line (a longer paragraph is cut)
MAX_LINE_CHARS = 1000
#: characters kept of a page's text in all (what the state keeps per URL is bounded by it)
MAX_CHARS = 256_000
#: what ends a diff cut at the cap
CUT = "… (diff cut)"
#: lines of context around each change (a price line alone is hard to place)
CONTEXT = 1
#: zlib level of the stored text: the default's speed, most of the best's ratio
LEVEL = 6
#: the blob's largest inflated size read back (two texts of UTF-8 and JSON escapes;
#: a corrupt one is not inflated past it)
MAX_INFLATED = 2 * 6 * (MAX_CHARS + MAX_LINE_CHARS + MAX_LINES) + 1024

#: elements that end a line before and after themselves (cells stay on their row's line)
_BLOCKS = frozenset(
    "address article aside blockquote br caption dd details dialog div dl dt fieldset figcaption figure footer "
    "form h1 h2 h3 h4 h5 h6 header hgroup hr li main nav ol p pre section summary table tbody tfoot thead tr ul "
    "title option legend".split()
)
_SPACES = re.compile(r"\s+")
#: elements a reader does not see (learned noise reads a page's visible text as these do)
INVISIBLE = ("script", "style", "noscript", "template", "head")
#: characters XML text may not hold (all controls but tab, newline and carriage return)
CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def visible_root(html: str) -> Any:
    """The parsed page without what a reader does not see (scripts, styles,
    comments, the head), or None if it cannot be parsed.  The ``text``
    digest rule reads the same page (:func:`visible_text`)."""
    import lxml.etree
    import lxml.html

    # control characters a page may carry (a form feed, a vertical tab, or
    # binary bytes served as HTML) are parsed into text that lxml then refuses
    # to move when an element is dropped; no reader sees them
    html = CONTROL.sub(" ", html)
    try:
        root = lxml.html.document_fromstring(html)
    except (lxml.etree.ParserError, ValueError):
        return None
    # collect first: dropping while iterating would skip siblings
    for element in list(root.iter(lxml.etree.Comment, *INVISIBLE)):
        if element.getparent() is not None:
            element.drop_tree()  # keeps the element's tail text
    return root


def visible_text(html: str) -> str:
    """The text a reader sees, in document order, whitespace-normalised."""
    root = visible_root(html)
    if root is None:
        return _SPACES.sub(" ", html).strip()
    return _SPACES.sub(" ", root.text_content()).strip()


def _clean(line: str) -> str:
    """One line as kept: whitespace-normalised, cut, and valid UTF-8 (a lone
    surrogate a page smuggled in would stop the JSON history's writes)."""
    line = _SPACES.sub(" ", line).strip()[:MAX_LINE_CHARS]
    return line.encode("utf-8", "replace").decode("utf-8")


def html_lines(html: str) -> list[str]:
    """The visible text of *html*, one line per block element."""
    root = visible_root(html)
    if root is None:
        return plain_lines(html)
    for element in root.iter(*_BLOCKS):  # bounded by the page's elements
        element.text = "\n" + (element.text or "")
        element.tail = "\n" + (element.tail or "")
    for element in root.iter("td", "th"):
        element.tail = " " + (element.tail or "")
    return plain_lines(root.text_content())


def plain_lines(text: str) -> list[str]:
    """Non-empty lines of *text*, cleaned: at most :data:`MAX_LINES`, and
    :data:`MAX_CHARS` characters in all."""
    out: list[str] = []
    kept = 0
    for line in text.splitlines():
        cleaned = _clean(line)
        if cleaned:
            out.append(cleaned)
            kept += len(cleaned)
            if len(out) >= MAX_LINES or kept >= MAX_CHARS:
                break
    return out


def text_lines(answer: Answer) -> list[str] | None:
    """The visible text of a text response as lines; None for a binary one
    or an empty body (nothing a diff could show)."""
    if not answer.body:
        return None
    text = answer.text
    if text is None:
        return None
    return html_lines(text) if "html" in answer.media_type else plain_lines(text)


def with_text(answer: Answer, visit: Visit) -> Visit:
    """*visit* with a new version's visible text, for the frontier to keep
    and diff the next one against (with ``ADAPTIVE_TEXT_DIFF``).  Only a
    changed 2xx is read: an unchanged page's text is the one kept already,
    and the parse costs about as much as the digest."""
    if visit.change is ChangeState.CHANGED and delivers_content(answer.status):
        return replace(visit, text=text_lines(answer))
    return visit


def _fit(text: str, room: int) -> str:
    """*text* cut to at most *room* UTF-8 bytes, on a character boundary."""
    data = text.encode("utf-8")
    if len(data) <= room:
        return text
    return data[: max(0, room)].decode("utf-8", "ignore")


def diff(old: Sequence[str], new: Sequence[str], cap: int) -> str:
    """The unified diff's hunks from *old* to *new* (lines), at most *cap*
    UTF-8 bytes, ending in :data:`CUT` when cut; "" when they are equal."""
    if cap <= 0 or list(old) == list(new):
        return ""
    lines = difflib.unified_diff(list(old), list(new), lineterm="", n=CONTEXT)
    out: list[str] = []
    size = 0
    for line in lines:  # bounded: at most len(old) + len(new) lines and their hunk headers
        if line.startswith(("---", "+++")) and not out:
            continue  # the file headers: there are no files
        need = len(line.encode("utf-8")) + (1 if out else 0)
        if size + need > cap:
            tail = ("\n" if out else "") + CUT
            while out and size + len(tail.encode("utf-8")) > cap:  # room for the marker
                size -= len(out.pop().encode("utf-8")) + (1 if out else 0)
            tail = ("\n" if out else "") + CUT
            return _fit("\n".join(out) + tail, cap)
        out.append(line)
        size += need
    return "\n".join(out)


def changed_lines(text_diff: str, *, most: int = 4, width: int = 60) -> list[str]:
    """Up to *most* of a diff's removed and added lines, each cut to
    *width* characters (an ellipsis says so), and how many more there are."""
    changes = [line for line in text_diff.splitlines() if line[:1] in ("+", "-")]
    shown = [shorten(line, width) for line in changes[:most]]
    if len(changes) > most:
        shown.append(f"… {len(changes) - most} more changed lines")
    elif text_diff.endswith(CUT):
        shown.append("… (diff cut)")
    return shown


def shorten(value: Any, width: int = 60) -> str:
    """*value* on one line, at most *width* characters (an ellipsis ends a cut one)."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = _SPACES.sub(" ", text).strip()
    return text if len(text) <= width else text[: max(0, width - 1)] + "…"


def pack(texts: Sequence[tuple[str, Sequence[str]]]) -> bytes:
    """The stored blob of ``(digest, lines)`` pairs, newest first."""
    data = json.dumps([[digest, "\n".join(lines)] for digest, lines in texts], ensure_ascii=False)
    return zlib.compress(data.encode("utf-8"), LEVEL)


def unpack(blob: bytes | None) -> dict[str, list[str]]:
    """digest -> lines of a stored blob; empty when there is none or it
    cannot be read (no diff then: the next version's text replaces it)."""
    if not blob:
        return {}
    try:
        inflater = zlib.decompressobj()
        raw = inflater.decompress(blob, MAX_INFLATED)
        data = json.loads(raw.decode("utf-8"))
    except (zlib.error, ValueError):
        return {}
    if not isinstance(data, list):
        return {}
    return {
        entry[0]: entry[1].split("\n") if entry[1] else []
        for entry in data[:2]
        if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str) and isinstance(entry[1], str)
    }
