"""Damaged or half-made state folders, as a user meets them: real crawls and
real ``scrapy frontier`` runs in subprocesses, on LevelDB files damaged for
real (a table cut short, garbled bytes in a block, keys and marks written
by another program, a first start killed before its marker was finished).

Each ends in one CRITICAL line naming the database and the repair, exit
code 1 and no traceback, or, where the crawl can go on safely, in one
ERROR (or WARNING) line, the damaged bytes moved aside, and a crawl that
goes on.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import plyvel
import pytest

from scrapy_adaptive.store.marker import MARKER, StateDirError, read_marker
from tests.conftest import ADDON
from tests.crawlrunner import CrawlResult, run_crawl, without_file_override
from tests.mockserver import MockServer

pytestmark = pytest.mark.e2e

CASES = Path(__file__).parents[1] / "spiders" / "cases.py"
SAMPLE = Path(__file__).parents[2] / "sample_project"
REPO = Path(__file__).parents[2]
RING = 26


def crawl(server: MockServer, settings: dict[str, object], as_user: bool = False, **extra: object) -> CrawlResult:
    start = server.url(f"/ring/{RING}/0?fanout=2&size=3000")
    # 2 KB of meta per stored request: the records fill several table blocks
    args = ["-a", f"start_urls={start}", "-a", "pad=2000"]
    return run_crawl(CASES, {**settings, **extra}, timeout=60, args=args, as_user=as_user)


@pytest.fixture(scope="module")
def crawled_once(mockserver: MockServer, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    """A state folder whose 26 URLs sit in one LevelDB table (no log left to replay), made once."""
    state = tmp_path_factory.mktemp("crawled") / "adaptive"
    settings = {
        "ADDONS": ADDON,
        "ADAPTIVE_STATE_DIR": str(state),
        "ADAPTIVE_WAIT_POLICY": "scrapy_adaptive.policies.ConstantWaitPolicy",
        "ADAPTIVE_WAIT_POLICIES": [],
        "ADAPTIVE_LOG_INTERVAL": 1.0,
        "LOG_LEVEL": "INFO",
        "ADAPTIVE_MIN_DELAY": 0,
        "ADAPTIVE_MAX_DELAY": 0,
        "ADAPTIVE_HOST_VALENCE": 4,
        "ADAPTIVE_WAIT_DEFAULT": 1000,
        "CLOSESPIDER_TIMEOUT": 3,
    }
    crawl(mockserver, settings).assert_ok()
    db = plyvel.DB(str(state / "frontier.ldb"))
    db.compact_range()
    db.close()
    return state, settings


@pytest.fixture
def crawled(crawled_once: tuple[Path, dict[str, object]], tmp_path: Path) -> tuple[Path, dict[str, object]]:
    """A copy of that folder for one test to damage."""
    state = tmp_path / "adaptive"
    shutil.copytree(crawled_once[0], state)
    return state, {**crawled_once[1], "ADAPTIVE_STATE_DIR": str(state)}


def frontier(state: Path, *args: str, as_user: bool = False) -> subprocess.CompletedProcess[str]:
    """``scrapy frontier ARGS --state-dir STATE`` in the sample project, as a user types it
    (*as_user*: without root's override of file permissions)."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "scrapy", "frontier", *args, "--state-dir", str(state)],
        cwd=SAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=without_file_override if as_user else None,
    )


def table(state: Path) -> Path:
    (only,) = (state / "frontier.ldb").glob("*.ldb")
    return only


def stopped_with_one_critical(result: CrawlResult, *words: str) -> str:
    critical = [line for line in result.text.splitlines() if "] CRITICAL:" in line]
    assert result.returncode == 1, result.text[-3000:]
    assert len(critical) == 1, critical
    assert "Traceback" not in result.text and len(result.error_lines()) == 1, result.error_lines()
    for word in words:
        assert word in critical[0], critical[0]
    return critical[0]


REPAIR = "plyvel.repair_db("


def test_a_table_cut_to_half_is_one_critical_line_naming_it(
    crawled: tuple[Path, dict[str, object]], clean_log: MockServer
) -> None:
    state, settings = crawled
    ldb = table(state)
    os.truncate(ldb, ldb.stat().st_size // 2)
    result = crawl(clean_log, settings)
    stopped_with_one_critical(result, "scrapy-adaptive cannot start", str(ldb), REPAIR)
    for action in ("export", "report"):
        done = frontier(state, action)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert done.stderr.count("\n") == 1 and str(ldb) in done.stderr and REPAIR in done.stderr


def test_a_garbled_block_stops_the_crawl_and_export_gives_what_it_can(
    crawled: tuple[Path, dict[str, object]], clean_log: MockServer
) -> None:
    state, settings = crawled
    whole = frontier(state, "export")
    assert whole.returncode == 0 and len(whole.stdout.splitlines()) == RING
    garble_a_record_block(state)
    ldb = table(state)
    damaged = ldb.read_bytes()
    backup = state.parent / "export.jsonl"
    backup.write_text("last night's export\n")
    export = frontier(state, "export", "-O", str(backup))
    assert export.returncode == 1 and export.stderr.count("\n") == 1 and "Traceback" not in export.stderr
    assert REPAIR in export.stderr and "from before and after the damage" in export.stderr
    assert f"block checksum mismatch, in {ldb})" in export.stderr  # the database's one table, named
    # the earlier export stays whole; what this one could read is beside it
    assert backup.read_text() == "last night's export\n" and f"{backup} is unchanged" in export.stderr
    exported = (state.parent / "export.jsonl.partial").read_text().splitlines()
    # all but what the damaged block held (LevelDB may hold none of the records in it: then all 26)
    assert RING - 5 <= len(exported) <= RING
    assert f"({len(exported)} records exported" in export.stderr
    report = frontier(state, "report")
    assert report.returncode == 1 and report.stderr.count("\n") == 1 and REPAIR in report.stderr
    # revisits are due at once, and the report is rebuilt at the first interval: the crawl reads
    # the damaged block within seconds and stops (its 3 s limit is too short on a loaded machine)
    result = crawl(clean_log, settings, ADAPTIVE_WAIT_DEFAULT=0.5, CLOSESPIDER_TIMEOUT=30)
    stopped_with_one_critical(result, str(state / "frontier.ldb"), f"block checksum mismatch, in {ldb})", REPAIR)
    assert "Spider closed (adaptive_state_error)" in result.log
    assert ldb.read_bytes() == damaged  # left as it is, for the repair


def test_the_console_refuses_a_damaged_marker_in_one_line_as_the_crawl_does(
    crawled: tuple[Path, dict[str, object]],
) -> None:
    """Issue 36 item 5: ``scrapy frontier report`` ended in a traceback (the
    other damaged markers: tests/unit/ops/test_console.py)."""
    state, _ = crawled
    marker = state / MARKER
    marker.write_bytes(b"{not json")
    with pytest.raises(StateDirError) as refused:  # what the crawl says (its open reads the marker so)
        read_marker(str(marker))
    done = frontier(state, "report")
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr == f"scrapy frontier report: {refused.value}\n"
    assert marker.read_bytes() == b"{not json"


def test_a_table_this_user_cannot_read_is_said_so_not_called_damaged(
    crawled: tuple[Path, dict[str, object]], clean_log: MockServer, as_user: bool
) -> None:
    """Issue 36 item 4: ``chmod 000`` on a table was "damaged" with the
    plyvel.repair_db advice, which run by that user would drop the table."""
    state, settings = crawled
    ldb = table(state)
    ldb.chmod(0)
    db = state / "frontier.ldb"
    words = (f"The state database in {db} is not readable by this user", str(ldb), f"chmod -R u+rwX {db}")
    line = stopped_with_one_critical(crawl(clean_log, settings, as_user=as_user), *words)
    done = frontier(state, "report", as_user=as_user)
    assert done.returncode == 1 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    for said in (line, done.stderr):
        assert all(word in said for word in words) and REPAIR not in said and " is damaged (" not in said, said
    assert ldb.stat().st_mode & 0o777 == 0  # nothing was changed


def test_a_state_folder_this_user_cannot_read_is_said_so_not_called_empty(
    crawled: tuple[Path, dict[str, object]], clean_log: MockServer, as_user: bool
) -> None:
    """Issue 36 item 4: the console said "not a scrapy-adaptive state folder
    … no crawl ran there" of an ``adaptive/`` folder it could not read."""
    state, settings = crawled
    state.chmod(0)
    try:
        done = frontier(state, "report", as_user=as_user)
        result = crawl(clean_log, settings, as_user=as_user)
    finally:
        state.chmod(0o700)
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    words = (f"{state / MARKER} is not readable by this user", f"chmod -R u+rwX {state}")
    line = stopped_with_one_critical(result, *words)
    for said in (line, done.stderr):
        assert all(word in said for word in words) and "no crawl ran there" not in said, said


def test_a_state_folder_this_user_cannot_write_is_refused_at_start(
    crawled: tuple[Path, dict[str, object]], clean_log: MockServer, as_user: bool
) -> None:
    """Issue 36 item 6: with ``chmod 500`` on the state folder the crawl ran
    with its checkpoint, control socket and report silently off, warning at
    every summary; the console then blamed "another program"."""
    state, settings = crawled
    marker = (state / MARKER).read_bytes()
    state.chmod(0o500)
    try:
        result = crawl(clean_log, settings, as_user=as_user)
        report = frontier(state, "report", as_user=as_user)  # reading needs no write there
    finally:
        state.chmod(0o700)
    stopped_with_one_critical(result, f"The state folder {state} is not writable by this user", "Permission denied")
    assert "Adaptive frontier opened" not in result.log
    assert (state / MARKER).read_bytes() == marker
    assert report.returncode == 0 and "another program" not in report.stderr, report.stderr


def test_export_salvages_the_records_when_the_queues_rows_are_damaged(
    crawled: tuple[Path, dict[str, object]],
) -> None:
    """The tester's finding: 64 garbled bytes in the table's first block (the
    queues' rows, read when the frontier opens) made export give 0 records,
    although every record could still be read past the damaged block."""
    state, _ = crawled
    ldb = table(state)
    with open(ldb, "r+b") as f:  # the first block: the queues' counters (h/ sorts first)
        f.seek(64)
        f.write(b"\x5a" * 64)
    export = frontier(state, "export")
    assert export.returncode == 1 and export.stderr.count("\n") == 1 and "Traceback" not in export.stderr
    assert REPAIR in export.stderr and "from before and after the damage" in export.stderr
    exported = export.stdout.splitlines()
    assert len(exported) == RING and all(json.loads(line)["url"] for line in exported)
    assert f"({RING} records exported" in export.stderr
    report = frontier(state, "report")  # only export salvages; the rest is refused as before
    assert report.returncode == 1 and report.stderr.count("\n") == 1 and REPAIR in report.stderr


def garble_a_record_block(state: Path) -> None:
    ldb = table(state)
    with open(ldb, "r+b") as f:  # a block of records, in the middle of the table (not the counters, read at open)
        f.seek(ldb.stat().st_size // 2)
        f.write(b"\x5a" * 64)


def test_garbled_marks_and_keys_are_quarantined_with_one_line_each(
    crawled: tuple[Path, dict[str, object]], clean_log: MockServer
) -> None:
    state, settings = crawled
    db = plyvel.DB(str(state / "frontier.ldb"))
    fp = next(db.iterator(prefix=b"u/", include_value=False))[2:]
    queue = next(db.iterator(prefix=b"q/", include_value=False)).split(b"\x00")[0]
    db.put(b"p/" + fp, b"\x00")  # a pending-delivery mark that is not one
    db.put(queue + b"\x00\x01", b"")  # a queue key too short to be an entry
    db.put(b"m/progress", b"{garbled")
    db.close()
    result = crawl(clean_log, settings, ADAPTIVE_WAIT_DEFAULT=0.5)
    assert result.returncode == 0 and "Traceback" not in result.text, result.text[-3000:]
    errors = result.error_lines()
    assert len(errors) == 2, errors
    assert f"pending-delivery mark of fingerprint {fp.hex()} is garbled" in errors[0] + errors[1]
    assert "malformed key" in errors[0] + errors[1] and "moved aside under x/" in errors[0] + errors[1]
    warned = [line for line in result.log.splitlines() if "progress series" in line]
    assert len(warned) == 1 and "WARNING" in warned[0] and "m/progress" in warned[0]
    assert result.stats["adaptive/delivery/redelivered"] == 1  # fetched again: at least once
    db = plyvel.DB(str(state / "frontier.ldb"))
    assert db.get(b"x/" + queue + b"\x00\x01") == b"" and db.get(queue + b"\x00\x01") is None
    assert db.get(b"p/" + fp) is None
    db.close()
    crawl(clean_log, settings).assert_ok()  # said once: nothing left to complain about


KILL_BEFORE_FINISHING = """
import os, signal, sys
from scrapy_adaptive.store import statedir
statedir.write_marker = lambda path, data: os.kill(os.getpid(), signal.SIGKILL)
statedir.open_store(statedir.resolve(sys.argv[1], None), spider="cases", fingerprinter=sys.argv[2], sync=False)
"""


@pytest.mark.parametrize("made_by", ["this version", "an older version"])
def test_a_first_start_killed_before_its_marker_is_finished_is_resumed(
    clean_log: MockServer, adaptive_settings: dict[str, object], made_by: str
) -> None:
    state = Path(str(adaptive_settings["ADAPTIVE_STATE_DIR"]))
    if made_by == "this version":  # killed with the database made and the marker still saying "creating"
        fingerprinter = "scrapy.utils.request.RequestFingerprinter"
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        cmd = [sys.executable, "-c", KILL_BEFORE_FINISHING, str(state), fingerprinter]
        killed = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60)
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert '"creating": true' in (state / "ADAPTIVE_STATE.json").read_text()
    else:  # 0.x made the database first: a kill left it without a marker
        state.mkdir(parents=True)
        plyvel.DB(str(state / "frontier.ldb"), create_if_missing=True).close()
    assert (state / "frontier.ldb" / "CURRENT").exists()
    settings = {**adaptive_settings, "CLOSESPIDER_TIMEOUT": 2, "ADAPTIVE_WAIT_DEFAULT": 1000}
    result = run_crawl(CASES, settings, timeout=60, args=["-a", f"start_urls={clean_log.page_url('/page/half')}"])
    result.assert_ok()
    assert "creating" not in (state / "ADAPTIVE_STATE.json").read_text()
    assert result.stats["adaptive/issued"] >= 1


RACE = """
import sys, time
from scrapy_adaptive.store import statedir
at = float(sys.argv[2])
time.sleep(max(0.0, at - time.time() - 0.05))
while time.time() < at:
    pass
try:
    store = statedir.open_store(statedir.resolve(sys.argv[1], None), spider="s", fingerprinter="f", sync=False)
except statedir.StateDirError as exc:
    print(exc)
else:
    print("opened")
    time.sleep(0.5)
    store.close()
"""


def test_of_two_first_starts_the_loser_is_told_in_use(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    outcomes = []
    for n in range(10):
        state = tmp_path / f"race{n}"
        at = f"{time.time() + 0.7:.3f}"
        both = [
            subprocess.Popen([sys.executable, "-c", RACE, str(state), at], env=env, stdout=subprocess.PIPE, text=True)
            for _ in range(2)
        ]
        said = sorted(p.communicate(timeout=30)[0].strip() for p in both)
        outcomes.append(said)
        shutil.rmtree(state)
    for said in outcomes:
        assert said[1] == "opened" and "is in use by another crawl" in said[0], outcomes
