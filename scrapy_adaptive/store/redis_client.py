"""Connecting to Redis with redis-py, and saying what went wrong in one line.

The optional extra ``scrapy-adaptive[redis]`` installs redis-py; without it
a Redis store is refused at open, naming the extra.  Every message names
the server by its URL with the password hidden (:func:`redacted`).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from .base import StoreError

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
