"""The garbage collector set for a long crawl: the freeze, the youngest
generation's threshold, and what the project set kept."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator

import pytest

from scrapy_adaptive.runtime import collector


@pytest.fixture(autouse=True)
def restored() -> Iterator[None]:
    """Each test starts from Python's settings and leaves them as it found them."""
    thresholds, frozen = gc.get_threshold(), gc.get_freeze_count()
    gc.unfreeze()
    gc.set_threshold(700, 10, 10)
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*thresholds)
        if frozen:
            gc.freeze()


def test_the_youngest_generation_is_collected_less_often_and_the_older_ones_keep_their_ratios() -> None:
    collector.tune(freeze=False, threshold=10_000)
    assert gc.get_threshold() == (10_000, 10, 10)
    assert gc.get_freeze_count() == 0


def test_zero_keeps_pythons_threshold() -> None:
    collector.tune(freeze=False, threshold=0)
    assert gc.get_threshold() == (700, 10, 10)


def test_a_higher_threshold_the_project_set_is_kept() -> None:
    gc.set_threshold(50_000, 5, 5)
    collector.tune(freeze=False, threshold=10_000)
    assert gc.get_threshold() == (50_000, 5, 5)


def test_the_freeze_moves_what_lives_now_out_of_sight_once() -> None:
    kept = [object() for _ in range(10)]  # alive at the freeze
    collector.tune(freeze=True, threshold=0)
    first = gc.get_freeze_count()
    assert first > 0 and kept
    later = [[] for _ in range(1000)]  # a second crawl in the process keeps the first's freeze
    collector.tune(freeze=True, threshold=0)
    assert gc.get_freeze_count() == first and later


def test_the_garbage_is_still_found() -> None:
    """A cycle dropped after the change is collected by the raised threshold's collections."""
    collector.tune(freeze=True, threshold=10_000)

    class Node:
        pass

    a, b = Node(), Node()
    a.other, b.other = b, a  # type: ignore[attr-defined]
    gone = weakref.ref(a)
    del a, b
    # container allocations (kept: a freed one is not counted) past the threshold run a young collection
    kept = [[] for _ in range(12_000)]
    assert gone() is None and kept
