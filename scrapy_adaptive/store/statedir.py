"""Finding, claiming and checking the state folder.

Layout of ``ADAPTIVE_STATE_DIR``::

    ADAPTIVE_STATE.json   what wrote this folder: format, spider, fingerprinter,
                          and the last checkpoint (see below)
    frontier.ldb/         the LevelDB database (records, queues, counters)
    crawl.log             one line per visit (rotated), when enabled
    changes.log           the change events delivered (rotated), when events are on
    validators-report.json  the hosts' validator track records
    spider-state.json     ``spider.state``, as JSON (:mod:`..runtime.spiderstate`)

The folder is checked before anything is written: a folder of another
spider, another request fingerprinter, a newer format, or one that is not a
scrapy-adaptive folder at all is refused with a message.  Nothing is ever
reset silently: once the marker exists, the database is opened without
``create_if_missing``, so a lost ``CURRENT`` file or an emptied
``frontier.ldb/`` is refused (LevelDB would otherwise start an empty
database and delete the old tables).  The default is ``<JOBDIR>/adaptive``;
Scrapyd gives every job a new JOBDIR, so long crawls under Scrapyd set
``ADAPTIVE_STATE_DIR`` to a fixed absolute path.

**First start.**  The marker is written first, flagged ``creating``
(:mod:`.marker`), and the flag is cleared once the database is open: a
first start killed in between is finished by the next one; of two first
starts at once, one creates the marker and LevelDB's lock lets one go on,
the other being told the folder is in use.  A folder an older version's
killed first start left (an empty ``frontier.ldb/``, no marker) is taken
as half-made too.

**Permissions.**  A new folder is created ``0700`` (its database folder, and
a JOBDIR the crawl makes, too) and the files we write ourselves ``0600``: stored requests may carry
cookies.  LevelDB creates its own files with the process umask; inside a
``0700`` folder nobody else can reach them, and the ones present at open
are set to ``0600``.  An existing folder that others can read is *not*
changed behind the user's back: a warning names it and the ``chmod`` to run.

**Checkpoint: detecting a rollback.**  The marker also keeps counts that only
ever grow, so a database that rolled back is refused at open
(:mod:`.checkpoint`).
docs/state-folder.md has the whole rule.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import socket
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .base import Batch, Store, StoreError, StoreInUse, access_denied
from .checkpoint import (
    Checkpoints,
    check_checkpoint,
    check_counts,
    how_it_resumes,
    last_checkpoint,
    stored_counts,
    write_checkpoint,
)
from .folder import DATABASE, StateDir, unwritable, utc_now
from .leveldb import CACHE_MB, LevelDBStore
from .marker import (
    CHECKPOINT,
    CREATING,
    FORMAT,
    MARKER,
    StateDirError,
    check_marker,
    create_marker,
    private_opener,
    read_marker,
    write_marker,
)

if TYPE_CHECKING:
    from ..config.settings import AdaptiveConfig
    from .redis import RedisStore

#: kept here for their users: the state folder's whole face in one module
__all__ = [
    "CHECKPOINT",
    "DATABASE",
    "FORMAT",
    "MARKER",
    "Checkpoints",
    "StateDir",
    "StateDirError",
    "check_counts",
    "how_it_resumes",
    "last_checkpoint",
    "private_opener",
    "stored_counts",
    "write_checkpoint",
]

logger = logging.getLogger(__name__)

#: the meta entry of a shared store that plays the marker's part (spider, fingerprinter, format)
IDENTITY = "identity"
#: seconds between two checkpoints of a worker of a shared store while it
#: runs: each sums every queue's counters read from the store
SHARED_CHECKPOINT_INTERVAL = 10.0


def resolve(state_dir: str | None, jobdir: str | None) -> StateDir:
    """Where the state lives: the setting, else ``<JOBDIR>/adaptive``, else a temp dir."""
    if state_dir:
        return StateDir(os.path.abspath(os.path.expanduser(state_dir)), temporary=False)
    if jobdir:
        return StateDir(os.path.abspath(os.path.join(jobdir, "adaptive")), temporary=False, source=f"JOBDIR {jobdir}")
    path = tempfile.mkdtemp(prefix="scrapy-adaptive-")
    logger.warning(
        "Neither JOBDIR nor ADAPTIVE_STATE_DIR is set: the frontier lives in the temporary folder %s and "
        "nothing will survive this process. Run with -s JOBDIR=<folder> to keep the crawl (under Scrapyd, which "
        "sets no JOBDIR by default: schedule with -d setting=ADAPTIVE_STATE_DIR=<folder>, docs/scrapyd.md).",
        path,
    )
    return StateDir(path, temporary=True)


def make_jobdir(jobdir: str) -> None:
    """Create a missing JOBDIR ``0700`` (Scrapy's ``job_dir()`` makes it
    ``0755``); an existing one is left as it is.  :class:`StateDirError`,
    naming JOBDIR, when it cannot be made."""
    _make_folder(jobdir, f"JOBDIR {jobdir}", "JOBDIR")


def _make_folder(path: str, name: str, setting: str) -> None:
    """Create *path* ``0700`` if missing.  When it cannot be, the
    :class:`StateDirError` starts with *name* and, where a regular file is in
    the way, names that file and what to give *setting* instead of an errno."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
    except OSError as exc:
        raise StateDirError(folder_refusal(path, name, setting, exc)) from exc


def folder_refusal(path: str, name: str, setting: str, exc: OSError) -> str:
    """Why *path* could not be made, said of the part of it that exists:
    a regular file in the way, or an existing folder this user may not
    write in (EACCES, EPERM: not "cannot be created", which reads as if the
    folder were missing or the disk at fault, but who owns it and the fix)."""
    blocker = os.path.abspath(path)
    while not os.path.lexists(blocker) and os.path.dirname(blocker) != blocker:
        blocker = os.path.dirname(blocker)  # up to the part that exists
    give = f"give {setting} a folder, new or kept from an earlier crawl."
    if os.path.isdir(blocker):
        if exc.errno in (errno.EACCES, errno.EPERM):
            why = f"{exc.strerror or exc}, so {path} cannot be made in it"
            return access_denied(f"{name}: the folder {blocker}", blocker, "writable", why)
        return f"{name} cannot be created: {exc}"
    if blocker == os.path.abspath(path):
        return f"{name} is not a folder (a file of that name exists): move the file away, or {give}"
    return f"{name} cannot be created: {blocker} is a file, not a folder; {give}"


def _claim_folder(state: StateDir) -> None:
    """Create the folder ``0700`` (and the JOBDIR holding it), or warn if an
    existing one is open to others."""
    if state.source.startswith("JOBDIR"):
        make_jobdir(os.path.dirname(state.path))
    _make_folder(state.path, f"The state folder {state.path} ({state.source})", state.setting)
    try:
        mode = os.stat(state.path).st_mode & 0o777
    except OSError as exc:
        raise StateDirError(f"The state folder {state.path} ({state.source}) cannot be read: {exc}") from exc
    if mode & 0o077:
        logger.warning(
            "The state folder %s can be read by other users (mode %o) and its stored requests may carry cookies "
            "or credentials: run chmod 700 %s (scrapy-adaptive does not change an existing folder's permissions).",
            state.path,
            mode,
            state.path,
        )


def _private_database_files(path: str) -> None:
    """Set LevelDB's files present now to ``0600`` (new ones sit in a ``0700`` folder)."""
    try:
        for name in os.listdir(path):
            file = os.path.join(path, name)
            if os.path.isfile(file) and os.stat(file).st_mode & 0o077:
                os.chmod(file, 0o600)
    except OSError as exc:
        logger.warning("Could not make the files of %s private: %s", path, exc)


@dataclass(frozen=True)
class SharedStore:
    """Where a shared (Redis) frontier lives: ``ADAPTIVE_STORE_*`` settings."""

    url: str
    namespace: str
    #: seconds a worker's host leases last unless renewed
    lease: float = 10.0
    password: str | None = None
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None

    def connect(self) -> RedisStore:
        """A connection of its own (checked with a PING); :class:`StoreError` when refused."""
        from . import redis

        tls = {"tls_ca": self.tls_ca, "tls_cert": self.tls_cert, "tls_key": self.tls_key}
        return redis.RedisStore(self.url, namespace=self.namespace, password=self.password, **tls)


def worker_name(state_path: str) -> str:
    """How a worker is named in a shared store's leases: machine, process, state folder."""
    return f"{socket.gethostname()}:{os.getpid()}:{state_path}"


def worker_home(state_path: str) -> str:
    """A worker as it stays across its restarts: machine and state folder (no process id)."""
    return f"{socket.gethostname()}:{state_path}"


def shared_store(config: AdaptiveConfig, spider: str) -> SharedStore | None:
    """The ``ADAPTIVE_STORE_*`` settings of *config* (None: LevelDB in the folder)."""
    if config.store_url is None:
        return None
    return SharedStore(
        config.store_url,
        config.store_namespace or f"adaptive:{spider}",
        lease=config.store_lease,
        password=config.store_password,
        tls_ca=config.store_tls_ca,
        tls_cert=config.store_tls_cert,
        tls_key=config.store_tls_key,
    )


def open_store(
    state: StateDir,
    *,
    spider: str,
    fingerprinter: str,
    sync: bool,
    cache_mb: int = CACHE_MB,
    shared: SharedStore | None = None,
    check: bool = True,
) -> Store:
    """Check the folder, open (or create) its database, and claim it.

    With *shared*, the frontier is in Redis and the folder keeps this
    worker's marker (naming the store), checkpoint and crawl log.  *check*
    False leaves the database's counts unchecked against the checkpoint
    (:func:`check_counts`): an export salvaging what a damaged or
    rolled-back database still holds checks them after.
    """
    _claim_folder(state)
    expected = {"format": FORMAT, "spider": spider, "fingerprinter": fingerprinter}
    if shared is not None:
        return _open_shared(state, expected, shared)
    marker = read_marker(state.marker)
    if marker is None:
        marker = _first_marker(state, expected)
    check_marker(state.path, marker, expected)
    creating = bool(marker.get(CREATING))
    try:
        if creating:
            os.makedirs(state.database, mode=0o700, exist_ok=True)
    except OSError as exc:
        raise unwritable(state, exc) from exc
    if not os.path.isdir(state.database):
        what = "is a file, not a folder" if os.path.lexists(state.database) else "is missing"
        raise StateDirError(
            f"{state.path} has {MARKER} but its database {DATABASE}/ {what}: the folder is incomplete. "
            "Restore it from a backup, or remove the folder to start a new crawl."
        )
    try:
        # a finished marker means a database was made here: never create one over it
        store = LevelDBStore(state.database, sync=sync, cache_mb=cache_mb, create=creating)
    except StoreError as exc:
        raise StateDirError(str(exc)) from exc
    _private_database_files(state.database)
    try:
        if creating:  # the database is open: the first start is done
            write_marker(state.marker, {k: v for k, v in marker.items() if k != CREATING})
        elif check:
            check_counts(state, marker, store)
    except OSError as exc:
        store.close()
        raise unwritable(state, exc) from exc
    except BaseException:
        store.close()
        raise
    return store


def _first_marker(state: StateDir, expected: dict) -> dict:
    """The marker of a first start, made before the database and flagged
    ``creating`` (see :mod:`.marker`), or the one another first start made
    a moment ago (then LevelDB's lock decides which of the two goes on)."""
    leftovers = [n for n in os.listdir(state.path) if n != "crawl.log" and not n.startswith(MARKER)]
    if leftovers and not _half_made(state, leftovers):
        raise StateDirError(
            f"{state.path} is not a scrapy-adaptive state folder (it holds {', '.join(sorted(leftovers)[:5])} "
            f"but no {MARKER}). Refusing to write into it: choose an empty or new {state.setting}."
        )
    data = {**expected, "created": utc_now(), CREATING: True}
    try:
        if create_marker(state.marker, data):
            return data
    except OSError as exc:
        raise unwritable(state, exc) from exc
    return read_marker(state.marker) or data


#: the files LevelDB makes in a database folder
_LEVELDB_FILE = re.compile(r"^(LOCK|LOG|LOG\.old|CURRENT|MANIFEST-\d+|\d+\.(log|ldb|sst|dbtmp))$")


def _half_made(state: StateDir, leftovers: list[str]) -> bool:
    """Is this folder one a first start was killed in before it wrote its
    marker (scrapy-adaptive 0.x wrote it after the database): nothing but an
    empty ``frontier.ldb/``?  Raises "in use" if a crawl holds that database."""
    if leftovers != [DATABASE] or not os.path.isdir(state.database):
        return False
    try:
        probe = LevelDBStore(state.database, create=False)
    except StoreInUse as exc:
        raise StateDirError(str(exc)) from exc
    except StoreError:  # killed before LevelDB wrote its CURRENT file
        return all(_LEVELDB_FILE.match(name) for name in os.listdir(state.database))
    try:
        return probe.is_empty()
    finally:
        probe.close()


def _open_shared(state: StateDir, expected: dict, shared: SharedStore) -> Store:
    """Open the Redis frontier: its identity (spider, fingerprinter, format)
    is kept in Redis and checked like a marker; this worker's marker names
    the store, so its checkpoint is never compared with another database."""
    from .redis import redacted

    where = {"store": f"{redacted(shared.url)} {shared.namespace}"}
    marker = read_marker(state.marker)
    if marker is not None:
        check_marker(state.path, marker, {**expected, **where})
    try:
        store = shared.connect()
    except StoreError as exc:
        raise StateDirError(str(exc)) from exc
    try:
        identity = store.get_meta(IDENTITY)
        if identity is None:
            store.write(Batch(meta={IDENTITY: json.dumps(expected).encode()}))
        else:
            try:
                stored = json.loads(identity)
            except (ValueError, RecursionError):
                stored = None
            if not isinstance(stored, dict):
                raise StateDirError(
                    f"The Redis store {store.url} namespace {shared.namespace} holds keys that are not a "
                    "scrapy-adaptive frontier; choose another ADAPTIVE_STORE_NAMESPACE."
                )
            check_marker(f"The Redis store {store.url} (namespace {shared.namespace})", stored, expected)
        if marker is not None:
            check_checkpoint(state, marker, **stored_counts(store), shared=True)
        else:
            write_marker(state.marker, {**expected, **where, "created": utc_now()})
    except (OSError, StoreError) as exc:
        store.close()
        raise StateDirError(str(exc)) from exc
    except BaseException:
        store.close()
        raise
    return store
