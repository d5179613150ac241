"""``scripts/demo.sh`` on another port keeps a crawl of its own.

The demo's URLs carry the port.  ``DEMO_PORT=9000 bash scripts/demo.sh``
after a run on 8731 resumed ``crawls/demo``: its 66 known URLs were all on
8731, refused, three retries and two ERROR lines each, ahead of the new
port's pages (after 40 s the new port's index had not been fetched).  Each
port other than 8731 now has its own JOBDIR, ``crawls/demo-PORT``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.e2e.test_scrapyd import free_port

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not (ROOT / ".venv" / "bin" / "python").exists(), reason="demo.sh runs in the repository's .venv")
def test_the_demo_on_another_port_crawls_in_its_own_jobdir() -> None:
    port = free_port()
    own = ROOT / "sample_project" / "crawls" / f"demo-{port}"
    default = ROOT / "sample_project" / "crawls" / "demo"
    before = default.stat().st_mtime_ns if default.exists() else None
    env = {k: v for k, v in os.environ.items() if k not in ("SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT")}
    env["DEMO_PORT"] = str(port)
    try:
        done = subprocess.run(
            ["bash", "scripts/demo.sh", "-s", "CLOSESPIDER_TIMEOUT=3"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=90,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"state: {own / 'adaptive'}" in done.stderr, done.stderr[-3000:]
        assert (own / "adaptive" / "ADAPTIVE_STATE.json").exists()
        assert (default.stat().st_mtime_ns if default.exists() else None) == before  # the 8731 crawl untouched
    finally:
        shutil.rmtree(own, ignore_errors=True)
