"""A real ``redis-server`` on a loopback port, started and stopped by the tests.

Debian's ``redis-server`` package provides the binary; when it is missing
and ``apt-get`` can run (CI runs as root), it is installed once.  The server
runs in a temporary folder with the append-only file on (``appendfsync
always`` for the tests: what a test is told is written is on disk), on ``127.0.0.1`` and a
free port, without persistence snapshots; :meth:`RedisServer.restart` kills
it with SIGKILL and starts it again on the same port and folder, which is
what the "Redis restarted loses nothing acknowledged" tests need.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import redis


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def redis_server_binary() -> str:
    """The path of ``redis-server``, installing Debian's package if it is missing."""
    found = shutil.which("redis-server")
    if found:
        return found
    if shutil.which("apt-get") and os.geteuid() == 0:
        install = ["apt-get", "install", "-y", "-q", "redis-server"]
        # a fresh machine may have no package lists yet: update once, then retry
        for step in (install, ["apt-get", "update", "-q"], install):
            subprocess.run(step, check=False, capture_output=True, timeout=600)
            found = shutil.which("redis-server")
            if found:
                return found
    raise RuntimeError("redis-server is not installed: apt-get install redis-server (the Redis store tests need it)")


class RedisServer:
    """One redis-server process; ``url`` is its ``redis://127.0.0.1:<port>/0``."""

    def __init__(self, folder: Path, *, password: str | None = None, fsync: str = "always") -> None:
        self.folder = folder
        self.fsync = fsync
        self.port = _free_port()
        self.password = password
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        auth = f":{self.password}@" if self.password else ""
        return f"redis://{auth}127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis.from_url(self.url)

    def start(self) -> RedisServer:
        args = [
            redis_server_binary(),
            "--bind", "127.0.0.1",
            "--port", str(self.port),
            "--dir", str(self.folder),
            "--appendonly", "yes",
            "--appendfsync", self.fsync,
            "--save", "",
            "--daemonize", "no",
            "--protected-mode", "yes",
            "--logfile", str(self.folder / "redis.log"),
        ]  # fmt: skip
        if self.password:
            args += ["--requirepass", self.password]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if self.client().ping():
                    return self
            except (redis.ConnectionError, redis.BusyLoadingError):
                time.sleep(0.05)
            except redis.AuthenticationError:
                return self
        self.stop()
        raise RuntimeError(f"redis-server did not start on port {self.port} (see {self.folder / 'redis.log'})")

    def kill(self) -> None:
        """SIGKILL: no shutdown save, only what the AOF holds survives."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=10)
        self.proc = None

    def restart(self) -> None:
        self.kill()
        self.start()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.proc = None

    def __enter__(self) -> RedisServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
