"""Every link between the project's pages leads somewhere.

A page cut down to today's figures (docs/benchmarks.md, docs/changing-web.md)
loses sections other pages link to; a reader who follows one lands at the
top of a long page, or on nothing.  This test reads every Markdown page of
the repository (README, docs/, docs/lab/, bench/README) and checks each
relative link: the file exists and, for a ``#fragment``, the page has a
heading of that anchor (GitHub's rule: lower case, punctuation dropped,
spaces as hyphens, a repeated heading numbered).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", ROOT / "CHANGES.md", ROOT / "bench" / "README.md", *(ROOT / "docs").rglob("*.md")])
#: ``[text](target)`` with a relative target (no scheme), optionally ``#fragment``
LINK = re.compile(r"\]\((?![a-z]+:)([^)\s#]*)(?:#([^)\s]+))?\)")
FENCE = re.compile(r"^\s*```")


def anchors(page: Path) -> set[str]:
    """The anchors of *page*'s headings, as GitHub makes them (code blocks skipped)."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fenced or heading is None:
            continue
        slug = re.sub(r"[^\w\- ]", "", heading.group(1).strip().lower()).replace(" ", "-")
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken_links() -> list[str]:
    broken = []
    for page in PAGES:
        text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
        for link in LINK.finditer(text):
            target, fragment = link.group(1), link.group(2)
            where = page.relative_to(ROOT)
            path = (page.parent / target).resolve() if target else page
            if not path.exists():
                broken.append(f"{where}: {target} does not exist")
            elif fragment and path.suffix == ".md" and fragment not in anchors(path):
                broken.append(f"{where}: {target or where.name} has no section #{fragment}")
    return broken


def test_every_link_between_pages_leads_to_a_page_and_section() -> None:
    assert broken_links() == []


def test_anchors_follow_githubs_rule(tmp_path: Path) -> None:
    page = tmp_path / "sample.md"
    page.write_text(
        "# The budget as a ceiling (2026-11-29, session 31, kept)\n```sh\n# not a heading\n```\n"
        "## Issue 48's targets\n## Issue 48's targets\n## End to end: `python -m bench.e2e_bench`\n",
        encoding="utf-8",
    )
    assert anchors(page) == {
        "the-budget-as-a-ceiling-2026-11-29-session-31-kept",
        "issue-48s-targets",
        "issue-48s-targets-1",
        "end-to-end-python--m-benche2e_bench",
    }
