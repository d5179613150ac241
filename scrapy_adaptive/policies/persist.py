"""Saving what the policies of one crawl share, so a restart continues it.

Budgeted policies keep aggregate state outside the URL records: the rate
allocator's histograms and feedback loop, the population priors (the rate
prior, the burst offsets).  Each URL's record remembers what it contributed
under the aggregate's *epoch*, so when the aggregate is restored with its
epoch, a revisit replaces the URL's old contribution exactly; without it a
restarted crawl would plan its budget for the few URLs revisited so far and
overspend until every URL had been seen again (up to the maximum wait).

The state is a small JSON document (one histogram per host) that the
scheduler stores in the frontier's database (an atomic meta write) at every
frontier summary and at close.  After a crash the records may be a summary
interval ahead of it; the contributions of that interval are then counted
twice or not at all until those URLs are revisited, a drift bounded by one
interval's visits.

An object in ``WaitParams.crawl.persisted()`` takes part when it has ``state()`` and
``restore(state)``; lists of such objects (the burst offsets) too.

A worker of a shared frontier saves under a key of its own (*key*, see
docs/shared-frontier.md): the aggregates describe the URLs *it*
registered, under *its* epoch.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, MutableMapping
from typing import Any

from ..store.base import Batch, Store, StoreError

logger = logging.getLogger(__name__)

#: the frontier meta key the shared state is stored under
META_KEY = "policy-shared"
FORMAT = 1


def _persistent(value: Any) -> bool:
    return callable(getattr(value, "state", None)) and callable(getattr(value, "restore", None))


def dump_shared(shared: Mapping[str, Any]) -> bytes | None:
    """The shared objects' states as JSON bytes (None: nothing to save)."""
    out = {key: state for key, value in shared.items() if (state := _state_of(value)) is not None}
    if not out:
        return None
    return json.dumps({"format": FORMAT, "shared": out}, separators=(",", ":")).encode("utf-8")


def restore_shared(shared: MutableMapping[str, Any], raw: bytes) -> list[str]:
    """Restore the objects present in both *shared* and *raw*; the keys restored.

    Raises ValueError naming the key when the saved state cannot be read, so
    the caller can say so and go on with fresh aggregates.
    """
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{META_KEY}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise ValueError(f"{META_KEY}: unknown format {doc.get('format') if isinstance(doc, dict) else doc!r}")
    saved = doc.get("shared", {})
    if not isinstance(saved, dict):
        raise ValueError(f"{META_KEY}: 'shared' is not a mapping")
    fresh = {key: _state_of(value) for key, value in shared.items()}
    restored = []
    for key, state in saved.items():
        value: Any = shared.get(key)
        listed = isinstance(value, list) and isinstance(state, list) and len(value) == len(state)
        if not (_persistent(value) or listed):
            continue
        try:
            _restore(value, state)
        except Exception as exc:  # noqa: BLE001 (saved data of any shape: every failure is the same refusal)
            # what was restored before is put back as it was built: fresh
            # aggregates throughout, never half of the last run's
            for name, state_before in fresh.items():
                if state_before is not None:
                    _restore(shared[name], state_before)
            raise ValueError(f"{META_KEY}[{key!r}]: {exc!r}") from None
        restored.append(key)
    return restored


def _state_of(value: Any) -> Any:
    if _persistent(value):
        return value.state()
    if isinstance(value, list) and value and all(_persistent(v) for v in value):
        return [v.state() for v in value]
    return None


def _restore(value: Any, state: Any) -> None:
    if isinstance(value, list):
        for v, st in zip(value, state, strict=True):
            v.restore(st)
    else:
        value.restore(state)


def restore(store: Store, shared: MutableMapping[str, Any], key: str = META_KEY) -> None:
    """Continue the budget and the learned priors of the last run; a state
    that cannot be read is reported and the crawl starts them afresh (the
    URL records are untouched)."""
    raw = store.get_meta(key)
    if raw is None:
        return
    try:
        restored = restore_shared(shared, raw)
    except ValueError as exc:
        logger.warning("The saved policy state is unreadable (%s); the budget and priors start afresh.", exc)
        return
    if restored:
        logger.info("Policy state restored: %s", ", ".join(restored))


def save(store: Store, shared: Mapping[str, Any], key: str = META_KEY, *, after_fault: bool = False) -> None:
    """Store the shared aggregates with the frontier (one atomic meta write).

    *after_fault*: the crawl is stopping for a state fault it has said
    already, so a failure here is that fault again (a debug line).
    """
    raw = dump_shared(shared)
    if raw is None:
        return
    try:
        store.write(Batch(meta={key: raw}))
    except StoreError as exc:
        # the records are intact; only the aggregates are older on restart
        (logger.debug if after_fault else logger.error)(
            "Cannot save the policy state (%s): a restart will relearn it.", exc
        )
