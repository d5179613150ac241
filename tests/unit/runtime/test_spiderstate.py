"""A ``JOBDIR/spider.state`` that Scrapy's SpiderState left holding nothing.

Scrapy's SpiderState pickles ``spider.state`` at every close, ``{}`` for a
spider that never uses it: every JOBDIR of a project run before the add-on
was added holds one.  Its bytes are known, so it is recognised without
unpickling and removed, like an empty file; anything else still refuses the
start.
"""

from __future__ import annotations

import logging
import pickle
from pathlib import Path

import pytest

from scrapy_adaptive.runtime.spiderstate import take_legacy
from scrapy_adaptive.store.statedir import StateDirError


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_an_empty_state_pickled_by_scrapy_is_removed_without_unpickling(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, protocol: int
) -> None:
    legacy = tmp_path / "spider.state"
    legacy.write_bytes(pickle.dumps({}, protocol=protocol))
    with caplog.at_level(logging.WARNING):
        assert take_legacy(str(tmp_path), migrate=False) is None
    assert not legacy.exists()
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and str(legacy) in said[0] and "held an empty state" in said[0], said


@pytest.mark.parametrize("value", [{"starts": 3}, [], None, {"": None}])
def test_any_other_pickle_still_refuses_the_start(tmp_path: Path, value: object) -> None:
    legacy = tmp_path / "spider.state"
    legacy.write_bytes(pickle.dumps(value, protocol=4))
    with pytest.raises(StateDirError, match="is not read: unpickling a file of the job folder"):
        take_legacy(str(tmp_path), migrate=False)
    assert legacy.read_bytes() == pickle.dumps(value, protocol=4)
