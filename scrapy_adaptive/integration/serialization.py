"""Requests to JSON-safe dicts and back, without pickle.

A state folder is data, never code: requests are stored as tagged JSON
(``{"$b": base64}`` for bytes, ``{"$t": [...]}`` for tuples).  Anything else
(a lambda callback, a socket in ``meta``, a custom object) is refused with an
error naming the request and the key, and the crawl goes on without it.

Per-fetch ``meta`` (retry counters, redirect chains, download slot and
latency, cache flags, every private ``_``-key, Scrapy's and ours, and our
public per-fetch keys) is dropped before storing: a revisit starts afresh.

Credentials stay out of the state folder unless the user opts in
(``ADAPTIVE_STORE_CREDENTIALS``): the headers Scrapy itself strips on a
cross-domain redirect (``Authorization``, ``Proxy-Authorization``,
``Cookie``) and the request's ``cookies``.  The middlewares that add them
(``HttpAuthMiddleware``, ``CookiesMiddleware``, a proxy's) add them again on
every revisit; a header set by hand on the request is lost on revisit.

Loading imports nothing: a stored ``_class`` is resolved only among modules
already loaded, and only in Scrapy or the spider's own package, before it is
checked to be a :class:`~scrapy.Request` subclass.
"""

from __future__ import annotations

import base64
import sys
from collections.abc import Callable
from dataclasses import fields as dataclass_fields
from dataclasses import is_dataclass
from datetime import date, datetime
from datetime import time as dt_time
from decimal import Decimal
from typing import Any, cast
from uuid import UUID

from scrapy import Item, Request, Spider
from scrapy.utils.request import request_from_dict

from .. import meta as meta_keys
from ..model import FetchResult

#: meta keys that describe one fetch, not the URL (Scrapy's and our public
#: ones; private ``_`` keys are dropped whoever set them)
PER_FETCH_META = frozenset(
    {
        "retry_times",
        "redirect_times",
        "redirect_ttl",
        "redirect_urls",
        "redirect_reasons",
        "download_slot",
        "download_latency",
        "download_timeout",
        "download_stopped",
        "cached_response",
        *meta_keys.PER_FETCH,
    }
)


#: headers holding credentials (the ones Scrapy's RedirectMiddleware drops
#: when a redirect leaves the domain), lower-case
SENSITIVE_HEADERS = frozenset({b"authorization", b"proxy-authorization", b"cookie"})


class RequestNotStorable(ValueError):
    """A request cannot be written to the state folder; the message says why."""


def strip_per_fetch(meta: dict[str, Any]) -> dict[str, Any]:
    """*meta* without the keys that must not follow a URL to its next visit."""
    return {k: v for k, v in meta.items() if k not in PER_FETCH_META and not k.startswith("_")}


def as_first_fetch(request: Request) -> Request:
    """*request*, kept from the spider for its URL's first fetch, without the
    meta a fetch sets (a child request built from ``response.meta`` copies
    its parent's), as the stored request would be rebuilt: the same object."""
    meta = request.meta
    for key in [k for k in meta if k in PER_FETCH_META or k.startswith("_")]:
        del meta[key]
    return request


def carries_credentials(request: Request) -> bool:
    """True if *request* has cookies or a :data:`SENSITIVE_HEADERS` header:
    what the state folder leaves out unless ``ADAPTIVE_STORE_CREDENTIALS``."""
    return bool(request.cookies) or any(_lower(k) in SENSITIVE_HEADERS for k in request.headers)


#: the stored request's mark that credentials were left out (its first fetch
#: from the store goes without them: said once per crawl)
CREDENTIALS_LEFT_OUT = "credentials_left_out"


def _encode(value: Any, path: str, spider: Spider) -> Any:
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    if isinstance(value, bytes):
        return {"$b": base64.b64encode(value).decode("ascii")}
    if isinstance(value, list):
        return [_encode(v, f"{path}[{i}]", spider) for i, v in enumerate(value)]
    if isinstance(value, tuple):
        return {"$t": [_encode(v, f"{path}[{i}]", spider) for i, v in enumerate(value)]}
    if isinstance(value, dict):
        plain = True  # every key a string not starting with "$" (a loop: meta is stored at every add)
        for k in value:
            if not isinstance(k, str) or k[:1] == "$":
                plain = False
                break
        if plain:
            return {k: v if type(v) in _SCALARS else _encode(v, f"{path}[{k!r}]", spider) for k, v in value.items()}
        pairs = [[_encode(k, f"{path} key", spider), _encode(v, f"{path}[{k!r}]", spider)] for k, v in value.items()]
        return {"$d": pairs}
    if isinstance(value, datetime):
        return {"$dt": value.isoformat()}
    if isinstance(value, date):
        return {"$date": value.isoformat()}
    if isinstance(value, dt_time):
        return {"$time": value.isoformat()}
    if isinstance(value, Decimal):
        return {"$dec": str(value)}
    if isinstance(value, UUID):
        return {"$uuid": str(value)}
    if isinstance(value, (set, frozenset)):
        tag = "$set" if isinstance(value, set) else "$fset"
        return {tag: [_encode(v, f"{path} member", spider) for v in value]}
    fields = _item_fields(value, spider)
    if fields is not None:
        cls = type(value)
        encoded = {k: _encode(v, f"{path}.{k}", spider) for k, v in fields}
        return {"$item": [f"{cls.__module__}.{cls.__qualname__}", encoded]}
    raise RequestNotStorable(
        f"{path} holds {value!r:.80} (of type {type(value).__name__}), which cannot be stored as JSON"
    )


def _item_fields(value: Any, spider: Spider) -> list[tuple[str, Any]] | None:
    """The fields of a :class:`scrapy.Item` or a dataclass instance (the items
    a spider hands from one callback to the next, in ``meta`` or
    ``cb_kwargs``), as its class is rebuilt from them; None for anything
    else.  Only a class the state folder may name and find again
    (:func:`stored_item_class`: of the spider's package, not defined inside
    another), and a dataclass whose ``__init__`` takes every field, can be
    rebuilt: a request holding another is refused now (fetched once), not
    found unloadable at every revisit."""
    cls = type(value)
    if not (isinstance(value, Item) or is_dataclass(value)) or "." in cls.__qualname__:
        return None
    try:
        if stored_item_class(f"{cls.__module__}.{cls.__qualname__}", spider) is not cls:
            return None
    except RequestNotStorable:
        return None
    if isinstance(value, Item):
        return list(value.items())
    if is_dataclass(value) and all(f.init for f in dataclass_fields(value)):
        return [(f.name, getattr(value, f.name)) for f in dataclass_fields(value)]
    return None


#: JSON's scalars: decoded as they are, without a call (a stored request is
#: rebuilt at every issue, and most of its values are these)
_SCALARS = frozenset({str, int, float, bool, type(None)})


def _decode(value: Any, spider: Spider) -> Any:
    if isinstance(value, list):
        return [v if type(v) in _SCALARS else _decode(v, spider) for v in value]
    if isinstance(value, dict):
        if len(value) == 1:
            ((tag, inner),) = value.items()
            if tag[:1] == "$":
                return _decode_tagged(tag, inner, spider)
        return {k: v if type(v) in _SCALARS else _decode(v, spider) for k, v in value.items()}
    return value


def _decode_tagged(tag: str, inner: Any, spider: Spider) -> Any:
    """A value :func:`_encode` wrote as ``{tag: inner}`` (a plain dict has
    no key starting with ``$``: it would have been written as ``$d``)."""
    if tag == "$b":
        return base64.b64decode(inner)
    if tag == "$t":
        return tuple(_decode(v, spider) for v in inner)
    if tag == "$d":
        return {_freeze(_decode(k, spider)): _decode(v, spider) for k, v in inner}
    if tag in _PARSED:
        return _PARSED[tag](inner)
    if tag in ("$set", "$fset"):
        members = (_freeze(_decode(v, spider)) for v in inner)
        return set(members) if tag == "$set" else frozenset(members)
    if tag == "$item":
        class_path, fields = inner
        return stored_item_class(class_path, spider)(**{k: _decode(v, spider) for k, v in fields.items()})
    raise RequestNotStorable(f"stored value tag {tag!r} is not one this version writes")


#: tags of values stored as text, and how each is read back
_PARSED: dict[str, Callable[[str], Any]] = {
    "$dt": datetime.fromisoformat,
    "$date": date.fromisoformat,
    "$time": dt_time.fromisoformat,
    "$dec": Decimal,
    "$uuid": UUID,
}


def _freeze(key: Any) -> Any:
    return tuple(key) if isinstance(key, list) else key


_SLOW = object()


def _method_name(spider: Spider, func: Any) -> Any:
    """The spider method name of a callback, cheaply, or ``_SLOW``.

    ``Request.to_dict`` finds names with ``inspect``, which dominates the
    cost of storing a request; a bound method of the spider whose name
    resolves back to it needs no search.
    """
    if func is None or isinstance(func, str):
        return func
    name = getattr(func, "__name__", None)
    if name and getattr(func, "__self__", None) is spider and getattr(spider, name, None) == func:
        return name
    return _SLOW


def _to_dict(request: Request, spider: Spider) -> dict[str, Any]:
    """``request.to_dict(spider=spider)``, with the common case made cheap."""
    callback, errback = _method_name(spider, request.callback), _method_name(spider, request.errback)
    if callback is _SLOW or errback is _SLOW:
        return request.to_dict(spider=spider)
    data: dict[str, Any] = {
        "url": request.url,
        "callback": callback,
        "errback": errback,
        "headers": dict(request.headers),
    }
    for attr in request.attributes:
        data.setdefault(attr, getattr(request, attr))
    if type(request) is not Request:
        data["_class"] = type(request).__module__ + "." + type(request).__name__
    return data


def _unnamed_method(request: Request, spider: Spider) -> str | None:
    """Which of the request's callback and errback Scrapy cannot name, in
    words (None: neither); Scrapy's own words name neither the key nor why."""
    for key in ("callback", "errback"):
        func = getattr(request, key)
        if func is None or isinstance(func, str) or _method_name(spider, func) is not _SLOW:
            continue
        try:
            Request(request.url, **{key: func}).to_dict(spider=spider)
        except ValueError:
            return (
                f"request[{key!r}] ({getattr(func, '__qualname__', func)!s:.80}) is not a method of the spider, "
                f"and a stored request names its {key} by the spider method's name"
            )
    return None


def request_to_data(request: Request, spider: Spider, *, credentials: bool = False) -> dict[str, Any]:
    """A JSON-safe dict of *request*, without per-fetch meta.

    Without *credentials* the :data:`SENSITIVE_HEADERS` and the request's
    cookies are left out.  Raises :class:`RequestNotStorable` naming the
    request and the key.
    """
    try:
        data = _to_dict(request, spider)
    except ValueError as exc:  # e.g. a lambda or a function from another object
        raise RequestNotStorable(f"{request!r} cannot be stored: {_unnamed_method(request, spider) or exc}") from None
    meta = data.get("meta") or {}
    fetch = meta.get(meta_keys.FETCH)
    if isinstance(fetch, FetchResult) and fetch.validators_sent:
        # our conditional headers belong to that fetch, not to the request
        # (RedirectMiddleware copies them into the redirect's target)
        conditional = {b"if-none-match", b"if-modified-since"}
        data["headers"] = {k: v for k, v in (data.get("headers") or {}).items() if k.lower() not in conditional}
    data["meta"] = strip_per_fetch(meta)
    left_out = not credentials and carries_credentials(request)
    if not credentials:
        data["headers"] = {k: v for k, v in (data.get("headers") or {}).items() if _lower(k) not in SENSITIVE_HEADERS}
        data["cookies"] = {}
    # headers and body are bytes by construction: encode them directly (the
    # generic walk below is the slow part of storing a request)
    headers = data.pop("headers", None) or {}
    body = data.pop("body", b"")
    try:
        encoded = _encode(data, "request", spider)
    except RequestNotStorable as exc:
        raise RequestNotStorable(f"{request!r} cannot be stored: {exc}") from None
    if headers:
        encoded["headers"] = {"$h": [[_latin1(k), [_latin1(v) for v in vs]] for k, vs in headers.items()]}
    encoded["body"] = {"$b": base64.b64encode(body).decode("ascii")} if body else ""
    if left_out:
        encoded[CREDENTIALS_LEFT_OUT] = True
    return encoded


def _lower(value: bytes | str) -> bytes:
    return (value.encode("latin-1") if isinstance(value, str) else value).lower()


def _latin1(value: bytes | str) -> str:
    return value.decode("latin-1") if isinstance(value, bytes) else value


def request_from_data(data: dict[str, Any], spider: Spider) -> Request:
    """Rebuild a request stored by :func:`request_to_data`.

    A stored ``_class`` must name a :class:`~scrapy.Request` subclass
    already loaded from Scrapy or the spider's package (:func:`stored_class`):
    the state folder cannot make us import or call anything else.
    """
    # one pass over the stored keys: a request is rebuilt at every issue,
    # and most of its values are scalars or empty (cookies, cb_kwargs,
    # flags): taken as they are, an empty one as a new object (the stored
    # data stays the record's alone)
    decoded: dict[str, Any] = {}
    for k, v in data.items():
        if k == "headers":
            if isinstance(v, dict) and "$h" in v:
                decoded[k] = {n.encode("latin-1"): [x.encode("latin-1") for x in vs] for n, vs in v["$h"]}
            elif v is not None:
                decoded[k] = _decode(v, spider)
        elif k == "body":
            decoded[k] = b"" if v == "" or v is None else _decode(v, spider)
        elif k != CREDENTIALS_LEFT_OUT:
            decoded[k] = v if type(v) in _SCALARS else _decode(v, spider) if v else type(v)()
    decoded.setdefault("body", b"")
    if "_class" in decoded:
        # request_from_dict takes a class object as it is, without importing
        decoded["_class"] = stored_class(decoded["_class"], spider)
    for key in ("callback", "errback"):
        if decoded.get(key):
            check_stored_method(spider, key, decoded[key])
    return request_from_dict(decoded, spider=spider)


#: the spider's methods Scrapy calls itself, which no response or failure
#: is ever handed to: ``start`` (the start requests), ``closed``, ...
NOT_CALLBACKS = frozenset(
    {name for name in dir(Spider) if callable(getattr(Spider, name, None))} - {"parse", "_parse"}
) | {"start_requests", "closed", "set_crawler"}


def check_stored_method(spider: Spider, key: str, name: Any) -> None:
    """Refuse a stored callback or errback name that does not make one.

    Scrapy looks any name up on the spider: a state folder edited to
    ``"start"`` (a method it has) would have the response handed to the
    start requests' generator, a spider traceback at each visit.  A usable
    name is a method of the spider instance that is not one Scrapy calls
    itself (:data:`NOT_CALLBACKS`); raises :class:`RequestNotStorable`
    naming the key, which the scheduler says in one line with the URL.
    """
    said = f"stored request[{key!r}] {name!r}"
    if not isinstance(name, str) or not name or name.startswith("__") or name in NOT_CALLBACKS:
        raise RequestNotStorable(f"{said} is not a {key} method: the spider's Scrapy methods take no response")
    found = getattr(spider, name, None)
    if found is None:
        raise RequestNotStorable(f"{said} is not a method of the spider (renamed or removed since it was stored)")
    if getattr(found, "__self__", None) is not spider or not callable(found):
        raise RequestNotStorable(f"{said} is not a {key} method: not a method of the spider instance")


def _loaded_class(class_path: Any, spider: Spider, what: str) -> Any:
    """The class a state folder names, without importing anything.

    The module is checked by name first (Scrapy's, or the spider's own
    top-level package) and then looked up among the modules already loaded:
    a class the spider's package defines is loaded by the time the spider
    runs.  Anything else is refused with :class:`RequestNotStorable`.
    """
    module_name, _, name = class_path.rpartition(".") if isinstance(class_path, str) else ("", "", "")
    project = type(spider).__module__.split(".", 1)[0]
    allowed = {"scrapy", project} - {"__main__", "builtins"}
    if not name or module_name.split(".", 1)[0] not in allowed:
        raise RequestNotStorable(
            f"stored {what} class {class_path!r} is not from Scrapy or the spider's package ({project}); "
            "the state folder may have been tampered with"
        )
    module = sys.modules.get(module_name)
    return getattr(module, name, None) if module is not None else None


def stored_class(class_path: Any, spider: Spider) -> type[Request]:
    """The request class a state folder names: a loaded :class:`scrapy.Request` subclass."""
    cls = _loaded_class(class_path, spider, "request")
    if not (isinstance(cls, type) and issubclass(cls, Request)):
        raise RequestNotStorable(f"stored request class {class_path!r} is not a loaded scrapy.Request subclass")
    return cls


def stored_item_class(class_path: Any, spider: Spider) -> Callable[..., Any]:
    """The item class a state folder names: a loaded :class:`scrapy.Item`
    subclass or dataclass of the spider's package (rebuilt from its fields)."""
    cls = _loaded_class(class_path, spider, "item")
    if not (isinstance(cls, type) and (issubclass(cls, Item) or is_dataclass(cls))):
        raise RequestNotStorable(f"stored item class {class_path!r} is not a loaded scrapy.Item subclass or dataclass")
    return cast("Callable[..., Any]", cls)
