"""Which fields of a page's items changed: per-field digests, kept small.

With the ``items`` digest rule, a changed page tells downstream which
fields of which items changed (the price? only the "last updated" line?)
without anyone keeping a copy of every earlier item.  :func:`item_fields`
reduces a page's items to a few bytes per item: a 3-byte digest of each
field, base64 in one string per item, the field names once per page.  The
items of two versions are matched by a key field the rule names (a SKU),
or else by their position.  :func:`diff` compares two such summaries.

Fields named in the rule's ``values`` (a price, a date) also keep their
value, cut to :data:`MAX_VALUE_CHARS`, so the event can say "10.00 → 11.00".
A page keeps at most :data:`MAX_ITEMS` items' summaries; beyond, its change
is still detected by the items digest, not field by field.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Any

from ..config.spec import counted

#: bytes of each field's digest (a field that changes unseen: about 1 in 16 million)
FIELD_DIGEST_BYTES = 3
#: characters kept of a value named in ``values``
MAX_VALUE_CHARS = 120
#: items whose fields are kept per page
MAX_ITEMS = 200
#: an item key longer than this is kept as a digest (``#`` and 8 base64 characters)
MAX_LABEL_CHARS = 24
#: stored keys: field names, item summaries by key, values by key, the key field
NAMES, ITEMS, VALUES, KEY = "n", "i", "v", "k"


def _digest(value: Any) -> bytes:
    data = json.dumps(value, sort_keys=True, default=str, ensure_ascii=False).encode("utf-8")
    return hashlib.sha1(data).digest()[:FIELD_DIGEST_BYTES]


#: the digest of a field an item does not have
_ABSENT = hashlib.sha1(b"scrapy-adaptive: no such field").digest()[:FIELD_DIGEST_BYTES]


def _label(value: Any) -> str:
    text = str(value)
    if len(text) <= MAX_LABEL_CHARS:
        return text
    return "#" + base64.b64encode(hashlib.sha1(text.encode("utf-8")).digest()[:6]).decode("ascii")


def _short(value: Any) -> Any:
    """A value as the event carries it: JSON-safe, a long text cut."""
    if value is None or isinstance(value, (bool, int, float)):
        return value
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str, ensure_ascii=False)
    return text if len(text) <= MAX_VALUE_CHARS else text[: MAX_VALUE_CHARS - 1] + "…"


class MissingKey(ValueError):
    """An item lacks the key field the rule matches items by."""


def item_fields(
    items: Iterable[Any], fields: Sequence[str] = (), key: str | None = None, values: Sequence[str] = ()
) -> dict[str, Any]:
    """The per-field summary of a page's *items* (only *fields* if given).

    Raises :class:`MissingKey` naming the item when one lacks *key*."""
    from itemadapter import ItemAdapter  # imports Scrapy when installed: only in items mode

    rows = []
    for position, item in enumerate(items):
        full = ItemAdapter(item).asdict()
        data = {name: full.get(name) for name in fields} if fields else full
        if key is None:
            label = str(position)
        elif key not in full:
            raise MissingKey(f"item {position} has no field {key!r} (the items rule's 'key')")
        else:
            label = _label(full[key])
        rows.append((label, data))
        if len(rows) >= MAX_ITEMS:
            break
    names = sorted({name for _, data in rows for name in data})
    summary: dict[str, Any] = {NAMES: names, ITEMS: {}, VALUES: {}, KEY: key}
    for label, data in rows:
        packed = b"".join(_digest(data[name]) if name in data else _ABSENT for name in names)
        summary[ITEMS][label] = base64.b64encode(packed).decode("ascii")
        kept = {name: _short(data.get(name)) for name in values if name in data}
        if kept:
            summary[VALUES][label] = kept
    if not summary[VALUES]:
        del summary[VALUES]
    return summary


def _unpack(summary: Mapping[str, Any], label: str) -> dict[str, bytes]:
    names = summary.get(NAMES) or []
    try:
        packed = base64.b64decode(summary[ITEMS][label])
    except (KeyError, ValueError, TypeError):
        return {}
    step = FIELD_DIGEST_BYTES
    return {name: packed[i * step : (i + 1) * step] for i, name in enumerate(names)}


def diff(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> dict[str, Any] | None:
    """What changed between two summaries: the items whose fields changed
    (``[{"item": key, "fields": [...], "values": {field: [old, new]}}]``),
    and the keys of items added and removed.  None when there is no
    earlier summary, or it matched items another way (the rule's key
    changed): a field-by-field answer would be a guess."""
    if not isinstance(old, Mapping) or old.get(KEY) != new.get(KEY) or not isinstance(old.get(ITEMS), dict):
        return None
    before, after = old[ITEMS], new[ITEMS]
    changed = []
    old_values, new_values = old.get(VALUES) or {}, new.get(VALUES) or {}
    for label in after:
        if label not in before or before[label] == after[label]:
            continue
        was, now = _unpack(old, label), _unpack(new, label)
        names = sorted(name for name in set(was) | set(now) if was.get(name) != now.get(name))
        entry: dict[str, Any] = {"item": label, "fields": names}
        pairs = {
            name: [old_values.get(label, {}).get(name), new_values[label][name]]
            for name in names
            if name in new_values.get(label, {})
        }
        if pairs:
            entry["values"] = pairs
        changed.append(entry)
    return {
        "changed": changed,
        "added": sorted(label for label in after if label not in before),
        "removed": sorted(label for label in before if label not in after),
    }


def field_words(
    entry: Mapping[str, Any], *, only: Collection[str] = (), most: int | None = None, width: int = 60
) -> list[str]:
    """How one changed item of a :func:`diff` reads, field by field:
    ``price 10.00 → 11.50`` where the rule keeps the values (each cut to
    *width* characters), else the field's name; *only*: those fields alone;
    *most*: that many, then ``… 2 more fields``.  The console and the
    notifications say a change in these words."""
    from .text_diff import shorten

    values = entry.get("values") if isinstance(entry.get("values"), Mapping) else {}
    names = [str(name) for name in entry.get("fields") or () if not only or name in only]
    shown = names if most is None else names[:most]
    said = []
    for name in shown:
        pair = values.get(name)
        if isinstance(pair, list) and len(pair) == 2:
            said.append(f"{name} {shorten(pair[0], width)} → {shorten(pair[1], width)}")
        else:
            said.append(name)
    if len(names) > len(shown):
        said.append(f"… {counted(len(names) - len(shown), 'more field')}")
    return said
