"""``spider.state`` with the add-on: JSON in the state folder, nothing unpickled.

Scrapy's SpiderState unpickles ``JOBDIR/spider.state`` at every start, so
a file planted there ran its code in the crawl.  Real ``scrapy runspider``
crawls in subprocesses, a real JOBDIR.
"""

from __future__ import annotations

import json
import os
import pickle
import stat
from pathlib import Path

import pytest

from tests.crawlrunner import CrawlResult, run_crawl

pytestmark = pytest.mark.e2e

STATEFUL = Path(__file__).parents[1] / "spiders" / "stateful.py"
MIGRATE = "ADAPTIVE_MIGRATE_SPIDER_STATE"


class Exploit:
    """What an attacker plants: unpickling it runs a shell command."""

    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.system, (self.command,))


def crawl(settings: dict[str, object], *args: str) -> CrawlResult:
    return run_crawl(STATEFUL, settings, timeout=60, args=list(args))


@pytest.fixture
def job(adaptive_settings: dict[str, object], tmp_path: Path) -> tuple[dict[str, object], Path]:
    """Settings with a JOBDIR the crawl creates (the state folder is its ``adaptive``)."""
    jobdir = tmp_path / "jobs" / "run1"
    settings = {k: v for k, v in adaptive_settings.items() if k != "ADAPTIVE_STATE_DIR"}
    return {**settings, "JOBDIR": str(jobdir), "CLOSESPIDER_TIMEOUT": 1, "LOG_LEVEL": "INFO"}, jobdir


def state_at_start(result: CrawlResult) -> object:
    [line] = [line for line in result.log.splitlines() if "state at start: " in line]
    return json.loads(line.split("state at start: ", 1)[1])


def test_a_planted_pickle_is_never_unpickled_and_the_start_is_refused_in_one_line(
    job: tuple[dict[str, object], Path], tmp_path: Path
) -> None:
    settings, jobdir = job
    crawl(settings).assert_ok()
    assert stat.S_IMODE(jobdir.stat().st_mode) == 0o700  # made private by the crawl that created it
    assert not (jobdir / "spider.state").exists()
    pwned = tmp_path / "PWNED"
    (jobdir / "spider.state").write_bytes(pickle.dumps(Exploit(f"touch {pwned}")))

    result = crawl(settings)
    assert not pwned.exists()
    assert result.returncode == 1 and "Traceback" not in result.text
    critical = [line for line in result.text.splitlines() if "CRITICAL" in line]
    assert len(critical) == 1, critical
    assert str(jobdir / "spider.state") in critical[0] and f"{MIGRATE} = True" in critical[0], critical
    assert (jobdir / "spider.state").exists()  # left for the user to judge


def test_the_state_round_trips_as_json_and_a_value_json_cannot_hold_is_named_once(
    job: tuple[dict[str, object], Path],
) -> None:
    settings, jobdir = job
    first = crawl(settings)
    first.assert_ok()
    assert state_at_start(first) == {}
    saved = jobdir / "adaptive" / "spider-state.json"
    assert json.loads(saved.read_text()) == {"n": 1}
    assert stat.S_IMODE(saved.stat().st_mode) == 0o600
    second = crawl(settings, "-a", "bad=1")
    second.assert_ok(allow_errors=True)
    assert state_at_start(second) == {"n": 1}
    errors = second.error_lines()
    assert len(errors) == 1 and "spider.state['seen']" in errors[0] and "set" in errors[0], errors
    assert json.loads(saved.read_text()) == {"n": 2}  # the rest is kept
    third = crawl(settings)
    third.assert_ok()
    assert state_at_start(third) == {"n": 2}
    assert not (jobdir / "spider.state").exists()  # nothing pickled in the job folder


def test_a_pickled_state_is_migrated_once_when_asked(job: tuple[dict[str, object], Path]) -> None:
    settings, jobdir = job
    jobdir.mkdir(parents=True)
    (jobdir / "spider.state").write_bytes(pickle.dumps({"n": 5, "when": "2026-01-01"}))

    migrated = crawl({**settings, MIGRATE: True})
    migrated.assert_ok()
    said = [line for line in migrated.log.splitlines() if "Migrated" in line]
    assert len(said) == 1 and "spider.state.migrated" in said[0], said
    assert state_at_start(migrated) == {"n": 5, "when": "2026-01-01"}
    assert not (jobdir / "spider.state").exists() and (jobdir / "spider.state.migrated").exists()
    again = crawl(settings)  # the setting removed: nothing left to refuse, nothing migrated again
    again.assert_ok()
    assert state_at_start(again) == {"n": 6, "when": "2026-01-01"} and "Migrated" not in again.log


@pytest.mark.parametrize(
    ("where", "garble", "migrate"),
    [
        ("adaptive/spider-state.json", b'{"n": 1', False),
        ("spider.state", b"\x80\x04not a pickle", True),
    ],
)
def test_a_garbled_state_refuses_the_start_in_one_line(
    job: tuple[dict[str, object], Path], where: str, garble: bytes, migrate: bool
) -> None:
    settings, jobdir = job
    crawl(settings).assert_ok()
    (jobdir / where).write_bytes(garble)
    result = crawl({**settings, MIGRATE: migrate})
    assert result.returncode == 1 and "Traceback" not in result.text, result.text[-3000:]
    errors = result.error_lines()
    assert len(errors) == 1 and "CRITICAL" in errors[0] and str(jobdir / where) in errors[0], errors
    assert (jobdir / where).read_bytes() == garble  # left as it was
