"""The payload-digest index: the first archived capture of each body, under any URL.

Mirrors, tracking parameters and session paths serve one body under many
URLs.  With ``ADAPTIVE_WARC_DEDUP_ACROSS_URLS`` on, the writer looks a new
body's payload digest up here and, when some URL's ``response`` record
already holds it, writes a ``revisit`` (profile ``identical-payload-digest``)
referring to that record, as Heritrix 3 does with its content-digest
history.

It lives in the capture index's LevelDB (``.adaptive-warc.ldb``, in the
WARC folder) because it describes the same files and obeys the same rule: an
entry enters the database in the batch that records the file as durable
(:meth:`DigestIndex.write`, called by ``make_durable`` after the fsync), so
after a ``kill -9`` no entry names a record that the repair at the next
open cut off.  Keys:

* ``d/<digest>`` -> the :class:`~.capture.Capture` (``[seq, capture]``);
* ``o/<seq>`` -> the digest, in the order entries were added: the oldest
  go first once there are more than ``ADAPTIVE_WARC_DIGEST_INDEX_SIZE``;
* ``dn`` -> ``[next seq, entries]``.

Eviction only forgets: an evicted body seen again is archived as a new
``response``, which becomes its entry.  With a Redis frontier the fleet
shares one index instead (:mod:`.fleetdigests`, the same interface).
"""

from __future__ import annotations

import json
from typing import Any

from .capture import Capture

#: the capture index, inside ADAPTIVE_WARC_DIR
INDEX = ".adaptive-warc.ldb"
DIGEST_PREFIX = b"d/"
ORDER_PREFIX = b"o/"
COUNTER_KEY = b"dn"


def _order_key(seq: int) -> bytes:
    return ORDER_PREFIX + f"{seq:016d}".encode()


class DigestIndex:
    """Payload digest -> first capture, bounded to *limit* entries (oldest evicted).

    The writer owns it as it owns the per-URL captures: entries found while
    writing wait in :attr:`pending` until :meth:`write` puts them in the
    batch of the fsync that makes their records durable.
    """

    def __init__(self, db: Any, limit: int) -> None:
        self.db = db
        self.limit = limit
        #: captures written but not durable yet (first capture of a digest wins)
        self.pending: dict[str, Capture] = {}
        raw = db.get(COUNTER_KEY)
        self.next_seq, self.size = json.loads(raw) if raw is not None else (0, 0)

    def lookup(self, digest: str) -> Capture | None:
        """The first capture of *digest* in this folder (pending or durable)."""
        capture = self.pending.get(digest)
        if capture is not None:
            return capture
        raw = self.db.get(DIGEST_PREFIX + digest.encode())
        if raw is None:
            return None
        _seq, fields = json.loads(raw)
        return Capture.from_json(json.dumps(fields).encode())

    def add(self, capture: Capture) -> None:
        """A ``response`` record just written: its digest's entry unless one exists."""
        if capture.digest and capture.digest not in self.pending and self.lookup(capture.digest) is None:
            self.pending[capture.digest] = capture

    def write(self, batch: Any) -> None:
        """Put the pending entries into *batch* (the durable-file batch)."""
        for digest, capture in self.pending.items():
            entry = [self.next_seq, json.loads(capture.to_json())]
            batch.put(DIGEST_PREFIX + digest.encode(), json.dumps(entry).encode())
            batch.put(_order_key(self.next_seq), digest.encode())
            self.next_seq += 1
            self.size += 1
        if self.pending:
            batch.put(COUNTER_KEY, json.dumps([self.next_seq, self.size]).encode())
        self.pending.clear()

    def evict(self) -> int:
        """Forget the oldest entries beyond the limit; returns how many.

        Its own batch, after the durable one: a kill between the two leaves
        the index a little over its limit until the next eviction, never
        naming a missing record.
        """
        excess = self.size - self.limit
        if excess <= 0:
            return 0
        removed = 0
        with self.db.write_batch() as batch:
            for key, digest in self.db.iterator(prefix=ORDER_PREFIX):
                if removed >= excess:
                    break
                batch.delete(key)
                batch.delete(DIGEST_PREFIX + digest)
                removed += 1
            self.size -= removed
            batch.put(COUNTER_KEY, json.dumps([self.next_seq, self.size]).encode())
        return removed


#: payload groups the frontier report lists, and captures it reads at most
TOP_GROUPS = 10
SCAN_LIMIT = 500_000
#: example URLs shown per group
EXAMPLES = 5


def shared_payloads(db: Any, *, top: int = TOP_GROUPS, scan_limit: int = SCAN_LIMIT) -> dict[str, Any]:
    """The payloads archived under most URLs: the groups a user may canonicalise.

    Read from the per-URL captures (``c/<url>``): URLs whose last capture
    holds the same payload digest are one group, whether their records are
    cross-URL revisits or responses of their own (the setting off).  At most
    *scan_limit* captures are read, so a report stays quick on a big archive.
    """
    urls: dict[str, list[str]] = {}
    counts: dict[str, int] = {}
    scanned = 0
    for key, raw in db.iterator(prefix=b"c/"):
        if scanned >= scan_limit:
            break
        scanned += 1
        digest = Capture.from_json(raw).digest
        counts[digest] = counts.get(digest, 0) + 1
        examples = urls.setdefault(digest, [])
        if len(examples) < EXAMPLES:
            examples.append(key[2:].decode())
    shared = sorted((d for d, n in counts.items() if n > 1), key=lambda d: (-counts[d], d))
    return {
        "captures": scanned,
        "complete": scanned < scan_limit,
        "groups": [{"digest": d, "urls": counts[d], "examples": urls[d]} for d in shared[:top]],
        "duplicates": sum(counts[d] - 1 for d in shared),
    }


def shared_payloads_in(folder: str) -> dict[str, Any]:
    """:func:`shared_payloads` of a stopped crawl's WARC folder (its index opened, then closed)."""
    import os

    import plyvel

    path = os.path.join(folder, INDEX)
    if not os.path.isdir(path):
        return {"unavailable": f"no WARC index in {folder}"}
    try:
        db = plyvel.DB(path)
    except plyvel.Error as exc:
        return {"unavailable": f"the WARC index {path} cannot be read ({exc})"}
    try:
        return shared_payloads(db)
    finally:
        db.close()
