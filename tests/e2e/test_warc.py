"""WARC output end to end: real crawls of the mock server's changing pages,
the files read back with warcio, replayed with pywb, and kills.

Figures: the record test runs two crawls of ~4 s, each replay test one crawl
plus pywb (installed once into a venv of its own, kept in ``.venv/pywb``:
pywb pins old versions of redis and others, so it never enters the test
venv; where pip cannot install it the replay tests are skipped, saying
why), the kill test three killed runs and a short clean one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import zlib
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from scrapy_adaptive.warc.writer import IDENTICAL_PROFILE, NOT_MODIFIED_PROFILE
from tests.conftest import read_state
from tests.crawlrunner import run_crawl, start_crawl, wait_for_log
from tests.mockserver import MockServer

warcio = pytest.importorskip("warcio")
from warcio.archiveiterator import ArchiveIterator  # noqa: E402
from warcio.exceptions import ArchiveLoadFailed  # noqa: E402

pytestmark = pytest.mark.e2e

VERSIONS = Path(__file__).parents[1] / "spiders" / "versions.py"
PAGES = Path(__file__).parents[1] / "spiders" / "pages.py"
ROOT = Path(__file__).resolve().parents[2]


def start_url(server: MockServer, tag: str) -> str:
    """An index (never changes, ETag: 304s) linking to a page changing every
    3 hits (ETag) and a static page without validators (identical bodies)."""
    links = [f"/changes/3/{tag}-c", f"/page/{tag}-static"]
    return server.url(f"/changes/100000/{tag}-index?" + urlencode({"links": ",".join(links)}))


def read_warcs(folder: Path, *, tolerant: bool = False) -> list[dict[str, Any]]:
    """Every record, digests checked; *tolerant*: a record cut by a kill
    ends its file (the next start cuts it off)."""
    records = []
    for path in sorted(folder.glob("*.warc.gz")):
        with open(path, "rb") as file:
            try:
                for record in ArchiveIterator(file, check_digests=True):
                    http = record.http_headers
                    records.append(
                        {
                            "file": path.name,
                            "type": record.rec_type,
                            "h": dict(record.rec_headers.headers),
                            "status": int(http.get_statuscode())
                            if record.rec_type in ("response", "revisit")
                            else None,
                            "payload": record.content_stream().read(),
                        }
                    )
            except (OSError, EOFError, zlib.error, ArchiveLoadFailed):
                if not tolerant:
                    raise
    return records


def check_archive(records: list[dict[str, Any]]) -> None:
    """What every WARC written by a crawl must hold."""
    assert records and records[0]["type"] == "warcinfo"
    files = {r["file"] for r in records}
    firsts = {f: next(r for r in records if r["file"] == f) for f in files}
    assert all(r["type"] == "warcinfo" for r in firsts.values())
    by_id = {r["h"]["WARC-Record-ID"]: r for r in records}
    for r in records:
        assert r["h"].get("WARC-Type") == r["type"]
        if r["type"] == "revisit":
            original = by_id[r["h"]["WARC-Refers-To"]]  # in the archive
            assert original["type"] == "response", r
            assert r["h"]["WARC-Refers-To-Target-URI"] == original["h"]["WARC-Target-URI"] == r["h"]["WARC-Target-URI"]
            assert r["h"]["WARC-Refers-To-Date"] == original["h"]["WARC-Date"] < r["h"]["WARC-Date"]
            assert r["h"]["WARC-Payload-Digest"] == original["h"]["WARC-Payload-Digest"]
            assert original["payload"], "a revisit of an empty body"
        if r["type"] in ("request",):
            assert by_id[r["h"]["WARC-Concurrent-To"]]["type"] in ("response", "revisit")


def response_digests(records: list[dict[str, Any]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = defaultdict(set)
    for r in records:
        if r["type"] == "response":
            out[r["h"]["WARC-Target-URI"]].add(r["h"]["WARC-Payload-Digest"])
    return out


def test_a_crawl_archives_versions_as_responses_and_unchanged_visits_as_revisits(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_path: Path
) -> None:
    server = clean_log
    warc_dir = tmp_path / "warc"
    start = start_url(server, "wr")
    settings = {
        **adaptive_settings,
        "ADAPTIVE_WARC_DIR": str(warc_dir),
        "ADAPTIVE_WAIT_DEFAULT": 0.3,
        "ADAPTIVE_TRUST_WARMUP": 0,
        "CLOSESPIDER_TIMEOUT": 4,
    }
    first = run_crawl(VERSIONS, settings, timeout=60, args=["-a", f"start_urls={start}"])
    first.assert_ok()
    # the server ignores validators now: the same ETag stops the download
    second = run_crawl(
        VERSIONS,
        {**settings, "ADAPTIVE_CONDITIONAL_GET": False, "CLOSESPIDER_TIMEOUT": 3},
        timeout=60,
        args=["-a", f"start_urls={start}"],
    )
    second.assert_ok()
    assert second.stats.get("adaptive/validators/aborted", 0) >= 1

    records = read_warcs(warc_dir)
    check_archive(records)
    check = subprocess.run(
        [sys.executable, "-m", "warcio.cli", "check", *map(str, sorted(warc_dir.glob("*.warc.gz")))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert len({r["file"] for r in records}) == 2  # one file per run
    revisits = [r for r in records if r["type"] == "revisit"]
    profiles = {(r["h"]["WARC-Profile"], r["status"]) for r in revisits}
    assert (IDENTICAL_PROFILE, 200) in profiles  # the static page downloaded again
    # conditional GETs (304s, written as the stored response updated by the 304,
    # so that replay serves the page) and mid-fetch aborts (the headers seen)
    assert {status for profile, status in profiles if profile == NOT_MODIFIED_PROFILE} == {200}
    assert all(not r["payload"] for r in revisits)
    # every version the frontier counts is archived as a response
    state, pending = read_state(Path(str(settings["ADAPTIVE_STATE_DIR"])))
    archived = response_digests(records)
    changing = server.url("/changes/3/wr-c")
    assert state[changing].versions >= 3
    for url, record in state.items():
        if record.versions:
            assert record.payload_digest in archived[url], url
    assert len(archived[changing]) >= state[changing].versions
    assert first.stats["adaptive/warc/response"] >= 5 and second.stats["adaptive/warc/revisit"] >= 1


def pywb_python() -> Path:
    """pywb in a venv of its own (installed once from PyPI, then reused);
    the test is skipped, saying why, where pip cannot install it."""
    venv = ROOT / ".venv" / "pywb"
    python = venv / "bin" / "python"
    stamp = venv / ".installed"
    if not stamp.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        install = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "pywb>=2.8"], timeout=540, capture_output=True, text=True
        )
        if install.returncode != 0:
            said = [line for line in install.stderr.splitlines() if line.strip() and "WARNING" not in line]
            pytest.skip(f"pywb cannot be installed here (pip install pywb: {said[-1] if said else install.returncode})")
        stamp.touch()
    return python


REPLAY = r"""
import json, sys
from werkzeug.test import Client
from pywb.apps.frontendapp import FrontEndApp
out = []
client = Client(FrontEndApp())
for stamp, url in json.loads(sys.argv[1]):
    response = client.get(f"/archive/{stamp}id_/{url}")
    out.append([response.status_code, response.get_data().decode("latin-1")])
print(json.dumps(out))
"""


def replay_in_pywb(tmp_path: Path, warc_dir: Path, queries: list[tuple[str, str]]) -> list[tuple[int, bytes]]:
    """Each (14-digit stamp, URL) as a real pywb replays it (``id_``: the body as archived)."""
    python = pywb_python()
    env = {k: v for k, v in os.environ.items() if not k.startswith("SCRAPY")}
    work = tmp_path / "pywb"
    work.mkdir()
    wb_manager = python.parent / "wb-manager"
    subprocess.run([str(wb_manager), "init", "archive"], cwd=work, check=True, timeout=60, env=env)
    files = [str(p) for p in sorted(warc_dir.glob("*.warc.gz"))]
    subprocess.run([str(wb_manager), "add", "archive", *files], cwd=work, check=True, timeout=120, env=env)
    replay = subprocess.run(
        [str(python), "-c", REPLAY, json.dumps(queries)],
        cwd=work,
        check=True,
        timeout=120,
        env=env,
        capture_output=True,
        text=True,
    )
    return [(status, body.encode("latin-1")) for status, body in json.loads(replay.stdout.strip().splitlines()[-1])]


def stamp_of(record: dict[str, Any]) -> str:
    return "".join(ch for ch in record["h"]["WARC-Date"] if ch.isdigit())[:14]


def test_pywb_replays_every_capture_of_every_page_as_the_page(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_path: Path
) -> None:
    """Responses, identical-payload revisits and 304 revisits alike: each
    capture's date replays (200) the body the capture stands for."""
    server = clean_log
    warc_dir = tmp_path / "warc"
    start = start_url(server, "wp")
    settings = {
        **adaptive_settings,
        "ADAPTIVE_WARC_DIR": str(warc_dir),
        "ADAPTIVE_WAIT_DEFAULT": 1.1,  # about one capture of a page per second: each date names one
        "ADAPTIVE_TRUST_WARMUP": 0,
        "CLOSESPIDER_TIMEOUT": 6,
    }
    run_crawl(VERSIONS, settings, timeout=60, args=["-a", f"start_urls={start}"]).assert_ok()
    records = read_warcs(warc_dir)
    by_id = {r["h"]["WARC-Record-ID"]: r for r in records}
    wanted: dict[tuple[str, str], set[bytes]] = defaultdict(set)  # a date may hold two captures
    for r in records:
        if r["type"] == "response" and r["status"] == 200:
            wanted[(stamp_of(r), r["h"]["WARC-Target-URI"])].add(r["payload"])
        elif r["type"] == "revisit":
            original = by_id[r["h"]["WARC-Refers-To"]]
            wanted[(stamp_of(r), r["h"]["WARC-Target-URI"])].add(original["payload"])
    profiles = {r["h"]["WARC-Profile"] for r in records if r["type"] == "revisit"}
    assert profiles == {IDENTICAL_PROFILE, NOT_MODIFIED_PROFILE}  # both kinds are tried
    changing = server.url("/changes/3/wp-c")
    assert len({b for (_, url), bodies in wanted.items() if url == changing for b in bodies}) >= 2
    queries = sorted(wanted)
    answers = replay_in_pywb(tmp_path, warc_dir, queries)
    wrong = [(q, code, body[:60]) for q, (code, body) in zip(queries, answers) if code != 200 or body not in wanted[q]]
    assert not wrong, wrong


def test_pywb_replays_a_gone_pages_404_from_the_time_it_was_captured_and_the_page_before(
    adaptive_settings: dict[str, object], tmp_path: Path
) -> None:
    """A page that answered 200, then 404 (said ``gone``): pywb replays the
    page at the time of its 200 and before, and the 404 at the time of the
    first 404 and at any time after (issue 39, item 4)."""
    from tests.e2e.test_change_events import PAGES, ScriptedSite, page, serving

    warc_dir = tmp_path / "warc"
    scripted = ScriptedSite({"/p/kettle.html": [page("Kettle 10 EUR"), (404, "No such kettle")]})
    settings = {
        **adaptive_settings,
        "ROBOTSTXT_OBEY": False,
        "ADAPTIVE_WARC_DIR": str(warc_dir),
        "ADAPTIVE_CHANGE_EVENTS": True,
        "ADAPTIVE_GONE_CONFIRMATIONS": 1,
        "ADAPTIVE_WAIT_DEFAULT": 1.1,  # one capture a second: each date names one
        "CLOSESPIDER_TIMEOUT": 3,
    }
    with serving(scripted) as base:
        url = base + "/p/kettle.html"
        crawl = run_crawl(PAGES, settings, timeout=60, args=["-a", f"urls={url}"])
    crawl.assert_ok()
    assert crawl.stats["adaptive/events/gone"] == 1
    records = [r for r in read_warcs(warc_dir) if r["type"] in ("response", "revisit")]
    answered = [(stamp_of(r), r["status"]) for r in records]
    first_404 = next(stamp for stamp, status in answered if status == 404)
    last_200 = max(stamp for stamp, status in answered if status == 200)
    assert last_200 < first_404, answered
    queries = [("19990101000000", url), (last_200, url), (first_404, url), ("29990101000000", url)]
    answers = replay_in_pywb(tmp_path, warc_dir, queries)
    assert [code for code, _ in answers] == [200, 200, 404, 404], answers
    assert all(b"Kettle 10 EUR" in body for _, body in answers[:2]) and b"No such kettle" in answers[2][1]


def bump_once_fetched(server: MockServer, key: str, *, after: float, deadline: float = 40.0) -> threading.Thread:
    """A thread that bumps ``/composite/<key>/`` (page and figure at once)
    *after* seconds past the figure's first fetch (bounded by *deadline*)."""

    def run() -> None:
        end = time.monotonic() + deadline
        while time.monotonic() < end:
            fetched = [e for e in server.log(path_prefix=f"/composite/{key}/fig.png") if e["status"] == 200]
            if fetched:
                time.sleep(max(0.0, fetched[0]["end"] + after - time.time()))
                server.get_json(f"/_bump?key={key}")
                return
            time.sleep(0.2)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def warc_fields(payload: bytes) -> dict[str, str]:
    return dict(line.split(": ", 1) for line in payload.decode().splitlines() if line)


def test_pywb_replays_each_capture_of_a_changed_page_with_the_figure_fetched_with_it(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_path: Path
) -> None:
    """Issue 48: a page and its figure change together (page edition 1
    shows figure edition 1; after a bump, edition 2 both).  The figure's own
    wait is 100 s: it comes again only with its page's change (a composite
    capture, conditional: its ETag).  pywb replays the page at each of its
    captures (its response records) and the figure at the same time (pywb
    takes the capture nearest it): the figure's bytes are the edition
    fetched with that page's.  Each figure fetch is written with a
    ``metadata`` record naming the page capture it came with, and the
    summary counts both page captures with every embed within 60 s."""
    server = clean_log
    warc_dir = tmp_path / "warc"
    page, figure = server.url("/composite/cc/page.html"), server.url("/composite/cc/fig.png")
    settings = {
        **adaptive_settings,
        "ADAPTIVE_WARC_DIR": str(warc_dir),
        "ADAPTIVE_WAIT_DEFAULT": 1.1,  # a capture of the page a second: each date names one
        "ADAPTIVE_WAIT_POLICIES": [{"content_type": "image/*", "default": 100}],
        "ADAPTIVE_EMBED_HOPS": 1,  # the defaults, said: composite captures
        "ADAPTIVE_REVISIT_EMBEDS_ON_CHANGE": True,
        "CLOSESPIDER_TIMEOUT": 16,  # the bump comes about 8 s in, the page and its figure within 2 s after
    }
    bumper = bump_once_fetched(server, "cc", after=6.0)  # past the 5 s a changed embed's copy stands
    crawl = run_crawl(PAGES, settings, timeout=90, args=["-a", f"urls={page}", "-a", "embeds=1"])
    bumper.join(timeout=5)
    crawl.assert_ok()
    records = read_warcs(warc_dir)
    check_archive(records)
    pages = [r for r in records if r["type"] == "response" and r["h"]["WARC-Target-URI"] == page]
    figures = [r for r in records if r["type"] == "response" and r["h"]["WARC-Target-URI"] == figure]
    editions = [b"page edition 1" in r["payload"] for r in pages]
    assert len(pages) == 2 and editions == [True, False] and b"page edition 2" in pages[1]["payload"], pages
    assert [r["payload"][8:] for r in figures] == [b"figure edition 1", b"figure edition 2"]
    # the figure's second fetch was a conditional request, answered in full (it changed)
    fetches = server.log(path_prefix="/composite/cc/fig.png")
    assert len(fetches) == 2 and fetches[1]["headers"].get("if-none-match") == '"cc-fig.png-e1"', fetches
    # each figure fetch: a metadata record naming the page capture it came with
    by_id = {r["h"]["WARC-Record-ID"]: r for r in records}
    via = [r for r in records if r["type"] == "metadata"]
    assert len(via) == 2, [r["payload"] for r in via]
    for record, page_record, figure_record in zip(via, pages, figures, strict=True):
        assert record["h"]["Content-Type"] == "application/warc-fields"
        assert by_id[record["h"]["WARC-Concurrent-To"]] is figure_record
        fields = warc_fields(record["payload"])
        assert fields["via"] == page and fields["page-capture"] == page_record["h"]["WARC-Date"], fields
        assert 0 < float(fields["seconds-after-page"]) < 60
    assert crawl.stats["adaptive/embeds/pages"] == crawl.stats["adaptive/embeds/within_60s"] == 2
    assert crawl.stats["adaptive/warc/metadata"] == 2
    assert "Composite captures at close: 2 page captures with embeds settled: 2 (100 %)" in crawl.log
    # pywb: the page at each capture, and the figure as the page embeds it then
    queries = [(stamp_of(r), url) for r in pages for url in (page, figure)]
    answers = replay_in_pywb(tmp_path, warc_dir, queries)
    assert all(code == 200 for code, _ in answers), answers
    replayed = [(answers[i][1], answers[i + 1][1]) for i in range(0, len(answers), 2)]
    for edition, (page_body, figure_body) in enumerate(replayed, 1):
        assert f"page edition {edition}".encode() in page_body, replayed
        assert figure_body.endswith(f"figure edition {edition}".encode()), replayed


def killed_runs(settings: dict[str, object], start: str, times: int = 3) -> Iterator[int]:
    """Crawls of *start* killed (``kill -9``) 1 s, 1.4 s, ... after their
    frontier opened; yields each run's number once it is dead."""
    for kill in range(times):
        proc = start_crawl(VERSIONS, settings, args=["-a", f"start_urls={start}"])
        with proc:
            wait_for_log(proc, r"Adaptive frontier opened", timeout=40)
            time.sleep(1.0 + 0.4 * kill)
            proc.kill_group()
        yield kill


def test_kills_never_leave_a_counted_version_out_of_the_archive(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_path: Path
) -> None:
    server = clean_log
    warc_dir = tmp_path / "warc"
    links = [f"/changes/{every}/wk-{i}" for i, every in enumerate((1, 1, 2, 3))]
    start = server.url("/changes/100000/wk-index?" + urlencode({"links": ",".join(links)}))
    settings = {
        **adaptive_settings,
        "ADAPTIVE_WARC_DIR": str(warc_dir),
        "ADAPTIVE_WAIT_DEFAULT": 0.2,
        "ADAPTIVE_TRUST_WARMUP": 0,
    }
    state_dir = Path(str(settings["ADAPTIVE_STATE_DIR"]))
    for kill in killed_runs(settings, start):
        state, _pending = read_state(state_dir)
        archived = response_digests(read_warcs(warc_dir, tolerant=True))
        for url, record in state.items():
            if record.versions:
                assert record.payload_digest in archived[url], (kill, url)
    final = run_crawl(VERSIONS, {**settings, "CLOSESPIDER_TIMEOUT": 2}, timeout=60, args=["-a", f"start_urls={start}"])
    final.assert_ok()
    records = read_warcs(warc_dir)  # the records cut by kills were cut off at open
    check_archive(records)
    state, pending = read_state(state_dir)
    archived = response_digests(records)
    assert sum(r.versions for r in state.values()) >= 5
    for url, record in state.items():
        if record.versions:
            assert record.payload_digest in archived[url], url


def test_without_warcio_the_crawl_is_refused_in_one_line(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_path: Path
) -> None:
    """The extra not installed: one CRITICAL line naming it, exit code 1,
    no traceback, nothing fetched."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "warcio.py").write_text("raise ImportError('No module named warcio')\n")
    start = start_url(clean_log, "wn")
    result = run_crawl(
        VERSIONS,
        {**adaptive_settings, "ADAPTIVE_WARC_DIR": str(tmp_path / "warc"), "CLOSESPIDER_TIMEOUT": 5},
        timeout=60,
        env={"PYTHONPATH": str(shim)},
        args=["-a", f"start_urls={start}"],
    )
    assert result.returncode == 1
    critical = [line for line in result.log.splitlines() if "CRITICAL" in line]
    assert len(critical) == 1 and "pip install scrapy-adaptive[warc]" in critical[0], critical
    assert "Traceback" not in result.log + result.stderr
    assert not clean_log.log(path_prefix="/changes/100000/wn-index")
    # refused before the state folder is touched: no frontier opened, no folder made
    assert "Adaptive frontier opened" not in result.log
    assert not Path(str(adaptive_settings["ADAPTIVE_STATE_DIR"])).exists()
