"""Reading traces (plain or gzipped) and the clustering statistics of their gaps.

Why these statistics: the Poisson model behind rate-based revisit policies
says a document's gaps between changes are exponential, so their
coefficient of variation (standard deviation ÷ mean) is 1 and a share
1 − e^(−0.1) ≈ 9.5 % of them are shorter than a tenth of the mean.  Real
pages that change in bursts (an edit, then its corrections) have a CV well
above 1 and many more very short gaps; pages on a publishing schedule have
a CV below 1.  Both numbers per source say how far each source is from the
model the policies assume.

``python -m bench.traces.stats TRACE...`` prints them for any trace files.
"""

from __future__ import annotations

import gzip
import io
import json
import math
import statistics
import sys
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

#: the share of exponential gaps below a tenth of their mean: 1 - exp(-0.1)
POISSON_SHORT_SHARE = 1.0 - math.exp(-0.1)


def open_text(path: str) -> TextIO:
    """Open *path* for reading text, gunzipping when it ends in ``.gz``."""
    if path.endswith(".gz"):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8")
    return open(path, encoding="utf-8")


def read_trace(path: str) -> Iterator[dict[str, Any]]:
    """Yield each trace line as ``{"doc", "service", "versions"}`` (versions sorted, deduplicated).

    Lines without any version are skipped; a malformed line raises
    ``ValueError`` naming the file and line.
    """
    with open_text(path) as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
                versions = sorted({float(v) for v in doc["versions"]})
            except (ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}:{number}: not a trace line ({exc})") from None
            if versions:
                yield {"doc": str(doc.get("doc", number)), "service": str(doc.get("service", "")), "versions": versions}


def clustering(versions_per_doc: Iterable[list[float]], *, min_gaps: int = 3) -> dict[str, Any]:
    """Gap statistics over documents with at least *min_gaps* gaps between versions.

    ``median_cv`` is the median over documents of each one's coefficient of
    variation of its gaps (population standard deviation ÷ mean);
    ``short_share`` is the share, over all their gaps pooled, of gaps below
    a tenth of their own document's mean gap.  Poisson: 1.0 and 9.5 %.
    """
    cvs: list[float] = []
    short = total = 0
    docs = versions = 0
    for vs in versions_per_doc:
        docs += 1
        versions += len(vs)
        gaps = [b - a for a, b in zip(vs, vs[1:]) if b > a]
        if len(gaps) < min_gaps:
            continue
        mean = sum(gaps) / len(gaps)
        if mean <= 0:
            continue
        cvs.append(statistics.pstdev(gaps) / mean)
        short += sum(1 for g in gaps if g < mean / 10.0)
        total += len(gaps)
    return {
        "docs": docs,
        "versions": versions,
        "docs_with_gaps": len(cvs),
        "gaps": total,
        "median_cv": statistics.median(cvs) if cvs else None,
        "short_share": short / total if total else None,
    }


def format_clustering(name: str, c: dict[str, Any]) -> str:
    cv = "n/a" if c["median_cv"] is None else f"{c['median_cv']:.2f}"
    share = "n/a" if c["short_share"] is None else f"{c['short_share']:.1%}"
    return (
        f"{name}: {c['docs']} docs, {c['versions']} versions; over {c['docs_with_gaps']} docs with ≥ 3 gaps: "
        f"median CV {cv}, gaps < mean/10 {share} (Poisson 1.00, {POISSON_SHORT_SHARE:.1%})"
    )


def main(argv: list[str] | None = None) -> int:
    paths = sys.argv[1:] if argv is None else argv
    if not paths:
        print("usage: python -m bench.traces.stats TRACE...", file=sys.stderr)
        return 2
    for path in paths:
        print(format_clustering(path, clustering(d["versions"] for d in read_trace(path))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
