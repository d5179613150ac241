"""Cross-URL deduplication end to end: one body served under several URLs
(a tracking parameter, a session parameter, a mirror path) is archived once
as a ``response``; every other capture is a ``revisit`` referring to it, and
a real pywb replays each URL as the body.

Figures: the replay test runs two crawls of ~4 s and ~3 s (the second after
a restart: the index is read back from the WARC folder), one pywb replay and
two reports; the kill test three killed runs and a short clean one.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from urllib.parse import urlencode

import pytest

from scrapy_adaptive.integration.downloadermiddlewares.warc import DUPLICATE_ANNOTATION
from scrapy_adaptive.warc.writer import IDENTICAL_PROFILE
from tests.conftest import read_state
from tests.crawlrunner import run_crawl
from tests.e2e.test_console import frontier
from tests.e2e.test_warc import VERSIONS, killed_runs, read_warcs, replay_in_pywb, stamp_of
from tests.mockserver import MockServer, page_html

pytest.importorskip("warcio")

pytestmark = pytest.mark.e2e


def test_one_body_under_several_urls_is_archived_once_and_replays_under_each(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_path: Path
) -> None:
    server = clean_log
    warc_dir = tmp_path / "warc"
    body = page_html("/page/dd-same")
    aliases = ["/page/dd-same", "/page/dd-same?utm_source=x", "/mirror/page/dd-same"]
    settings = {
        **adaptive_settings,
        "ADAPTIVE_WARC_DIR": str(warc_dir),
        "ADAPTIVE_WARC_DEDUP_ACROSS_URLS": True,
        "ADAPTIVE_WAIT_DEFAULT": 1.1,  # about one capture of a page per second: each date names one
        "ADAPTIVE_TRUST_WARMUP": 0,
        "CLOSESPIDER_TIMEOUT": 4,
    }
    start = server.url("/page/dd-index?" + urlencode({"links": ",".join(aliases)}))
    first = run_crawl(VERSIONS, settings, timeout=60, args=["-a", f"start_urls={start}"])
    first.assert_ok()
    assert first.stats.get("adaptive/warc/dedup_across_urls", 0) >= 2
    # a restart: the index is read back; a new alias refers to the first run's capture
    later = server.url("/page/dd-same?sid=2")
    start2 = server.url("/page/dd-index2?" + urlencode({"links": "/page/dd-same?sid=2"}))
    second = run_crawl(
        VERSIONS, {**settings, "CLOSESPIDER_TIMEOUT": 3}, timeout=60, args=["-a", f"start_urls={start2}"]
    )
    second.assert_ok()
    assert second.stats.get("adaptive/warc/dedup_across_urls", 0) >= 1

    records = read_warcs(warc_dir)
    by_id = {r["h"]["WARC-Record-ID"]: r for r in records}
    urls = {server.url(alias) for alias in aliases} | {later}
    originals = [r for r in records if r["type"] == "response" and r["payload"] == body]
    assert len(originals) == 1, [r["h"]["WARC-Target-URI"] for r in originals]  # archived once
    original = originals[0]
    captures = [r for r in records if r["type"] in ("response", "revisit") and r["h"]["WARC-Target-URI"] in urls]
    assert {r["h"]["WARC-Target-URI"] for r in captures} == urls
    for r in captures:
        if r is original:
            continue
        assert r["type"] == "revisit" and r["h"]["WARC-Profile"] == IDENTICAL_PROFILE, r["h"]
        assert by_id[r["h"]["WARC-Refers-To"]] is original
        assert r["h"]["WARC-Refers-To-Target-URI"] == original["h"]["WARC-Target-URI"]
        assert r["h"]["WARC-Refers-To-Date"] == original["h"]["WARC-Date"]
        assert r["h"]["WARC-Payload-Digest"] == original["h"]["WARC-Payload-Digest"]

    # the crawl log marks the duplicates of another URL's capture
    log = (Path(str(settings["ADAPTIVE_STATE_DIR"])) / "crawl.log").read_text().splitlines()
    marked = {line.split(" ")[3] for line in log if DUPLICATE_ANNOTATION in line}
    assert marked == urls - {original["h"]["WARC-Target-URI"]}, log

    # pywb replays every capture of every alias as the body
    wanted: dict[tuple[str, str], int] = defaultdict(int)
    for r in captures:
        wanted[(stamp_of(r), r["h"]["WARC-Target-URI"])] += 1
    queries = sorted(wanted)
    answers = replay_in_pywb(tmp_path, warc_dir, queries)
    wrong = [(q, code, got[:80]) for q, (code, got) in zip(queries, answers, strict=True) if (code, got) != (200, body)]
    assert not wrong, wrong
    assert {url for _, url in queries} == urls

    # the stopped crawl's report lists the group, to canonicalise
    def report(*args: str) -> str:
        job = Path(str(settings["ADAPTIVE_STATE_DIR"])).parent  # its state folder is JOBDIR/adaptive
        done = frontier(job, "report", *args, "-s", f"ADAPTIVE_WARC_DIR={warc_dir}")
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stdout

    text = report()
    assert (
        "same payload under several URLs" in text
        and f"{len(urls):>5} URLs  {original['h']['WARC-Payload-Digest']}" in text
    ), text[-1500:]
    section = json.loads(report("--json"))["report"]["shared_payloads"]
    assert section["groups"][0]["urls"] == len(urls) and section["duplicates"] == len(urls) - 1
    assert set(section["groups"][0]["examples"]) == urls


def test_kills_never_leave_a_revisit_referring_to_a_missing_capture(
    clean_log: MockServer, adaptive_settings: dict[str, object], tmp_path: Path
) -> None:
    """Killed crawls with cross-URL deduplication on: every revisit refers to
    a response in the archive (an index entry is only written once its
    record is durable), and every version the frontier counts is archived
    under its URL, as a response or as a revisit of another URL's."""
    server = clean_log
    warc_dir = tmp_path / "warc"
    links = [f"/page/dk-{i % 3}?sid={i}" for i in range(9)] + [f"/mirror/page/dk-{i}" for i in range(3)]
    links += [f"/changes/{every}/dk-c{every}" for every in (1, 2)]
    start = server.url("/changes/100000/dk-index?" + urlencode({"links": ",".join(links)}))
    settings = {
        **adaptive_settings,
        "ADAPTIVE_WARC_DIR": str(warc_dir),
        "ADAPTIVE_WARC_DEDUP_ACROSS_URLS": True,
        "ADAPTIVE_WAIT_DEFAULT": 0.2,
        "ADAPTIVE_TRUST_WARMUP": 0,
    }
    state_dir = Path(str(settings["ADAPTIVE_STATE_DIR"]))
    for kill in killed_runs(settings, start):
        killed = read_warcs(warc_dir, tolerant=True)  # before any repair
        ids = {r["h"]["WARC-Record-ID"] for r in killed}
        assert all(r["h"]["WARC-Refers-To"] in ids for r in killed if r["type"] == "revisit"), kill
    final = run_crawl(VERSIONS, {**settings, "CLOSESPIDER_TIMEOUT": 2}, timeout=60, args=["-a", f"start_urls={start}"])
    final.assert_ok()
    records = read_warcs(warc_dir)  # the records cut by kills were cut off at open
    by_id = {r["h"]["WARC-Record-ID"]: r for r in records}
    archived: dict[str, set[str]] = defaultdict(set)
    across = 0
    for r in records:
        if r["type"] == "revisit":
            original = by_id[r["h"]["WARC-Refers-To"]]  # in the archive
            assert original["type"] == "response" and original["payload"], r["h"]
            assert r["h"]["WARC-Refers-To-Target-URI"] == original["h"]["WARC-Target-URI"]
            assert r["h"]["WARC-Payload-Digest"] == original["h"]["WARC-Payload-Digest"]
            across += r["h"]["WARC-Refers-To-Target-URI"] != r["h"]["WARC-Target-URI"]
        if r["type"] in ("response", "revisit"):
            archived[r["h"]["WARC-Target-URI"]].add(r["h"].get("WARC-Payload-Digest", ""))
    assert across >= 6
    state, _pending = read_state(state_dir)
    for url, record in state.items():
        if record.versions:
            assert record.payload_digest in archived[url], url


def test_a_redis_fleet_shares_one_digest_index_across_its_warc_folders(
    clean_log: MockServer, adaptive_settings: dict[str, object], redis_url: str, tmp_path: Path
) -> None:
    """Two workers of one Redis frontier, each with its WARC folder: the
    second archives the body the first archived as revisits of the first's
    capture, and pywb replays both folders as one collection."""
    server = clean_log
    body = page_html("/page/df-same")
    base = {
        **adaptive_settings,
        "ADAPTIVE_STORE_URL": redis_url,
        "ADAPTIVE_WARC_DEDUP_ACROSS_URLS": True,
        "ADAPTIVE_WAIT_DEFAULT": 1.1,
        "ADAPTIVE_TRUST_WARMUP": 0,
        "CLOSESPIDER_TIMEOUT": 3,
    }
    folders = [tmp_path / "warc-1", tmp_path / "warc-2"]
    links = [["/page/df-same"], ["/mirror/page/df-same", "/page/df-same?sid=2"]]
    for n, (folder, aliases) in enumerate(zip(folders, links, strict=True)):
        start = server.url(f"/page/df-index{n}?" + urlencode({"links": ",".join(aliases)}))
        settings = {**base, "ADAPTIVE_WARC_DIR": str(folder), "ADAPTIVE_STATE_DIR": str(tmp_path / f"w{n}")}
        run_crawl(VERSIONS, settings, timeout=60, args=["-a", f"start_urls={start}"]).assert_ok()
    first, second = read_warcs(folders[0]), read_warcs(folders[1])
    originals = [r for r in first + second if r["type"] == "response" and r["payload"] == body]
    assert len(originals) == 1 and originals[0] in first  # archived once, by the first worker
    original = originals[0]
    revisits = [
        r for r in second if r["type"] == "revisit" and r["h"]["WARC-Refers-To"] == original["h"]["WARC-Record-ID"]
    ]
    aliases = {server.url(a) for a in links[1]}
    assert aliases <= {r["h"]["WARC-Target-URI"] for r in revisits}
    both = tmp_path / "both"
    both.mkdir()
    for folder in folders:
        for path in folder.glob("*.warc.gz"):
            (both / f"{folder.name}-{path.name}").symlink_to(path)
    queries = sorted({(stamp_of(r), r["h"]["WARC-Target-URI"]) for r in revisits})
    answers = replay_in_pywb(tmp_path, both, queries)
    assert answers == [(200, body)] * len(queries), answers
