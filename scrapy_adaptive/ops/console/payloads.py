"""The report's "same payload under several URLs" section, in words.

The section itself comes from the WARC folder's index
(:func:`~scrapy_adaptive.warc.digests.shared_payloads`): groups of URLs
whose last capture holds the same body, most URLs first.  A big group is
usually one page under tracking parameters, session paths or a mirror:
worth canonicalising (``ADAPTIVE_CANONICAL``, or the spider's links), so
the crawl stops fetching the same body again under each name.
"""

from __future__ import annotations

from typing import Any

from ...config.spec import counted, plural

TITLE = "same payload under several URLs (candidates for canonicalisation)"


def payload_lines(section: dict[str, Any] | None) -> list[str]:
    """The section as terminal lines (none without a WARC folder)."""
    if section is None:
        return []
    if "unavailable" in section:
        return ["", f"{TITLE}: unavailable ({section['unavailable']})"]
    lines = [
        "",
        f"{TITLE}, of {section['captures']} archived URLs{'' if section['complete'] else ' (first ones read)'}:",
    ]
    if not section["groups"]:
        return lines + ["  none: every archived URL holds a body of its own"]
    lines.append(f"  {counted(section['duplicates'], 'URL')} hold a body archived under another URL")
    for group in section["groups"]:
        more = group["urls"] - len(group["examples"])
        lines.append(f"  {group['urls']:>5} {plural(group['urls'], 'URL'):<4}  {group['digest']}")
        lines += [f"         {url}" for url in group["examples"]]
        if more > 0:
            lines.append(f"         ... and {more} more")
    return lines


def payload_rows(section: dict[str, Any]) -> list[list[Any]]:
    """The section's HTML table rows: URLs, digest, examples."""
    return [[g["urls"], g["digest"], " ".join(g["examples"])] for g in section.get("groups", [])]
