"""``scrapy frontier`` against real crawls of the demo site: stopped and running.

The sample project crawls the bundled demo site (as the README's quick
start does); the command runs in the project folder like a user types it.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from scrapy_adaptive.ops.console.html import render
from testsite.demo import DemoSiteProcess

pytestmark = pytest.mark.e2e

SAMPLE = Path(__file__).resolve().parents[2] / "sample_project"
FAST = (
    "ADAPTIVE_LOG_INTERVAL=2",
    "ADAPTIVE_MIN_DELAY=0.05",
    "ADAPTIVE_MAX_DELAY=0.2",
    "ADAPTIVE_WAIT_MIN=1",
    "ADAPTIVE_WAIT_DEFAULT=2",
)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT")}
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1"
    env.update(extra)
    return env


def crawl_args(site: DemoSiteProcess, job: Path, *settings: str) -> list[str]:
    cmd = [sys.executable, "-m", "scrapy", "crawl", "demo", "-s", f"JOBDIR={job}", "-s", f"DEMO_SITE_URL={site.url}"]
    for setting in (*FAST, *settings):
        cmd += ["-s", setting]
    return cmd


def run_demo_crawl(
    site: DemoSiteProcess, job: Path, *settings: str, timeout: float
) -> subprocess.CompletedProcess[str]:
    """The sample project's crawl of the demo site, run to its end."""
    return subprocess.run(
        crawl_args(site, job, *settings), cwd=SAMPLE, env=_env(), capture_output=True, text=True, timeout=timeout
    )


def frontier(job: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """``scrapy frontier ARGS --jobdir JOB`` in the sample project, as a user types it."""
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "frontier", *args, "--jobdir", str(job)],
        cwd=SAMPLE,
        env=_env(**env),
        capture_output=True,
        text=True,
        timeout=60,
    )


def visits_of(job: Path, url: str) -> list[str]:
    """The crawl-log lines of *url* (its timestamps, ISO)."""
    log = job / "adaptive" / "crawl.log"
    if not log.exists():
        return []
    return [line.split(" ")[0] for line in log.read_text().splitlines() if line.split(" ")[3:4] == [url]]


@pytest.fixture(scope="module")
def site() -> Iterator[DemoSiteProcess]:
    with DemoSiteProcess(speed=10.0) as s:
        yield s


@pytest.fixture(scope="module")
def stopped(site: DemoSiteProcess) -> Iterator[tuple[Path, str]]:
    """A job folder after a 10-second crawl, and the crawl's log (long enough to see changes on a loaded machine)."""
    # short: a Unix socket path holds at most 107 bytes
    root = Path(tempfile.mkdtemp(prefix="fc-"))
    job = root / "job"
    done = run_demo_crawl(site, job, "CLOSESPIDER_TIMEOUT=10", timeout=90)
    assert done.returncode == 0, done.stderr[-3000:]
    yield job, done.stderr
    shutil.rmtree(root, ignore_errors=True)


def test_on_a_stopped_crawl_report_url_export_forget_seed(site: DemoSiteProcess, stopped: tuple[Path, str]) -> None:
    job, log = stopped
    # the summary of a crawl that never ends says the backlog and the next URL
    # due; 10 s are too short for rates per hour (the unit tests see those)
    assert re.search(
        r"Progress: \d+ due; next URL due .*\(too short to rate: [\d.]+s of this run observed, rates after 1\.0m\)",
        log,
    ), log[-3000:]
    assert "Progress over the last" not in log
    report = frontier(job, "report")
    assert report.returncode == 0, report.stderr
    assert re.search(r"Frontier at .*: \d+ URLs in 1 host", report.stdout) and "wait intervals" in report.stdout
    data = json.loads(frontier(job, "report", "--json").stdout)["report"]
    urls = data["totals"]["urls"]
    assert urls >= 20 and data["hosts"][0]["host"] == "127.0.0.1" and data["sampled"] == urls
    assert data["top_changing"] and "text/html" in data["waits_by_type"]

    home = frontier(job, "url", site.url)
    assert home.returncode == 0, home.stderr
    assert f"URL {site.url}" in home.stdout and "status 200, changed" in home.stdout and "next visit:" in home.stdout
    unknown = frontier(job, "url", site.url + "nowhere")
    assert unknown.returncode == 1 and "not in the frontier" in unknown.stderr

    export = frontier(job, "export", "--format", "jsonl")
    records = [json.loads(line) for line in export.stdout.splitlines()]
    assert len(records) == urls and all(r["url"].startswith(site.url) for r in records)

    gone = frontier(job, "forget", "--regex", r"/images/photo-0[12]\.png$")
    assert gone.returncode == 0 and "2 URLs forgotten" in gone.stdout, gone.stdout + gone.stderr
    seeded = site.url + "?seeded=stopped"
    assert "added when the crawl next starts" in frontier(job, "seed", seeded).stdout
    after = [json.loads(line)["url"] for line in frontier(job, "export").stdout.splitlines()]
    assert len(after) == urls - 2 and not any("photo-01" in u or "photo-02" in u for u in after)

    # the crawl goes on from there: the forget is no rollback, the seed is fetched
    done = run_demo_crawl(site, job, "CLOSESPIDER_TIMEOUT=3", timeout=60)
    assert done.returncode == 0 and "rolled back" not in done.stderr, done.stderr[-3000:]
    assert f"{seeded} (queued)" in done.stderr
    assert frontier(job, "url", seeded).returncode == 0  # in the frontier (fetched when its turn comes)


def test_on_a_running_crawl_seed_is_fetched_and_forget_stops_visits(site: DemoSiteProcess) -> None:
    root = Path(tempfile.mkdtemp(prefix="fc-"))
    job = root / "job"
    seeded = site.url + "?seeded=running"
    cmd = crawl_args(site, job, "CLOSESPIDER_TIMEOUT=60", "ADAPTIVE_WAIT_POLICIES=[]", "ADAPTIVE_WAIT_INITIAL=1")
    crawl = subprocess.Popen(cmd, cwd=SAMPLE, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 20
        while not (job / "adaptive" / "control.sock").exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1)
        report = frontier(job, "report", "--json")
        assert report.returncode == 0, report.stderr
        assert json.loads(report.stdout)["report"]["totals"]["urls"] > 0
        seed = frontier(job, "seed", seeded)
        assert seed.stdout.strip() == f"{seeded}: queued", seed.stdout + seed.stderr
        # fetched, and revisited (its wait is about a second)
        deadline = time.monotonic() + 30
        while len(visits_of(job, seeded)) < 2 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert len(visits_of(job, seeded)) >= 2
        assert len(frontier(job, "export").stdout.splitlines()) > 10
        forget = frontier(job, "forget", seeded)
        assert "1 URL forgotten" in forget.stdout, forget.stdout + forget.stderr
        seen = len(visits_of(job, seeded))
        time.sleep(4)
        assert len(visits_of(job, seeded)) <= seen + 1  # at most the fetch running at the forget
        assert "not in the frontier" in frontier(job, "url", seeded).stderr
    finally:
        crawl.send_signal(signal.SIGINT)
        _, err = crawl.communicate(timeout=60)
        shutil.rmtree(root, ignore_errors=True)
    assert crawl.returncode == 0, err[-3000:]
    assert "Traceback" not in err, err[-3000:]


def test_other_scrapy_commands_work_when_plyvel_cannot_be_imported(tmp_path: Path) -> None:
    from scrapy_adaptive.store.statedir import open_store, resolve

    job = tmp_path / "job"
    open_store(
        resolve(None, str(job)), spider="demo", fingerprinter="scrapy.utils.request.RequestFingerprinter", sync=False
    ).close()
    broken_dir = tmp_path / "broken"
    broken_dir.mkdir()
    (broken_dir / "plyvel.py").write_text('raise ImportError("plyvel is broken here")\n')
    broken = {"PYTHONPATH": f"{broken_dir}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    listed = subprocess.run(
        [sys.executable, "-m", "scrapy", "list"], cwd=SAMPLE, env=_env(**broken), capture_output=True, text=True
    )
    assert listed.returncode == 0 and listed.stdout.split() == ["demo"], listed.stderr
    report = frontier(job, "report", **broken)
    assert report.returncode == 1 and "Traceback" not in report.stderr + report.stdout
    said = (report.stdout + report.stderr).strip().splitlines()
    assert len(said) == 1 and "plyvel cannot be imported (plyvel is broken here)" in said[0], said
    assert "pip install plyvel" in said[0]


def chromium() -> str:
    """Debian's chromium, installed if missing (once per machine, about 15 s)."""
    path = shutil.which("chromium")
    if path is None:
        subprocess.run(["apt-get", "install", "-y", "-q", "chromium"], check=True, capture_output=True, timeout=600)
        path = shutil.which("chromium")
    assert path is not None, "chromium is not installed and apt-get could not install it"
    return path


#: run by Chromium on a copy of the report: every SVG text that spills out of
#: its chart (clipped on screen), and what each chart section shows
MEASURE = """<script>
const out = {clipped: [], sections: {}};
for (const svg of document.querySelectorAll("svg")) {
  const box = svg.getBoundingClientRect();
  for (const t of svg.querySelectorAll("text")) {
    const r = t.getBoundingClientRect();
    if (r.left < box.left - 0.5 || r.right > box.right + 0.5 || r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5)
      out.clipped.push(t.textContent);
  }
}
for (const h2 of document.querySelectorAll("h2")) {
  const div = h2.parentElement;
  out.sections[h2.textContent] = {
    bars: div.querySelectorAll("rect").length,
    texts: [...div.querySelectorAll("svg text")].map(t => t.textContent),
    line: div.querySelectorAll("path").length,
    note: [...div.querySelectorAll("p")].map(p => p.textContent).join(" "),
  };
}
const pre = document.createElement("pre");
pre.id = "measure";
pre.textContent = JSON.stringify(out);
document.body.appendChild(pre);
</script>"""


def in_chromium(page: Path, tmp_path: Path) -> dict[str, Any]:
    """The report as headless Chromium lays it out: a screenshot beside it
    (``<page>.png``, for a person to look at) and the measurements of
    :data:`MEASURE`."""
    flags = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1100,1180",
    ]
    shot = page.with_suffix(".png")
    subprocess.run([*flags, f"--screenshot={shot}", page.as_uri()], capture_output=True, timeout=60, check=True)
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 30_000  # a blank page is a few kB
    probe = page.with_name("probe-" + page.name)
    probe.write_text(page.read_text().replace("</body>", MEASURE + "</body>"))
    dom = subprocess.run([*flags, "--dump-dom", probe.as_uri()], capture_output=True, text=True, timeout=60, check=True)
    found = re.search(r'<pre id="measure">(.*?)</pre>', dom.stdout, re.S)
    assert found, dom.stdout[-2000:]
    return json.loads(html.unescape(found.group(1)))


def test_the_html_report_renders_in_headless_chromium(stopped: tuple[Path, str], tmp_path: Path) -> None:
    job, _ = stopped
    page = tmp_path / "report.html"
    done = frontier(job, "report", "--html", str(page))
    assert done.returncode == 0 and page.exists(), done.stderr
    assert (job / "adaptive" / "report.html").exists()  # refreshed by the crawl at each summary
    seen = in_chromium(page, tmp_path)
    if os.environ.get("SCRAPY_ADAPTIVE_SCREENSHOT"):
        shutil.copy(page.with_suffix(".png"), os.environ["SCRAPY_ADAPTIVE_SCREENSHOT"])
    assert seen["clipped"] == []
    sections = seen["sections"]
    assert sections["Wait intervals (URLs)"]["bars"] > 0
    # no budget set: none drawn, none named
    revisits = next(v for k, v in sections.items() if k.startswith("Revisits per hour"))
    assert revisits["line"] == 0 and "budget" not in json.dumps(revisits) and revisits["bars"] > 0
    # a short crawl: its backlog chart has bars, or says why it has none
    backlog = sections["URLs due (backlog) at each hour's last summary"]
    assert backlog["bars"] > 0 or "No URL was due at the last summary of any hour" in backlog["note"]

    # the figures of a long crawl (as the issue saw them): a megabyte saved in
    # an hour, and hours that recorded the pace planned without a budget
    report = json.loads(frontier(job, "report", "--json").stdout)["report"]
    hour = report["hours"][-1][0] if report["hours"] else 490000
    report["hours"] = [[hour - 1, [900, 40, 1074863, 0, 543.0]], [hour, [700, 30, 20000, 0, 543.0]]]
    long = tmp_path / "long.html"
    long.write_text(render(report))
    seen = in_chromium(long, tmp_path)
    assert seen["clipped"] == []
    saved = seen["sections"]["Bytes saved by validators per hour"]
    assert "1.1 MB" in saved["texts"] and not any(t.isdigit() and len(t) > 4 for t in saved["texts"])
    revisits = next(v for k, v in seen["sections"].items() if k.startswith("Revisits per hour"))
    assert revisits["line"] == 0 and "off the scale" not in json.dumps(revisits)
    assert (
        "No URL was due at the last summary of any hour in the 2 hours recorded."
        in seen["sections"]["URLs due (backlog) at each hour's last summary"]["note"]
    )
    report["budget"]["set_per_day"] = 12000.0  # a budget set: drawn, within the scale
    budgeted = tmp_path / "budgeted.html"
    budgeted.write_text(render(report))
    seen = in_chromium(budgeted, tmp_path)
    revisits = seen["sections"]["Revisits per hour (red: budget)"]
    assert seen["clipped"] == [] and revisits["line"] == 1 and "900" in revisits["texts"]


def test_a_redis_backed_worker_stopped_and_running(site: DemoSiteProcess, redis_url: str) -> None:
    """A worker whose frontier is in Redis: stopped, ``scrapy frontier`` reads the
    store its marker names (report/url/export), forgets in Redis and leaves
    seeds for its next start; running, its control socket answers."""
    root = Path(tempfile.mkdtemp(prefix="fr-"))
    job = root / "job"
    store = f"ADAPTIVE_STORE_URL={redis_url}"
    try:
        done = run_demo_crawl(site, job, store, "CLOSESPIDER_TIMEOUT=8", timeout=90)
        assert done.returncode == 0, done.stderr[-3000:]
        assert not (job / "adaptive" / "frontier.ldb").exists()
        # without the store setting: the marker's URL (no password) serves
        report = frontier(job, "report", "--json")
        assert report.returncode == 0, report.stderr
        urls = json.loads(report.stdout)["report"]["totals"]["urls"]
        assert urls >= 10
        home = frontier(job, "url", site.url)
        assert home.returncode == 0 and f"URL {site.url}" in home.stdout, home.stderr
        assert len(frontier(job, "export").stdout.splitlines()) == urls
        gone = frontier(job, "forget", "--regex", r"/images/photo-0[12]\.png$", "-s", store)
        assert gone.returncode == 0 and "2 URLs forgotten" in gone.stdout, gone.stdout + gone.stderr
        after = [json.loads(line)["url"] for line in frontier(job, "export").stdout.splitlines()]
        assert len(after) == urls - 2 and not any("photo-01" in u or "photo-02" in u for u in after)
        seeded = site.url + "?seeded=redis"
        assert "added when the crawl next starts" in frontier(job, "seed", seeded).stdout
        # a store other than the marker's is refused, naming both
        other = frontier(job, "report", "-s", f"{store}", "-s", "ADAPTIVE_STORE_NAMESPACE=other")
        assert other.returncode == 1 and "was used with the store" in other.stderr, other.stderr

        # running: the control socket answers; the seed left while stopped is queued
        crawl = subprocess.Popen(
            crawl_args(site, job, store, "CLOSESPIDER_TIMEOUT=20"),
            cwd=SAMPLE,
            env=_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 20
            while not (job / "adaptive" / "control.sock").exists() and time.monotonic() < deadline:
                time.sleep(0.1)
            time.sleep(1)
            running = frontier(job, "report", "--json")
            assert running.returncode == 0, running.stderr
            assert json.loads(running.stdout)["report"]["totals"]["urls"] >= urls - 2
        finally:
            crawl.send_signal(signal.SIGINT)
            _, err = crawl.communicate(timeout=60)
        assert crawl.returncode == 0 and "Traceback" not in err, err[-3000:]
        assert f"{seeded} (queued)" in err
        assert frontier(job, "url", seeded).returncode == 0
    finally:
        shutil.rmtree(root, ignore_errors=True)
