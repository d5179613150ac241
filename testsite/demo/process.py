"""Run the demo site in a child process, for tests and end-to-end runs.

``python -m testsite.demo --port 0`` under :class:`testsite.process.SiteProcess`;
with ``clock_file`` the child's time only moves when :meth:`set_time` says so.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Self

from ..process import SiteError, SiteProcess
from .clock import write_clock_file

__all__ = ["DemoSiteError", "DemoSiteProcess"]

#: The demo site's name for the error every test site raises when it does not come up.
DemoSiteError = SiteError


class DemoSiteProcess(SiteProcess):
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
        args = ["--host", host, "--port", str(port), "--speed", repr(speed), "--seed", str(seed)]
        if self.clock_file is not None:
            args += ["--clock-file", str(self.clock_file)]
        if start_time is not None:
            args += ["--start-time", repr(start_time)]
        if crawl_delay is not None:
            args += ["--crawl-delay", repr(crawl_delay)]
        super().__init__("testsite.demo", [*args, *extra_args], startup_timeout=startup_timeout)
        self.url = ""

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

    def start(self) -> Self:
        """Spawn the child; ``url`` is its base URL once this returns."""
        if self.clock_file is not None and not self.clock_file.exists():
            self.set_time(self.start_time if self.start_time is not None else time.time())
        super().start()
        self.url = str(self.info["url"])
        return self
