"""Small image files made with Pillow (and a hand-built PNG bomb) for crawl tests."""
from __future__ import annotations

import io
import random
import struct
import zlib

from PIL import Image


def image_bytes(fmt: str, size=(600, 400), color=(200, 120, 40), noise: bool = False, mode: str = "RGB") -> bytes:
    img = Image.new(mode, size, color if mode == "RGB" else 0)
    if noise:
        rnd = random.Random(7)
        img.putdata([(rnd.randrange(256), rnd.randrange(256), rnd.randrange(256)) for _ in range(size[0] * size[1])])
    buf = io.BytesIO()
    img.save(buf, fmt, **({"quality": 95} if fmt == "JPEG" else {}))
    return buf.getvalue()


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_bomb(width: int = 30000, height: int = 30000) -> bytes:
    """A PNG whose header claims ``width x height`` 1-bit pixels; a few hundred bytes on disk."""
    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr) + _chunk(b"IDAT", zlib.compress(b"\0" * 4096))
            + _chunk(b"IEND", b""))


def truncated_jpeg() -> bytes:
    data = image_bytes("JPEG", (300, 200), noise=True)
    return data[: len(data) // 2]
