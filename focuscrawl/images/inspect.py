"""Read a downloaded image's real size and format with Pillow, safely (SPEC §6 step 6).

The bytes are never re-encoded; this only decodes them once to prove they are a
whole image. Rejections carry a named reason, counted as ``focuscrawl/images/failed/<reason>``.
"""
from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

from PIL import Image

# Rejection reasons of downloaded images.
NOT_AN_IMAGE = "not_an_image"  # Pillow cannot identify it (HTML error page, garbage)
UNSUPPORTED_FORMAT = "unsupported_format"  # a real format outside the kept ones (webp, svg, ...)
DECOMPRESSION_BOMB = "decompression_bomb"  # more pixels than FOCUSCRAWL_IMAGE_MAX_PIXELS
TRUNCATED = "truncated"  # the data ends or breaks before the image is complete

# URL extensions -> the format name Pillow reports.
EXTENSION_FORMATS = {"jpg": "JPEG", "jpeg": "JPEG", "jpe": "JPEG", "png": "PNG", "gif": "GIF",
                     "webp": "WEBP", "bmp": "BMP", "tif": "TIFF", "tiff": "TIFF"}
FORMAT_EXTENSIONS = {"JPEG": "jpg", "PNG": "png", "GIF": "gif", "WEBP": "webp", "BMP": "bmp", "TIFF": "tif"}


class ImageRejected(Exception):
    """A downloaded file that is not kept; ``reason`` is one of the names above."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason, self.detail = reason, detail


@dataclass(frozen=True)
class ImageInfo:
    width: int
    height: int
    format: str  # Pillow's name: JPEG, PNG, GIF


def allowed_formats(extensions) -> frozenset[str]:
    """Pillow format names for the kept URL extensions."""
    return frozenset(EXTENSION_FORMATS[e] for e in extensions if e in EXTENSION_FORMATS)


def inspect_image(data: bytes, formats: frozenset[str] = frozenset({"JPEG", "PNG", "GIF"}),
                  max_pixels: int = 9600 * 7200) -> ImageInfo:
    """Size and format of an image file, fully decoded once; ``ImageRejected`` otherwise.

    The pixel count is checked from the header before anything is decoded, so a
    decompression bomb costs no memory.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageRejected(DECOMPRESSION_BOMB, str(exc)) from None
    except (Image.UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise ImageRejected(NOT_AN_IMAGE, str(exc)) from None
    with img:
        fmt = img.format or ""
        if fmt not in formats:
            raise ImageRejected(UNSUPPORTED_FORMAT, fmt or "unknown")
        width, height = img.size
        if width * height > max_pixels:
            raise ImageRejected(DECOMPRESSION_BOMB, f"{width}x{height} pixels > {max_pixels}")
        if fmt == "JPEG":
            img.draft(img.mode, (max(1, width // 8), max(1, height // 8)))  # decode at 1/8 scale
        try:
            img.load()
        except (OSError, ValueError, SyntaxError, EOFError) as exc:
            raise ImageRejected(TRUNCATED, str(exc)) from None
        except Image.DecompressionBombError as exc:
            raise ImageRejected(DECOMPRESSION_BOMB, str(exc)) from None
    return ImageInfo(width, height, fmt)
