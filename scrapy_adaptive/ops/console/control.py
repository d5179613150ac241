"""The running crawl's control channel: a Unix socket in the state folder.

A running crawl holds its database's lock, so ``scrapy frontier`` cannot
open the state; instead the crawl listens on ``<state folder>/control.sock``
and answers with the same :class:`~.api.FrontierConsole` a stopped crawl is
read with.  Requests are handled in the crawl's reactor thread, so a seed
or a forget is applied by the frontier's one owner, between two verdicts.

Who may talk to it: the folder is ``0700`` and the socket ``0600``, so only
the crawl's own user; no network port is opened and no token is needed.

Protocol: the client sends one JSON line, ``{"op": ..., ...}``; the crawl
answers JSON lines and closes the connection.  A ``{"error": "..."}`` line
says what went wrong.  Ops: ``report``, ``url`` (``url``), ``seed``
(``urls``), ``forget`` (``urls``, ``regex``), ``export``, ``changes``
(``since``, ``url``, ``kinds``, ``limit``), ``schedule``.

A report or an export scans records in the reactor thread: the crawl pauses
for it (about a second per 100,000 records exported; a report reads a
bounded sample).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import socket
from collections.abc import Callable, Iterator
from typing import Any

from ...config.spec import counted

logger = logging.getLogger(__name__)

SOCKET = "control.sock"
#: longest path a Unix socket address can hold (Linux: 108 bytes with the NUL)
MAX_PATH = 107
#: seconds a client waits for the crawl's answer
TIMEOUT = 60.0

Handler = Callable[[dict[str, Any]], Iterator[dict[str, Any]]]


class ControlUnavailable(Exception):
    """No crawl answers on the state folder's socket."""


def socket_path(state_path: str) -> str:
    return os.path.join(state_path, SOCKET)


def serve(state_path: str, handler: Handler) -> Any:
    """Listen on the state folder's socket (the reactor's ``listenUNIX``).

    Returns the listening port, or None (with a warning) when the socket
    cannot be made: the crawl goes on, only the console cannot reach it.
    The caller holds the state's lock, so a socket file already there is a
    leftover of a killed crawl and is removed.
    """
    from twisted.internet import reactor
    from twisted.internet.protocol import Factory
    from twisted.protocols.basic import LineOnlyReceiver

    path = socket_path(state_path)
    if len(path.encode()) > MAX_PATH:
        logger.warning(
            "The state folder's path is too long for a control socket (%s, at most %d): `scrapy frontier` "
            "cannot reach this running crawl. Use a shorter ADAPTIVE_STATE_DIR.",
            counted(len(path.encode()), "byte"),
            MAX_PATH,
        )
        return None

    class Control(LineOnlyReceiver):
        MAX_LENGTH = 1 << 20

        def lineReceived(self, line: bytes) -> None:
            try:
                request = json.loads(line)
                if not isinstance(request, dict):
                    raise ValueError("a request is a JSON object")
                for answer in handler(request):
                    self.sendLine(json.dumps(answer, ensure_ascii=False, default=str).encode())
            except Exception as exc:  # an answer, never a crawl failure
                logger.warning("The control channel could not answer %r: %s", line[:200], exc)
                self.sendLine(json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())
            self.transport.loseConnection()

    try:
        if os.path.exists(path):
            os.unlink(path)
        return reactor.listenUNIX(path, Factory.forProtocol(Control), mode=0o600)  # type: ignore[attr-defined]
    except Exception as exc:
        logger.warning("Cannot open the control socket %s (%s): `scrapy frontier` cannot reach this crawl.", path, exc)
        return None


def stop(port: Any) -> None:
    """Stop listening (Twisted removes the socket file; one left by a killed
    crawl is refused by the client and replaced by the next crawl)."""
    if port is not None:
        port.stopListening()


def ask(state_path: str, request: dict[str, Any], *, timeout: float = TIMEOUT) -> Iterator[dict[str, Any]]:
    """Send *request* to the crawl running on *state_path*; yield its answers.

    :class:`ControlUnavailable` when no crawl listens there (no socket, or
    one left by a crawl that was killed).
    """
    path = socket_path(state_path)
    if not os.path.exists(path):
        raise ControlUnavailable(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(timeout)
    try:
        try:
            sock.connect(path)
        except OSError as exc:
            if exc.errno in (errno.ECONNREFUSED, errno.ENOENT):
                raise ControlUnavailable(path) from exc
            raise
        sock.sendall(json.dumps(request).encode() + b"\r\n")
        buffer = b""
        while True:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            buffer += chunk
            *lines, buffer = buffer.split(b"\r\n")
            for line in lines:
                if line:
                    yield json.loads(line)
        if buffer.strip():
            yield json.loads(buffer)
    finally:
        sock.close()
