"""Learned noise, the parts: a page as fields, sketches of it, masks over it.

A page with a server clock, a CSRF token or a visitor counter "changes" at
every fetch under any digest rule short of an operator-written regex.  To
learn which parts those are without ever hiding a real edit, a page is
compared **by its structure**, never by a switch to "visible text only":

**Fields.**  An HTML page is cut into fields, each named by its place in
the document tree (``html/body/table/tr[2]/td[2]``) and what it is there:
the element's own text (``#t``), one attribute's value (``@content``,
``@href``, ``@value``), or one value of a JSON script by its key path
(``$.offers.price`` inside ``<script type="application/ld+json">``).  The
``<head>`` (title, meta), attributes and scripts are fields like any other,
so an edit there is a change.  A JSON body is fields by key path, other
text by line.  Two rows that share a label (``<td>Value</td>``) are two
places, so a token in one never hides the other.

**Tokens.**  Within a field, the *volatile* tokens (anything holding a
digit: a price, a count, a time, a hash; a date written with a month's
name) are kept apart from the rest (the field's *shape*), so a mask can
hide one token of a field (the clock in a 60-word paragraph, the counter
beside "Availability: In stock") and still see an edit of the rest.

**Clocks.**  A token that reads as a time of day (``12:03``,
``12:03:04``), a full date and time, or a Unix time near the fetch is a
clock candidate: its *offset* from the fetch's time (the ``Date`` header,
else the arrival) is kept.  A clock shows the same offset at every fetch,
whatever the gap; a time someone wrote (an opening hour, a "last edited")
does not.  So a token that moved between two fetches by the time that
passed between them is noise, proven by those two fetches alone, even when
it is coarser than a probe's gap (``HH:MM`` two seconds apart).

**Sketch.**  What is kept of a fetch: per field a hash of its name and of
its shape, a short hash per volatile token and a clock's offset.  The last
delivered version's sketch is kept in the record (the learner compares each
new fetch with it); a fetch waiting for its probe is kept with the fields'
full names (a varying list is found by where its fields come and go).

**Masks.**  What is learned: a field left out whole (``*``, its shape moves
at every fetch: a rotating ad), some volatile tokens of a field (by their
order in it), or a *region*: an element whose content comes and goes (a
related-items list of varying length).  Everything else is compared.

Which visits the learner takes and the page's fields are read here
(:func:`learns_from`, :func:`page_fields`); when to probe, what counts as
proof, and when a difference is delivered is :mod:`.noise_learner`'s.  Pure: no Scrapy imports (a response is read as
an :class:`~.answer.Answer`).
"""

from __future__ import annotations

import calendar
import functools
import json
import re
import zlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .digest import sha1_digest
from .text_diff import CONTROL, INVISIBLE

if TYPE_CHECKING:
    from ..model import Visit
    from .answer import Answer

#: the digest rule name of a page digested without its learned noise
RULE = "noise"

#: crawl-log annotation of a visit that learned part of its page's noise
NOISE_LEARNED = "noiseLearned"

#: a page of more fields is not learned from (its sketch would weigh on the
#: record at every write): it is judged by its rule's digest, said once
MAX_FIELDS = 4000

#: a field with more volatile tokens is compared whole (its sketch would
#: grow with every number in it: an SVG path, a list of figures in one cell)
MAX_FIELD_TOKENS = 16

#: a JSON script or body is read to this many values at most
MAX_JSON_VALUES = 2000

Field = tuple[str, str]  # (name, value)

#: the validators, compared as two more fields of the page
ETAG_FIELD = "<etag>"
LAST_MODIFIED_FIELD = "<last-modified>"
Sketch = dict[str, str]  # name (or its hash) -> field sketch

# -- fields ---------------------------------------------------------------------------

_JSON_TYPES = ("application/ld+json", "application/json")


def fields_of(answer: Answer, *, visible: bool = False) -> list[Field] | None:
    """The fields of a text response, or None (binary, unparsable, or more
    than :data:`MAX_FIELDS`: not learnable).  *visible*: only what a reader
    sees (the ``text`` rule's scope: no head, scripts or attributes)."""
    if not answer.body:
        return None
    if "html" in answer.media_type:
        root = _parsed(answer)
        if root is None:
            return None
        out = html_fields(root, visible=visible)
    else:
        text = answer.text
        if text is None:
            return None
        if answer.media_type.endswith("json"):
            try:
                out = [(f"${path}", value) for path, value in json_values(json.loads(text))]
            except (ValueError, RecursionError):
                out = text_fields(text)
        else:
            out = text_fields(text)
    return out if len(out) <= MAX_FIELDS else None


def _parsed(answer: Answer) -> Any:
    """The page's lxml tree: the spider's own (Scrapy's cached selector, so
    the callback does not parse the page again) when there is one."""
    root = answer.tree()
    if root is not None:
        return root
    text = answer.text
    return None if text is None else html_root(text)


def html_root(html: str) -> Any:
    """*html* parsed, or None."""
    import lxml.etree
    import lxml.html

    try:
        return lxml.html.document_fromstring(CONTROL.sub(" ", html))
    except (lxml.etree.ParserError, ValueError):
        return None


def _normal(text: str) -> str:
    return " ".join(text.split())


def html_fields(root: Any, *, visible: bool = False) -> list[Field]:
    """The fields of a parsed page in document order (see the module's docstring)."""
    out: list[Field] = []
    root_tag = str(root.tag)
    stack: list[tuple[Any, str, str]] = [(root, root_tag, root_tag)]
    while stack and len(out) <= MAX_FIELDS:
        element, tag, path = stack.pop()
        if not visible:
            for name, value in element.items():
                out.append((f"{path}@{name}", " ".join(value.split())))  # _normal, inline: per attribute
        text = element.text
        pieces = [text] if text else []
        children = []
        seen: dict[str, int] = {}
        for child in element:
            tail = child.tail
            if tail:
                pieces.append(tail)
            name = child.tag
            if not isinstance(name, str):
                continue  # a comment or a processing instruction: no data
            if visible and name in INVISIBLE:
                continue
            n = seen.get(name, 0)
            seen[name] = n + 1
            children.append((child, name, f"{path}/{name}" if n == 0 else f"{path}/{name}[{n}]"))
        own = " ".join(" ".join(pieces).split()) if pieces else ""  # _normal, inline: per element
        if tag == "script" and (element.get("type") or "").strip().lower() in _JSON_TYPES:
            try:
                out.extend((f"{path}${key}", value) for key, value in json_values(json.loads(own or "null")))
                own = ""
            except (ValueError, RecursionError):
                pass  # not JSON after all: its text is one field
        if own:
            out.append((f"{path}#t", own))
        stack.extend(reversed(children))
    return out


def json_values(data: Any) -> Iterator[tuple[str, str]]:
    """``(key path, value)`` of every leaf of *data* (at most :data:`MAX_JSON_VALUES`)."""
    stack: list[tuple[str, Any]] = [("", data)]
    count = 0
    while stack and count < MAX_JSON_VALUES:
        path, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((f"{path}.{k}", v) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend((f"{path}[{i}]", v) for i, v in reversed(list(enumerate(value))))
        else:
            count += 1
            yield path, value if isinstance(value, str) else json.dumps(value)


def text_fields(text: str) -> list[Field]:
    """Fields of plain text: its lines."""
    return [(f"L{i}", line) for i, line in enumerate(_normal(x) for x in text.splitlines()) if line]


# -- tokens and clocks ----------------------------------------------------------------

_MONTHS = "jan|feb|mar|apr|may|jun|jul|aug|sep|sept|oct|nov|dec"
_MONTH_WORD = rf"(?:{_MONTHS})[a-z]*\.?"
#: the words of a field: a date written with a month's name (one token, so
#: it is masked whole with the clock beside it), or a run of word characters;
#: the volatile ones are those that hold a digit.  Every alternative starts
#: with a fixed character class and none nests, so a scan is linear in the
#: field's length whatever the server sent
_WORD = r"[\w.:+/=@-]"
_DATES = rf"\b\d{{1,2}}\.?\s+{_MONTH_WORD},?\s+\d{{4}}\b|\b{_MONTH_WORD}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+\d{{4}}\b"
#: a volatile token where a word starts: a date, or a run holding a digit
#: (the lookahead stays inside the run: a run without one is passed over
#: at its first character, never matched)
_VOLATILE = re.compile(rf"(?<!{_WORD})(?:{_DATES}|(?={_WORD}*?\d){_WORD}+)", re.IGNORECASE)
#: the run right after a date that ends on a word character other than a
#: letter or digit ("5 June 2020.12"): a word of its own
_RUN = re.compile(rf"{_WORD}+")
_WORD_PUNCTUATION = frozenset(".:+/=@-")
_DIGIT = re.compile(r"\d")


def volatile(value: str) -> list[re.Match[str]]:
    """The tokens of a field kept apart from its shape: those that hold a
    digit (only they are matched: a paragraph's other words cost nothing)."""
    out = []
    for match in _VOLATILE.finditer(value):
        out.append(match)
        if value[match.end() : match.end() + 1] in _WORD_PUNCTUATION:  # only after a date
            run = _RUN.match(value, match.end())
            if run is not None and _DIGIT.search(run.group(0)):
                out.append(run)
    return out


def _shape(value: str, tokens: Sequence[re.Match[str]], keep: Any = ()) -> str:
    """*value* with its volatile *tokens* replaced by a placeholder (but those at positions in *keep*)."""
    out, last = [], 0
    for k, match in enumerate(tokens):
        out.append(value[last : match.start()])
        out.append(match.group(0) if k in keep else "\x00")
        last = match.end()
    out.append(value[last:])
    return "".join(out)


_TIME = re.compile(r"(?<![\d:])(\d{1,2}):(\d{2})(?::(\d{2}))?(?:[.,]\d+)?(?![\d:])")
_ISO = re.compile(r"(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2}))?")
_EPOCH = re.compile(r"(?<!\d)(\d{10}|\d{13})(?!\d)")
_DATE = re.compile(
    rf"^(?:\d{{4}}-\d{{1,2}}-\d{{1,2}}|\d{{1,2}}[./-]\d{{1,2}}[./-]\d{{2,4}}|\d{{1,2}}\.?\s+{_MONTH_WORD},?\s+\d{{4}}"
    rf"|{_MONTH_WORD}\s+\d{{1,2}}\S*,?\s+\d{{4}}|(?:19|20)\d\d)[,;.)]?$",
    re.IGNORECASE,
)
#: how far two offsets of one clock may differ (its tick plus the fetch's own
#: spread: the server renders before its Date header is written)
_SLACK = 3
_HALF_DAY = 43_200
#: a Unix time farther than this from the fetch is a stored date, not a clock
_EPOCH_NEAR = 2 * 86_400


#: what makes a token a clock, apart from any fetch: ``(how, kind, instant)``;
#: *how* says how it reads against a fetch's time (:func:`_read`)
ClockSpec = tuple[str, str, float]


def _clock_spec(token: str) -> ClockSpec | None:
    """*token* as a clock candidate, before any fetch's time is known (a
    field's tokens are read once per distinct value: see :func:`field_sketch`)."""
    if ":" not in token and len(token) < 10:
        return None  # neither a time nor a Unix time: most tokens (prices, counts, ids)
    iso = _ISO.search(token)
    if iso:
        y, mo, d, h, mi, s = (int(g) if g else 0 for g in iso.groups())
        try:
            stamp = calendar.timegm((y, mo, d, h, mi, s, 0, 0, 0))
        except (ValueError, OverflowError):
            return None
        return ("d", "a" if iso.group(6) else "b", stamp)
    epoch = _EPOCH.search(token)
    if epoch:
        return ("e", "a", int(epoch.group(1)) / (1000 if len(epoch.group(1)) == 13 else 1))
    clock = _TIME.search(token)
    if clock:
        h, mi = int(clock.group(1)), int(clock.group(2))
        if h > 23 or mi > 59:
            return None
        s = clock.group(3)
        return ("t", "s" if s else "m", h * 3600 + mi * 60 + (int(s) if s else 0))
    return None


def _read(spec: ClockSpec, at: float) -> tuple[str, int] | None:
    """A clock's ``(kind, offset)`` against the fetch time *at* (None: a Unix
    time too far from the fetch to be its clock)."""
    how, kind, instant = spec
    if how == "t":
        return kind, int(instant - at) % _HALF_DAY
    if how == "r":
        return kind, int(at - instant)
    if how == "e" and abs(instant - at) > _EPOCH_NEAR:
        return None
    return kind, int(instant - at)


def clock_offset(token: str, at: float) -> tuple[str, int] | None:
    """How a clock token reads against the fetch time *at*: ``(kind, offset)``.

    Kinds: ``s`` / ``m`` a time of day to the second / minute (offset
    modulo half a day, so 12- and 24-hour clocks are one), ``a`` an
    absolute time (an ISO date and time, a Unix time in seconds or
    milliseconds near the fetch).  None: not a clock.

    >>> clock_offset("12:00:05", 43200.0)
    ('s', 5)
    >>> clock_offset("price", 0.0) is None
    True
    """
    spec = _clock_spec(token)
    return None if spec is None else _read(spec, at)


def _tick(kind: str) -> int:
    return {"m": 60, "b": 60, "M": 60, "H": 3600, "D": 86_400}.get(kind, 1)


def same_clock(old: str, new: str) -> bool:
    """True if two sketched tokens are one clock read at two fetches: both
    clocks of one kind whose offsets agree within the clock's tick."""
    if "~" not in old or "~" not in new:
        return False
    _, kind, offset = old.split("~")
    _, kind2, offset2 = new.split("~")
    if kind != kind2:
        return False
    delta = int(offset2) - int(offset)
    if kind in ("s", "m"):
        delta = (delta + _HALF_DAY // 2) % _HALF_DAY - _HALF_DAY // 2
    return abs(delta) <= _tick(kind) + _SLACK


def is_date(token: str) -> bool:
    """A calendar date with no time in it: it turns with a clock beside it."""
    return bool(_DATE.match(token))


#: the characters short hashes are written with (base64's URL-safe alphabet)
_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def _h(text: str, size: int) -> str:
    """A short hash of *text*: 32 bits in 6 characters (*size* 4), else 16
    bits in 3.  Only *where* a page differs is found by these (a collision
    can hide one move of one field from the sketch); *whether* it differs is
    the SHA-1 of :func:`masked_digest`, kept beside the sketch."""
    crc = zlib.crc32(text.encode("utf-8", "surrogatepass"))
    a = _ALPHABET
    if size == 4:
        return (
            a[crc >> 26]
            + a[(crc >> 20) & 63]
            + a[(crc >> 14) & 63]
            + a[(crc >> 8) & 63]
            + a[(crc >> 2) & 63]
            + a[crc & 3]
        )
    return a[(crc >> 12) & 15] + a[(crc >> 6) & 63] + a[crc & 63]


@functools.lru_cache(maxsize=16_384)
def name_hash(name: str) -> str:
    """How a field's name is kept in the record's sketch.

    Cached: a site's pages share their field names (their structure), and
    every field of every fetch is keyed by its name's hash, some several
    times (the sketch, the masks, the learner); a pure function of a string,
    bounded in memory."""
    return _h(name, 4)


#: a field's value up to this long is read once per distinct value (a
#: site's template repeats them: menus, footers, icons' attributes, and a
#: revisited page most of its own); a longer one, each time
_CACHED_VALUE = 256


def field_sketch(value: str, at: float) -> str:
    """A field as kept: its shape's hash, then ``|`` and each volatile
    token's hash (``~kind~offset`` after a clock's)."""
    parts = _cached_parts(value) if len(value) <= _CACHED_VALUE else _field_parts(value)
    if isinstance(parts, str):
        return parts
    out = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
            continue
        token_hash, specs = part
        clock = None
        for spec in specs:
            clock = _read(spec, at)
            if clock is not None:
                break
        out.append(token_hash if clock is None else f"{token_hash}~{clock[0]}~{clock[1]}")
    return "|".join(out)


def _field_parts(value: str) -> str | tuple[Any, ...]:
    """:func:`field_sketch` apart from the fetch's time: the sketch itself
    (no clock in the field), else its parts, a clock token's as its hash
    and what makes it a clock (its offset is read against each fetch)."""
    if _DIGIT.search(value) is None:
        return _h(value, 2)  # most fields: no token to keep apart
    matches = volatile(value)
    if not matches or len(matches) > MAX_FIELD_TOKENS:
        # none to keep apart, or too many (an SVG path, a table in one cell):
        # the field is compared whole, its tokens are not kept one by one
        return _h(value, 2)
    parts: list[Any] = [_h(_shape(value, matches), 2)]
    clocked = False
    for match in matches:
        token = match.group(0)
        specs = tuple(s for s in (_clock_spec(token), _relative_spec(value, match)) if s is not None)
        clocked = clocked or bool(specs)
        parts.append((_h(token, 2), specs) if specs else _h(token, 2))
    return tuple(parts) if clocked else "|".join(parts)


#: bounded: 8,192 values of at most :data:`_CACHED_VALUE` characters (a few MB
#: at most; a site's template repeats a few hundred)
_cached_parts = functools.lru_cache(maxsize=8_192)(_field_parts)


#: a count of units before "ago" ("5 minutes ago", "3 hrs ago")
_AGO = re.compile(r"\s*(seconds?|secs?|s|minutes?|mins?|m|hours?|hrs?|h|days?|d)\.?\s+ago\b", re.IGNORECASE)
_UNITS = {"s": ("S", 1), "m": ("M", 60), "h": ("H", 3600), "d": ("D", 86_400)}


def _relative_spec(value: str, match: re.Match[str]) -> ClockSpec | None:
    """The token *match* of *value* as a relative time ("posted 5 minutes
    ago"), before any fetch's time is known: the moment it names, which
    stays put while the count moves with the fetch time.

    >>> import re
    >>> _read(_relative_spec("posted 5 minutes ago", re.search(r"\\d+", "posted 5 minutes ago")), 1000.0)
    ('M', 700)
    """
    ago = _AGO.match(value, match.end())
    if ago is None or not match.group(0).isdigit():
        return None
    kind, unit = _UNITS[ago.group(1)[0].lower()]
    return ("r", kind, int(match.group(0)) * unit)


# -- masks ----------------------------------------------------------------------------


def under(name: str, region: str) -> bool:
    """True if the field *name* lies in the element *region* (its own or a descendant's)."""
    return name.startswith(region) and name[len(region) : len(region) + 1] in ("/", "@", "#", "$")


WHOLE = "*"


@dataclass
class Masks:
    """What a page's noise is: ``fields`` by name hash (``*`` whole, else
    the volatile tokens' positions) and ``regions`` (element paths whose
    content comes and goes).  The record's ``m`` and ``g``."""

    fields: dict[str, Any] = field(default_factory=dict)
    regions: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, state: Mapping[str, Any]) -> Masks:
        fields = state.get("m")
        regions = state.get("g")
        return cls(
            dict(fields) if isinstance(fields, dict) else {},
            [r for r in regions if isinstance(r, str)] if isinstance(regions, list) else [],
        )

    def __bool__(self) -> bool:
        return bool(self.fields or self.regions)

    def in_region(self, name: str) -> bool:
        return any(under(name, region) for region in self.regions)

    def add_tokens(self, key: str, positions: Sequence[int]) -> None:
        current = self.fields.get(key)
        if current == WHOLE or not positions:
            return
        self.fields[key] = sorted(set(current or ()) | set(positions))

    def add_whole(self, key: str) -> None:
        self.fields[key] = WHOLE

    def add_region(self, region: str) -> None:
        if region not in self.regions:
            self.regions.append(region)

    def hidden(self, key: str) -> Any:
        """``*`` (the whole field), its hidden token positions, or ()."""
        return self.fields.get(key, ())

    def state(self) -> dict[str, Any]:
        """The masks as the record keeps them: a copy, so that what was
        taken before a mask is added still says what was hidden then."""
        out: dict[str, Any] = {}
        if self.fields:
            out["m"] = dict(self.fields)
        if self.regions:
            out["g"] = list(self.regions)
        return out


def sketch(fields: Sequence[Field], at: float, masks: Masks, *, names: bool = False) -> Sketch:
    """The sketch of a fetch made at *at*, without the fields of masked
    regions; keyed by name hash, or by full name (*names*: a fetch waiting
    for its probe, whose structure the probe compares)."""
    out: Sketch = {}
    for name, value in fields:
        if masks.regions and masks.in_region(name):
            continue
        key = name if names else name_hash(name)
        entry = field_sketch(value, at)
        out[key] = entry if key not in out else f"{out[key]}+{entry}"  # a name hash shared: kept together
    return out


def pack(sketched: Mapping[str, str]) -> str:
    """A sketch keyed by name hash as one string, as the record keeps it
    (written at every visit: one string costs nothing to encode)."""
    return ";".join([key + value for key, value in sketched.items()])


def unpack(packed: Any) -> Sketch | None:
    """:func:`pack`'s string back as a sketch (None: not one)."""
    if not isinstance(packed, str):
        return None
    if not packed:
        return {}
    return {entry[:6]: entry[6:] for entry in packed.split(";") if len(entry) > 6}


def by_hash(sketched: Mapping[str, str]) -> Sketch:
    """A sketch keyed by full names, keyed by name hash."""
    return {name_hash(name): value for name, value in sketched.items()}


def masked_digest(fields: Sequence[Field], masks: Masks) -> str:
    """The ``noise`` digest: the fields without what the masks hide."""
    if not masks:
        lines = [f"{name}\t{value}" for name, value in fields]
        lines.sort()
        return sha1_digest(RULE, "\n".join(lines).encode("utf-8"))
    lines = []
    for name, value in fields:
        if masks.regions and masks.in_region(name):
            continue
        hidden = masks.hidden(name_hash(name))
        if hidden == WHOLE:
            continue
        if hidden:
            matches = volatile(value)
            value = _shape(value, matches, keep=set(range(len(matches))) - set(hidden))
        lines.append(f"{name}\t{value}")
    lines.sort()  # by name: the order attributes are written in is no change
    return sha1_digest(RULE, "\n".join(lines).encode("utf-8"))


# -- differences ------------------------------------------------------------------------


@dataclass
class Moves:
    """How one sketch differs from another: ``fields``, per key, what moved
    (``s`` its shape, ``n`` its number of tokens, else token positions);
    ``clocks``, per key, the token positions that moved as a clock does;
    ``added`` / ``removed``: keys in one only."""

    fields: dict[str, set[Any]] = field(default_factory=dict)
    clocks: dict[str, set[int]] = field(default_factory=dict)
    added: set[str] = field(default_factory=set)
    removed: set[str] = field(default_factory=set)

    def __bool__(self) -> bool:
        return bool(self.fields or self.added or self.removed)

    def keys(self) -> set[str]:
        return set(self.fields) | self.added | self.removed


def field_moves(old: str, new: str) -> tuple[set[Any], set[int]]:
    """What moved between two sketches of one field, and which tokens moved as clocks."""
    if old == new:
        return set(), set()
    if "+" in old or "+" in new:
        return {"s"}, set()
    shape, *tokens = old.split("|")
    shape2, *tokens2 = new.split("|")
    moved: set[Any] = set()
    clocks: set[int] = set()
    if shape != shape2:
        moved.add("s")
    if len(tokens) != len(tokens2):
        moved.add("n")
        return moved, clocks
    for k, (a, b) in enumerate(zip(tokens, tokens2, strict=True)):
        if a.split("~", 1)[0] != b.split("~", 1)[0]:
            if same_clock(a, b):
                clocks.add(k)
            else:
                moved.add(k)
    return moved, clocks


def compare(old: Mapping[str, str], new: Mapping[str, str], masks: Masks | None = None) -> Moves:
    """What differs from *old* to *new*, outside *masks* (keys by name hash
    when masks are given)."""
    moves = Moves()
    hidden_of = masks.hidden if masks is not None else (lambda key: ())
    for key, value in new.items():
        before = old.get(key)
        if before == value:  # most fields of most fetches
            continue
        hidden = hidden_of(key)
        if hidden == WHOLE:
            continue
        if before is None:
            moves.added.add(key)
            continue
        moved, clocks = field_moves(before, value)
        if hidden:
            moved -= set(hidden)
            clocks -= set(hidden)
        if moved:
            moves.fields[key] = moved
        if clocks:
            moves.clocks[key] = clocks
    for key in old:
        if key not in new and hidden_of(key) != WHOLE:
            moves.removed.add(key)
    return moves


def region_of(names: Sequence[str]) -> str | None:
    """The innermost element that holds every one of *names* (fields that
    came or went): the region whose content varies, or None if that is the
    page itself (nothing smaller to hide)."""
    paths = [re.split(r"[@#$]", name, maxsplit=1)[0].split("/") for name in names]
    if not paths:
        return None
    common: list[str] = []
    for steps in zip(*paths, strict=False):
        if len(set(steps)) != 1:
            break
        common.append(steps[0])
    # the element itself of a lone field that came or went is its parent's child: hide the parent's content
    if all(len(p) == len(common) for p in paths):
        common = common[:-1]
    if len(common) < 3 or common[:2] != ["html", "body"]:
        return None
    return "/".join(common)


def date_beside(fields: Mapping[str, str], name: str, position: int) -> list[int]:
    """The calendar dates written right beside the clock token at *position*
    of the field *name* (they turn with it at midnight)."""
    value = fields.get(name)
    if value is None:
        return []
    tokens = volatile(value)
    out = []
    for k in (position - 1, position + 1):
        if 0 <= k < len(tokens):
            a, b = sorted((tokens[k], tokens[position]), key=lambda m: m.start())
            gap = value[a.end() : b.start()].strip(" ,|@-\u2013/").lower()
            if gap in ("", "at", "on") and is_date(tokens[k].group(0)):
                out.append(k)
    return out


# -- what one visit shows the learner ---------------------------------------------

# the keys of the learner's state (the record's ``noise``, :mod:`.noise_learner`)
# that say whether a visit reads the page's fields
VERSION = "p"  #: the sketch of the version last delivered (by name hash)
PENDING = "t"  #: the sketch of a fetch waiting for its probe (by full name)
UNLEARNABLE = "u"  #: the page cannot be cut into fields: judged by its rule


def learns_from(answer: Answer, visit: Visit, state: Any, *, same_payload: bool) -> bool:
    """True if the learner takes this visit: a text 2xx its rule digested
    (no body, a binary one, or not the page, an error page or a redirect's
    body: its rule's digest judges it, and the version compared stays),
    whose fields the learner's *state* needs (:func:`needs_fields`)."""
    if visit.digest is None or not 200 <= answer.status < 300:
        return False
    # the text last: an unchanged page the learner does not need is never decoded
    return needs_fields(state, same_payload=same_payload) and answer.text is not None


def needs_fields(state: dict[str, Any] | None, *, same_payload: bool) -> bool:
    """Whether the learner's step (:func:`.noise_learner.step`) needs this
    visit's fields: not for a body byte for byte the last fetch's (the many
    unchanged visits), unless a probe is pending or no version is sketched
    yet."""
    state = state or {}
    if PENDING in state:
        return True
    if UNLEARNABLE in state:
        return not same_payload
    return VERSION not in state or not same_payload


def page_fields(answer: Answer, *, visible: bool) -> list[Field] | None:
    """The page's fields and, unless only the visible text counts, its
    validators: one that moves with an edit says so (the edit is delivered at
    once), one that moves at every fetch is learned as noise."""
    fields = fields_of(answer, visible=visible)
    if fields is None or visible:
        return fields
    if answer.etag is not None:
        fields.append((ETAG_FIELD, answer.etag))
    if answer.last_modified is not None:
        fields.append((LAST_MODIFIED_FIELD, _as_compared(answer.last_modified, answer.modified_at)))
    return fields


def _as_compared(value: str, stamp: float | None) -> str:
    """A Last-Modified (*value*, read as *stamp*) as the learner compares
    it: its instant, in a form no clock reading matches (two fetches a few
    seconds after two edits read alike against their Date: the header must
    not be hidden as a clock)."""
    return value if stamp is None else f"instant {int(stamp):x}"
