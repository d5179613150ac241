"""The quick start's main job: the sample project crawling the demo site.

Runs ``scrapy crawl demo`` from ``sample_project/`` (as scripts/demo.sh
does) against the bundled demo site, briefly, and checks that a new user
sees revisits in the log and that robots.txt is obeyed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from testsite.demo import DemoSiteProcess

pytestmark = pytest.mark.e2e

SAMPLE = Path(__file__).resolve().parents[2] / "sample_project"


def crawl_demo(site: DemoSiteProcess, job: Path, *settings: str) -> subprocess.CompletedProcess[str]:
    """``scrapy crawl demo`` from ``sample_project/`` (as scripts/demo.sh does)
    against *site*, with ``-s`` *settings* (``NAME=value``)."""
    env = {k: v for k, v in os.environ.items() if k not in ("SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT")}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1"
    cmd = [sys.executable, "-m", "scrapy", "crawl", "demo", "-s", f"JOBDIR={job}", "-s", f"DEMO_SITE_URL={site.url}"]
    for setting in settings:
        cmd += ["-s", setting]
    return subprocess.run(cmd, cwd=SAMPLE, env=env, capture_output=True, text=True, timeout=90)


def test_the_demo_crawl_revisits_pages_and_obeys_robots(tmp_path: Path) -> None:
    with DemoSiteProcess(speed=10.0) as site:
        done = crawl_demo(
            site,
            tmp_path / "job",
            "ADAPTIVE_WAIT_DEFAULT=2",
            "ADAPTIVE_WAIT_MIN=1",
            "ADAPTIVE_LOG_INTERVAL=2",
            "ADAPTIVE_MIN_DELAY=0.05",
            "ADAPTIVE_MAX_DELAY=0.2",
            "CLOSESPIDER_TIMEOUT=14",
        )
    log = done.stderr
    assert done.returncode == 0, log[-3000:]
    summaries = re.findall(r"Frontier(?: at close)?: (\d+) URLs .*; (\d+) visits", log)
    assert summaries, log[-3000:]
    urls, visits = map(int, summaries[-1])
    assert urls >= 20 and visits >= urls // 2
    # pages were visited again: revisits happened, one crawl-log line each
    crawl_log = (tmp_path / "job" / "adaptive" / "crawl.log").read_text().splitlines()
    per_url = Counter(line.split(" ")[3] for line in crawl_log if line.split(" ")[1] != "-")
    assert sum(per_url.values()) == visits
    revisited = [url for url, n in per_url.items() if n >= 2]
    assert len(revisited) >= 3, per_url
    assert "/private/secret.html" in log and "Forbidden by robots.txt" in log
    assert re.search(r"Disregarded http://127\.0\.0\.1:\d+/private/secret\.html", log)


def test_scrapys_one_off_commands_work_in_the_project_with_the_add_on() -> None:
    """``scrapy fetch`` printed nothing and ``scrapy shell URL`` waited for
    ever: their callbacks are their own functions, which the frontier cannot
    store, and such a request was dropped; it is now fetched once."""
    env = {k: v for k, v in os.environ.items() if k not in ("SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT")}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1"
    with DemoSiteProcess(speed=10.0) as site:
        fetched = subprocess.run(
            [sys.executable, "-m", "scrapy", "fetch", "--nolog", site.url],
            cwd=SAMPLE,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        shell = subprocess.run(
            [sys.executable, "-m", "scrapy", "shell", "--nolog", site.url, "-c", "response.status"],
            cwd=SAMPLE,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert fetched.returncode == 0 and "<html" in fetched.stdout.lower(), fetched.stderr[-2000:]
    assert shell.returncode == 0 and shell.stdout.strip() == "200", shell.stderr[-2000:]
