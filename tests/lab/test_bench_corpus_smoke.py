"""Smoke tests of the real-trace corpus: deriving a trace from git, replaying a committed one.

Kept to a few seconds: a five-commit repository made on the spot, and a
handful of documents of one committed trace at one budget factor.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from bench import replay_corpus
from bench.traces import derive
from bench.traces.stats import clustering, read_trace

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _commit(repo: Path, when: int, message: str, author: str = "bot") -> None:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": author,
        "GIT_AUTHOR_EMAIL": "bot@example.invalid",
        "GIT_COMMITTER_NAME": author,
        "GIT_COMMITTER_EMAIL": "bot@example.invalid",
        "GIT_AUTHOR_DATE": f"@{when} +0000",
        "GIT_COMMITTER_DATE": f"@{when} +0000",
    }
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", message], cwd=repo, check=True, env=env)


def test_derive_follows_creation_edits_renames_deletion_and_noise(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "pages").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "pages" / "a.txt").write_text("built: 1\nhello\n")
    (repo / "pages" / "b.txt").write_text("one\ntwo\nthree\nfour\nfive\n")
    _commit(repo, 1_000_000, "first scrape")
    (repo / "pages" / "a.txt").write_text("built: 2\nhello\n")  # only the build stamp: noise
    _commit(repo, 1_003_600, "stamp")
    (repo / "pages" / "a.txt").write_text("built: 3\nhello world\n")
    (repo / "pages" / "b.txt").rename(repo / "pages" / "c.txt")  # a pure rename carries b on
    _commit(repo, 1_007_200, "edit and rename")
    (repo / "pages" / "c.txt").write_text("one\ntwo\nthree\nfour\nsix\n")
    _commit(repo, 1_010_800, "edit c")
    (repo / "pages" / "a.txt").unlink()
    (repo / "pages" / "c.txt").write_text("reformatted by a person\n")
    _commit(repo, 1_014_400, "maintenance", author="someone")
    out = tmp_path / "t.jsonl.gz"
    manifest = tmp_path / "manifest.json"
    derive.main(
        [
            "--git-dir", str(repo / ".git"), "--source", "s", "--kind", "docs", "--repo", "x/y",
            "--ignore-lines", "^built: ", "--author", "^bot$", "--min-versions", "1",
            "--out", str(out), "--manifest", str(manifest),
        ]
    )  # fmt: skip
    rows = {r["doc"]: r for r in read_trace(str(out))}
    assert rows["s/pages/a.txt"]["versions"] == [1_000_000, 1_007_200]  # stamp-only edit dropped, then deleted
    assert rows["s/pages/c.txt"]["versions"] == [1_000_000, 1_010_800]  # b's history; the person's edit is none
    assert rows["s/pages/c.txt"]["service"] == "pages"
    entry = json.loads(manifest.read_text())["sources"]["s"]
    assert entry["docs"] == 2 and entry["versions"] == 4 and len(entry["commit"]) == 40
    with gzip.open(out, "rt") as fh:  # one JSON object per line, gzipped
        assert all(json.loads(line)["versions"] for line in fh)


def test_clustering_statistics_of_a_regular_and_a_bursty_document() -> None:
    regular = [float(i * 100) for i in range(10)]
    bursty = [0.0, 1.0, 2.0, 1000.0, 1001.0, 2000.0]
    c = clustering([regular, bursty])
    assert c["docs_with_gaps"] == 2 and c["gaps"] == 14
    assert c["median_cv"] > 0.5  # the mean of 0 (regular) and > 1 (bursty)
    assert 0 < c["short_share"] < 0.5


def test_corpus_replay_reports_every_cell_at_equal_fetches(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    code = replay_corpus.main(
        [
            "--sources", "endoflife-releases", "--dev", "", "--peers", "uniform,snapback", "--factors", "1,2",
            "--max-docs", "4", "--max-versions", "80", "--json", str(out),
        ]
    )  # fmt: skip
    assert code == 0
    report = json.loads(out.read_text())
    assert report["default_policy"] == "union" and report["peers"] == ["uniform", "snapback"]
    source = report["sources"]["endoflife-releases"]
    assert source["docs"] <= 4
    for factor in ("1", "2"):
        row = source["factors"][factor]
        for name in ("union", "uniform", "snapback", "optimum"):
            assert 0.0 <= row[name]["recall"] <= 1.0
        fetches = int(factor) * source["versions"]
        for name in ("union", "uniform", "snapback"):
            assert row[name]["exact"]
            assert abs(row[name]["fetches"] - fetches) <= 0.01 * fetches + 1
            assert row[name]["delay_h"] is not None and row[name]["delay_h"] >= 0
        summary = row["_summary"]
        assert summary["best_peer"] in ("uniform", "snapback")
        # the floor: the held peer (snapback); uniform is neither held nor fitted, and no fitted peer ran
        assert summary["best_held"] == "snapback" and summary["best_fitted"] is None
        assert summary["default_over_best_held"] == pytest.approx(row["union"]["recall"] / row["snapback"]["recall"])
        pooled = report["pooled"][factor]["micro"]
        assert pooled["union"]["recall"] == pytest.approx(row["union"]["recall"])
    table = replay_corpus.format_markdown(replay_corpus.summarise_report(report))
    assert "| d/held | best held | d/fit | best fitted |" in table and " · " in table
