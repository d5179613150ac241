"""The payload-digest index of a Redis fleet: one per fleet, not per WARC folder.

With ``ADAPTIVE_STORE_URL`` naming Redis and cross-URL deduplication on,
the workers of a fleet share one index, so a body archived by any worker is
a revisit for the others: their WARC folders are one archive (replay them in
one collection).  The same rule as the folder's index
(:mod:`.digests`): a worker publishes an entry only after the fsync that
makes its record durable, so no worker ever refers to a record that a kill
could still cut off.

Keys, under the store's namespace, in one Cluster hash slot (``{warc}``):
``<ns>:{warc}:d`` (hash: digest -> capture), ``<ns>:{warc}:o`` (sorted
set: digest by the order entries were added, the oldest evicted beyond
``ADAPTIVE_WARC_DIGEST_INDEX_SIZE``) and ``<ns>:{warc}:n`` (the order's
counter).  Publishing is one Lua script: the first worker to publish a
digest keeps it (``HSETNX``), and eviction happens in the same step.
"""

from __future__ import annotations

from typing import Any

from ..config.settings import AdaptiveConfig
from ..store.statedir import shared_store
from .capture import Capture

#: publish pending entries (first one wins) and evict the oldest beyond the limit, atomically
_PUBLISH = """
for i = 2, #ARGV, 2 do
  if redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) == 1 then
    redis.call('ZADD', KEYS[2], redis.call('INCR', KEYS[3]), ARGV[i])
  end
end
local excess = redis.call('ZCARD', KEYS[2]) - tonumber(ARGV[1])
if excess > 0 then
  local old = redis.call('ZPOPMIN', KEYS[2], excess)
  for j = 1, #old, 2 do redis.call('HDEL', KEYS[1], old[j]) end
end
return redis.call('ZCARD', KEYS[2])
"""


class FleetDigestIndex:
    """Payload digest -> first capture, shared by a fleet's workers in Redis.

    The interface of :class:`~.digests.DigestIndex`; a Redis error is
    raised as an :class:`OSError` naming the store, which stops the writer
    as a failed write does (the pages are archived again after a restart).
    """

    def __init__(self, store: Any, limit: int) -> None:
        #: a :class:`~..store.redis.RedisStore` of its own: the connection, its URL and namespace
        self.store = store
        self.limit = limit
        self.pending: dict[str, Capture] = {}
        self.size = 0
        prefix = f"{store.namespace}:{{warc}}"
        self.keys = (f"{prefix}:d", f"{prefix}:o", f"{prefix}:n")

    def _redis(self, doing: str, call: Any, *args: Any) -> Any:
        try:
            return call(*args)
        except Exception as exc:  # redis-py's errors: the store is named, the writer stops
            raise OSError(f"{doing} the fleet's WARC digest index in Redis at {self.store.url}: {exc}") from exc

    def lookup(self, digest: str) -> Capture | None:
        capture = self.pending.get(digest)
        if capture is not None:
            return capture
        raw = self._redis("Reading", self.store._redis.hget, self.keys[0], digest)
        return Capture.from_json(raw) if raw is not None else None

    def add(self, capture: Capture) -> None:
        if capture.digest and capture.digest not in self.pending and self.lookup(capture.digest) is None:
            self.pending[capture.digest] = capture

    def write(self, batch: Any) -> None:
        """Publish the pending entries (their records are durable: called after the fsync).

        *batch* (the folder's) is not used: the fleet's index is in Redis.
        """
        if not self.pending:
            return
        args: list[Any] = [self.limit]
        for digest, capture in self.pending.items():
            args += [digest, capture.to_json()]
        self.size = self._redis("Writing", self.store._redis.eval, _PUBLISH, 3, *self.keys, *args)
        self.pending.clear()

    def evict(self) -> int:
        return 0  # done by the publishing script

    def close(self) -> None:
        self.store.close()


def fleet_index(config: AdaptiveConfig, spider: str) -> FleetDigestIndex | None:
    """The fleet's index when the frontier is in Redis (None: the folder's own).

    Raises :class:`~..store.base.StoreError` (one line naming
    ``ADAPTIVE_STORE_URL``) when Redis cannot be reached.
    """
    shared = shared_store(config, spider)
    if shared is None or not config.warc_dedup_across_urls:
        return None
    return FleetDigestIndex(shared.connect(), config.warc_digest_index_size)
