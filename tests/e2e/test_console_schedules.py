"""``scrapy frontier schedule`` on stopped and running crawls of the demo site.

The policy's own wait is long (600 s), so a page revisited about every
second is the schedule's doing.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.test_console import SAMPLE, _env, crawl_args, frontier, run_demo_crawl, visits_of
from testsite.demo import DemoSiteProcess

pytestmark = pytest.mark.e2e

SLOW = (
    "ADAPTIVE_WAIT_POLICY=scrapy_adaptive.policies.ConstantWaitPolicy",
    "ADAPTIVE_WAIT_POLICIES=[]",
    "ADAPTIVE_WAIT_DEFAULT=600",
    "ADAPTIVE_WAIT_MAX=600",
)


@pytest.fixture(scope="module")
def site() -> Iterator[DemoSiteProcess]:
    with DemoSiteProcess(speed=10.0) as s:
        yield s


@pytest.fixture
def job() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="fs-"))  # short: a Unix socket path holds at most 107 bytes
    yield root / "job"
    shutil.rmtree(root, ignore_errors=True)


def test_schedule_on_a_stopped_crawl_is_kept_costed_applied_at_start_and_removed(
    site: DemoSiteProcess, job: Path
) -> None:
    news = site.url.rstrip("/") + "/news/"
    done = run_demo_crawl(site, job, "CLOSESPIDER_TIMEOUT=4", *SLOW, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    assert len(visits_of(job, news)) == 1
    # politeness cannot take every URL 100 times a second: refused with the figures, nothing kept
    refused = frontier(job, "schedule", "--match", ".", "--every", "0.01")
    assert refused.returncode == 1 and "Politeness cannot honour it" in refused.stderr, refused.stderr
    assert "its politeness allows" in refused.stderr and "nothing was kept" in refused.stderr
    added = frontier(job, "schedule", "--match", "/news/$", "--every", "1s", "--name", "news")
    assert added.returncode == 0, added.stderr
    assert "added schedule news: 1 URL on 1 host, up to 86400 fetches a day" in added.stdout, added.stdout
    # the next crawl loads it and brings /news/ forward: about every second, not in 600 s
    done = run_demo_crawl(site, job, "CLOSESPIDER_TIMEOUT=6", *SLOW, timeout=60)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Schedule news is open: 1 URL brought forward" in done.stderr
    assert len(visits_of(job, news)) >= 1 + 3, visits_of(job, news)
    assert len(visits_of(job, site.url)) == 1  # not matched: the policy's 600 s
    report = json.loads(frontier(job, "report", "--json").stdout)["report"]
    (row,) = report["schedules"]
    assert row["name"] == "news" and row["matched"] == 1 and row["forced"] >= 3 and row["state"] == "open"
    listed = frontier(job, "schedule", "--list").stdout
    assert "news" in listed and "open" in listed and "1 URL," in listed and "(console)" in listed, listed
    assert frontier(job, "schedule", "--remove", "news").stdout.strip() == "removed schedule news"


def test_schedule_on_a_running_crawl_applies_at_once(site: DemoSiteProcess, job: Path) -> None:
    news = site.url.rstrip("/") + "/news/"
    cmd = crawl_args(site, job, "CLOSESPIDER_TIMEOUT=40", *SLOW)
    crawl = subprocess.Popen(cmd, cwd=SAMPLE, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not visits_of(job, news) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(visits_of(job, news)) == 1
        added = frontier(job, "schedule", "--match", "/news/$", "--every", "1", "--name", "live")
        assert "added schedule live: 1 URL " in added.stdout, added.stdout + added.stderr
        deadline = time.monotonic() + 15
        while len(visits_of(job, news)) < 4 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(visits_of(job, news)) >= 4
        rows = json.loads(frontier(job, "schedule", "--list", "--json").stdout)["schedules"]
        assert rows[0]["name"] == "live" and rows[0]["forced"] >= 2 and rows[0]["source"] == "console"
        assert "removed schedule live" in frontier(job, "schedule", "--remove", "live").stdout
        seen = len(visits_of(job, news))
        time.sleep(3)
        assert len(visits_of(job, news)) <= seen + 1  # back to the policy's 600 s
    finally:
        crawl.send_signal(signal.SIGINT)
        _, err = crawl.communicate(timeout=60)
    assert crawl.returncode == 0, err[-3000:]
    assert "Traceback" not in err, err[-3000:]
