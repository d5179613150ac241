"""Compact JSON in and out, built once: a record is written and read at every issue and verdict.

Never pickle: a state folder must not be able to run code.
"""

from __future__ import annotations

import json
import json.encoder
import json.scanner
from collections.abc import Callable
from typing import Any


def _compact_encoder() -> Callable[[Any], str]:
    """Compact JSON with non-ASCII text kept, the C encoder built once.

    ``json.dumps`` and ``JSONEncoder.encode`` build an encoder at every
    call, and a record is written at every verdict.  Without the circular
    check (one dict kept between calls would outlive a failed encode): a
    record holds plain data, and a cycle in it would raise RecursionError.
    """
    encoder = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False)
    make = json.encoder.c_make_encoder
    if make is None:  # no C accelerator
        return encoder.encode
    try:
        chunks = make(None, encoder.default, json.encoder.encode_basestring, None, ":", ",", False, False, True)
    except TypeError:  # another Python's private signature
        return encoder.encode
    return lambda obj: "".join(chunks(obj, 0))


def _strict_decoder() -> Callable[[str], Any]:
    """``json.loads`` of text, scanned directly: a stored document has no
    whitespace around it, and any other text takes the full path (which
    accepts whitespace around a document and raises for anything else)."""
    decoder = json.JSONDecoder()
    scan = json.scanner.make_scanner(decoder)

    def decode(text: str) -> Any:
        try:
            value, end = scan(text, 0)
        except StopIteration:
            return decoder.decode(text)
        return value if end == len(text) else decoder.decode(text)

    return decode


#: built once (a record is written and read at every issue and verdict);
#: records are UTF-8 bytes, decoded before parsing: ``json.loads`` of bytes
#: first guesses their encoding
encode = _compact_encoder()
decode = _strict_decoder()
