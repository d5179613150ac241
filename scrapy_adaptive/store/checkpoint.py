"""The marker's checkpoint: detecting a database that rolled back.

A write-ahead log cut short, at a
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
import time

from ..config.spec import counted
from .base import Store, StoreError
from .folder import StateDir, unwritable, utc_now
from .keys import FORGOTTEN_KEY, QUARANTINED_KEY, URLS_KEY, VISITS_KEY
from .marker import CHECKPOINT, Checkpoint, StateDirError, read_checkpoint, read_marker, write_marker

logger = logging.getLogger(__name__)


def check_counts(state: StateDir, marker: dict, store: Store) -> None:
    """Refuse a database that holds less than its checkpoint recorded
    (:class:`StateDirError`), or whose counters cannot be read (:class:`StoreError`)."""
    check_checkpoint(state, marker, **stored_counts(store), writes=store.writes)


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


def check_checkpoint(
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


def write_checkpoint(state: StateDir, *, urls: int, visits: int, clean: bool, writes: int | None = None) -> None:
    """Record the counts the database durably holds; :class:`StateDirError`
    (naming the folder and why) if the marker cannot be written.

    Call only with counts whose writes have all succeeded.  *writes* is the
    store's count of batches (None: not counted, a shared store).
    """
    point = Checkpoint(urls, visits, clean, utc_now(), writes)
    marker = read_marker(state.marker) or {}
    marker[CHECKPOINT] = point.entry()
    try:
        write_marker(state.marker, marker)
    except OSError as exc:
        raise unwritable(state, exc) from exc


def last_checkpoint(state: StateDir) -> Checkpoint | None:
    """The checkpoint the last crawl on *state* left (None: no crawl has
    written one: a new folder, or a first start killed before its first)."""
    return read_checkpoint(state.marker, read_marker(state.marker) or {})


def how_it_resumes(point: Checkpoint | None, *, shared: bool = False) -> str:
    """What the start-up line says of the run before this one, from the
    checkpoint it left (:func:`last_checkpoint`, read before this run writes
    its own): a new crawl, a resume after a clean close, or a resume after a
    stop that never closed.  The last is said in so many words because a
    user who killed a crawl wants to read, at the restart, that nothing was
    lost and what happens to the fetches that were cut short.

    >>> how_it_resumes(None)
    'a new crawl'
    >>> how_it_resumes(Checkpoint(3, 5, True, "2026-11-28T08:54:05Z"))
    'resuming the crawl that closed cleanly at 2026-11-28T08:54:05Z'
    """
    whose = "this worker's last run" if shared else "the crawl"
    if point is None:
        return "this worker's first start on the shared frontier" if shared else "a new crawl"
    if point.clean:
        return f"resuming {whose} that closed cleanly at {point.at}"
    return (
        f"resuming {whose} that stopped without closing (kill -9, a crash or a power cut; last checkpoint "
        f"{point.at}): every verdict it recorded is kept, and the URLs it was fetching are due again"
    )


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
