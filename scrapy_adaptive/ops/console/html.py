"""The HTML report: one self-contained file, charts as inline SVG.

No script, no stylesheet or font from the network: the file opens offline,
from a mail attachment or an archive, and looks the same in ten years.
Built from :meth:`FrontierConsole.report`'s dict, so the file and
``scrapy frontier report --json`` say the same thing.
"""

from __future__ import annotations

import html
import time
from collections.abc import Callable
from typing import Any

from ...config.spec import counted
from ...humanize import human, human_bytes, when
from ..composites import figures_words
from .changes_command import what_changed
from .hinttrack import PRECISION_MEANS, html_rows
from .payloads import TITLE, payload_rows

#: widest bar of an hourly series (SVG units)
HOUR_BAR = 40.0

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:16px;margin:24px 0 6px}
.grid{display:grid;grid-template-columns:minmax(0,1fr) minmax(0,1fr);gap:8px 32px}
table{border-collapse:collapse;font-size:13px}td,th{padding:2px 8px;border-bottom:1px solid #ddd;text-align:right}
td:first-child,th:first-child{text-align:left}.muted{color:#777}.figs td{border:0}
svg text{font:11px system-ui,sans-serif;fill:#444}
.mono{display:block;text-align:left;font:12px ui-monospace,monospace;white-space:pre-wrap}
"""


def _esc(value: Any) -> str:
    return html.escape(str(value))


def bar_chart(
    labels: list[str],
    values: list[float],
    *,
    line: list[float] | None = None,
    color: str = "#4a7bb7",
    max_bar: float | None = None,
    fmt: Callable[[float], str] | None = None,
) -> str:
    """An SVG bar chart (and an optional level per bar over it, e.g. a budget),
    as wide as its column; bars at most *max_bar* wide (a series of one hour
    is one bar, not the whole chart).  The level is always within the scale
    (a line drawn off it says nothing true); values are written by *fmt*
    (``1.1M``, or ``1.1 MB`` for bytes) and the left margin fits the widest."""
    fmt = fmt or compact
    width, height, bottom = 520, 180, 34
    top = max([*values, *(line or []), 0.0]) or 1.0
    # 11px system-ui: under 7 units a character, in the 520-unit-wide chart
    left = max(44, 8 + 7 * len(fmt(top)))
    n = max(len(values), 1)
    step = (width - left - 8) / n
    if max_bar is not None:
        step = min(step, max_bar)
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="100%" role="img">']
    plot = height - bottom - 8
    parts.append(f'<line x1="{left}" y1="{8 + plot}" x2="{width - 4}" y2="{8 + plot}" stroke="#999"/>')
    parts.append(f'<text x="{left - 4}" y="14" text-anchor="end">{_esc(fmt(top))}</text>')
    parts.append(f'<text x="{left - 4}" y="{8 + plot}" text-anchor="end">0</text>')
    every = max(1, n // 12)
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        h = plot * value / top
        x = left + i * step
        parts.append(
            f'<rect x="{x + 1:.1f}" y="{8 + plot - h:.1f}" width="{max(step - 2, 1):.1f}" height="{h:.1f}" '
            f'fill="{color}"><title>{_esc(label)}: {_esc(fmt(value))}</title></rect>'
        )
        if i % every == 0:
            parts.append(
                f'<text x="{x + step / 2:.1f}" y="{height - bottom + 16}" text-anchor="middle">{_esc(label)}</text>'
            )
    if line:
        # one level per bar: a budget that changed from hour to hour is seen as such
        steps = " ".join(
            f"M{left + i * step:.1f},{8 + plot - plot * v / top:.1f}h{step:.1f}" for i, v in enumerate(line)
        )
        parts.append(f'<path d="{steps}" fill="none" stroke="#c0392b" stroke-width="2"/>')
    parts.append("</svg>")
    return "".join(parts)


def _num(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 10 or v == int(v) else f"{v:.1f}"


def compact(v: float) -> str:
    """A count in few characters: ``543``, ``12k``, ``1.1M``."""
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(v) >= size:
            scaled = v / size
            return f"{scaled:.1f}{unit}" if abs(scaled) < 10 else f"{scaled:.0f}{unit}"
    return _num(v)


def hourly(labels: list[str], values: list[float], empty: str, **chart: Any) -> str:
    """An hourly chart, or what the hours say when every value is zero (a
    short crawl's backlog, say): an empty chart looks like a broken one."""
    if not labels:
        return '<p class="muted">No hourly figures yet: the running crawl records them at each summary.</p>'
    if not any(values) and not any(chart.get("line") or []):
        n = len(labels)
        return f'<p class="muted">{_esc(empty)} in the {n} hour{"s" if n != 1 else ""} recorded.</p>'
    return bar_chart(labels, values, max_bar=HOUR_BAR, **chart)


class Lines(list[str]):
    """A cell of several lines: each escaped, one under the other."""


def _cell(value: Any) -> str:
    if isinstance(value, Lines):
        return "".join(f'<span class="mono">{_esc(line)}</span>' for line in value)
    return _esc(value)


def _table(header: list[str], rows: list[list[Any]]) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_cell(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def render(report: dict[str, Any], *, title: str = "Frontier report") -> str:
    """The whole report page."""
    sections = [
        f"<h1>{_esc(title)}</h1>",
        f'<p class="muted">Generated {_esc(when(report["generated"]))}; distributions from '
        f"{counted(report['sampled'], 'record')}.</p>",
        '<table class="figs">'
        + "".join("<tr>" + "".join(f"<td>{_esc(c)}</td>" for c in row) + "</tr>" for row in _figures(report))
        + "</table>",
        *_charts(report),
        "<h2>Top hosts</h2>",
        _table(
            ["host", "state", "URLs", "due", "visits", "versions", "validators' reliability", "fetch"],
            _host_rows(report["hosts"][:15]),
        ),
        '<div class="grid"><div><h2>Most changing URLs</h2>',
        _table(["URL", "versions", "visits"], [[r["url"], r["versions"], r["visits"]] for r in report["top_changing"]]),
        "</div><div><h2>Never changing URLs</h2>",
        _table(["URL", "visits"], [[r["url"], r["visits"]] for r in report["never_changing"]]),
        "</div></div>",
        *_elsewhere_section(report.get("redirect_or_error")),
        *_changes_section(report.get("changes")),
        *_hint_section(report.get("hints")),
        *_payload_section(report.get("shared_payloads")),
        *_composite_section(report.get("composites")),
        *_schedule_section(report.get("schedules")),
    ]
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{_esc(title)}</title><style>{_STYLE}</style></head><body>" + "".join(sections) + "</body></html>"
    )


def _figures(report: dict[str, Any]) -> list[list[Any]]:
    """The headline figures, two to a row."""
    totals, budget = report["totals"], report["budget"]
    rates = report.get("rates") or {}
    return [
        ["URLs", totals["urls"], "hosts", totals["hosts"]],
        ["visits", totals["visits"], "versions", totals["versions"]],
        ["due now", totals["due"], "never again", totals["never"]],
        ["gone pages", totals.get("gone", "-"), "forgotten", totals["forgotten"]],
        ["overdue p50", human(totals["overdue_p50"]), "overdue p95", human(totals["overdue_p95"])],
        [
            "revisit budget",
            budget.get("source")
            or ("not set" if budget["set_per_day"] is None else f"{budget['set_per_day']:.0f}/day"),
            "visits/day (first visits included)",  # not the revisits the budget counts
            "-" if budget["spent_per_day"] is None else f"{budget['spent_per_day']:.0f}/day",
        ],
        [
            "visits/hour",
            _num(rates["visits"]) if rates else "-",
            "bytes saved/hour",
            human_bytes(rates["bytes_saved"]) if rates else "-",
        ],
    ]


def _charts(report: dict[str, Any]) -> list[str]:
    """The grid of charts: waits, the hourly series, the observed change rates."""
    hours = report["hours"]
    labels = [time.strftime("%d %Hh", time.localtime(h * 3600)) for h, _ in hours]
    col = lambda i: [float(v[i]) for _, v in hours]  # noqa: E731
    budget = report["budget"]
    # the hours record the pace the crawl planned even without a budget:
    # a budget line is drawn only for a budget the user set
    budget_line = None
    if budget["set_per_day"]:
        budget_line = col(4) if any(col(4)) else [budget["set_per_day"] / 24] * len(hours)
    wait_classes = report["wait_classes"]
    return [
        '<div class="grid">',
        "<div><h2>Wait intervals (URLs)</h2>"
        + bar_chart(wait_classes, [float(report["waits"].get(c, 0)) for c in wait_classes])
        + "</div>",
        "<div><h2>Versions found per hour</h2>"
        + hourly(labels, col(1), "No new version found", color="#2e8b57")
        + "</div>",
        "<div><h2>Revisits per hour"
        + (" (red: budget)" if budget_line else "")
        + "</h2>"
        + hourly(labels, col(0), "No revisit", line=budget_line)
        + (
            f'<p class="muted">last hour: {counted(round(col(0)[-1]), "revisit")}, budget {budget_line[-1]:.0f}</p>'
            if hours and budget_line
            else ""
        )
        + "</div>",
        "<div><h2>URLs due (backlog) at each hour's last summary</h2>"
        + hourly(labels, col(3), "No URL was due at the last summary of any hour", color="#d35400")
        + "</div>",
        "<div><h2>Bytes saved by validators per hour</h2>"
        + hourly(labels, col(2), "No bytes saved by validators", color="#8e44ad", fmt=human_bytes)
        + "</div>",
        "<div><h2>Observed change rate: new versions per day seen (URLs)</h2>"
        + bar_chart(
            report["rate_classes"],
            [float(report["change_rates"].get(c, 0)) for c in report["rate_classes"]],
            color="#16a085",
        )
        + "</div>",
        "</div>",
    ]


def _changes_section(section: dict[str, Any] | None) -> list[str]:
    """The latest change events, and the pages said gone per host."""
    if section is None:
        return []
    events = section["events"]
    rows = [
        [
            when(e["time"]),
            e["kind"] + ("" if e.get("delivered", 0) is not None else " (not delivered yet)"),
            "-" if e.get("status") is None else e["status"],
            "-" if e.get("version") is None else e["version"],
            e["url"] + (f" -> {e['location']}" if e.get("location") else ""),
            Lines(what_changed(e)),
        ]
        for e in events
    ]
    latest = (
        _table(["time", "event", "status", "version", "URL", "what changed"], rows)
        if rows
        else '<p class="muted">No change event recorded (ADAPTIVE_CHANGE_EVENTS or ADAPTIVE_CHANGES_FEED).</p>'
    )
    gone = section["gone_by_host"]
    by_host = (
        _table(["host", "gone pages"], [[r["host"], r["gone"]] for r in gone[:30]])
        if gone
        else '<p class="muted">No page is gone.</p>'
    )
    return [
        '<div class="grid"><div><h2>Latest changes</h2>',
        latest,
        "</div><div><h2>Gone pages per host</h2>",
        by_host,
        "</div></div>",
    ]


def _schedule_section(rows: list[dict[str, Any]] | None) -> list[str]:
    """The curated schedules: window, bounds, state, URLs matched, revisits they forced."""
    if not rows:
        return []
    header = ["schedule", "match", "from", "until", "every", "min", "max", "state", "URLs", "revisits forced", "source"]
    table = [
        [
            r["name"],
            " ".join(f"{k}={v}" for k, v in r["match"].items()),
            r["from"] or "-",
            r["until"] or "-",
            *("-" if r.get(k) is None else f"{r[k]:g}s" for k in ("every", "min", "max")),
            r["state"],
            r.get("matched", "-"),
            r["forced"],
            r["source"],
        ]
        for r in rows
    ]
    return ["<h2>Curated schedules</h2>", _table(header, table)]


def _hint_section(record: dict[str, Any] | None) -> list[str]:
    """What each sitemap or feed earned: the counts and the precision that follows."""
    if record is None:
        return []
    if not record["sources"]:
        return ["<h2>Change hints</h2>", '<p class="muted">No hint of a sitemap or feed settled by a visit yet.</p>']
    header = ["source", "host", "confirmed", "refuted", "found anyway", "precision"]
    return [
        "<h2>Change hints: what each sitemap or feed earned</h2>",
        f'<p class="muted">{_esc(PRECISION_MEANS)}.</p>',
        _table(header, html_rows(record)),
    ]


def _payload_section(section: dict[str, Any] | None) -> list[str]:
    """URL groups sharing one archived body (WARC crawls only)."""
    if section is None:
        return []
    title = f"<h2>{_esc(TITLE[0].upper() + TITLE[1:])}</h2>"
    if "unavailable" in section:
        return [title, f'<p class="muted">Unavailable: {_esc(section["unavailable"])}.</p>']
    return [title, _table(["URLs", "payload digest", "examples"], payload_rows(section))]


def _composite_section(figures: dict[str, Any] | None) -> list[str]:
    """Page captures with their embeds (a running crawl with composite captures only)."""
    if figures is None:
        return []
    words = figures_words(figures) or f"none settled yet; {figures.get('pending', 0)} pending"
    return ["<h2>Pages captured with their embeds</h2>", f"<p>{_esc(words)}.</p>"]


def _host_rows(hosts: list[dict[str, Any]]) -> list[list[Any]]:
    """The top hosts' table rows."""
    host_rows = []
    for h in hosts:
        trust = h.get("trust") or {}
        rel = trust.get("reliability")
        host_rows.append(
            [
                h["host"],
                h["state"],
                h["urls"],
                h["due"],
                h["visits"],
                h["versions"],
                "-" if rel is None else f"{rel:.2f}",
                human(h["fetch_time"]) if h["fetch_time"] is not None else "-",
            ]
        )
    return host_rows


def _elsewhere_section(rows: list[dict[str, Any]] | None) -> list[str]:
    """The URLs whose last answer was a redirect or an error: moved or gone,
    which no version count says (none from a crawl of an older version)."""
    if not rows:
        return []
    return [
        "<h2>URLs last answering a redirect or an error</h2>",
        _table(
            ["URL", "status", "versions", "visits"],
            [[r["url"], "redirect" if r["status"] is None else r["status"], r["versions"], r["visits"]] for r in rows],
        ),
    ]
