"""Byte encodings of everything the frontier stores under an ordered key.

One function per key kind.  Queue entries must sort in the order URLs are
handed out: within one queue, a higher scheduling directive first, then the
earlier time of next visit, then the fingerprint (a stable tie-break).

>>> a = queue_entry_key("example.com", 0, 1_000, b"\\x01" * 20)
>>> b = queue_entry_key("example.com", 0, 2_000, b"\\x00" * 20)
>>> c = queue_entry_key("example.com", 1, 9_000, b"\\x02" * 20)
>>> never = queue_entry_key("example.com", 0, NEVER_MS, b"\\x03" * 20)
>>> sorted([never, b, a, c]) == [c, a, b, never]
True
>>> decode_queue_entry(a, "example.com")
(0, 1000, b'\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01\\x01')
"""

from __future__ import annotations

import functools
import math
import struct

from ..config.spec import counted
from ..model import NEVER_MS

MAX_DIRECTIVE = 255
#: the directive of an entry in time order only: every revisit between its
#: visits, and every URL of a queue where no request carried a priority
SCHEDULED = 0
#: the directive of a due URL of ``Request.priority`` 0 in a queue where
#: priorities are in use; a priority *p* is ``PRIORITY_ZERO + p``, within
#: ``PRIORITY_SPAN`` (see :mod:`..frontier.priority`)
PRIORITY_ZERO = 128
PRIORITY_SPAN = 120
#: the directive of an embed asked for by its page (above every priority):
#: fetched right after the page that shows it, for one issue
EMBED_DIRECTIVE = 254
#: the directive of a noise probe (above an embed's): issued before its
#: queue's other due URLs, so it comes one politeness delay after the fetch
#: it checks, for one issue
PROBE_DIRECTIVE = 255

RECORD_PREFIX = b"u/"
QUEUE_PREFIX = b"q/"
HOST_PREFIX = b"h/"
META_PREFIX = b"m/"
#: records that could not be read, moved aside with their raw bytes (never deleted)
QUARANTINE_PREFIX = b"x/"
PENDING_PREFIX = b"p/"
#: the outbox: change events written with their URL's record, deleted once delivered
EVENT_PREFIX = b"e/"
#: a URL's last captured text, compressed (``ADAPTIVE_TEXT_DIFF``), deleted with its record
TEXT_PREFIX = b"t/"

_TIME = struct.Struct(">Q")


def time_to_ms(t: float) -> int:
    """Seconds since the epoch to the integer milliseconds stored in keys."""
    if math.isinf(t) or t >= NEVER_MS / 1000:
        return NEVER_MS
    return max(0, int(t * 1000))


def ms_to_time(ms: int) -> float:
    """The inverse of :func:`time_to_ms`; "never" becomes ``math.inf``."""
    return math.inf if ms >= NEVER_MS else ms / 1000


def record_key(fp: bytes) -> bytes:
    """Key of a URL's record: the request fingerprint."""
    return RECORD_PREFIX + fp


def quarantine_key(fp: bytes) -> bytes:
    """Key of an unreadable record moved aside: the fingerprint, raw bytes kept."""
    return QUARANTINE_PREFIX + fp


#: every write and seek of a queue's entries starts with its prefix: the
#: busiest queues' are kept
@functools.lru_cache(maxsize=4096)
def queue_prefix(queue: str) -> bytes:
    """Prefix shared by every entry of one politeness queue.

    The NUL separator cannot occur in a host name, a registered domain or a
    download slot name, so one queue's prefix never covers another's.
    """
    return QUEUE_PREFIX + queue.encode("utf-8") + b"\x00"


def queue_entry_key(queue: str, directive: int, next_ms: int, fp: bytes) -> bytes:
    """Key of one URL's position in its queue.

    The directive is stored inverted so that a *higher* directive sorts
    *first* in LevelDB's ascending byte order.
    """
    return queue_prefix(queue) + bytes((MAX_DIRECTIVE - directive,)) + _TIME.pack(next_ms) + fp


class MalformedKey(ValueError):
    """A key under a known prefix that none of this module's functions made."""


def decode_queue_entry(key: bytes, queue: str) -> tuple[int, int, bytes]:
    """``(directive, next_ms, fp)`` from a key made by :func:`queue_entry_key`.

    Raises :class:`MalformedKey` for a key too short to hold a directive, a
    time and a fingerprint: no key made here is.
    """
    return entry_at(key, len(queue_prefix(queue)))


def entry_at(key: bytes, offset: int) -> tuple[int, int, bytes]:
    """:func:`decode_queue_entry` of a key whose queue prefix is *offset*
    bytes long (a scan of one queue measures its prefix once)."""
    if len(key) - offset <= 1 + _TIME.size:
        raise MalformedKey(
            f"a queue entry needs {counted(2 + _TIME.size, 'byte')} after its queue, "
            f"this one has {max(0, len(key) - offset)}"
        )
    return MAX_DIRECTIVE - key[offset], _TIME.unpack_from(key, offset + 1)[0], key[offset + 1 + _TIME.size :]


def host_key(queue: str) -> bytes:
    """Key of a queue's persistent counters (URLs, "never" URLs, crawl-delay)."""
    return HOST_PREFIX + queue.encode("utf-8")


def text_key(fp: bytes) -> bytes:
    """Key of a URL's captured text (:mod:`~scrapy_adaptive.change.text_diff`), beside its record."""
    return TEXT_PREFIX + fp


def pending_key(fp: bytes) -> bytes:
    """Key of a URL's versions captured but not yet delivered (see :mod:`.delivery`)."""
    return PENDING_PREFIX + fp


#: the largest :func:`event_key` sequence number (one byte)
MAX_EVENT_SEQ = 255


def event_key(time_ms: int, fp: bytes, seq: int = 0) -> bytes:
    """Key of one change event in the outbox, the same in every store
    (LevelDB stores it under :data:`EVENT_PREFIX`): the event's time first,
    big-endian, so keys sort oldest first; the URL's fingerprint, so two
    URLs' events of one millisecond never collide; a one-byte *seq* for a
    URL's second event within one millisecond.

    >>> old, new = event_key(1_000, b"\\xff" * 20), event_key(2_000, b"\\x00" * 20)
    >>> sorted([new, old]) == [old, new]
    True
    >>> decode_event_key(event_key(1_000, b"\\x01" * 20, 3)) == (1_000, b"\\x01" * 20, 3)
    True
    """
    if not 0 <= seq <= MAX_EVENT_SEQ:
        raise ValueError(f"an event's sequence number is 0 to {MAX_EVENT_SEQ}, not {seq}")
    return _TIME.pack(time_ms) + fp + bytes((seq,))


def decode_event_key(key: bytes) -> tuple[int, bytes, int]:
    """``(time_ms, fp, seq)`` from a key made by :func:`event_key` (without
    the LevelDB prefix); :class:`MalformedKey` for one too short to hold a
    time, a fingerprint and a sequence number."""
    if len(key) <= _TIME.size + 1:
        raise MalformedKey(f"an event key needs more than {counted(_TIME.size + 1, 'byte')}, this one has {len(key)}")
    return _TIME.unpack_from(key)[0], key[_TIME.size : -1], key[-1]


def meta_key(name: str) -> bytes:
    """Key of a state-wide fact (format version, fingerprinter, spider)."""
    return META_PREFIX + name.encode("utf-8")


#: the state-wide fact ``m/writes``: how many batches a LevelDB store has
#: applied, written with each batch (see :attr:`.base.Store.writes`)
WRITES_META = "writes"


#: the stored keys of a queue's persisted counters (``h/`` rows): short, so a
#: row per host stays small; change neither side lightly
URLS_KEY = "u"  #: URLs in the queue
NEVER_KEY = "n"  #: of which never visited again (failed, disregarded)
VISITS_KEY = "vi"
VERSIONS_KEY = "ve"
CRAWL_DELAY_KEY = "cd"  #: robots.txt Crawl-delay, seconds
TRUST_KEY = "tr"  #: validator track record (scrapy_adaptive/change/trust.py)
HINT_TRUST_KEY = "hn"  #: change-hint sources' track records (scrapy_adaptive/frontier/hints.py)
QUARANTINED_KEY = "x"  #: unreadable records moved aside (keys ``x/<fp>``)
FORGOTTEN_KEY = "fg"  #: URLs deleted by ``scrapy frontier forget``
GONE_KEY = "gn"  #: URLs said ``gone`` and not back (scrapy_adaptive/change/events.py)
#: wall-clock ms until which every slot rests (politeness kept across a restart)
NEXT_FETCH_KEY = "nf"
#: URLs added with a ``Request.priority`` other than 0 (never decreased: a
#: count above the truth costs a scan, one below it would cost the order)
PRIORITIZED_KEY = "pr"
