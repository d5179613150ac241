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


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("[" * 100_000, "nested too deep"),  # a RecursionError traceback
        ("[1, 2, 3]", "holds a list, not a JSON object"),  # accepted silently
        ('"x"', "holds a str, not a JSON object"),
        ("{not json", "Expecting property name"),
    ],
)
def test_a_garbled_spider_state_file_refuses_the_start_in_one_line(tmp_path: Path, text: str, said: str) -> None:
    """``spider.state`` is a dict (Scrapy's SpiderState makes it one): a
    ``spider-state.json`` that is not a JSON object is garbled like any
    other content JSON cannot read, and so is one nested past the parser."""
    from scrapy_adaptive.runtime.spiderstate import SpiderStateFile
    from scrapy_adaptive.store.statedir import StateDir

    path = tmp_path / "spider-state.json"
    path.write_text(text)
    with pytest.raises(StateDirError) as caught:
        SpiderStateFile.open(StateDir(str(tmp_path), temporary=False))
    message = str(caught.value)
    assert message.startswith(f"The spider's state {path} cannot be read (") and said in message, message
    assert "\n" not in message and len(message) < 400 and path.read_text() == text


def test_a_spider_state_object_is_read(tmp_path: Path) -> None:
    from scrapy_adaptive.runtime.spiderstate import SpiderStateFile
    from scrapy_adaptive.store.statedir import StateDir

    (tmp_path / "spider-state.json").write_text('{"starts": 3}')
    assert SpiderStateFile.open(StateDir(str(tmp_path), temporary=False)).value == {"starts": 3}


def test_a_state_that_is_not_a_dict_is_not_saved(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Saved, it would refuse the next start: said, and the state saved before is kept."""
    from scrapy_adaptive.runtime.spiderstate import SpiderStateFile
    from scrapy_adaptive.store.statedir import StateDir

    file = SpiderStateFile.open(StateDir(str(tmp_path), temporary=False))
    file.save({"starts": 1})
    with caplog.at_level(logging.ERROR):
        file.save([1, 2, 3])
    assert "spider.state (a list: it must be a dict) cannot be kept as JSON" in caplog.text
    assert SpiderStateFile.open(StateDir(str(tmp_path), temporary=False)).value == {"starts": 1}
