"""An unmodified Scrapy project runs with only the add-on line added (issue 47).

``tests/projects/toscrape`` is a project as ``scrapy startproject`` makes it
(the installed Scrapy's template, untouched: ``ROBOTSTXT_OBEY``,
``DOWNLOAD_DELAY = 1`` and all), with one spider of the tutorial's shape:
the quotes of a site, page after page by its "Next" link.  The test copies
it, appends the one line to ``settings.py`` and runs ``scrapy crawl quotes
-O items.jsonl -s JOBDIR=...`` from the copy, as a user would.

The site is the mock server's quotes pages (``/quotes/``, three pages, the
second edited every second time it is served), named ``quotes.toscrape.test``: the
crawl's ``DNS_RESOLVER`` is the tests' loopback one, so the name reaches
127.0.0.1 and nothing else.  The server's port is chosen when it starts, so
the copy's start URL is given it (``quotes.toscrape.test:<port>``); what the
test adds on the command line is only what it needs to end in bounded time
(``CLOSESPIDER_TIMEOUT``), revisit within it (``ADAPTIVE_WAIT_MIN``) and
stay on loopback (``DNS_RESOLVER``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.crawlrunner import REPO_ROOT
from tests.mockserver import CHANGING_QUOTES_PAGE, QUOTES_PAGES, MockServer, quotes_edition, quotes_on

pytestmark = pytest.mark.e2e

PROJECT = Path(__file__).resolve().parents[1] / "projects" / "toscrape"
ADDON_LINE = 'ADDONS = {"scrapy_adaptive.Addon": 0}\n'
SPIDER = Path("toscrape") / "spiders" / "quotes.py"
SITE = "quotes.toscrape.test"


def copy_project(into: Path, port: int) -> Path:
    """The project copied into *into*, with the add-on line added to its
    settings and the site's port in its start URL; nothing else changes."""
    project = into / "toscrape"
    shutil.copytree(PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))
    settings = project / "toscrape" / "settings.py"
    settings.write_text(settings.read_text(encoding="utf-8") + ADDON_LINE, encoding="utf-8")
    spider = project / SPIDER
    text = spider.read_text(encoding="utf-8")
    assert text.count(f"http://{SITE}/") == 1
    spider.write_text(text.replace(f"http://{SITE}/", f"http://{SITE}:{port}/"), encoding="utf-8")
    return project


def test_the_project_runs_with_the_add_on_line_and_delivers_only_what_changed(
    clean_log: MockServer, tmp_path: Path
) -> None:
    server = clean_log
    project = copy_project(tmp_path, server.port())
    added = (project / "toscrape" / "settings.py").read_text().splitlines()
    original = (PROJECT / "toscrape" / "settings.py").read_text().splitlines()
    assert added[: len(original)] == original and added[len(original) :] == [ADDON_LINE.strip()]
    env = {k: v for k, v in os.environ.items() if k not in ("SCRAPY_SETTINGS_MODULE", "SCRAPY_PROJECT")}
    env = {k: v for k, v in env.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    # scrapy_adaptive and tests.loopback_resolver from this checkout, the project from its folder
    env["PYTHONPATH"] = os.pathsep.join([str(project), str(REPO_ROOT)])
    job = tmp_path / "job"
    command = [
        *(sys.executable, "-m", "scrapy", "crawl", "quotes", "-O", "items.jsonl", "-s", f"JOBDIR={job}"),
        *("-s", "CLOSESPIDER_TIMEOUT=15", "-s", "ADAPTIVE_WAIT_MIN=1"),
        *("-s", "DNS_RESOLVER=tests.loopback_resolver.LoopbackResolver"),
    ]
    done = subprocess.run(command, cwd=project, env=env, capture_output=True, text=True, timeout=60)
    log = done.stderr
    assert done.returncode == 0, log[-3000:]
    assert not re.findall(r"^\S+ \S+ \[[\w.]+\] (?:ERROR|CRITICAL):.*$", log, re.M), log[-3000:]
    assert "Traceback" not in log, log[-3000:]
    # every request went to the loopback server, by the site's name
    served = server.log(path_prefix="/quotes/")
    assert served and {e["headers"].get("host") for e in served} == {f"{SITE}:{server.port()}"}
    items = [json.loads(line) for line in (project / "items.jsonl").read_text().splitlines() if line.strip()]
    # the first pass: every quote of every page, in page order
    first = [quote for page in range(1, QUOTES_PAGES + 1) for quote in quotes_on(page)]
    assert items[: len(first)] == first
    # then only the changing page's quotes, once per new edition its revisits found
    changing = f"/quotes/page/{CHANGING_QUOTES_PAGE}/"
    fetched = Counter(e["path"] for e in served if e["status"] == 200)
    editions = sorted({quotes_edition(hits) for hits in range(1, fetched[changing] + 1)} - {0})
    assert editions, fetched
    again = items[len(first) :]
    delivered = [quotes_on(CHANGING_QUOTES_PAGE, edition) for edition in editions]
    # the last edition may have been fetched as the crawl stopped, before its probe confirmed it
    assert again in ([q for quotes in delivered for q in quotes], [q for quotes in delivered[:-1] for q in quotes])
    assert again, fetched
    # the unchanged pages were revisited too, and delivered nothing
    assert fetched["/quotes/"] >= 2 or fetched["/quotes/page/3/"] >= 2, fetched
    assert re.search(r"'adaptive/unchanged/skipped': [1-9]", log), log[-3000:]
