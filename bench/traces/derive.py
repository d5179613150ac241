"""Derive a change-history trace from a git-scraping repository.

``python -m bench.traces.derive --git-dir DIR --source NAME --kind KIND --repo OWNER/NAME
[--path SPEC ...] [--include RE] [--exclude RE] [--ignore-lines RE] [--max-docs N --seed S]``

A git-scraping repository's scraper commits a page, feed or API answer
whenever it sees it change, so each tracked file is a document and each
commit that changes it is a version stamped with its committer date (the
time the scraper saw the change: already quantised by the scraper's own
schedule, whose median spacing the manifest records).  The rules:

* the first version is the file's creation (the commit adding it);
* a commit that modifies the file is a version, unless the file's content
  with the lines matching ``--ignore-lines`` removed (and sorted, with
  ``--ignore-order``) equals that of its previous version: a feed's
  ``lastBuildDate``, a "generated at" stamp or items shuffled by the
  generator are the scraper's own noise, not a change of the document;
* a commit by an author not matching ``--author`` (a person migrating the
  format) or touching more than ``--max-files-per-commit`` files is
  maintenance, no version;
* a pure rename (100 % similar) carries the history to the new path and is
  no version; a rename with edits is a version; a deletion ends the
  document's life (a later re-creation is a new document, ``path#2``);
* merge commits are not looked at (their changes are in their parents).

Documents with fewer than ``--min-versions`` versions are left out; if more
than ``--max-docs`` remain, a seeded sample is kept (``random.Random(seed)``
over the sorted names), so the cap is reproducible and does not favour the
busiest files.  The trace is written gzipped, one JSON line per document
``{"doc": "<source>/<path>", "service": "<group>", "versions": [...]}``
sorted by ``doc`` (plus ``"deleted": t`` for a file deleted at t, which the
replay does not use yet: it keeps every document to the end), and the source's entry in the JSON manifest (repository,
commit, licence, rules, cap, date range, counts, clustering statistics) is
added or replaced.  ``--sources-md`` rewrites the human-readable table from
the manifest.  Only timestamps leave the repository.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import re
import shlex
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .stats import POISSON_SHORT_SHARE, clustering, read_trace

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(HERE, "manifest.json")
SOURCES_MD = os.path.join(HERE, "SOURCES.md")
KINDS = ("news-feeds", "data-api", "docs", "policy")
_COMMIT = "\x01"


@dataclass
class Life:
    """One document: a path from its creation to its deletion (or the end)."""

    path: str
    versions: list[int] = field(default_factory=list)
    #: (commit, path at that commit) of the creation and of each version after it, for the noise filter
    origin: tuple[str, str] = ("", "")
    edits: list[tuple[str, str, int]] = field(default_factory=list)
    #: when the file was deleted (None: alive at the repository's last commit)
    deleted: int | None = None


def _git(git_dir: str, *args: str) -> str:
    out = subprocess.run(
        ["git", "-c", "core.quotepath=off", f"--git-dir={git_dir}", *args],
        check=True,
        capture_output=True,
        text=True,
        encoding="utf-8",
        errors="replace",
    )
    return out.stdout


def head_commit(git_dir: str) -> str:
    return _git(git_dir, "rev-parse", "HEAD").strip()


Commit = tuple[str, int, list[tuple[str, str, str]], str]


def walk(git_dir: str, paths: list[str]) -> list[Commit]:
    """The oldest-first list of non-merge commits as (sha, time, [(status, old, new)], author)."""
    raw = _git(
        git_dir,
        "log",
        "--reverse",
        "--no-merges",
        "-M",
        f"--format={_COMMIT}%H %ct %an",
        "--name-status",
        "HEAD",
        "--",
        *paths,
    )
    commits: list[Commit] = []
    for block in raw.split(_COMMIT)[1:]:
        lines = block.strip("\n").split("\n")
        sha, ct, author = (lines[0].split(" ", 2) + [""])[:3]
        changes: list[tuple[str, str, str]] = []
        for line in lines[1:]:
            if not line.strip():
                continue
            parts = line.split("\t")
            status = parts[0]
            if status[0] in "RC" and len(parts) == 3:
                changes.append((status, parts[1], parts[2]))
            elif len(parts) == 2:
                changes.append((status, parts[1], parts[1]))
        commits.append((sha, int(ct), changes, author))
    return commits


def lives(
    commits: list[Commit],
    keep: re.Pattern[str] | None,
    drop: re.Pattern[str] | None,
    *,
    author: re.Pattern[str] | None = None,
    max_files: int = 0,
) -> list[Life]:
    """Apply the rules of the module docstring to the walked history.

    A commit by someone the *author* pattern does not match, or touching
    more than *max_files* selected files, is maintenance (a format
    migration, a clean-up), not the scraper seeing a change: it creates,
    renames and deletes documents but gives none of them a version.
    """

    def wanted(path: str) -> bool:
        return (keep is None or keep.search(path) is not None) and (drop is None or drop.search(path) is None)

    alive: dict[str, Life] = {}
    done: list[Life] = []
    for sha, ct, all_changes, who in commits:
        changes = [c for c in all_changes if wanted(c[2]) or c[1] in alive]
        maintenance = (author is not None and author.search(who) is None) or (0 < max_files < len(changes))
        for status, old, new in changes:
            kind = status[0]
            if kind == "D":
                life = alive.pop(old, None)
                if life is not None:
                    life.deleted = ct
                    done.append(life)
            elif kind == "R":
                life = alive.pop(old, None)
                if not wanted(new):
                    if life is not None:
                        life.deleted = ct  # moved out of the selection: gone from it
                        done.append(life)
                    continue
                if life is None:
                    alive[new] = Life(new, [ct], (sha, new))
                    continue
                life.path = new
                alive[new] = life
                if status != "R100" and not maintenance and ct > life.versions[-1]:
                    life.versions.append(ct)
                    life.edits.append((sha, new, ct))
            elif kind in "AC" or (kind in "MT" and new not in alive):
                if not wanted(new):
                    continue
                if new in alive:  # added again without a deletion seen: a modification
                    life = alive[new]
                    if not maintenance and ct > life.versions[-1]:
                        life.versions.append(ct)
                        life.edits.append((sha, new, ct))
                    continue
                alive[new] = Life(new, [ct], (sha, new))
            elif kind in "MT":
                life = alive[new]
                if not maintenance and ct > life.versions[-1]:  # two commits in one second are one version
                    life.versions.append(ct)
                    life.edits.append((sha, new, ct))
    done.extend(alive.values())
    return done


class Blobs:
    """File contents at commits, through one ``git cat-file --batch`` process."""

    def __init__(self, git_dir: str) -> None:
        self._proc = subprocess.Popen(
            ["git", f"--git-dir={git_dir}", "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )

    def read(self, sha: str, path: str) -> bytes:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(f"{sha}:{path}\n".encode())
        self._proc.stdin.flush()
        header = self._proc.stdout.readline().split()
        if len(header) < 3 or header[1] == b"missing":
            return b""
        data = self._proc.stdout.read(int(header[2]))
        self._proc.stdout.read(1)  # the newline after the content
        return data

    def close(self) -> None:
        for pipe in (self._proc.stdin, self._proc.stdout):
            if pipe is not None:
                pipe.close()
        self._proc.wait(timeout=60)


def normalised(content: bytes, ignore: re.Pattern[str] | None, ignore_order: bool) -> str:
    """The digest of *content* without the ignored lines (and their order, if asked)."""
    lines = content.decode("utf-8", errors="replace").splitlines()
    if ignore is not None:
        lines = [line for line in lines if not ignore.search(line)]
    if ignore_order:
        lines.sort()
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def drop_noise(life: Life, blobs: Blobs, ignore: re.Pattern[str] | None, ignore_order: bool) -> None:
    """Keep only the versions whose normalised content differs from the previous kept one."""
    first_sha, first_path = life.origin
    previous = normalised(blobs.read(first_sha, first_path), ignore, ignore_order)
    kept = [life.versions[0]]
    for sha, path, ct in life.edits:
        digest = normalised(blobs.read(sha, path), ignore, ignore_order)
        if digest != previous:
            kept.append(ct)
            previous = digest
    life.versions = kept


def median_commit_spacing(commits: list[Commit]) -> float | None:
    """The median time between successive commits: the scraper's effective schedule."""
    times = sorted(c[1] for c in commits)
    gaps = [b - a for a, b in zip(times, times[1:]) if b > a]
    return statistics.median(gaps) if gaps else None


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%d")


def derive(args: argparse.Namespace) -> dict[str, Any]:
    keep = re.compile(args.include) if args.include else None
    drop = re.compile(args.exclude) if args.exclude else None
    commits = walk(args.git_dir, args.path or ["."])
    author = re.compile(args.author) if args.author else None
    found = lives(commits, keep, drop, author=author, max_files=args.max_files_per_commit)
    names: dict[str, int] = {}
    named: list[tuple[str, Life]] = []
    for life in sorted(found, key=lambda lf: (lf.path, lf.versions[0])):
        n = names[life.path] = names.get(life.path, 0) + 1
        named.append((life.path if n == 1 else f"{life.path}#{n}", life))
    candidates = len(named)
    if args.ignore_lines or args.ignore_order:
        # filter before the version floor: noise-only edits are no versions
        ignore = re.compile(args.ignore_lines) if args.ignore_lines else None
        blobs = Blobs(args.git_dir)
        try:
            for _, life in named:
                drop_noise(life, blobs, ignore, args.ignore_order)
        finally:
            blobs.close()
    eligible = [(name, life) for name, life in named if len(life.versions) >= args.min_versions]
    if args.max_docs and len(eligible) > args.max_docs:
        chosen = set(random.Random(args.seed).sample(range(len(eligible)), args.max_docs))
        eligible = [x for i, x in enumerate(eligible) if i in chosen]
    service_re = re.compile(args.service_regex) if args.service_regex else None
    rows = []
    for name, life in eligible:
        if service_re is not None and (m := service_re.search(life.path)):
            service = m.group(1)
        else:
            service = os.path.dirname(life.path) or args.source
        versions = sorted(set(life.versions))
        row: dict[str, Any] = {"doc": f"{args.source}/{name}", "service": service, "versions": versions}
        if life.deleted is not None:
            row["deleted"] = life.deleted  # an extra key: readers of the three usual ones ignore it
        rows.append(row)
    if not rows:
        raise SystemExit(f"{args.source}: no document has {args.min_versions} versions")
    out = args.out or os.path.join(HERE, f"{args.source}.jsonl.gz")
    with gzip.GzipFile(out, "wb", mtime=0) as gz:  # mtime 0: the same input gives the same bytes
        for row in rows:
            gz.write((json.dumps(row, separators=(",", ":")) + "\n").encode())
    stats = clustering(r["versions"] for r in rows)
    first = min(r["versions"][0] for r in rows)
    last = max(r["versions"][-1] for r in rows)
    spacing = median_commit_spacing(commits)
    entry = {
        "source": args.source,
        "kind": args.kind,
        "repo": args.repo,
        "commit": head_commit(args.git_dir),
        "licence": args.licence,
        "paths": args.path or ["."],
        "include": args.include,
        "exclude": args.exclude,
        "ignore_lines": args.ignore_lines,
        "ignore_order": args.ignore_order,
        "author": args.author,
        "max_files_per_commit": args.max_files_per_commit,
        "min_versions": args.min_versions,
        "candidates": candidates,
        "eligible": len([1 for _, lf in named if len(lf.versions) >= args.min_versions]),
        "max_docs": args.max_docs,
        "seed": args.seed,
        "docs": len(rows),
        "versions": sum(len(r["versions"]) for r in rows),
        "first": _iso(first),
        "last": _iso(last),
        "commits_walked": len(commits),
        "median_commit_spacing_s": spacing,
        "median_cv": stats["median_cv"],
        "short_share": stats["short_share"],
        "docs_with_3_gaps": stats["docs_with_gaps"],
        "file": os.path.relpath(out, HERE),
        "note": args.note,
        "command": public_command(getattr(args, "argv", [])),
    }
    update_manifest(entry, args.manifest)
    return entry


def public_command(argv: list[str]) -> str:
    """The command line, with the machine-specific git directory as DIR (repository and commit name the input)."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        if i and argv[i - 1] == "--git-dir":
            arg = "DIR"
        elif arg.startswith("--git-dir="):
            arg = "--git-dir=DIR"
        out.append(arg)
    return "python -m bench.traces.derive " + shlex.join(out)


def update_manifest(entry: dict[str, Any], path: str = MANIFEST) -> None:
    data: dict[str, Any] = {"sources": {}}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    data.setdefault("sources", {})[entry["source"]] = entry
    data["sources"] = dict(sorted(data["sources"].items()))
    with open(path, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1, ensure_ascii=False)
        fh.write("\n")


def _hours(seconds: float | None) -> str:
    if seconds is None:
        return "n/a"
    return f"{seconds / 60:.0f} min" if seconds < 3 * 3600 else f"{seconds / 3600:.1f} h"


def sources_markdown(manifest: str = MANIFEST, extra: dict[str, dict[str, Any]] | None = None) -> str:
    """SOURCES.md: one row per source of the manifest (plus *extra* reference rows)."""
    with open(manifest, encoding="utf-8") as fh:
        sources = json.load(fh)["sources"]
    lines = [
        "# Real change histories: sources",
        "",
        "Written by `python -m bench.traces.derive --sources-md` from `manifest.json`; "
        "see `bench/traces/derive.py` for the rules (a tracked file is a document, each commit changing it a "
        "version at its committer date, creation = first version, deletion ends it, pure renames carry it on).",
        "Only the derived timestamps are committed (`<source>.jsonl.gz`), never the repositories' content.",
        "",
        "Clustering: over documents with ≥ 3 gaps between versions, the median of each document's "
        "coefficient of variation of its gaps, and the share of all their gaps below a tenth of their "
        f"document's mean gap. A Poisson process gives CV 1.00 and {POISSON_SHORT_SHARE:.1%}.",
        "",
        "| source | kind | repository @ commit | licence | dates | docs (of eligible) | versions | "
        "scraper spacing | median CV | gaps < mean/10 |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    rows = list(sources.values()) + list((extra or {}).values())
    for s in rows:
        cv = "n/a" if s.get("median_cv") is None else f"{s['median_cv']:.2f}"
        share = "n/a" if s.get("short_share") is None else f"{s['short_share']:.1%}"
        commit = f" @ `{s['commit'][:12]}`" if s.get("commit") else ""
        lines.append(
            f"| {s['source']} | {s['kind']} | {s['repo']}{commit} | {s.get('licence') or 'unknown'} | "
            f"{s['first']} – {s['last']} | {s['docs']} ({s.get('eligible', s['docs'])}) | {s['versions']} | "
            f"{_hours(s.get('median_commit_spacing_s'))} | {cv} | {share} |"
        )
    lines += ["", "## Selection and caps", ""]
    for s in sources.values():
        rules = [f"paths {', '.join(s['paths'])}"]
        if s.get("include"):
            rules.append(f"include `{s['include']}`")
        if s.get("exclude"):
            rules.append(f"exclude `{s['exclude']}`")
        if s.get("ignore_lines"):
            rules.append(f"edits touching only lines matching `{s['ignore_lines']}` are no versions")
        if s.get("ignore_order"):
            rules.append("edits that only reorder lines are no versions")
        if s.get("author"):
            rules.append(f"only commits by an author matching `{s['author']}` are versions")
        if s.get("max_files_per_commit"):
            rules.append(f"commits touching more than {s['max_files_per_commit']} selected files are maintenance")
        rules.append(f"documents with ≥ {s['min_versions']} versions: {s['eligible']} of {s['candidates']}")
        if s.get("max_docs") and s["eligible"] > s["max_docs"]:
            rules.append(f"capped at {s['max_docs']} by a seeded sample (seed {s['seed']})")
        lines.append(f"- **{s['source']}** (full commit `{s['commit']}`): " + "; ".join(rules) + ".")
        if s.get("note"):
            lines.append(f"  {s['note']}")
    lines.append("")
    return "\n".join(lines)


def reference_row(name: str, path: str) -> dict[str, Any]:
    """A SOURCES.md row for a trace made elsewhere (the held-out corpus' dev half), for comparison."""
    docs = list(read_trace(path))
    stats = clustering(d["versions"] for d in docs)
    return {
        "source": name,
        "kind": "reference",
        "repo": f"`{path}` (not committed here)",
        "commit": "",
        "licence": "see its source",
        "first": _iso(min(d["versions"][0] for d in docs)),
        "last": _iso(max(d["versions"][-1] for d in docs)),
        "docs": len(docs),
        "versions": stats["versions"],
        "median_cv": stats["median_cv"],
        "short_share": stats["short_share"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.traces.derive", description=__doc__.split("\n\n")[0])
    parser.add_argument("--git-dir", help="a fetched (bare) git directory")
    parser.add_argument("--source", help="the source's short name (file name, doc prefix)")
    parser.add_argument("--kind", choices=KINDS)
    parser.add_argument("--repo", help="owner/name of the public repository")
    parser.add_argument("--licence", help="the repository's licence, if known")
    parser.add_argument("--path", action="append", help="git pathspec to follow (repeatable; default: all)")
    parser.add_argument("--include", help="keep only paths matching this regular expression")
    parser.add_argument("--exclude", help="drop paths matching this regular expression")
    parser.add_argument("--ignore-lines", help="an edit whose changed lines all match this is no version")
    parser.add_argument("--ignore-order", action="store_true", help="an edit that only reorders lines is no version")
    parser.add_argument("--author", help="only commits by a matching author name are versions (the scraper bot)")
    parser.add_argument(
        "--max-files-per-commit", type=int, default=0, help="a commit touching more selected files is maintenance"
    )
    parser.add_argument("--service-regex", help="the service (host) is this expression's group 1 on the path")
    parser.add_argument("--min-versions", type=int, default=2, help="leave out documents with fewer (default 2)")
    parser.add_argument("--max-docs", type=int, default=0, help="cap by a seeded sample (0: no cap)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--note", default="", help="a sentence for SOURCES.md")
    parser.add_argument("--out", help="output trace (default bench/traces/<source>.jsonl.gz)")
    parser.add_argument("--manifest", default=MANIFEST)
    parser.add_argument("--sources-md", action="store_true", help="rewrite SOURCES.md from the manifest")
    parser.add_argument(
        "--reference", action="append", help="NAME=TRACE: a trace not derived here, given a row for comparison"
    )
    raw = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(raw)
    args.argv = raw
    if args.git_dir:
        missing = [n for n in ("source", "kind", "repo") if not getattr(args, n)]
        if missing:
            parser.error("--git-dir needs " + ", ".join("--" + m for m in missing))
        entry = derive(args)
        print(json.dumps(entry, indent=1, ensure_ascii=False))
    if args.sources_md:
        extra = {}
        for spec in args.reference or []:
            name, _, path = spec.partition("=")
            extra[name] = reference_row(name, path)
        with open(SOURCES_MD, "w", encoding="utf-8") as fh:
            fh.write(sources_markdown(args.manifest, extra))
    if not args.git_dir and not args.sources_md:
        parser.error("nothing to do: give --git-dir or --sources-md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
