"""Line charts as hand-written SVG (no plotting library needed).

Enough for the lab's two figures: learning curves (efficiency per time
bin, one line per policy) and efficiency against budget.
"""

from __future__ import annotations

from html import escape

PALETTE = ["#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666", "#1f78b4"]


def line_chart(series: dict[str, list[tuple[float, float]]], *, title: str, x_label: str, y_label: str,
               y_range: tuple[float, float] | None = None, width: int = 720, height: int = 420) -> str:  # fmt: skip
    """An SVG document with one polyline per series and a legend."""
    left, right, top, bottom = 60, 160, 40, 50
    points = [p for s in series.values() for p in s]
    if not points:
        raise ValueError("nothing to plot")
    x0, x1 = min(p[0] for p in points), max(p[0] for p in points)
    y0, y1 = y_range or (min(p[1] for p in points), max(p[1] for p in points))
    x1, y1 = (x1 if x1 != x0 else x0 + 1), (y1 if y1 != y0 else y0 + 1)
    pw, ph = width - left - right, height - top - bottom

    def sx(x: float) -> float:
        return left + (x - x0) / (x1 - x0) * pw

    def sy(y: float) -> float:
        return top + ph - (min(max(y, y0), y1) - y0) / (y1 - y0) * ph

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        'font-size="12">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2}" y="20" text-anchor="middle" font-size="14">{escape(title)}</text>',
        f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="black"/>',
        f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="black"/>',
        f'<text x="{left + pw / 2}" y="{height - 10}" text-anchor="middle">{escape(x_label)}</text>',
        f'<text x="15" y="{top + ph / 2}" text-anchor="middle" transform="rotate(-90 15 {top + ph / 2})">'
        f"{escape(y_label)}</text>",
    ]
    for k in range(6):
        yv = y0 + (y1 - y0) * k / 5
        xv = x0 + (x1 - x0) * k / 5
        out.append(f'<line x1="{left}" y1="{sy(yv):.1f}" x2="{left + pw}" y2="{sy(yv):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 5}" y="{sy(yv) + 4:.1f}" text-anchor="end">{yv:.2f}</text>')
        out.append(f'<text x="{sx(xv):.1f}" y="{top + ph + 16}" text-anchor="middle">{xv:.3g}</text>')
    for n, (name, pts) in enumerate(series.items()):
        color = PALETTE[n % len(PALETTE)]
        path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in sorted(pts))
        out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" points="{path}"/>')
        ly = top + 16 * n + 8
        out.append(
            f'<line x1="{left + pw + 10}" y1="{ly}" x2="{left + pw + 30}" y2="{ly}" stroke="{color}" stroke-width="2"/>'
        )
        out.append(f'<text x="{left + pw + 35}" y="{ly + 4}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
