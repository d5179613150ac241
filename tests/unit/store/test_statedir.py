"""The state folder: where it is, who owns it, and refusing to guess."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from scrapy_adaptive.store.statedir import MARKER, StateDirError, open_store, resolve

FP = "scrapy.utils.request.RequestFingerprinter"


def test_state_dir_defaults_to_a_folder_inside_jobdir(tmp_path: Path) -> None:
    assert resolve(None, str(tmp_path)).path == str(tmp_path / "adaptive")
    assert resolve(str(tmp_path / "own"), str(tmp_path)).path == str(tmp_path / "own")


def test_no_jobdir_means_a_temporary_folder_and_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        state = resolve(None, None)
    assert state.temporary and "nothing will survive" in caplog.text
    # a Scrapyd job (no JOBDIR unless jobs_dir is set) is told the setting it takes
    assert "under Scrapyd, which sets no JOBDIR by default: schedule with -d setting=ADAPTIVE_STATE_DIR=" in caplog.text
    Path(state.path).rmdir()


def test_a_new_folder_is_claimed_and_reopened(tmp_path: Path) -> None:
    state = resolve(str(tmp_path / "s"), None)
    open_store(state, spider="a", fingerprinter=FP, sync=False).close()
    marker = json.loads((tmp_path / "s" / MARKER).read_text())
    assert marker["spider"] == "a" and marker["format"] == 1
    open_store(state, spider="a", fingerprinter=FP, sync=False).close()


def test_a_jobdir_that_is_a_file_is_named_as_the_fault(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("not a folder")
    with pytest.raises(StateDirError, match=r"^JOBDIR .*afile is not a folder") as caught:
        open_store(resolve(None, str(tmp_path / "afile")), spider="a", fingerprinter=FP, sync=False)
    assert "ADAPTIVE_STATE_DIR" not in str(caught.value)
    with pytest.raises(StateDirError, match=r"\(ADAPTIVE_STATE_DIR\) cannot be created"):
        open_store(resolve(str(tmp_path / "afile" / "s"), None), spider="a", fingerprinter=FP, sync=False)


def test_a_second_crawl_on_the_same_folder_is_refused(tmp_path: Path) -> None:
    state = resolve(str(tmp_path / "s"), None)
    first = open_store(state, spider="a", fingerprinter=FP, sync=False)
    try:
        with pytest.raises(StateDirError, match="in use by another crawl"):
            open_store(state, spider="a", fingerprinter=FP, sync=False)
    finally:
        first.close()


def test_another_spiders_folder_is_refused(tmp_path: Path) -> None:
    state = resolve(str(tmp_path / "s"), None)
    open_store(state, spider="a", fingerprinter=FP, sync=False).close()
    with pytest.raises(StateDirError, match="belongs to spider 'a', not 'b'"):
        open_store(state, spider="b", fingerprinter=FP, sync=False)


def test_another_fingerprinter_is_refused(tmp_path: Path) -> None:
    state = resolve(str(tmp_path / "s"), None)
    open_store(state, spider="a", fingerprinter=FP, sync=False).close()
    with pytest.raises(StateDirError, match="REQUEST_FINGERPRINTER_CLASS"):
        open_store(state, spider="a", fingerprinter="my.Fingerprinter", sync=False)


def test_a_foreign_folder_is_refused_and_left_untouched(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(StateDirError, match="is not a scrapy-adaptive state folder.*new ADAPTIVE_STATE_DIR"):
        open_store(resolve(str(folder), None), spider="a", fingerprinter=FP, sync=False)
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    # given by JOBDIR (its adaptive/ subfolder), the message names JOBDIR, the setting the user gave
    (folder / "adaptive").mkdir()
    (folder / "adaptive" / "notes.txt").write_text("mine")
    with pytest.raises(StateDirError, match=r"choose an empty or new JOBDIR\.$"):
        open_store(resolve(None, str(folder)), spider="a", fingerprinter=FP, sync=False)
    assert sorted(p.name for p in (folder / "adaptive").iterdir()) == ["notes.txt"]


def test_a_corrupt_marker_or_missing_database_is_refused(tmp_path: Path) -> None:
    state = resolve(str(tmp_path / "s"), None)
    open_store(state, spider="a", fingerprinter=FP, sync=False).close()
    (tmp_path / "s" / MARKER).write_text("{not json")
    with pytest.raises(StateDirError, match="unreadable or corrupt"):
        open_store(state, spider="a", fingerprinter=FP, sync=False)
    (tmp_path / "s" / MARKER).write_text(json.dumps({"format": 1, "spider": "a", "fingerprinter": FP}))
    for f in (tmp_path / "s" / "frontier.ldb").iterdir():
        f.unlink()
    (tmp_path / "s" / "frontier.ldb").rmdir()
    with pytest.raises(StateDirError, match="database frontier.ldb/ is missing"):
        open_store(state, spider="a", fingerprinter=FP, sync=False)


def test_a_corrupt_database_is_reported_not_reset(tmp_path: Path) -> None:
    state = resolve(str(tmp_path / "s"), None)
    open_store(state, spider="a", fingerprinter=FP, sync=False).close()
    db = tmp_path / "s" / "frontier.ldb"
    (db / "CURRENT").write_text("MANIFEST-999999\n")  # points at nothing
    with pytest.raises(StateDirError) as info:
        open_store(state, spider="a", fingerprinter=FP, sync=False)
    assert str(db) in str(info.value)
    assert (db / "CURRENT").read_text() == "MANIFEST-999999\n"  # nothing was reset


def test_a_newer_format_is_refused(tmp_path: Path) -> None:
    state = resolve(str(tmp_path / "s"), None)
    open_store(state, spider="a", fingerprinter=FP, sync=False).close()
    (tmp_path / "s" / MARKER).write_text(json.dumps({"format": 99, "spider": "a", "fingerprinter": FP}))
    with pytest.raises(StateDirError, match="newer scrapy-adaptive"):
        open_store(state, spider="a", fingerprinter=FP, sync=False)


def test_a_database_without_a_marker_that_holds_keys_is_still_refused(tmp_path: Path) -> None:
    """Only an *empty* frontier.ldb/ is taken for a first start killed half-way."""
    import plyvel

    folder = tmp_path / "s"
    folder.mkdir()
    db = plyvel.DB(str(folder / "frontier.ldb"), create_if_missing=True)
    db.put(b"k", b"v")
    db.close()
    with pytest.raises(StateDirError, match="is not a scrapy-adaptive state folder"):
        open_store(resolve(str(folder), None), spider="a", fingerprinter=FP, sync=False)
    assert not (folder / MARKER).exists()


def test_a_first_start_half_made_by_this_version_is_finished(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / MARKER).write_text(json.dumps({"format": 1, "spider": "a", "fingerprinter": FP, "creating": True}))
    open_store(resolve(str(folder), None), spider="a", fingerprinter=FP, sync=False).close()
    assert "creating" not in json.loads((folder / MARKER).read_text())
    # finished: from now on a lost database is refused, never made again
    (folder / "frontier.ldb" / "CURRENT").unlink()
    with pytest.raises(StateDirError, match="lost its CURRENT file"):
        open_store(resolve(str(folder), None), spider="a", fingerprinter=FP, sync=False)


@pytest.mark.parametrize("found", ["1", 1.0, None, 0, True, -3])
def test_a_format_no_version_writes_is_refused_as_edited(tmp_path: Path, found: object) -> None:
    state = resolve(str(tmp_path / "s"), None)
    open_store(state, spider="a", fingerprinter=FP, sync=False).close()
    (tmp_path / "s" / MARKER).write_text(json.dumps({"format": found, "spider": "a", "fingerprinter": FP}))
    with pytest.raises(StateDirError, match="has no state format this or any scrapy-adaptive writes"):
        open_store(state, spider="a", fingerprinter=FP, sync=False)


def test_a_new_jobdir_is_private_an_existing_one_kept_and_one_under_a_file_names_the_file(tmp_path: Path) -> None:
    import os
    import stat

    from scrapy_adaptive.store.statedir import make_jobdir

    make_jobdir(str(tmp_path / "jobs" / "run1"))
    assert stat.S_IMODE((tmp_path / "jobs" / "run1").stat().st_mode) == 0o700
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o755)
    make_jobdir(str(shared))
    assert stat.S_IMODE(shared.stat().st_mode) == 0o755  # not changed behind the user's back
    (tmp_path / "afile").write_text("x")
    with pytest.raises(StateDirError, match=rf"cannot be created: {tmp_path / 'afile'} is a file, not a folder"):
        make_jobdir(str(tmp_path / "afile" / "a" / "b"))


@pytest.mark.parametrize("under", [False, True])
def test_a_state_dir_that_is_a_file_or_under_one_names_the_file_as_jobdir_does(tmp_path: Path, under: bool) -> None:
    """``ADAPTIVE_STATE_DIR`` on or under a regular file said "[Errno 17] File
    exists" / "[Errno 20] Not a directory", where the same JOBDIR names the
    file and what to do."""
    (tmp_path / "afile").write_text("x")
    path = tmp_path / "afile" / "s" if under else tmp_path / "afile"
    with pytest.raises(StateDirError) as caught:
        open_store(resolve(str(path), None), spider="a", fingerprinter=FP, sync=False)
    said = str(caught.value)
    assert said.startswith(f"The state folder {path} (ADAPTIVE_STATE_DIR) "), said
    if under:
        assert f"cannot be created: {tmp_path / 'afile'} is a file, not a folder" in said, said
    else:
        assert "is not a folder (a file of that name exists)" in said, said
    assert "give ADAPTIVE_STATE_DIR a folder" in said and "Errno" not in said, said
    assert (tmp_path / "afile").read_text() == "x"


GOOD_POINT = {"urls": 3, "visits": 5, "writes": 9, "clean": False, "at": "2026-11-27T10:00:00Z"}


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [
        ("urls", -5, "urls is -5"),
        ("visits", 1e308, "visits is 1e+308"),
        ("visits", 10**400, "visits is 100000000000… (401 characters)"),
        ("writes", 2.0, "writes is 2.0"),
        ("urls", "3", "urls is '3'"),
        ("visits", True, "visits is True"),
        ("urls", None, "urls is None"),
        ("clean", 1, "clean is 1, not true or false"),
        ("at", 5, "at is 5, not a time"),
        (None, [1, 2], "[1, 2] is not an object"),
    ],
)
def test_an_impossible_checkpoint_is_called_edited_not_a_rollback(
    tmp_path: Path, field: str | None, value: object, shown: str
) -> None:
    """Issue 36 item 7: urls -5 or visits 1e308 was read as a rollback and
    printed with a 309-digit number."""
    state = resolve(str(tmp_path / "s"), None)
    open_store(state, spider="a", fingerprinter=FP, sync=False).close()
    marker = json.loads((tmp_path / "s" / MARKER).read_text())
    marker["checkpoint"] = value if field is None else {**GOOD_POINT, field: value}
    (tmp_path / "s" / MARKER).write_text(json.dumps(marker))
    with pytest.raises(StateDirError) as info:
        open_store(state, spider="a", fingerprinter=FP, sync=False)
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 's' / MARKER} has an invalid 'checkpoint' entry ({shown}")
    assert "the marker was edited or written by other code" in message and "rolled back" not in message
    assert len(message) < 400
    # a missing writes count is a marker of an older version: read, not refused
    del marker["checkpoint"]
    marker["checkpoint"] = {k: v for k, v in GOOD_POINT.items() if k != "writes"}
    (tmp_path / "s" / MARKER).write_text(json.dumps(marker))
    with pytest.raises(StateDirError, match="has rolled back"):
        open_store(state, spider="a", fingerprinter=FP, sync=False)


@pytest.mark.parametrize("text", ["[" * 100_000, "[1, 2, 3]"])
def test_a_marker_nested_past_the_parser_or_not_an_object_is_refused_in_one_line(tmp_path: Path, text: str) -> None:
    """``'[' * 100000`` in the marker was a RecursionError traceback (the crawl's and the console's)."""
    from scrapy_adaptive.store.marker import read_marker

    state = resolve(str(tmp_path / "s"), None)
    open_store(state, spider="a", fingerprinter=FP, sync=False).close()
    (tmp_path / "s" / MARKER).write_text(text)
    with pytest.raises(StateDirError) as caught:
        open_store(state, spider="a", fingerprinter=FP, sync=False)
    said = str(caught.value)
    assert said.startswith(str(tmp_path / "s" / MARKER)) and "refusing to guess" in said and "\n" not in said
    with pytest.raises(StateDirError, match="refusing to guess"):
        read_marker(str(tmp_path / "s" / MARKER))


@pytest.mark.parametrize("code", ["EACCES", "EPERM"])
def test_an_existing_folder_this_user_cannot_write_in_is_said_so_not_cannot_be_created(
    tmp_path: Path, code: str
) -> None:
    """JOBDIR an existing folder this user may not write: the state folder
    in it "cannot be created: [Errno 13] Permission denied", as if it were
    missing.  Tests run as root, whom chmod does not stop: the OS's refusal
    is given to the wording as it would come."""
    import errno
    import os

    from scrapy_adaptive.store.statedir import folder_refusal

    jobdir = tmp_path / "job"
    jobdir.mkdir()
    path = str(jobdir / "adaptive")
    code_ = getattr(errno, code)
    exc = PermissionError(code_, os.strerror(code_), path)
    said = folder_refusal(path, f"The state folder {path} (JOBDIR {jobdir})", "JOBDIR", exc)
    assert said.startswith(f"The state folder {path} (JOBDIR {jobdir}): the folder {jobdir} is not writable by ")
    assert f"{os.strerror(code_)}, so {path} cannot be made in it" in said and "cannot be created" not in said
    assert "chown -R " in said and "\n" not in said
    # any other refusal (a full disk) is still said as it comes
    full = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)
    assert folder_refusal(path, "JOBDIR x", "JOBDIR", full) == f"JOBDIR x cannot be created: {full}"


def test_a_jobdir_this_user_cannot_write_in_is_refused_naming_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through open_store, the refusal the OS gives a user other than root."""
    import errno
    import os

    def refuse(path: str, mode: int = 0o777, exist_ok: bool = False) -> None:
        if not os.path.isdir(path):
            raise PermissionError(errno.EACCES, "Permission denied", path)

    monkeypatch.setattr(os, "makedirs", refuse)
    with pytest.raises(StateDirError) as caught:
        open_store(resolve(None, str(tmp_path)), spider="a", fingerprinter=FP, sync=False)
    said = str(caught.value)
    assert f"the folder {tmp_path} is not writable by this user" in said and "cannot be created" not in said, said
