"""64-bit perceptual hashes of image bytes, searchable with ``SimHashIndex``.

The DCT hash (imagehash.phash, 8×8 = 64 bits) changes by few bits under resizing,
re-compression and small edits, so Hamming distance finds the same picture at
another URL or size. Bits are packed row-major, first bit = most significant, the
same order as ``str(imagehash.phash(img))`` in hex.
"""
from __future__ import annotations

import io
import warnings

import imagehash
import numpy as np
from PIL import Image

#: Default Hamming distance for "the same picture" with a 64-bit pHash.
IMAGE_MAX_DISTANCE = 4
#: Grey-level standard deviation (0-255, at 32x32) below which an image is featureless.
FLAT_STD = 1.0


class ImageHashError(ValueError):
    """The bytes are not an image Pillow can decode (or would be a decompression bomb)."""


def phash_bytes(data: bytes) -> int | None:
    """pHash (64 bits) of encoded image bytes as an int; None for a featureless image.

    ``ImageHashError`` if the bytes cannot be decoded.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as img:
                img.load()
                return phash_image(img)
    except (OSError, SyntaxError, ValueError, Image.DecompressionBombError,
            Image.DecompressionBombWarning) as exc:
        raise ImageHashError(f"cannot hash image: {exc}") from exc


def phash_image(img: Image.Image) -> int | None:
    """pHash (64 bits) of a Pillow image as an int; None if the image has no structure.

    The DCT hash compares low frequencies of the grey image; a flat (one-colour)
    picture has none, and every flat picture, whatever its colour, gets the same
    hash. Such placeholders are not "the same picture", so they get no hash.
    """
    grey = np.asarray(img.convert("L").resize((32, 32), Image.Resampling.LANCZOS), dtype=np.float64)
    if grey.std() < FLAT_STD:
        return None
    bits = imagehash.phash(img, hash_size=8).hash.flatten()
    return int.from_bytes(np.packbits(bits).tobytes(), "big")


def parse_image_hash(value: int | str | None) -> int | None:
    """An image hash from an int or a hex string (as ``str(ImageHash)`` writes it); None/'' → None."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, np.integer)):
        return int(value)
    try:
        return int(str(value), 16)
    except ValueError:
        raise ValueError(f"not a hex image hash: {value!r}") from None
