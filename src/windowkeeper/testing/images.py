"""Real image files built in memory, for tests and benchmarks that send media: a PNG needs no imaging library.

A screenshot here is sized and compressed like one (flat panels and noisy tiles, about 3:1), so a request that
carries it is as large as a real computer-use step, and its header states its size as any reader expects.
"""

from __future__ import annotations

import base64
import random
import struct
import zlib


def png(width: int, height: int, *, seed: int | None = None) -> bytes:
    """An RGB PNG of ``width`` x ``height``: with ``seed``, a screen's texture (every third 64-pixel tile noise,
    the rest a flat panel); without, one flat colour."""
    flat = b"\xf4\xf4\xf6"
    if seed is None:
        rows = [b"\x00" + flat * width] * height
    else:
        rnd = random.Random(seed)
        rows = []
        for y in range(height):
            tiles = [rnd.randbytes(3 * 64) if (x + y // 50) % 3 == 0 else flat * 64 for x in range(-(-width // 64))]
            rows.append(b"\x00" + b"".join(tiles)[: 3 * width])

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    body = zlib.compress(b"".join(rows), 6)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", body) + chunk(b"IEND", b"")


def screenshot_base64(seed: int, width: int = 640, height: int = 400) -> str:
    """A screenshot (`png` with ``seed``) as the base64 a computer-use output carries: about 350,000 characters
    at 640 x 400."""
    return base64.b64encode(png(width, height, seed=seed)).decode()
