"""Rewrite README.md's settings table from ``scrapy_adaptive/config/table.py``.

The table is generated (:func:`settings_table_markdown`) so that
the README can never document another default or range than the code runs
with; a test fails when the two drift apart, and this script is the fix::

    python scripts/settings_table.py          # rewrite the block in README.md
    python scripts/settings_table.py --check  # exit 1 if it is out of date
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scrapy_adaptive.config.spec import Kind, SettingSpec, duration_text, number_text  # noqa: E402
from scrapy_adaptive.config.table import SETTING_SPECS  # noqa: E402

TABLE_START = "<!-- settings-table:start -->"
TABLE_END = "<!-- settings-table:end -->"


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


def settings_table_markdown() -> str:
    """The README's settings reference, one table per group, from the specs.

    Returned with its marker lines, so it replaces the README's block whole.
    """
    lines = [TABLE_START, "<!-- generated from scrapy_adaptive/config/table.py by scripts/settings_table.py -->"]
    groups = dict.fromkeys(spec.group for spec in SETTING_SPECS)
    for group in groups:
        lines += ["", f"**{group}**", ""]
        lines += ["| setting | type | default | allowed | meaning |", "|---|---|---|---|---|"]
        for spec in SETTING_SPECS:
            if spec.group == group:
                cells = (f"`{spec.name}`", spec.kind.value, _default_cell(spec), _allowed_cell(spec), spec.doc)
                lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    lines += ["", TABLE_END]
    return "\n".join(lines)


def replace_settings_table(text: str) -> str:
    """*text* (the README) with its marked block replaced by the generated one."""
    start, end = text.find(TABLE_START), text.find(TABLE_END)
    if start < 0 or end < start:
        raise ValueError(f"the text has no {TABLE_START} ... {TABLE_END} block")
    return text[:start] + settings_table_markdown() + text[end + len(TABLE_END) :]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report whether README.md is up to date")
    parser.add_argument("--readme", type=Path, default=ROOT / "README.md")
    args = parser.parse_args(argv)
    text = args.readme.read_text(encoding="utf-8")
    updated = replace_settings_table(text)
    if updated == text:
        print(f"{args.readme}: the settings table is up to date")
        return 0
    if args.check:
        print(f"{args.readme}: the settings table is out of date; run python scripts/settings_table.py")
        return 1
    args.readme.write_text(updated, encoding="utf-8")
    print(f"{args.readme}: settings table rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
