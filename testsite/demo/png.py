"""Tiny, dependency-free PNG encoder for the demo site's images.

The demo site must serve *real* images (so a crawler's asset handling, content
types and byte-level change detection are exercised) without pulling Pillow
into the dependency tree.  A truecolour PNG is just a signature plus three
CRC-protected chunks around a zlib stream, so ``struct`` and ``zlib`` suffice.
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable

__all__ = ["PNG_SIGNATURE", "encode_png", "gradient_png"]

#: The 8 magic bytes every PNG file starts with (tests check for them).
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

RGB = tuple[int, int, int]


def _chunk(kind: bytes, data: bytes) -> bytes:
    """Frame one PNG chunk: length, type, payload, CRC over type + payload."""
    crc = zlib.crc32(kind + data) & 0xFFFFFFFF
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def encode_png(width: int, height: int, rows: Iterable[bytes]) -> bytes:
    """Encode 8-bit RGB scanlines (``3 * width`` bytes each) as a PNG file.

    Every scanline gets filter type 0 ("None"): the images are tiny, so the
    better compression of adaptive filters is not worth the code.
    """
    if width <= 0 or height <= 0:
        raise ValueError("PNG dimensions must be positive")
    raw = bytearray()
    count = 0
    for row in rows:
        if len(row) != 3 * width:
            raise ValueError(f"scanline has {len(row)} bytes, expected {3 * width}")
        raw += b"\x00" + row
        count += 1
    if count != height:
        raise ValueError(f"got {count} scanlines, expected {height}")
    # Bit depth 8, colour type 2 (truecolour), default compression/filter,
    # no interlacing.
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        PNG_SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(bytes(raw), 9)) + _chunk(b"IEND", b"")
    )


def _mix(a: RGB, b: RGB, num: int, den: int) -> bytes:
    """Linear interpolation between two colours at ``num / den``."""
    return bytes(ca + (cb - ca) * num // den for ca, cb in zip(a, b, strict=True))


def gradient_png(width: int, height: int, top_left: RGB, bottom_right: RGB) -> bytes:
    """A diagonal two-colour gradient: cheap, deterministic and visibly distinct.

    Distinct colour pairs give every demo image (and every version of a
    changing image) different bytes, which is all change detection needs.
    """
    span = max(width + height - 2, 1)
    rows = (b"".join(_mix(top_left, bottom_right, x + y, span) for x in range(width)) for y in range(height))
    return encode_png(width, height, rows)
