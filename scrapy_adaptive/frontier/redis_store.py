"""A shared implementation of :class:`~.store.Store` on Redis (redis-py).

Selected by ``ADAPTIVE_STORE_URL`` (``redis://`` or ``rediss://``); the
package's optional extra ``scrapy-adaptive[redis]`` installs redis-py.

Layout, every key under the *namespace* (``adaptive:<spider>`` by default)::

    <ns>:{<queue>}:q   sorted set, all scores 0: the queue's entries as members
                       <255-directive><next_ms, 8 bytes big-endian><fp>, so
                       ZRANGEBYLEX returns them in LevelDB's key order
    <ns>:u:<fp>        string: a URL's record (the bytes the frontier wrote)
    <ns>:h             hash: queue -> its counters
    <ns>:m             hash: state-wide facts (format, spider, policies' aggregates)
    <ns>:p             hash: fp -> pending-delivery mark
    <ns>:x             hash: fp -> raw bytes of a quarantined record

The braces are a Redis Cluster *hash tag*: every entry of one queue lives in
one key, in one slot.  Records are addressed by fingerprint only (the
contract's ``get_record(fp)``), so a batch spans several keys: this store
targets a standalone Redis (or a primary with replicas); see
docs/shared-frontier.md for what Cluster needs.

Values are bytes in, bytes out: nothing is pickled or unpickled, ever.

Atomicity and durability: every :meth:`RedisStore.write` is one
``MULTI``/``EXEC`` transaction, applied by Redis all at once.  With the
append-only file on (``appendonly yes``), Redis writes the transaction to
the AOF before it answers, so a Redis killed and restarted keeps everything
a worker was told was written; a transaction cut at the AOF's end is
dropped whole at load.  An unreachable Redis raises :class:`StoreError`
with the URL (password hidden) and nothing is half-written: ``EXEC`` either
reached the server or the transaction never started.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from . import keys
from .store import Batch, Store, StoreError

try:  # the optional extra
    import redis
except ImportError:  # pragma: no cover - exercised by the refusal message
    redis = None  # type: ignore[assignment]

#: renew a claim only if it is still ours (the token), in one step
_RENEW = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"
#: give a claim up only if it is still ours
_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"


class ClaimHeld(StoreError):
    """Another live worker holds the namespace: the message names it."""


def redacted(url: str) -> str:
    """*url* without its password, for messages and logs.

    >>> redacted("redis://:s3cret@127.0.0.1:6379/0")
    'redis://:***@127.0.0.1:6379/0'
    >>> redacted("rediss://user:pw@example.org/2")
    'rediss://user:***@example.org/2'
    >>> redacted("redis://127.0.0.1:6379/0")
    'redis://127.0.0.1:6379/0'
    """
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, f"{user}:***@{host}", parts.path, parts.query, parts.fragment))


def _member(directive: int, next_ms: int, fp: bytes) -> bytes:
    """A queue entry as a sorted-set member: the LevelDB key without its queue prefix."""
    return keys.queue_entry_key("", directive, next_ms, fp)[len(keys.queue_prefix("")) :]


def _decode_member(member: bytes) -> tuple[int, int, bytes]:
    return keys.decode_queue_entry(keys.queue_prefix("") + member, "")


class RedisStore(Store):
    """A :class:`Store` in one Redis database, shared by every worker that opens it.

    *url* is a redis-py URL (``redis://[[user]:password@]host[:port][/db]``,
    ``rediss://`` for TLS); *password*, *tls_ca*, *tls_cert*, *tls_key*
    override or add to what it says.  The connection is checked with a
    ``PING`` at once, so a wrong address or password is refused at open.
    """

    def __init__(
        self,
        url: str,
        *,
        namespace: str = "adaptive",
        password: str | None = None,
        tls_ca: str | None = None,
        tls_cert: str | None = None,
        tls_key: str | None = None,
        timeout: float = 10.0,
    ) -> None:
        if redis is None:
            raise StoreError(
                f"ADAPTIVE_STORE_URL is {redacted(url)} but redis-py is not installed: "
                "pip install 'scrapy-adaptive[redis]'"
            )
        scheme = urlsplit(url).scheme
        if scheme not in ("redis", "rediss"):
            raise StoreError(f"ADAPTIVE_STORE_URL ({redacted(url)!r}) must start with redis:// or rediss://")
        self.url = redacted(url)
        self.namespace = namespace
        options: dict[str, object] = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
        if password is not None:
            options["password"] = password
        if scheme == "rediss":
            options.update(
                {k: v for k, v in (("ssl_ca_certs", tls_ca), ("ssl_certfile", tls_cert), ("ssl_keyfile", tls_key)) if v}
            )
        try:
            self._redis = redis.Redis.from_url(url, **options)  # type: ignore[arg-type]
            self._redis.ping()
        except (redis.RedisError, ValueError, OSError) as exc:
            raise self._error("Connecting to", exc) from exc
        ns = namespace
        self._record_prefix = f"{ns}:u:".encode()
        self._hosts_key = f"{ns}:h"
        self._meta_key = f"{ns}:m"
        self._pending_key = f"{ns}:p"
        self._quarantine_key = f"{ns}:x"
        self._claim_key = f"{ns}:writer"
        #: this worker's claim on the namespace: its token, and how long it lasts (ms)
        self._claim: tuple[bytes, int] | None = None

    def _error(self, doing: str, exc: BaseException) -> StoreError:
        if (
            redis is not None
            and isinstance(exc, redis.AuthenticationError | redis.ResponseError)
            and ("auth" in str(exc).lower() or "password" in str(exc).lower())
        ):
            return StoreError(
                f"Redis at {self.url} refused the password ({exc}): set the password in ADAPTIVE_STORE_URL "
                "(redis://:password@host:port/db) or ADAPTIVE_STORE_PASSWORD"
            )
        return StoreError(
            f"{doing} the Redis store at {self.url} failed ({type(exc).__name__}: {exc}). Nothing was half-written: "
            "start Redis (or fix ADAPTIVE_STORE_URL) and run the crawl again; it resumes from the last write "
            "Redis acknowledged"
        )

    def _queue_key(self, queue: str) -> bytes:
        # the hash tag: one queue's entries in one Cluster slot
        return f"{self.namespace}:{{{queue}}}:q".encode()

    def _call(self, doing: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run one redis-py call; its failure becomes a :class:`StoreError` saying what failed."""
        try:
            return fn(*args, **kwargs)
        except redis.RedisError as exc:
            raise self._error(doing, exc) from exc

    # -- reads -----------------------------------------------------------------

    def get_record(self, fp: bytes) -> bytes | None:
        return self._call("Reading from", self._redis.get, self._record_prefix + fp)

    def queue_entries(
        self, queue: str, *, limit: int, start: tuple[int, int, bytes] | None = None
    ) -> Iterator[tuple[int, int, bytes]]:
        low = b"-" if start is None else b"[" + _member(*start)
        members = self._call(
            "Reading from", self._redis.zrangebylex, self._queue_key(queue), low, b"+", start=0, num=limit
        )
        for member in members:
            yield _decode_member(member)

    def count_due(self, queue: str, now_ms: int, *, limit: int) -> int:
        # Members sort by inverted directive, then time: for each directive
        # level present, count its members up to now with one ZLEXCOUNT.
        key = self._queue_key(queue)
        count = 0
        level = 0
        while level <= keys.MAX_DIRECTIVE and count < limit:
            first = self._call(
                "Reading from", self._redis.zrangebylex, key, b"[" + bytes((level,)), b"+", start=0, num=1
            )
            if not first:
                break
            level = first[0][0]
            head = bytes((level,))
            upto = head + keys._TIME.pack(min(now_ms, keys.NEVER_MS)) + b"\xff" * 64
            count += self._call("Reading from", self._redis.zlexcount, key, b"[" + head, b"[" + upto)
            level += 1
        return min(count, limit)

    def hosts(self) -> Iterator[tuple[str, bytes]]:
        for name, raw in self._scan_hash(self._hosts_key):
            yield name.decode("utf-8"), raw

    def get_meta(self, name: str) -> bytes | None:
        return self._call("Reading from", self._redis.hget, self._meta_key, name)

    def pending(self) -> Iterator[tuple[bytes, bytes]]:
        yield from self._scan_hash(self._pending_key)

    def records(self) -> Iterator[tuple[bytes, bytes]]:
        prefix = self._record_prefix
        pattern = prefix.replace(b"[", b"\\[").replace(b"*", b"\\*").replace(b"?", b"\\?") + b"*"
        cursor = 0
        while True:
            cursor, found = self._call("Reading from", self._redis.scan, cursor, pattern, 1000)
            values = self._call("Reading from", self._redis.mget, found) if found else []
            for key, value in zip(found, values, strict=True):
                if value is not None:
                    yield key[len(prefix) :], value
            if cursor == 0:
                return

    def quarantined(self) -> Iterator[tuple[bytes, bytes]]:
        yield from self._scan_hash(self._quarantine_key)

    def _scan_hash(self, key: str) -> Iterator[tuple[bytes, bytes]]:
        cursor = 0
        while True:
            cursor, found = self._call("Reading from", self._redis.hscan, key, cursor, None, 1000)
            yield from found.items()
            if cursor == 0:
                return

    # -- the one write -----------------------------------------------------------

    def write(self, batch: Batch) -> None:
        pipe = self._redis.pipeline(transaction=True)
        for queue, directive, next_ms, fp in batch.entries_deleted:
            pipe.zrem(self._queue_key(queue), _member(directive, next_ms, fp))
        for queue, directive, next_ms, fp in batch.entries_put:
            pipe.zadd(self._queue_key(queue), {_member(directive, next_ms, fp): 0})
        for fp, raw in batch.quarantined.items():
            pipe.hset(self._quarantine_key, fp, raw)
            pipe.delete(self._record_prefix + fp)
        if batch.records:
            pipe.mset({self._record_prefix + fp: raw for fp, raw in batch.records.items()})
        if batch.hosts:
            pipe.hset(self._hosts_key, mapping=batch.hosts)  # type: ignore[arg-type]
        if batch.meta:
            pipe.hset(self._meta_key, mapping=batch.meta)  # type: ignore[arg-type]
        gone = [fp for fp, mark in batch.pending.items() if mark is None]
        kept = {fp: mark for fp, mark in batch.pending.items() if mark is not None}
        if gone:
            pipe.hdel(self._pending_key, *gone)
        if kept:
            pipe.hset(self._pending_key, mapping=kept)  # type: ignore[arg-type]
        if not pipe.command_stack:
            return
        try:
            pipe.execute()
        except redis.RedisError as exc:
            raise self._error("Writing to", exc) from exc

    # -- the writer's claim ------------------------------------------------------

    def claim(self, worker: str, *, ttl: float) -> None:
        """Become the one writer of this namespace for *ttl* seconds (renewed by :meth:`renew_claim`).

        The frontier keeps per-host state in memory (heap, slots, counters)
        and assumes it is the only writer; until host leases share a
        namespace between workers (docs/shared-frontier.md), a second worker
        is refused.  A worker killed with ``kill -9`` leaves its claim to
        expire after *ttl*: then another may start.
        """
        token = worker.encode()
        ms = max(1, int(ttl * 1000))
        taken = self._call("Claiming", self._redis.set, self._claim_key, token, nx=True, px=ms)
        if not taken:
            holder = self._call("Claiming", self._redis.get, self._claim_key) or b"?"
            left = self._call("Claiming", self._redis.pttl, self._claim_key)
            raise ClaimHeld(
                f"The Redis store {self.url} namespace {self.namespace} is in use by the worker "
                f"{holder.decode('utf-8', 'replace')} (its claim lapses {max(0, left) / 1000:.0f} s after its last "
                "renewal, if it died). One worker per namespace: give this one its own ADAPTIVE_STORE_NAMESPACE, "
                "or wait for the other to stop."
            )
        self._claim = (token, ms)

    def keep_alive(self) -> None:
        self.renew_claim()

    def renew_claim(self) -> None:
        """Extend the claim; :class:`StoreError` if it lapsed (another worker may have taken over)."""
        if self._claim is None:
            return
        token, ms = self._claim
        if not self._call("Renewing the claim on", self._redis.eval, _RENEW, 1, self._claim_key, token, ms):
            self._claim = None
            raise StoreError(
                f"This worker's claim on the Redis store {self.url} namespace {self.namespace} lapsed (the worker "
                "stalled longer than the claim lasts, or the key was deleted); it stops so that two workers "
                "never write one frontier. Restart it."
            )

    def close(self) -> None:
        if self._claim is not None:
            try:
                self._redis.eval(_RELEASE, 1, self._claim_key, self._claim[0])
            except redis.RedisError:
                pass  # an unreachable Redis lets the claim lapse by itself
            self._claim = None
        self._redis.close()
