"""A shared implementation of :class:`~.base.Store` on Redis (redis-py).

Selected by ``ADAPTIVE_STORE_URL`` (``redis://`` or ``rediss://``; for a
Redis Cluster ``redis+cluster://`` or ``rediss+cluster://`` and any node's
address); the optional extra ``scrapy-adaptive[redis]`` installs redis-py.
docs/shared-frontier.md gives the key layout and the fleet's rules.

* Every key of one queue carries the queue as a Cluster *hash tag*, so what
  the frontier writes about one URL (record, entry, mark, its queue's
  counters, its change events) is one ``MULTI``/``EXEC`` in one slot.  On
  a Cluster a batch about several queues is split by queue
  (:func:`split_by_queue`), each part complete on its own: a forget cut
  short can be run again, a confirmation cut short is delivered again (at
  least once, as promised).
  A new queue's name enters the host index before its first transaction,
  so a queue never goes missing.
* Counters are shared by workers: the store writes the *difference*
  between a queue's row and the one this worker last read or wrote
  (:data:`ADDITIVE` counts with ``HINCRBY``; other facts only when this
  worker changed them), so every worker's counts add up.
* Host leases (:class:`~scrapy_adaptive.frontier.sharing.LeaseBoard`):
  ``SET NX PX`` on the queue's lease key, renewed every second, given back
  at a clean stop, lapsing after a ``kill -9``.
* With the append-only file on, Redis writes a transaction to the AOF
  before it answers: a Redis killed and restarted keeps everything a worker
  was told was written.  An unreachable Redis raises :class:`StoreError`
  with the URL (password hidden); nothing is half-written.

Values are bytes in, bytes out: nothing is pickled or unpickled, ever.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Collection, Iterator
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from . import keys
from .base import Batch, Conflict, Store, StoreError, split_by_queue
from .keys import FORGOTTEN_KEY, GONE_KEY, NEVER_KEY, QUARANTINED_KEY, URLS_KEY, VERSIONS_KEY, VISITS_KEY

# -- connecting with redis-py, and what went wrong in one line -----------------------
#
# The optional extra ``scrapy-adaptive[redis]`` installs redis-py; without it
# a Redis store is refused at open, naming the extra.  Every message names
# the server by its URL with the password hidden (:func:`redacted`).

try:  # the optional extra
    import redis
except ImportError:  # pragma: no cover - exercised by the refusal message
    redis = None  # type: ignore[assignment]

#: the URL schemes of ADAPTIVE_STORE_URL
SCHEMES = ("redis", "rediss", "redis+cluster", "rediss+cluster")


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


def connect(
    url: str,
    *,
    password: str | None = None,
    tls_ca: str | None = None,
    tls_cert: str | None = None,
    tls_key: str | None = None,
    timeout: float = 10.0,
) -> tuple[bool, Any]:
    """A client for *url*, checked with a ``PING``, and whether it is a Redis
    Cluster; :class:`StoreError` naming the setting, the server or the extra."""
    if redis is None:
        raise StoreError(
            f"ADAPTIVE_STORE_URL is {redacted(url)} but redis-py is not installed: pip install 'scrapy-adaptive[redis]'"
        )
    scheme = urlsplit(url).scheme
    if scheme not in SCHEMES:
        raise StoreError(
            f"ADAPTIVE_STORE_URL ({redacted(url)!r}) must start with redis:// or rediss:// "
            "(redis+cluster:// or rediss+cluster:// for a Redis Cluster)"
        )
    cluster = scheme.endswith("+cluster")
    scheme = scheme.removesuffix("+cluster")
    options: dict[str, object] = {"socket_timeout": timeout, "socket_connect_timeout": timeout}
    if password is not None:
        options["password"] = password
    if scheme == "rediss":
        options.update(
            {k: v for k, v in (("ssl_ca_certs", tls_ca), ("ssl_certfile", tls_cert), ("ssl_keyfile", tls_key)) if v}
        )
    try:
        if cluster:
            # redis-py finds every node from the one named
            plain = urlunsplit((scheme, *urlsplit(url)[1:]))
            client = redis.RedisCluster.from_url(plain, **options)  # type: ignore[arg-type]
        else:
            client = redis.Redis.from_url(url, **options)  # type: ignore[arg-type]
        client.ping()
    except (redis.RedisError, ValueError, OSError) as exc:
        raise store_error(redacted(url), "Connecting to", exc) from exc
    return cluster, client


def store_error(url: str, doing: str, exc: BaseException) -> StoreError:
    """What failed, where (*url*, already redacted), and what to do: a
    refused password names the two settings that give one."""
    if (
        redis is not None
        and isinstance(exc, redis.AuthenticationError | redis.ResponseError)
        and ("auth" in str(exc).lower() or "password" in str(exc).lower())
    ):
        return StoreError(
            f"Redis at {url} refused the password ({exc}): set the password in ADAPTIVE_STORE_URL "
            "(redis://:password@host:port/db) or ADAPTIVE_STORE_PASSWORD"
        )
    return StoreError(
        f"{doing} the Redis store at {url} failed ({type(exc).__name__}: {exc}). Nothing was half-written: "
        "start Redis (or fix ADAPTIVE_STORE_URL) and run the crawl again; it resumes from the last write "
        "Redis acknowledged"
    )


def close_client(client: Any) -> None:
    """Close a redis-py client and every socket it opened.

    A Redis Cluster client's ``close`` leaves its nodes' connection pools
    open (their sockets are closed only when collected): they are
    disconnected here, so a closed store holds no socket.
    """
    nodes = getattr(getattr(client, "nodes_manager", None), "nodes_cache", None) or {}
    for node in list(nodes.values()):
        connection = getattr(node, "redis_connection", None)
        if connection is not None:
            connection.connection_pool.disconnect()
    client.close()


# -- the store ------------------------------------------------------------------------

__all__ = ["ADDITIVE", "RedisStore", "close_client", "redacted"]

#: renew a lease only if it is still ours, in one step
_RENEW = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"
#: give a lease up only if it is still ours
_RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
#: the counter keys written as increments: every worker's counts add up
ADDITIVE = frozenset((URLS_KEY, NEVER_KEY, VISITS_KEY, VERSIONS_KEY, QUARANTINED_KEY, FORGOTTEN_KEY, GONE_KEY))
#: host names read per pipelined round trip
_CHUNK = 500


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
        self.url = redacted(url)
        self.namespace = namespace
        #: a Redis Cluster: batches are split by hash slot (see the module docstring)
        self.cluster, self._redis = connect(
            url, password=password, tls_ca=tls_ca, tls_cert=tls_cert, tls_key=tls_key, timeout=timeout
        )
        ns = namespace
        self._hosts_key = f"{ns}:hosts"
        self._workers_key = f"{ns}:workers"
        self._meta_key = f"{ns}:m"
        #: queue -> the counters row this worker last read or wrote (see the module docstring)
        self._baseline: dict[str, dict[str, Any]] = {}

    def _queue_key(self, queue: str, kind: str = "q") -> bytes:
        # the hash tag: one queue's keys in one Cluster slot
        return f"{self.namespace}:{{{queue}}}:{kind}".encode()

    def _record_key(self, queue: str, fp: bytes) -> bytes:
        return self._queue_key(queue, "u:") + fp

    def _text_key(self, queue: str, fp: bytes) -> bytes:
        return self._queue_key(queue, "t:") + fp

    def _call(self, doing: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run one redis-py call; its failure becomes a :class:`StoreError` saying what failed."""
        try:
            return fn(*args, **kwargs)
        except redis.RedisError as exc:
            raise store_error(self.url, doing, exc) from exc

    # -- reads -----------------------------------------------------------------

    def get_record(self, queue: str, fp: bytes) -> bytes | None:
        return self._call("Reading from", self._redis.get, self._record_key(queue, fp))

    def get_text(self, queue: str, fp: bytes) -> bytes | None:
        return self._call("Reading from", self._redis.get, self._text_key(queue, fp))

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
        count = 0
        for bounds in self._due(queue, now_ms):  # one ZLEXCOUNT per directive level present
            if count >= limit:
                break
            count += self._call("Reading from", self._redis.zlexcount, *bounds)
        return min(count, limit)

    def due_times(self, queue: str, now_ms: int, *, limit: int) -> list[int]:
        times: list[int] = []
        for bounds in self._due(queue, now_ms):
            if len(times) >= limit:
                break
            members = self._call("Reading from", self._redis.zrangebylex, *bounds, start=0, num=limit - len(times))
            times.extend(_decode_member(m)[1] for m in members)
        return times

    def _due(self, queue: str, now_ms: int) -> Iterator[tuple[bytes, bytes, bytes]]:
        """(key, min, max) lex ranges of the due members, one per directive
        level present: members sort by inverted directive, then time."""
        key = self._queue_key(queue)
        level = 0
        while level <= keys.MAX_DIRECTIVE:
            first = self._call(
                "Reading from", self._redis.zrangebylex, key, b"[" + bytes((level,)), b"+", start=0, num=1
            )
            if not first:
                break
            level = first[0][0]
            head = bytes((level,))
            upto = head + keys._TIME.pack(min(now_ms, keys.NEVER_MS)) + b"\xff" * 64
            yield key, b"[" + head, b"[" + upto
            level += 1

    def hosts(self) -> Iterator[tuple[str, bytes]]:
        """Every queue's counters; each row read becomes this worker's baseline."""
        for name, row in self.counter_rows():
            self._baseline[name] = row
            yield name, _row_bytes(row)

    def get_host(self, queue: str) -> bytes | None:
        row = self._rows([queue])[0]
        if row is None:
            return None
        self._baseline[queue] = row
        return _row_bytes(row)

    def counter_rows(self) -> Iterator[tuple[str, dict[str, Any]]]:
        """Every queue's counters as read, without touching the baselines (checkpoints, tools)."""
        for chunk in self._chunks(self.host_names()):
            for name, row in zip(chunk, self._rows(chunk), strict=True):
                if row is not None:
                    yield name, row

    def host_names(self) -> Iterator[str]:
        cursor = 0
        while True:
            cursor, found = self._call("Reading from", self._redis.sscan, self._hosts_key, cursor, None, 1000)
            for name in found:
                yield name.decode("utf-8")
            if cursor == 0:
                return

    def host_count(self) -> int:
        return int(self._call("Reading from", self._redis.scard, self._hosts_key))

    @staticmethod
    def _chunks(names: Iterator[str]) -> Iterator[list[str]]:
        chunk: list[str] = []
        for name in names:
            chunk.append(name)
            if len(chunk) >= _CHUNK:
                yield chunk
                chunk = []
        if chunk:
            yield chunk

    def _rows(self, names: list[str]) -> list[dict[str, Any] | None]:
        """The counters of *names* (None: a queue never written; an empty row is a row)."""
        pipe = self._redis.pipeline(transaction=False)
        for name in names:
            pipe.hgetall(self._queue_key(name, "c"))
            pipe.sismember(self._hosts_key, name)
        answers = self._call("Reading from", pipe.execute)
        rows: list[dict[str, Any] | None] = []
        for raw, known in zip(answers[::2], answers[1::2], strict=True):
            rows.append({k.decode(): json.loads(v) for k, v in raw.items()} if known else None)
        return rows

    def get_meta(self, name: str) -> bytes | None:
        return self._call("Reading from", self._redis.hget, self._meta_key, name)

    def pending(self, queues: Collection[str] | None = None) -> Iterator[tuple[bytes, bytes]]:
        """Every queue's marks, or *queues*' (one pipelined ``HGETALL`` per queue)."""
        yield from self._queue_hashes("p", queues)

    def events(self, queues: Collection[str] | None = None, limit: int = 1000) -> list[tuple[str, bytes, bytes]]:
        """The oldest *limit* of each queue read (pipelined ``ZRANGEBYLEX``),
        merged: the oldest *limit* of them all, whose events are then read
        (one ``HMGET`` per queue, pipelined).  An event another worker deleted
        in between is left out."""
        if limit <= 0:
            return []
        oldest: list[tuple[bytes, str]] = []
        for chunk in self._chunks(self.host_names() if queues is None else iter(sorted(queues))):
            pipe = self._redis.pipeline(transaction=False)
            for name in chunk:
                pipe.zrangebylex(self._queue_key(name, "e"), b"-", b"+", start=0, num=limit)
            for name, found in zip(chunk, self._call("Reading from", pipe.execute), strict=True):
                oldest.extend((key, name) for key in found)
            oldest = heapq.nsmallest(limit, oldest)
        if not oldest:
            return []
        by_queue: dict[str, list[bytes]] = {}
        for key, name in oldest:
            by_queue.setdefault(name, []).append(key)
        pipe = self._redis.pipeline(transaction=False)
        for name, found in by_queue.items():
            pipe.hmget(self._queue_key(name, "ev"), found)
        values = {
            (name, key): value
            for (name, found), read in zip(by_queue.items(), self._call("Reading from", pipe.execute), strict=True)
            for key, value in zip(found, read, strict=True)
        }
        return [(name, key, value) for key, name in oldest if (value := values[name, key]) is not None]

    def event_count(self, queues: Collection[str] | None = None) -> int:
        count = 0
        for chunk in self._chunks(self.host_names() if queues is None else iter(sorted(queues))):
            pipe = self._redis.pipeline(transaction=False)
            for name in chunk:
                pipe.zcard(self._queue_key(name, "e"))
            count += sum(self._call("Reading from", pipe.execute))
        return count

    def records(self) -> Iterator[tuple[bytes, bytes]]:
        """Every record, by ``SCAN`` (of every primary node on a Cluster)."""
        prefix = f"{self.namespace}:{{".encode()
        glob = prefix.replace(b"[", b"\\[").replace(b"*", b"\\*").replace(b"?", b"\\?") + b"*}:u:*"
        keys_found = self._call("Reading from", self._redis.scan_iter, match=glob, count=1000)
        while True:
            found = self._call("Reading from", lambda: [k for _, k in zip(range(_CHUNK), keys_found)])
            yield from self._values(prefix, found)
            if len(found) < _CHUNK:
                return

    def _values(self, prefix: bytes, found: list[bytes]) -> Iterator[tuple[bytes, bytes]]:
        pipe = self._redis.pipeline(transaction=False)
        for key in found:
            pipe.get(key)
        for key, value in zip(found, self._call("Reading from", pipe.execute) if found else [], strict=True):
            if value is not None:
                # <ns>:{<queue>}:u:<fp>: the fingerprint follows the first "}:u:"
                yield key[len(prefix) :].split(b"}:u:", 1)[1], value

    def quarantined(self) -> Iterator[tuple[bytes, bytes]]:
        yield from self._queue_hashes("x")

    def _queue_hashes(self, kind: str, queues: Collection[str] | None = None) -> Iterator[tuple[bytes, bytes]]:
        for chunk in self._chunks(self.host_names() if queues is None else iter(sorted(queues))):
            pipe = self._redis.pipeline(transaction=False)
            for name in chunk:
                pipe.hgetall(self._queue_key(name, kind))
            for found in self._call("Reading from", pipe.execute):
                yield from found.items()

    # -- the one write -----------------------------------------------------------

    def write(self, batch: Batch) -> None:
        rows = {queue: json.loads(raw) for queue, raw in batch.hosts.items()}
        new = [queue for queue in rows if queue not in self._baseline]
        if not self.cluster:
            self._transaction(batch, rows, new)
            return
        if new:  # the index first (see "Batches on a Cluster")
            self._call("Writing to", self._redis.sadd, self._hosts_key, *new)
        for part in split_by_queue(batch):
            self._transaction(part, {q: rows[q] for q in part.hosts}, [])

    def _transaction(self, batch: Batch, rows: dict[str, dict[str, Any]], new: list[str]) -> None:
        """*batch* in one ``MULTI``/``EXEC`` (on a Cluster, its keys are in one slot)."""
        try:
            with self._redis.pipeline(transaction=True) as pipe:
                if batch.absent:
                    # a new URL: written only if no other worker wrote it since
                    # this one looked (WATCH makes EXEC fail if one does now)
                    watched = [self._record_key(queue, fp) for queue, fp in batch.absent]
                    pipe.watch(*watched)
                    if pipe.exists(*watched):
                        raise Conflict(f"a record that must be new exists in {self.url}")
                    pipe.multi()
                if new:
                    pipe.sadd(self._hosts_key, *new)
                self._queue_writes(pipe, batch, rows)
                if not len(pipe):
                    return
                pipe.execute()
        except redis.WatchError as exc:
            raise Conflict(f"another worker wrote a new record first in {self.url}") from exc
        except redis.RedisError as exc:
            raise store_error(self.url, "Writing to", exc) from exc
        self._baseline.update(rows)

    def _queue_writes(self, pipe: Any, batch: Batch, rows: dict[str, dict[str, Any]]) -> None:
        for queue, directive, next_ms, fp in batch.entries_deleted:
            pipe.zrem(self._queue_key(queue), _member(directive, next_ms, fp))
        for queue, directive, next_ms, fp in batch.entries_put:
            pipe.zadd(self._queue_key(queue), {_member(directive, next_ms, fp): 0})
        for (queue, fp), raw in batch.quarantined.items():
            pipe.hset(self._queue_key(queue, "x"), fp, raw)
            pipe.delete(self._record_key(queue, fp), self._text_key(queue, fp))
        for queue, fp in batch.records_deleted:
            pipe.delete(self._record_key(queue, fp), self._text_key(queue, fp))
        for (queue, fp), raw in batch.records.items():
            pipe.set(self._record_key(queue, fp), raw)
        for (queue, fp), text in batch.texts.items():
            if text is None:
                pipe.delete(self._text_key(queue, fp))
            else:
                pipe.set(self._text_key(queue, fp), text)
        for queue, row in rows.items():
            self._write_row(pipe, queue, row)
        if batch.meta:
            pipe.hset(self._meta_key, mapping=batch.meta)  # type: ignore[arg-type]
        for (queue, fp), mark in batch.pending.items():
            if mark is None:
                pipe.hdel(self._queue_key(queue, "p"), fp)
            else:
                pipe.hset(self._queue_key(queue, "p"), fp, mark)
        for (queue, key), event in batch.events.items():
            if event is None:
                pipe.zrem(self._queue_key(queue, "e"), key)
                pipe.hdel(self._queue_key(queue, "ev"), key)
            else:
                pipe.zadd(self._queue_key(queue, "e"), {key: 0})
                pipe.hset(self._queue_key(queue, "ev"), key, event)

    def _write_row(self, pipe: Any, queue: str, row: dict[str, Any]) -> None:
        """Queue the difference between *row* and this worker's baseline (see the module docstring)."""
        key = self._queue_key(queue, "c")
        old = self._baseline.get(queue) or {}
        for name in row.keys() | old.keys():
            new_value, old_value = row.get(name), old.get(name)
            if name in ADDITIVE:
                delta = int(new_value or 0) - int(old_value or 0)
                if delta:
                    pipe.hincrby(key, name, delta)
            elif new_value != old_value:
                if new_value is None:
                    pipe.hdel(key, name)
                else:
                    pipe.hset(key, name, json.dumps(new_value, separators=(",", ":")))

    # -- host leases (the LeaseBoard of .sharing) -------------------------------------

    def acquire(self, queues: list[str], worker: str, ttl: float) -> list[str]:
        """The queues of *queues* nobody held, now held by *worker* for *ttl* seconds."""
        pipe = self._redis.pipeline(transaction=False)
        for queue in queues:
            pipe.set(self._queue_key(queue, "lease"), worker, nx=True, px=_ms(ttl))
        taken = self._call("Leasing hosts in", pipe.execute)
        return [queue for queue, ok in zip(queues, taken, strict=True) if ok]

    def renew(self, queues: list[str], worker: str, ttl: float) -> list[str]:
        """Extend *worker*'s leases; return the queues whose lease it lost."""
        pipe = self._redis.pipeline(transaction=False)
        for queue in queues:
            # execute_command: redis-py's cluster pipeline has no eval()
            pipe.execute_command("EVAL", _RENEW, 1, self._queue_key(queue, "lease"), worker, _ms(ttl))
        kept = self._call("Renewing host leases in", pipe.execute)
        return [queue for queue, ok in zip(queues, kept, strict=True) if not ok]

    def release(self, queues: list[str], worker: str) -> None:
        pipe = self._redis.pipeline(transaction=False)
        for queue in queues:
            pipe.execute_command("EVAL", _RELEASE, 1, self._queue_key(queue, "lease"), worker)
        self._call("Releasing host leases in", pipe.execute)

    def holder(self, queue: str) -> str | None:
        raw = self._call("Reading from", self._redis.get, self._queue_key(queue, "lease"))
        return None if raw is None else raw.decode("utf-8", "replace")

    def heartbeat(self, worker: str, ttl: float) -> list[str]:
        """Say *worker* is alive (server time); return the workers that are."""
        if self.cluster:  # one clock for every worker: the node holding the list's
            node = self._redis.get_node_from_key(self._workers_key)
            seconds, micros = self._call("Reading from", self._redis.time, target_nodes=node)
        else:
            seconds, micros = self._call("Reading from", self._redis.time)
        now = seconds * 1000 + micros // 1000
        pipe = self._redis.pipeline(transaction=True)
        pipe.zadd(self._workers_key, {worker: now})
        pipe.zremrangebyscore(self._workers_key, "-inf", now - _ms(ttl))
        pipe.zrange(self._workers_key, 0, -1)
        return [name.decode("utf-8", "replace") for name in self._call("Writing to", pipe.execute)[-1]]

    def leave(self, worker: str) -> None:
        self._call("Writing to", self._redis.zrem, self._workers_key, worker)

    def close(self) -> None:
        close_client(self._redis)


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def _row_bytes(row: dict[str, Any]) -> bytes:
    return json.dumps(row, separators=(",", ":")).encode()
