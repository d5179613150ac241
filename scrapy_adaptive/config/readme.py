"""The README's settings reference, rendered from the spec table.

:func:`settings_table_markdown` renders
:data:`~scrapy_adaptive.config.table.SETTING_SPECS` as one Markdown table
per group; :func:`replace_settings_table` puts it between README.md's
:data:`TABLE_START` and :data:`TABLE_END` lines (``python
scripts/settings_table.py`` runs it, and a test fails when the README has
drifted from the code).

This module imports nothing from Scrapy, and from the package only the
setting modules.
"""

from __future__ import annotations

from .spec import Kind, SettingSpec, duration_text, number_text
from .table import SETTING_SPECS

#: the lines around the generated block in README.md
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
    lines = [TABLE_START, "<!-- generated from scrapy_adaptive/setting_table.py by scripts/settings_table.py -->"]
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
