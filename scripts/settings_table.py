"""Rewrite the settings tables of README.md and docs/settings.md from
``scrapy_adaptive/config/table.py``.

The tables are generated so that no page can document another default or
range than the code runs with; a test fails when they drift apart, and this
script is the fix::

    python scripts/settings_table.py          # rewrite the blocks in README.md and docs/settings.md
    python scripts/settings_table.py --check  # exit 1 if either is out of date

README.md lists the settings a user sets (``user=True`` in the table, at
most :data:`README_LIMIT`); docs/settings.md lists every setting by topic,
and the settings that were removed with what took their place.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scrapy_adaptive.config.spec import Kind, SettingSpec, duration_text, number_text  # noqa: E402
from scrapy_adaptive.config.table import REMOVED_SETTINGS, SETTING_SPECS  # noqa: E402

TABLE_START = "<!-- settings-table:start -->"
TABLE_END = "<!-- settings-table:end -->"
GENERATED = "<!-- generated from scrapy_adaptive/config/table.py by scripts/settings_table.py -->"
#: the most settings the README's table may list (issue 49: a user holds them in their head)
README_LIMIT = 25
HEADER = ["| setting | type | default | allowed | meaning |", "|---|---|---|---|---|"]


def _default_cell(spec: SettingSpec) -> str:
    if spec.default_doc is not None:
        return spec.default_doc
    if isinstance(spec.default, str):
        return f'`"{spec.default}"`'
    return f"`{spec.default!r}`"


def _allowed_cell(spec: SettingSpec) -> str:
    if spec.choices:
        return ", ".join(f"`{choice}`" for choice in spec.choices)
    parts = []
    for sign, bound in (("≥", spec.at_least), (">", spec.above), ("<", spec.below), ("≤", spec.at_most)):
        if bound is not None:
            text = duration_text(bound) if spec.kind is Kind.SECONDS and sign == "≤" else number_text(bound)
            parts.append(f"{sign} {text}")
    return ", ".join(parts)


def _row(spec: SettingSpec, *, in_docs: bool) -> str:
    name = f"**`{spec.name}`**" if in_docs and spec.user else f"`{spec.name}`"
    # links relative to the page
    doc = spec.doc.replace("](docs/", "](").replace("[docs/", "[") if in_docs else spec.doc
    cells = (name, spec.kind.value, _default_cell(spec), _allowed_cell(spec), doc)
    return "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"


def _block(lines: Iterable[str]) -> str:
    return "\n".join([TABLE_START, GENERATED, *lines, "", TABLE_END])


def readme_table() -> str:
    """The README's table: the settings a user sets, in the table's order.

    Returned with its marker lines, so it replaces the README's block whole.
    """
    users = [spec for spec in SETTING_SPECS if spec.user]
    if len(users) > README_LIMIT:
        raise ValueError(f"{len(users)} settings are marked user=True; the README lists at most {README_LIMIT}")
    return _block(["", *HEADER, *(_row(spec, in_docs=False) for spec in users)])


def docs_tables() -> str:
    """docs/settings.md's tables: every setting, one table per topic, then
    the removed settings."""
    lines: list[str] = []
    for group in dict.fromkeys(spec.group for spec in SETTING_SPECS):
        lines += ["", f"### {group}", "", *HEADER]
        lines += [_row(spec, in_docs=True) for spec in SETTING_SPECS if spec.group == group]
    lines += ["", "### Removed settings", "", "| setting | what took its place |", "|---|---|"]
    lines += [f"| `{name}` | {why}. |" for name, why in REMOVED_SETTINGS.items()]
    return _block(lines)


#: each page and its generated block, relative to the repository
PAGES = {"README.md": readme_table, "docs/settings.md": docs_tables}


def replace_block(text: str, block: str) -> str:
    """*text* with its marked block replaced by *block*."""
    start, end = text.find(TABLE_START), text.find(TABLE_END)
    if start < 0 or end < start:
        raise ValueError(f"the text has no {TABLE_START} ... {TABLE_END} block")
    return text[:start] + block + text[end + len(TABLE_END) :]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report whether the pages are up to date")
    parser.add_argument("--root", type=Path, default=ROOT, help="the repository whose pages to rewrite")
    args = parser.parse_args(argv)
    stale = 0
    for page, make in PAGES.items():
        path = args.root / page
        text = path.read_text(encoding="utf-8")
        updated = replace_block(text, make())
        if updated == text:
            print(f"{path}: the settings table is up to date")
        elif args.check:
            print(f"{path}: the settings table is out of date; run python scripts/settings_table.py")
            stale += 1
        else:
            path.write_text(updated, encoding="utf-8")
            print(f"{path}: settings table rewritten")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
