"""Do documents change faster when young?  Change rate by age, per source (issue 37, a lab measurement).

``python -m bench.age_rates [--max-versions N] [--boot 300] [--null 200]``

A document's *age* is the time since its first version (when a crawl
would first see it).  For every source of the fast replay (the OTA halves
and the committed corpus traces, read by :func:`bench.fastreplay.source_docs`),
each document is followed from its first version to the source's end (the
replay's exposure: its last version overall + 1 s) and its changes are
counted in age bins.  Each bin's figure is a *standardised ratio*: the
changes seen in the bin over the changes the document's own lifetime rate
(changes ÷ exposure) predicts there, summed over documents, so 1 is "no
different from the document's own average" and the ratios of all bins
average to 1 by construction.  Three groups of documents:

* **born later**: first version more than :data:`MARGIN` after the
  source's start, so the age is the document's age as a crawl sees it;
* **from the start** (the control): first version within :data:`MARGIN`
  of the start; their "age" is the time since tracking began, so any fall
  with it is an artefact (documents deleted or abandoned, an early era of
  the scraper), which a fall in the born-later group must exceed;
* **era-matched** born later: the same ratio with each bin's expectation
  also multiplied by what documents at least 180 days old did in the same
  calendar window (their own standardised ratio there), so a busy or quiet
  era of the source is not read as youth.

Uncertainty: a bootstrap over documents (the 95 % interval of the ratio),
and a null from the same documents with each one's changes redrawn
uniformly over its exposure (a shuffled time axis: the 95 % band a
document with no age effect gives).  A per-document paired figure, robust
to the few busy documents that dominate the pooled counts: for documents
with at least a year of exposure, log₂ of (changes in the first 180 days
+ ½)/180 d over (changes after + ½)/(the rest), its median and the share
of documents whose first 180 days were faster.

Lab only: no policy reads it.
"""

from __future__ import annotations

import argparse
import bisect
import math
import random
import statistics
import sys
from dataclasses import dataclass

from .fastreplay import Doc, source_docs
from .sim.world import DAY

YEAR = 365.25 * DAY
#: a document first seen within this time of the source's start is "from the start"
MARGIN = 30 * DAY
#: age bins (seconds): edges
EDGES = (0.0, 1 * DAY, 30 * DAY, 180 * DAY, YEAR, math.inf)
#: documents at least this old set the era's factor, and as many expected changes in the window
MATURE = 180 * DAY
ERA_MIN = 30.0
LABELS = ("0–1 d", "1–30 d", "30–180 d", "180 d–1 y", "> 1 y")
OTA = "/work/shared/traces/opentermsarchive-dev.jsonl"
SOURCES = (
    ("ota-A", OTA, "A"),
    ("ota-B", OTA, "B"),
    ("endoflife-releases", "bench/traces/endoflife-releases.jsonl.gz", "all"),
    ("help-scraper", "bench/traces/help-scraper.jsonl.gz", "all"),
    ("rss-feeds", "bench/traces/rss-feeds.jsonl.gz", "all"),
    ("tosback2", "bench/traces/tosback2.jsonl.gz", "all"),
)


@dataclass
class Life:
    """One document as the measurement sees it: born at *first*, exposed until *end*."""

    first: float
    end: float
    changes: list[float]

    @property
    def rate(self) -> float:
        return len(self.changes) / max(self.end - self.first, 1.0)

    def counts(self, changes: list[float] | None = None) -> list[tuple[int, float]]:
        """(changes, exposure) in each age bin."""
        ch = self.changes if changes is None else changes
        out = []
        for lo, hi in zip(EDGES, EDGES[1:], strict=False):
            a, b = self.first + lo, min(self.first + hi, self.end)
            if b <= a:
                out.append((0, 0.0))
                continue
            out.append((bisect.bisect_left(ch, b) - bisect.bisect_left(ch, a), b - a))
        return out


class Era:
    """What documents at least :data:`MATURE` old did in a calendar window: their changes over their
    own rates' prediction (1: an ordinary window; None where they predict fewer than
    :data:`ERA_MIN` changes, too little to tell an era)."""

    def __init__(self, lives: list[Life]) -> None:
        self.mature = sorted(t for d in lives for t in d.changes if t >= d.first + MATURE)
        steps = sorted((d.first + MATURE, d.rate) for d in lives if d.first + MATURE < d.end)
        self.t = [s[0] for s in steps]
        self.level: list[float] = []  # Σ rate of documents mature from t[k] on
        self.area: list[float] = [0.0]  # ∫ of the level from t[0] to t[k]
        level = 0.0
        for k, (t, r) in enumerate(steps):
            if k:
                self.area.append(self.area[-1] + level * (t - self.t[k - 1]))
            level += r
            self.level.append(level)

    def _integral(self, x: float) -> float:
        k = bisect.bisect_right(self.t, x) - 1
        if k < 0:
            return 0.0
        return self.area[k] + self.level[k] * (x - self.t[k])

    def factor(self, a: float, b: float) -> float | None:
        expected = self._integral(b) - self._integral(a)
        if expected < ERA_MIN:
            return None
        return (bisect.bisect_left(self.mature, b) - bisect.bisect_left(self.mature, a)) / expected


def lives_of(docs: list[Doc]) -> tuple[list[Life], float]:
    end = max(d.changes[-1] if d.changes else d.first for d in docs) + 1.0
    return [Life(d.first, end, sorted(d.changes)) for d in docs], min(d.first for d in docs)


def ratios(lives: list[Life], era: Era | None = None) -> list[tuple[int, float]]:
    """Per bin: (observed changes, expected by each document's own rate [× the era's factor])."""
    obs = [0] * len(LABELS)
    exp = [0.0] * len(LABELS)
    for d in lives:
        r = d.rate
        for b, (o, e) in enumerate(d.counts()):
            if e <= 0:
                continue
            f = 1.0
            if era is not None:
                got = era.factor(d.first + EDGES[b], min(d.first + EDGES[b + 1], d.end))
                if got is None:
                    continue
                f = got
            obs[b] += o
            exp[b] += r * e * f
    return list(zip(obs, exp, strict=True))


def ratio_only(lives: list[Life], era: Era | None = None) -> list[float]:
    return [o / e if e > 0 else math.nan for o, e in ratios(lives, era)]


def shuffled(lives: list[Life], rng: random.Random) -> list[Life]:
    """The same documents, each one's changes redrawn uniformly over its exposure."""
    return [Life(d.first, d.end, sorted(rng.uniform(d.first, d.end) for _ in d.changes)) for d in lives]


def band(samples: list[list[float]]) -> list[tuple[float, float]]:
    out = []
    for b in range(len(LABELS)):
        xs = sorted(x[b] for x in samples if not math.isnan(x[b]))
        if not xs:
            out.append((math.nan, math.nan))
            continue
        out.append((xs[int(0.025 * (len(xs) - 1))], xs[int(0.975 * (len(xs) - 1))]))
    return out


def paired(lives: list[Life], era: Era | None = None) -> list[float]:
    """Documents with ≥ 1 year of exposure: log₂ of the rate in the first 180 days over the rate after
    (½ added to both counts), less the same log ratio of the era's factor in those windows with *era*
    (documents where the era is undefined are left out)."""
    logs = []
    for d in lives:
        span = d.end - d.first
        if span < YEAR:
            continue
        cut = d.first + 180 * DAY
        early = bisect.bisect_left(d.changes, cut)
        late = len(d.changes) - early
        x = math.log2(((early + 0.5) / (180 * DAY)) / ((late + 0.5) / (span - 180 * DAY)))
        if era is not None:
            a, b = era.factor(d.first, cut), era.factor(cut, d.end)
            if not a or not b:
                continue
            x -= math.log2(a / b)
        logs.append(x)
    return logs


def summary(logs: list[float]) -> tuple[float, float]:
    """(median, share > 0) of per-document log ratios."""
    return (statistics.median(logs), sum(x > 0 for x in logs) / len(logs)) if logs else (math.nan, math.nan)


def cohort(lives: list[Life], start: float) -> str:
    """Documents born in the second half of the history against those born in the first, over the
    second half: changes per document-year of each, and the ratio (the population prior of the second
    half is mostly the first half's documents)."""
    mid = start + (lives[0].end - start) / 2
    out = []
    halves = (("first", [d for d in lives if d.first < mid]), ("second", [d for d in lives if d.first >= mid]))
    for label, group in halves:
        ch = sum(len(d.changes) - bisect.bisect_left(d.changes, mid) for d in group)
        ex = sum(d.end - max(d.first, mid) for d in group) / YEAR
        rates = sorted(
            (len(d.changes) - bisect.bisect_left(d.changes, mid)) / max((d.end - max(d.first, mid)) / YEAR, 1e-9)
            for d in group
        )
        out.append((label, len(group), ch, ex, statistics.median(rates) if rates else math.nan))
    (_, n1, c1, e1, m1), (_, n2, c2, e2, m2) = out
    if not n2 or not e1 or not e2:
        return "- cohorts: no document born in the second half"
    return (
        f"- cohorts over the second half: born in the first half {n1} documents, {c1 / e1:.1f} changes per "
        f"document-year (median {m1:.1f}); born in the second half {n2}, {c2 / e2:.1f} (median {m2:.1f}); "
        f"ratio {c2 / e2 / (c1 / e1):.2f}"
    )


def measure(name: str, docs: list[Doc], boot: int, null: int, seed: int) -> str:
    lives, start = lives_of(docs)
    later = [d for d in lives if d.first > start + MARGIN]
    early = [d for d in lives if d.first <= start + MARGIN]
    era = Era(lives)
    rng = random.Random(seed)
    lines = [
        f"### {name}: {len(lives)} documents ({len(later)} born later, {len(early)} from the start), "
        f"{sum(len(d.changes) for d in lives)} changes, {(lives[0].end - start) / YEAR:.1f} years",
        "",
        "| group | " + " | ".join(LABELS) + " |",
        "|---|" + "---|" * len(LABELS),
    ]

    def row(label: str, group: list[Life], with_era: bool) -> None:
        if not group:
            lines.append(f"| {label} | " + " | ".join("—" for _ in LABELS) + " |")
            return
        e = era if with_era else None
        point = ratios(group, e)
        boots = [ratio_only([group[rng.randrange(len(group))] for _ in group], e) for _ in range(boot)]
        ci = band(boots)
        nulls = band([ratio_only(shuffled(group, rng), e) for _ in range(null)]) if not with_era else None
        cells = []
        for b, (o, x) in enumerate(point):
            if x <= 0:
                cells.append("—")
                continue
            cell = f"**{o / x:.2f}** [{ci[b][0]:.2f}–{ci[b][1]:.2f}] ({o})"
            if nulls is not None:
                cell += f" null {nulls[b][0]:.2f}–{nulls[b][1]:.2f}"
            cells.append(cell)
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    row("born later", later, False)
    row("born later, era-matched", later, True)
    row("from the start (control)", early, False)
    lines.append("")
    for label, group in (("born later", later), ("from the start", early)):
        logs = paired(group)
        if not logs:
            continue
        med, share = summary(logs)
        nulls = [summary(paired(shuffled(group, rng))) for _ in range(max(20, null // 4))]
        lo_m, hi_m = band([[m, 0, 0, 0, 0] for m, _ in nulls])[0]
        lo_s, hi_s = band([[s_, 0, 0, 0, 0] for _, s_ in nulls])[0]
        text = (
            f"- paired, {label}: {len(logs)} documents with ≥ 1 y; median log₂(first 180 d ÷ after) "
            f"{med:+.2f} (×{2**med:.2f}; null {lo_m:+.2f} to {hi_m:+.2f}), faster early {share:.0%} "
            f"(null {lo_s:.0%}–{hi_s:.0%})"
        )
        logs_era = paired(group, era)
        if logs_era:
            med_e, share_e = summary(logs_era)
            text += (
                f"; era-matched ({len(logs_era)} documents) {med_e:+.2f} (×{2**med_e:.2f}), faster early {share_e:.0%}"
            )
        lines.append(text)
    lines.append(cohort(lives, start))
    lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-versions", type=int, default=0, help="the fast replay's seeded sample (0: whole sources)")
    ap.add_argument("--boot", type=int, default=300, help="bootstrap resamples of the documents")
    ap.add_argument("--null", type=int, default=200, help="shuffled-time-axis draws")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--source", action="append", help="only these sources (names as in SOURCES)")
    args = ap.parse_args(argv)
    print(
        "Standardised ratio per age bin: changes ÷ the changes each document's own lifetime rate predicts "
        "(1 = its average); [bootstrap 95 %] (changes) and the shuffled-time null's 95 % band.\n"
    )
    for name, path, half in SOURCES:
        if args.source and name not in args.source:
            continue
        docs = source_docs(path, half, args.max_versions)
        print(measure(name, docs, args.boot, args.null, args.seed), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
