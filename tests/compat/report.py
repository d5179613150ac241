"""The full comparison: Scrapy's test files plainly and with the add-on, counts per file.

    python -m tests.compat.report            # print the table (markdown)
    python -m tests.compat.report --write    # and put it into docs/compat.md

Both runs cover every chosen file (the test re-runs only what fails), so this
takes about a minute.  The tests that pass plainly and fail with the add-on
are listed after the table, each marked documented or not.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from importlib.metadata import version

from tests.compat import run, sdist

COMMAND = "python -m tests.compat.report --write"
_COUNTS = ("<!-- compat-counts:start -->", "<!-- compat-counts:end -->")


def _cell(counts: Counter[str]) -> str:
    return f"{counts['passed']} / {counts['failed']} / {counts['skipped']}"


def report(workers: int = 2, timeout: float = 600.0) -> str:
    """Run both and return the markdown: the per-file table and the differences."""
    root = sdist.scrapy_tests()
    targets = run.files(root)
    plain = run.run(root, targets, addon=False, workers=workers, timeout=timeout)
    addon = run.run(root, targets, addon=True, workers=workers, timeout=timeout)
    known = run.documented()
    plain_files, addon_files = plain.per_file(), addon.per_file()
    lines = [
        f"Scrapy {version('scrapy')}, made by `{COMMAND}` "
        f"(plain run {plain.seconds:.0f} s, with the add-on {addon.seconds:.0f} s, 2 pytest workers each).",
        "",
        "| file | plain: passed / failed / skipped | with the add-on: passed / failed / skipped |",
        "|---|---|---|",
    ]
    total_plain: Counter[str] = Counter()
    total_addon: Counter[str] = Counter()
    for name in sorted(set(plain_files) | set(addon_files)):
        p, a = plain_files.get(name, Counter()), addon_files.get(name, Counter())
        total_plain += p
        total_addon += a
        lines.append(f"| `{name}` | {_cell(p)} | {_cell(a)} |")
    lines.append(f"| **all {sum(total_plain.values())} tests** | {_cell(total_plain)} | {_cell(total_addon)} |")
    for label, done in (("plain", plain), ("with the add-on", addon)):
        if done.returncode is None:
            lines.append(f"\nThe run {label} passed its hard timeout of {timeout:.0f} s: its counts are partial.")
    differing = sorted(
        n for n, o in addon.outcomes.items() if o.outcome == "failed" and plain.outcomes.get(n, o).outcome == "passed"
    )
    lines += ["", f"Passing plainly, failing with the add-on: {len(differing)}."]
    lines += [f"* `{n}`: {'documented in the table above' if n in known else 'NOT documented'}" for n in differing]
    return "\n".join(lines)


def write(markdown: str) -> None:
    """Put *markdown* between the ``compat-counts`` markers of docs/compat.md."""
    text = run.DOC.read_text(encoding="utf-8")
    start, end = (text.index(marker) for marker in _COUNTS)
    run.DOC.write_text(text[: start + len(_COUNTS[0])] + "\n" + markdown + "\n" + text[end:], encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="also put the table into docs/compat.md")
    parser.add_argument("--workers", type=int, default=2, help="pytest workers per run (default 2)")
    args = parser.parse_args(argv)
    try:
        markdown = report(workers=args.workers)
    except sdist.SdistError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(markdown)
    if args.write:
        write(markdown)
    return 0


if __name__ == "__main__":
    sys.exit(main())
