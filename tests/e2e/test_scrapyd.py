"""The sample project under a real Scrapyd: cancel and resume across jobs.

Scrapyd gives every job a new JOBDIR (``jobs_dir``), so a crawl meant to go on
across jobs keeps its state in ``ADAPTIVE_STATE_DIR``.  Scrapyd's cancel sends
SIGINT: the crawl must stop gracefully, and the next job must resume from the
same frontier.  The project is declared in scrapy.cfg's ``[settings]``
section (no egg: scrapy-adaptive must be installed in Scrapyd's environment
anyway, as plyvel cannot travel in an egg).
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from testsite.demo import DemoSiteProcess

pytestmark = pytest.mark.e2e

SAMPLE = Path(__file__).resolve().parents[2] / "sample_project"
OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(base: str, endpoint: str, data: list[tuple[str, str]] | None = None) -> dict:
    body = urllib.parse.urlencode(data).encode() if data is not None else None
    with OPENER.open(f"{base}/{endpoint}", data=body, timeout=10) as response:
        return json.load(response)


def wait_until(predicate, timeout: float, what: str):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def job_state(base: str, job: str) -> str | None:
    jobs = call(base, "listjobs.json?project=demo_project")
    for state in ("pending", "running", "finished"):
        if any(j["id"] == job for j in jobs.get(state, [])):
            return state
    return None


def test_cancel_and_resume_under_scrapyd(tmp_path: Path) -> None:
    port = free_port()
    state_dir = tmp_path / "state"
    # scrapy.cfg serves both: Scrapyd reads its [scrapyd] section, and Scrapy
    # (run by Scrapyd to list spiders and crawl) its [settings] section
    (tmp_path / "scrapy.cfg").write_text(
        "[scrapyd]\n"
        "bind_address = 127.0.0.1\n"
        f"http_port = {port}\n"
        "poll_interval = 0.5\n"
        f"jobs_dir = {tmp_path / 'jobs'}\n"
        f"logs_dir = {tmp_path / 'logs'}\n"
        f"eggs_dir = {tmp_path / 'eggs'}\n"
        f"dbs_dir = {tmp_path / 'dbs'}\n"
        "[settings]\n"
        "default = demo_project.settings\n"
        "demo_project = demo_project.settings\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT")}
    env["PYTHONPATH"] = os.pathsep.join([str(SAMPLE), env.get("PYTHONPATH", "")])
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1"
    base = f"http://127.0.0.1:{port}"
    with DemoSiteProcess(speed=10.0) as site:
        scrapyd = subprocess.Popen(
            [sys.executable, "-m", "scrapyd"],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            wait_until(lambda: _up(base), 20, "scrapyd to answer")
            settings = [
                ("setting", f"ADAPTIVE_STATE_DIR={state_dir}"),
                ("setting", f"DEMO_SITE_URL={site.url}"),
                ("setting", "ADAPTIVE_MIN_DELAY=0.05"),
                ("setting", "ADAPTIVE_LOG_INTERVAL=1"),
            ]
            answer = call(base, "schedule.json", [("project", "demo_project"), ("spider", "demo"), *settings])
            assert "jobid" in answer, answer
            first = answer["jobid"]
            crawl_log = state_dir / "crawl.log"
            wait_until(lambda: crawl_log.exists() and len(crawl_log.read_text().splitlines()) >= 20, 60, "visits")
            call(base, "cancel.json", [("project", "demo_project"), ("job", first)])
            wait_until(lambda: job_state(base, first) == "finished", 30, "the cancelled job to finish")
            log1 = (tmp_path / "logs" / "demo_project" / "demo" / f"{first}.log").read_text()
            assert "Closing spider (shutdown)" in log1 and "Frontier at close" in log1  # graceful
            urls_at_close = int(re.findall(r"Frontier at close: (\d+) URLs", log1)[-1])
            lines_at_close = len(crawl_log.read_text().splitlines())

            second = call(base, "schedule.json", [("project", "demo_project"), ("spider", "demo"), *settings])["jobid"]
            log2_path = tmp_path / "logs" / "demo_project" / "demo" / f"{second}.log"
            opened = wait_until(
                lambda: (
                    log2_path.exists()
                    and re.search(r"Adaptive frontier opened in \S+: (\d+) URLs", log2_path.read_text())
                ),
                60,
                "the second job to open the frontier",
            )
            assert int(opened.group(1)) == urls_at_close  # resumed from the same state, nothing lost
            wait_until(lambda: len(crawl_log.read_text().splitlines()) > lines_at_close + 5, 60, "more visits")
            call(base, "cancel.json", [("project", "demo_project"), ("job", second)])
            wait_until(lambda: job_state(base, second) == "finished", 30, "the second job to finish")
            # each job had its own JOBDIR, the frontier stayed in ADAPTIVE_STATE_DIR
            assert sorted(p.name for p in (tmp_path / "jobs" / "demo_project" / "demo").iterdir()) == sorted(
                [first, second]
            )
        finally:
            scrapyd.terminate()
            scrapyd.wait(timeout=15)


def _up(base: str) -> bool:
    try:
        return call(base, "daemonstatus.json").get("status") == "ok"
    except OSError:
        return False
