"""Rewrite README.md's settings table from ``scrapy_adaptive/setting_table.py``.

The table is generated (``setting_readme.settings_table_markdown``) so that
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

from scrapy_adaptive.config.readme import replace_settings_table


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
