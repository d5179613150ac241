"""A queue's next entries, read with its head, so the next heads need no seek.

After every issue the frontier needs its queue's new head: the first entry
after the old one that is not out.  Asked of the store, that is a seek, the
costliest read of an issue.  So the seek reads a few entries past the head
(:data:`AHEAD`) and the queue keeps them as its *window*: every entry of the
queue from the window's first to its last, or to the queue's end when the
read reached it.  The frontier applies each of its own writes to the window
(:func:`apply`), so the window stays what the store holds in that range,
and the next heads are found in it while they fall inside it.

Only a frontier that is its store's one writer keeps windows: with a shared
store, other workers write to its queues too (:class:`~.queues.QueueBook`
decides).  Memory grows with hosts, not URLs: at most ``1 + AHEAD + GROWTH``
entries more than the URLs out, per queue that has issued (an entry is about
180 bytes).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Mapping
from typing import TYPE_CHECKING

from .hostqueue import Entry, HostQueue, order

if TYPE_CHECKING:
    from ..store.base import Batch

#: entries read past a queue's head (and past its URLs out) by a seek (the
#: urgency weighing's own seek reads as many as it compares, up to
#: ``AHEAD + GROWTH``: a window never holds more)
AHEAD = 4

#: entries a window may gain from writes beyond what its seek read (then
#: its tail is dropped: a window grows with nothing but hosts)
GROWTH = AHEAD


def head_from_window(q: HostQueue, start: Entry) -> tuple[bool, Entry | None]:
    """``(known, head)``: *q*'s first entry from *start* that is not out, if
    its window can tell (``known`` False: ask the store)."""
    window, keys = q.window, q.window_keys
    if not window:
        return False, None
    key = order(start)
    if key < keys[0] or (not q.window_to_end and key > keys[-1]):
        return False, None
    out = q.out
    for i in range(bisect_left(keys, key), len(window)):
        if window[i][2] not in out:
            return True, window[i]
    # every entry of the window from start is out: beyond it, only the store knows
    return q.window_to_end, None


def window_from(q: HostQueue, start: Entry) -> tuple[list[Entry], bool] | None:
    """*q*'s window from *start* on: ``(entries, to_end)``, *to_end* True if
    nothing of the queue follows them; None if the window does not hold
    *start*'s place (read the store instead).  What weighs a queue's next
    due URLs (:mod:`.urgency`) reads them here without a seek."""
    window, keys = q.window, q.window_keys
    if not window:
        return None
    key = order(start)
    if key < keys[0] or (not q.window_to_end and key > keys[-1]):
        return None
    return window[bisect_left(keys, key) :], q.window_to_end


def keep_window(q: HostQueue, entries: list[Entry], limit: int) -> None:
    """The entries a seek of *q* read (at most *limit*) become its window."""
    q.window = entries
    q.window_keys = [order(entry) for entry in entries]
    q.window_to_end = len(entries) < limit


def apply(queues: Mapping[str, HostQueue], batch: Batch) -> None:
    """Apply the entry writes of *batch*, written, to the windows they fall in.

    A deleted entry leaves its window; a put entry joins the window whose
    range it falls in (a window holds every entry of that range).
    """
    for queue, directive, next_ms, fp in batch.entries_deleted:
        q = queues.get(queue)
        if q is None or not q.window:
            continue
        window, keys, entry = q.window, q.window_keys, (directive, next_ms, fp)
        i = bisect_left(keys, (-directive, next_ms, fp))
        if i < len(window) and window[i] == entry:
            del window[i], keys[i]
            if not window:
                q.window_to_end = False  # its range is gone with it
    for queue, directive, next_ms, fp in batch.entries_put:
        q = queues.get(queue)
        if q is None or not q.window:
            continue
        window, keys, entry = q.window, q.window_keys, (directive, next_ms, fp)
        key = (-directive, next_ms, fp)  # order(entry)
        if key < keys[0] or (not q.window_to_end and key > keys[-1]):
            continue
        i = bisect_left(keys, key)
        if i == len(window) or window[i] != entry:
            window.insert(i, entry)
            keys.insert(i, key)
            if len(window) > len(q.out) + 1 + AHEAD + GROWTH:
                del window[-1], keys[-1]  # the range ends one entry earlier, still whole
                q.window_to_end = False
