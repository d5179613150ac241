"""The clustering statistics of the real-trace corpus' gaps (``bench.traces.stats``)."""

from __future__ import annotations

from bench.traces.stats import clustering


def test_clustering_statistics_of_a_regular_and_a_bursty_document() -> None:
    regular = [float(i * 100) for i in range(10)]
    bursty = [0.0, 1.0, 2.0, 1000.0, 1001.0, 2000.0]
    c = clustering([regular, bursty])
    assert c["docs_with_gaps"] == 2 and c["gaps"] == 14
    assert c["median_cv"] > 0.5  # the mean of 0 (regular) and > 1 (bursty)
    assert 0 < c["short_share"] < 0.5
