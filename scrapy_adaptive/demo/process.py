"""Run the demo site in a child process, for tests and end-to-end runs.

A Twisted reactor cannot be restarted and does not share well with a test
runner (or with a Scrapy crawl in the same process), so tests get the site as
a subprocess: ``python -m scrapy_adaptive.demo --port 0`` binds a free port
and announces it on stdout, which this helper waits for (bounded).  With
``clock_file`` the child's time only moves when :meth:`set_time` says so.
"""

from __future__ import annotations

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
from typing import IO, Self

from .cli import READY_PREFIX
from .clock import write_clock_file

__all__ = ["DemoSiteError", "DemoSiteProcess"]

logger = logging.getLogger(__name__)

#: Directory that contains the ``scrapy_adaptive`` package, so the child can
#: import it even when the package is not installed (e.g. a source checkout).
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[2])


class DemoSiteError(RuntimeError):
    """The demo site process did not come up."""


class DemoSiteProcess:
    """``with DemoSiteProcess(clock_file=p, start_time=t0) as site: site.url``.

    ``start_time`` is the wall-clock instant of demo time 0; when a
    ``clock_file`` is given and it does not exist yet, it is initialised to
    ``start_time`` (or the current time) before the child starts.
    """

    def __init__(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        speed: float = 1.0,
        seed: int = 0,
        clock_file: str | os.PathLike[str] | None = None,
        start_time: float | None = None,
        crawl_delay: float | None = None,
        extra_args: Sequence[str] = (),
        startup_timeout: float = 10.0,
    ) -> None:
        self.clock_file = None if clock_file is None else Path(clock_file)
        self.start_time = start_time
        self.startup_timeout = startup_timeout
        self.args = [
            sys.executable,
            "-m",
            "scrapy_adaptive.demo",
            "--host",
            host,
            "--port",
            str(port),
            "--speed",
            repr(speed),
            "--seed",
            str(seed),
        ]
        if self.clock_file is not None:
            self.args += ["--clock-file", str(self.clock_file)]
        if start_time is not None:
            self.args += ["--start-time", repr(start_time)]
        if crawl_delay is not None:
            self.args += ["--crawl-delay", repr(crawl_delay)]
        self.args += list(extra_args)
        self.url = ""
        self._proc: subprocess.Popen[str] | None = None
        self._pump: threading.Thread | None = None

    @property
    def port(self) -> int:
        return int(self.url.rstrip("/").rsplit(":", 1)[1])

    def set_time(self, now: float) -> None:
        """Move the child's clock to Unix time ``now`` (requires ``clock_file``)."""
        if self.clock_file is None:
            raise DemoSiteError("set_time() needs a DemoSiteProcess with clock_file")
        write_clock_file(self.clock_file, now)

    def set_demo_time(self, demo_seconds: float, speed: float = 1.0) -> None:
        """Move the clock to ``demo_seconds`` after ``start_time`` (at ``speed``)."""
        if self.start_time is None:
            raise DemoSiteError("set_demo_time() needs start_time")
        self.set_time(self.start_time + demo_seconds / speed)

    def start(self) -> str:
        """Spawn the child and return its base URL once it listens."""
        if self.clock_file is not None and not self.clock_file.exists():
            self.set_time(self.start_time if self.start_time is not None else time.time())
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_PARENT, env.get("PYTHONPATH")) if p)
        env["PYTHONUNBUFFERED"] = "1"
        self._proc = subprocess.Popen(
            self.args,
            stdout=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        try:
            self.url = self._await_ready(self._proc)
        except BaseException:
            self.stop()
            raise
        self._pump = threading.Thread(
            target=self._drain,
            args=(self._proc.stdout,),
            name="demo-site-stdout",
            daemon=True,
        )
        self._pump.start()
        return self.url

    def _await_ready(self, proc: subprocess.Popen[str]) -> str:
        """Read stdout until the ready line, the child's death or the timeout."""
        assert proc.stdout is not None
        deadline = time.monotonic() + self.startup_timeout
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            while (remaining := deadline - time.monotonic()) > 0:
                if not selector.select(remaining):
                    continue
                line = proc.stdout.readline()
                if not line:
                    raise DemoSiteError(f"demo site exited early (status {proc.wait()})")
                if line.startswith(READY_PREFIX):
                    return line[len(READY_PREFIX) :].split()[0]
                logger.debug("demo site: %s", line.rstrip())
        raise DemoSiteError(f"demo site not ready within {self.startup_timeout:g} s")

    @staticmethod
    def _drain(stream: IO[str] | None) -> None:
        """Keep reading the child's stdout so a chatty child never blocks on a full pipe."""
        if stream is None:
            return
        for line in stream:
            logger.debug("demo site: %s", line.rstrip())

    def stop(self, timeout: float = 5.0) -> None:
        """SIGTERM the child (the reactor stops cleanly), SIGKILL if it lingers."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self._pump is not None:
            self._pump.join(timeout)
            self._pump = None
        if proc.stdout is not None:
            proc.stdout.close()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
