"""Run Scrapy's test files plainly or with the add-on, in a pytest subprocess, and read the outcomes.

The subprocess runs in the unpacked sdist (:mod:`tests.compat.sdist`), with
its ``conftest.py`` and pytest configuration, Scrapy's ``tests`` package
first on the path, then this folder (for the plugin,
:mod:`adaptive_compat`), then this checkout (for ``scrapy_adaptive``, also
from a git worktree whose package is not the one installed).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent

#: Scrapy's test files that drive crawls: crawl, engine, scheduler, signals,
#: closespider, start requests, cb_kwargs, robots.txt and spider middlewares
FILES = (
    "tests/test_crawl.py",
    "tests/test_engine*.py",
    "tests/test_scheduler.py",
    "tests/test_signals.py",
    "tests/test_closespider.py",
    "tests/test_spider_start.py",
    "tests/test_request_cb_kwargs.py",
    "tests/test_downloadermiddleware_robotstxt.py",
    "tests/test_spidermiddleware*.py",
)
#: seconds one Scrapy test may take before pytest-timeout fails it (plainly the slowest takes ~3 s).
#: Its thread method ends the worker process, and xdist (always used, also for one worker)
#: starts another: the signal method would stop the test's Twisted reactor, and with it every
#: later test of that process would fail with "twisted reactor has stopped".
TEST_TIMEOUT = 30


@dataclass(frozen=True)
class Outcome:
    """A test's outcome: ``passed``, ``failed`` or ``skipped``, and for a failure its report."""

    outcome: str
    text: str = ""

    def tail(self, lines: int = 6) -> str:
        """The report's last *lines* non-empty lines: the assertion and where it failed."""
        kept = [line for line in self.text.splitlines() if line.strip()]
        return "\n".join(kept[-lines:])


@dataclass(frozen=True)
class Run:
    """The outcomes of one pytest run, by node id (``tests/test_x.py::Class::test``)."""

    outcomes: dict[str, Outcome]
    returncode: int | None  # None: killed at its hard timeout
    seconds: float
    output: str

    def per_file(self) -> dict[str, Counter[str]]:
        counts: dict[str, Counter[str]] = {}
        for nodeid, outcome in self.outcomes.items():
            counts.setdefault(nodeid.split("::", 1)[0], Counter())[outcome.outcome] += 1
        return counts


def files(root: Path) -> list[str]:
    """The test files of :data:`FILES` present in *root* (relative paths, sorted)."""
    found = sorted({str(p.relative_to(root)) for pattern in FILES for p in root.glob(pattern)})
    if not found:
        raise RuntimeError(f"none of Scrapy's test files {FILES} is in {root}")
    return found


def run(root: Path, targets: list[str], *, addon: bool, workers: int = 2, timeout: float = 180.0) -> Run:
    """Run pytest on *targets* (files or node ids) in *root*, with the add-on or plainly.

    *timeout* is the hard limit of the whole run (seconds): the process
    group is killed then, and the outcomes recorded so far are returned.
    """
    scratch = Path(tempfile.mkdtemp(prefix="adaptive-compat-"))
    results = scratch / "results.jsonl"
    state = scratch / "state"
    state.mkdir()
    env = dict(os.environ)
    env.pop("PYTEST_XDIST_WORKER", None)  # our own suite's, when run from a worker
    env.pop("PYTEST_ADDOPTS", None)
    env.update(
        PYTHONPATH=os.pathsep.join([str(root), str(HERE), str(REPO)]),
        ADAPTIVE_COMPAT_MODE="addon" if addon else "plain",
        ADAPTIVE_COMPAT_RESULTS=str(results),
        ADAPTIVE_COMPAT_STATE_ROOT=str(state),
    )
    command = [
        sys.executable, "-m", "pytest", "-p", "adaptive_compat", "-p", "no:cacheprovider",
        "-q", "--no-header", "-rN", f"--timeout={TEST_TIMEOUT}", "--timeout-method=thread",
        "--rootdir", str(root), "-n", str(max(1, workers)), *targets,
    ]  # fmt: skip
    started = time.monotonic()
    try:
        with subprocess.Popen(
            command, cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True,
        ) as process:  # fmt: skip
            try:
                output, _ = process.communicate(timeout=timeout)
                returncode: int | None = process.returncode
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, 9)
                output, _ = process.communicate()
                returncode = None
        return Run(_read(results), returncode, time.monotonic() - started, output)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _read(results: Path) -> dict[str, Outcome]:
    """Fold the phases' lines into one outcome per test (a failure in any phase fails it)."""
    outcomes: dict[str, Outcome] = {}
    if not results.exists():
        return outcomes
    for line in results.read_text(encoding="utf-8").splitlines():
        phase = json.loads(line)
        known = outcomes.get(phase["nodeid"])
        if known is not None and known.outcome == "failed":
            continue
        outcomes[phase["nodeid"]] = Outcome(phase["outcome"], phase.get("text", ""))
    return outcomes


#: the page that lists the by-design differences (the one place the test reads them from)
DOC = REPO / "docs" / "compat.md"
_DIFFERENCES = ("<!-- compat-differences:start -->", "<!-- compat-differences:end -->")


def documented(doc: Path = DOC) -> dict[str, str]:
    """The differences docs/compat.md documents: node id -> its kind and reason.

    Read from the table between the ``compat-differences`` markers: one row a
    test, its node id in backticks in the first cell.
    """
    text = doc.read_text(encoding="utf-8")
    start, end = (text.index(marker) for marker in _DIFFERENCES)
    rows: dict[str, str] = {}
    for line in text[start:end].splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) < 3 or not cells[0].startswith("`"):
            continue
        nodeid = cells[0].strip("`")
        if nodeid in rows:
            raise ValueError(f"{doc.name} lists {nodeid} twice")
        if not all(cells[1:]):
            raise ValueError(f"{doc.name}: {nodeid} needs a kind and a reason")
        rows[nodeid] = " | ".join(cells[1:])
    return rows
