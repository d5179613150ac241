"""What each change-hint source (a sitemap, a feed) has earned, in words.

The frontier keeps, per host and source, ``[confirmed, refuted, Σq]``
(:mod:`scrapy_adaptive.frontier.hints`) and the wait policy acts on a source's
hints by the precision those counts give it
(:func:`~scrapy_adaptive.policies.hint_decisions.precision`).  The counts
alone were only in the stats, so a user could not tell why a sitemap's
hints were followed or left alone.  Here they are turned into the rows the
report (text, JSON, HTML), ``frontier url`` and ``export`` show: counts,
how many confirmations a visit would have found anyway, and the precision
that follows, the figure the policy compares with its bar.
"""

from __future__ import annotations

from typing import Any

from ...frontier import hints
from ...frontier.hints import Hint
from ...humanize import when
from ...policies.hint_decisions import precision

#: what the report's precision means, said once wherever it is shown
PRECISION_MEANS = "precision: the share of its hints believed right, which decides whether its next hints are acted on"


def source_row(source: str, own: list[float], pooled: list[float], host: str | None = None) -> dict[str, Any]:
    """One source's record (on *host*, or over every host when None)."""
    good, bad, by_chance = hints.counts(own)
    others = hints.counts(pooled)
    believed = precision(Hint("", None, source, trust=(good, bad, by_chance), pooled=(others[0], others[1], others[2])))
    row: dict[str, Any] = {"source": source}
    if host is not None:
        row["host"] = host
    row.update({"confirmed": good, "refuted": bad, "by_chance": by_chance, "precision": round(believed, 3)})
    return row


def track_record(by_host: dict[str, dict[str, list[float]]]) -> dict[str, list[dict[str, Any]]]:
    """Every source over all hosts (``sources``) and on each host (``by_host``),
    from :meth:`HostFacts.hint_report`."""
    pooled: dict[str, list[float]] = {}
    for sources in by_host.values():
        for source, record in sources.items():
            hints.pool(pooled.setdefault(source, [0.0, 0.0, 0.0]), record)
    return {
        "sources": [source_row(s, c, c) for s, c in sorted(pooled.items())],
        "by_host": [
            source_row(s, c, pooled[s], host)
            for host, sources in sorted(by_host.items())
            for s, c in sorted(sources.items())
        ],
    }


def row_words(row: dict[str, Any]) -> str:
    return (
        f"{row['source']}"
        + (f" on {row['host']}" if "host" in row else "")
        + f": {row['confirmed']:g} confirmed, {row['refuted']:g} refuted "
        f"({row['by_chance']:.1f} of the confirmations a visit would have found anyway), "
        f"precision {row['precision']:.2f}"
    )


def report_words(record: dict[str, list[dict[str, Any]]]) -> list[str]:
    """The report's text section."""
    if not record["sources"]:
        return ["change hints: no hint of a sitemap or feed has been settled by a visit yet"]
    lines = [f"change hints, what each sitemap or feed earned ({PRECISION_MEANS}):"]
    lines += [f"  {row_words(row)}" for row in record["sources"]]
    if len(record["by_host"]) > len(record["sources"]):
        lines += [f"    {row_words(row)}" for row in record["by_host"]]
    return lines


def pending_hint(raw: dict[str, Any]) -> dict[str, Any]:
    """The record's waiting hint with its keys in words (for export)."""
    own = hints.counts(raw.get(hints.PENDING_TRUST))
    pooled = hints.counts(raw.get(hints.PENDING_POOLED))
    source = str(raw.get(hints.PENDING_SOURCE, ""))
    return {
        "source": source,
        "received": raw.get(hints.PENDING_RECEIVED),
        "modified": raw.get(hints.PENDING_MODIFIED),
        "record_then": source_row(source, own, pooled),
    }


def url_words(raw_hint: dict[str, Any] | None, host: str, sources: list[dict[str, Any]]) -> list[str]:
    """``frontier url``: the hint waiting for the visit, and the host's sources."""
    lines = []
    if raw_hint:
        hint = pending_hint(raw_hint)
        modified = hint["modified"]
        lines.append(
            f"a change hint from {hint['source']} waits for this visit: received {when(hint['received'])}, "
            + (f"claiming a change at {when(modified)}" if modified is not None else "with no date")
            + f"; acted on at precision {hint['record_then']['precision']:.2f}"
        )
    mine = [row for row in sources if row.get("host") == host]
    if mine:
        lines.append(f"change hints on {host} ({PRECISION_MEANS}):")
        lines += [f"  {row_words({k: v for k, v in row.items() if k != 'host'})}" for row in mine]
    return lines


def html_rows(record: dict[str, list[dict[str, Any]]]) -> list[list[Any]]:
    """The report's HTML table rows (each source, then per host when several)."""
    rows = list(record["sources"])
    if len(record["by_host"]) > len(record["sources"]):
        rows += record["by_host"]
    return [
        [
            r["source"],
            r.get("host", "all"),
            f"{r['confirmed']:g}",
            f"{r['refuted']:g}",
            f"{r['by_chance']:.1f}",
            f"{r['precision']:.2f}",
        ]
        for r in rows
    ]
