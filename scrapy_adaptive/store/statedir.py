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

**Checkpoint: detecting a rollback.**  A write-ahead log cut short, at a
record boundary or inside a record, looks exactly like a crash while
writing (LevelDB drops the tail and opens, silently older), so the marker
keeps a *checkpoint*: the count of batches the database has applied
(:attr:`.base.Store.writes`, which every batch writes with itself), the
URLs known (quarantined and forgotten included) and the visits recorded,
counts that only ever grow, and whether it was written at a clean close.
It is written at open, at every tick of the crawl (once a second) when a
count moved, after that tick's delivered versions were confirmed, and at a
clean close, never after a failed write.  At open, a database holding
fewer writes, URLs or visits than the checkpoint has rolled back: refused,
saying what is missing and how to accept the loss.  A ``kill -9`` cannot
cause it: every write a checkpoint counts had reached the OS before the
checkpoint was written.  More is normal after an unclean stop.  A cut
that takes only the writes of the last second before a stop, after the
last checkpoint, is not seen (docs/reliability.md).
docs/state-folder.md has the whole rule.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import tempfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..config.spec import counted
from .base import Batch, Store, StoreError, StoreInUse, access_denied
from .keys import FORGOTTEN_KEY, QUARANTINED_KEY, URLS_KEY, VISITS_KEY
from .leveldb import CACHE_MB, LevelDBStore
from .marker import (
    CHECKPOINT,
    CREATING,
    FORMAT,
    MARKER,
    Checkpoint,
    StateDirError,
    check_marker,
    create_marker,
    private_opener,
    read_checkpoint,
    read_marker,
    write_marker,
)

if TYPE_CHECKING:
    from ..config.settings import AdaptiveConfig
    from .redis import RedisStore

__all__ = ["CHECKPOINT", "FORMAT", "MARKER", "StateDirError", "private_opener"]  # kept here for their users

logger = logging.getLogger(__name__)

DATABASE = "frontier.ldb"
#: the meta entry of a shared store that plays the marker's part (spider, fingerprinter, format)
IDENTITY = "identity"
#: seconds between two checkpoints of a worker of a shared store while it
#: runs: each sums every queue's counters read from the store
SHARED_CHECKPOINT_INTERVAL = 10.0


@dataclass(frozen=True)
class StateDir:
    path: str
    temporary: bool
    #: what the folder was given by, for messages: ``ADAPTIVE_STATE_DIR``,
    #: ``JOBDIR <folder>`` (the state is its ``adaptive`` subfolder), or none
    source: str = "ADAPTIVE_STATE_DIR"

    @property
    def database(self) -> str:
        return os.path.join(self.path, DATABASE)

    @property
    def marker(self) -> str:
        return os.path.join(self.path, MARKER)


def resolve(state_dir: str | None, jobdir: str | None) -> StateDir:
    """Where the state lives: the setting, else ``<JOBDIR>/adaptive``, else a temp dir."""
    if state_dir:
        return StateDir(os.path.abspath(os.path.expanduser(state_dir)), temporary=False)
    if jobdir:
        return StateDir(os.path.abspath(os.path.join(jobdir, "adaptive")), temporary=False, source=f"JOBDIR {jobdir}")
    path = tempfile.mkdtemp(prefix="scrapy-adaptive-")
    logger.warning(
        "Neither JOBDIR nor ADAPTIVE_STATE_DIR is set: the frontier lives in the temporary folder %s and "
        "nothing will survive this process. Run with -s JOBDIR=<folder> to keep the crawl.",
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
        blocker = os.path.abspath(path)
        while not os.path.lexists(blocker) and os.path.dirname(blocker) != blocker:
            blocker = os.path.dirname(blocker)  # up to the part that exists
        give = f"give {setting} a folder, new or kept from an earlier crawl."
        if os.path.isdir(blocker):
            raise StateDirError(f"{name} cannot be created: {exc}") from exc
        if blocker == os.path.abspath(path):
            said = f"{name} is not a folder (a file of that name exists): move the file away, or {give}"
            raise StateDirError(said) from exc
        raise StateDirError(f"{name} cannot be created: {blocker} is a file, not a folder; {give}") from exc


def _claim_folder(state: StateDir) -> None:
    """Create the folder ``0700`` (and the JOBDIR holding it), or warn if an
    existing one is open to others."""
    if state.source.startswith("JOBDIR"):
        make_jobdir(os.path.dirname(state.path))
    _make_folder(state.path, f"The state folder {state.path} ({state.source})", state.source.split()[0])
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
        raise _unwritable(state, exc) from exc
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
        raise _unwritable(state, exc) from exc
    except BaseException:
        store.close()
        raise
    return store


def check_counts(state: StateDir, marker: dict, store: Store) -> None:
    """Refuse a database that holds less than its checkpoint recorded
    (:class:`StateDirError`), or whose counters cannot be read (:class:`StoreError`)."""
    _check_checkpoint(state, marker, **stored_counts(store), writes=store.writes)


def _first_marker(state: StateDir, expected: dict) -> dict:
    """The marker of a first start, made before the database and flagged
    ``creating`` (see :mod:`.marker`), or the one another first start made
    a moment ago (then LevelDB's lock decides which of the two goes on)."""
    leftovers = [n for n in os.listdir(state.path) if n != "crawl.log" and not n.startswith(MARKER)]
    if leftovers and not _half_made(state, leftovers):
        raise StateDirError(
            f"{state.path} is not a scrapy-adaptive state folder (it holds {', '.join(sorted(leftovers)[:5])} "
            f"but no {MARKER}). Refusing to write into it: choose an empty or new ADAPTIVE_STATE_DIR."
        )
    data = {**expected, "created": _now(), CREATING: True}
    try:
        if create_marker(state.marker, data):
            return data
    except OSError as exc:
        raise _unwritable(state, exc) from exc
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
            except ValueError:
                stored = None
            if not isinstance(stored, dict):
                raise StateDirError(
                    f"The Redis store {store.url} namespace {shared.namespace} holds keys that are not a "
                    "scrapy-adaptive frontier; choose another ADAPTIVE_STORE_NAMESPACE."
                )
            check_marker(f"The Redis store {store.url} (namespace {shared.namespace})", stored, expected)
        if marker is not None:
            _check_checkpoint(state, marker, **stored_counts(store), shared=True)
        else:
            write_marker(state.marker, {**expected, **where, "created": _now()})
    except (OSError, StoreError) as exc:
        store.close()
        raise StateDirError(str(exc)) from exc
    except BaseException:
        store.close()
        raise
    return store


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _where(store: Store) -> str:
    """A store's folder or (password-free) URL, for messages."""
    return str(getattr(store, "path", None) or getattr(store, "url", "") or type(store).__name__)


def stored_counts(store: Store) -> dict[str, int]:
    """What a checkpoint compares: URLs known (quarantined and forgotten included) and visits,
    summed over the per-queue counter rows (one small row per host)."""
    urls = visits = 0
    # a shared store reads its rows without taking them as this worker's own
    read = getattr(store, "counter_rows", None) or store.hosts
    try:
        rows = list(read())
    except StoreError as exc:
        raise StateDirError(str(exc)) from exc
    for queue, raw in rows:
        try:
            row = raw if isinstance(raw, dict) else json.loads(raw)
            # a URL moved aside or forgotten on request still counts: the sum never falls
            urls += int(row.get(URLS_KEY, 0)) + int(row.get(QUARANTINED_KEY, 0)) + int(row.get(FORGOTTEN_KEY, 0))
            visits += int(row.get(VISITS_KEY, 0))
        except (ValueError, TypeError, AttributeError) as exc:
            raise StateDirError(
                f"The state database in {_where(store)} has an unreadable counters row for queue {queue!r} ({exc}). "
                "No record was changed; restore the folder from a backup."
            ) from exc
    return {"urls": urls, "visits": visits}


def _check_checkpoint(
    state: StateDir, marker: dict, *, urls: int, visits: int, writes: int | None = None, shared: bool = False
) -> None:
    """Refuse a database that holds less than its last checkpoint (see the module's docstring).

    A *shared* store grows while this worker is stopped (other workers
    write): only a loss is reported, never growth.
    """
    point = read_checkpoint(state.marker, marker)
    if point is None:
        return
    how = "at a clean close" if point.clean else "while the crawl ran"
    written = point.writes
    lost = written - writes if writes is not None and written is not None and writes < written else 0
    if urls < point.urls or visits < point.visits or lost:
        missing = f"{counted(lost, 'write')} lost" if lost else "writes were lost"
        raise StateDirError(
            f"The state database in {state.database} has rolled back: it holds {counted(urls, 'URL')} and "
            f"{counted(visits, 'visit')}, but {counted(point.urls, 'URL')} and {counted(point.visits, 'visit')} were "
            f"recorded {how} ({point.at}); {missing} (a cut write-ahead log, an older copy restored, or a power loss "
            "without ADAPTIVE_STATE_SYNC). No record was changed. Restore the folder from a backup; or, to go on from "
            "what is left, delete the "
            f'"{CHECKPOINT}" entry from {state.marker}.'
        )
    if point.clean and not shared and (urls, visits) != (point.urls, point.visits):
        logger.warning(
            "The state database in %s holds more than at its last recorded clean close (%s and %s then, "
            "%d and %d now): another program wrote to it, or a crawl could not write its checkpoint (its log says "
            "so). Going on with what it holds.",
            state.database,
            counted(point.urls, "URL"),
            counted(point.visits, "visit"),
            urls,
            visits,
        )


def _unwritable(state: StateDir, exc: OSError) -> StateDirError:
    """The state folder cannot be written: a permission (the fix is its
    owner and permissions) or what the OS says."""
    if isinstance(exc, PermissionError):
        why = f"{exc} (a crawl writes its checkpoint, control socket and report there)"
        return StateDirError(access_denied(f"The state folder {state.path}", state.path, "writable", why))
    return StateDirError(f"The state folder {state.path} ({state.source}) cannot be written: {exc}")


def write_checkpoint(state: StateDir, *, urls: int, visits: int, clean: bool, writes: int | None = None) -> None:
    """Record the counts the database durably holds; :class:`StateDirError`
    (naming the folder and why) if the marker cannot be written.

    Call only with counts whose writes have all succeeded.  *writes* is the
    store's count of batches (None: not counted, a shared store).
    """
    point = Checkpoint(urls, visits, clean, _now(), writes)
    marker = read_marker(state.marker) or {}
    marker[CHECKPOINT] = point.entry()
    try:
        write_marker(state.marker, marker)
    except OSError as exc:
        raise _unwritable(state, exc) from exc


class Checkpoints:
    """Keeps the marker's checkpoint current for a running crawl.

    Written when a count moved, at most once per call (the crawl calls at
    every tick, once a second); never again once a store write has failed
    (the in-memory counts may then exceed what the database holds).  The
    first, at open, is *required*: a folder that cannot take it refuses the
    crawl, which would otherwise run with its checkpoint, control socket and
    report off.  A later failure is a warning, said once until a checkpoint
    is written again.
    """

    def __init__(self, state: StateDir) -> None:
        self.state = state
        self._last: tuple[int, int, int | None, bool] | None = None
        self._stopped = False
        self._failing = False
        self._at = 0.0

    def due(self, interval: float) -> bool:
        """Have *interval* seconds passed since the last checkpoint was tried?
        (True starts the next interval: a failing try is not repeated at once.)"""
        now = time.monotonic()
        if now - self._at < interval:
            return False
        self._at = now
        return True

    def write(self, *, urls: int, visits: int, clean: bool, writes: int | None = None, required: bool = False) -> None:
        self._at = time.monotonic()
        point = (urls, visits, writes, clean)
        if self._stopped or point == self._last:
            return
        try:
            write_checkpoint(self.state, urls=urls, visits=visits, clean=clean, writes=writes)
        except StateDirError as exc:
            if required:
                raise
            if not self._failing:
                logger.warning("Cannot write the checkpoint: %s", exc)
            self._failing = True
            return
        if self._failing:
            logger.info("The checkpoint is written again to %s.", self.state.marker)
        self._failing = False
        self._last = point

    def stop(self) -> None:
        """A store write failed: no checkpoint may be written any more."""
        self._stopped = True

    @property
    def stopped(self) -> bool:
        """Was the crawl stopped for a store failure (reported then)?"""
        return self._stopped
