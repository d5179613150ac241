"""The client side of every test site: start it as a child process, stop it.

A Twisted reactor cannot be restarted and does not share well with a test
runner (or with a Scrapy crawl in the same process), so the test process
and the benchmarks run each site as a child: ``python -m <site module> ...
--exit-on-stdin-eof --max-seconds N``.  :class:`SiteProcess` waits (bounded)
for the child's ``READY {json}`` line (see :mod:`testsite.serving`), keeps
draining its stdout, and stops it: stdin closed, then SIGTERM, then SIGKILL,
each wait bounded.  The child also stops by itself when this process dies
or after ``max_seconds``.
"""

from __future__ import annotations

import json
import logging
import os
import selectors
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from .serving import READY_PREFIX

__all__ = ["REPO_ROOT", "SiteError", "SiteProcess"]

logger = logging.getLogger(__name__)

#: The repository root: holds ``testsite``, ``tests`` and ``bench``, so a
#: child started there imports them even when nothing is installed.
REPO_ROOT = Path(__file__).resolve().parents[1]

#: A child that outlives this long has been forgotten: it stops by itself.
DEFAULT_MAX_SECONDS = 4 * 3600.0


class SiteError(RuntimeError):
    """A test site's process did not come up."""


class SiteProcess:
    """``with SiteProcess("tests.mockserver", ["--hosts", "127.0.0.1"]) as site: site.ports``.

    ``info`` is the child's ready line (``info["hosts"]`` maps each host to
    its port), available once :meth:`start` returns.
    """

    def __init__(
        self,
        module: str,
        args: Sequence[str] = (),
        *,
        startup_timeout: float = 20.0,
        stop_timeout: float = 5.0,
        max_seconds: float = DEFAULT_MAX_SECONDS,
    ) -> None:
        self.module = module
        self.args = [
            sys.executable, "-m", module, *args,
            "--exit-on-stdin-eof", "--max-seconds", repr(float(max_seconds)),
        ]  # fmt: skip
        self.startup_timeout = startup_timeout
        self.stop_timeout = stop_timeout
        self.info: dict[str, Any] = {}
        self.ports: dict[str, int] = {}
        self.proc: subprocess.Popen[bytes] | None = None
        self._pump: threading.Thread | None = None

    def start(self) -> Self:
        """Spawn the child and return once it listens (its ready line is in ``info``)."""
        if self.proc is not None:
            raise SiteError(f"{self.module} already started")
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
        env["PYTHONUNBUFFERED"] = "1"
        self.proc = subprocess.Popen(self.args, cwd=REPO_ROOT, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        try:
            self.info, rest = self._await_ready(self.proc)
        except BaseException:
            self.stop()
            raise
        self.ports = {str(host): int(port) for host, port in self.info["hosts"].items()}
        self._pump = threading.Thread(
            target=self._drain, args=(self.proc, rest), name=f"{self.module}-stdout", daemon=True
        )
        self._pump.start()
        return self

    def _await_ready(self, proc: subprocess.Popen[bytes]) -> tuple[dict[str, Any], bytes]:
        """Read stdout until the ready line, the child's death or the timeout.

        Reads the pipe directly (no buffered reader hiding lines from the
        selector); returns the fields and whatever came after the line.
        """
        assert proc.stdout is not None
        fd = proc.stdout.fileno()
        buffer = b""
        deadline = time.monotonic() + self.startup_timeout
        with selectors.DefaultSelector() as selector:
            selector.register(fd, selectors.EVENT_READ)
            while (remaining := deadline - time.monotonic()) > 0:
                if not selector.select(min(remaining, 0.5)):
                    continue
                chunk = os.read(fd, 65536)
                if not chunk:
                    raise SiteError(f"{self.module} exited early (status {proc.wait(self.stop_timeout)})")
                buffer += chunk
                while b"\n" in buffer:
                    line, buffer = buffer.split(b"\n", 1)
                    text = line.decode("utf-8", "replace")
                    if text.startswith(READY_PREFIX):
                        return json.loads(text[len(READY_PREFIX) :]), buffer
                    logger.debug("%s: %s", self.module, text)
        raise SiteError(f"{self.module} not ready within {self.startup_timeout:g} s")

    def _drain(self, proc: subprocess.Popen[bytes], rest: bytes) -> None:
        """Keep reading the child's stdout so a chatty child never blocks on a full pipe."""
        if rest.strip():
            logger.debug("%s: %s", self.module, rest.decode("utf-8", "replace").rstrip())
        stream = proc.stdout
        if stream is None:
            return
        fd = stream.fileno()
        while chunk := os.read(fd, 65536):
            logger.debug("%s: %s", self.module, chunk.decode("utf-8", "replace").rstrip())

    def stop(self) -> None:
        """Close the child's stdin (it exits), then SIGTERM, then SIGKILL: each wait bounded."""
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.stdin is not None:
            proc.stdin.close()
        for escalate in (lambda: None, proc.terminate, proc.kill):
            if proc.poll() is not None:
                break
            escalate()
            try:
                proc.wait(self.stop_timeout)
            except subprocess.TimeoutExpired:
                continue
        if self._pump is not None:
            self._pump.join(self.stop_timeout)
            self._pump = None
        if proc.stdout is not None:
            proc.stdout.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
