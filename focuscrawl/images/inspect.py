"""Read a downloaded image's real size and format with Pillow, safely (SPEC §6 step 6).

The crawl never re-encodes the bytes; this only decodes them once to prove they are a
whole image. Rejections carry a named reason, counted as ``focuscrawl/images/failed/<reason>``.
``open_image`` and ``load_pixels`` are the one safe way to decode an image: the export
(``focuscrawl.export.images``) resizes and re-encodes through them.
"""
from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

from PIL import Image

from focuscrawl.rights.licenses import FileMetadata, file_metadata

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
    #: what the file's own metadata says of its rights and of mining it (``read_metadata``;
    #: ``None``: not read)
    metadata: FileMetadata | None = None


def allowed_formats(extensions) -> frozenset[str]:
    """Pillow format names for the kept URL extensions (any case, as a setting lists them)."""
    return frozenset(EXTENSION_FORMATS[e.lower()] for e in extensions if e.lower() in EXTENSION_FORMATS)


def open_image(data: bytes, formats: frozenset[str] | None = None, max_pixels: int = 9600 * 7200) -> Image.Image:
    """Pillow's image of ``data``, not decoded yet: only its header was read, so a
    decompression bomb is refused before it costs memory. ``formats``: the Pillow format
    names kept (None: any). ``ImageRejected`` otherwise; the caller closes the image."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise ImageRejected(DECOMPRESSION_BOMB, str(exc)) from None
    except (Image.UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise ImageRejected(NOT_AN_IMAGE, str(exc)) from None
    fmt = img.format or ""
    width, height = img.size
    if formats is not None and fmt not in formats:
        img.close()
        raise ImageRejected(UNSUPPORTED_FORMAT, fmt or "unknown")
    if width * height > max_pixels:
        img.close()
        raise ImageRejected(DECOMPRESSION_BOMB, f"{width}x{height} pixels > {max_pixels}")
    return img


def load_pixels(img: Image.Image) -> None:
    """Decode ``img`` (from ``open_image``); ``ImageRejected`` if its data ends or breaks early."""
    try:
        img.load()
    except (OSError, ValueError, SyntaxError, EOFError) as exc:
        raise ImageRejected(TRUNCATED, str(exc)) from None
    except Image.DecompressionBombError as exc:
        raise ImageRejected(DECOMPRESSION_BOMB, str(exc)) from None


def inspect_image(data: bytes, formats: frozenset[str] = frozenset({"JPEG", "PNG", "GIF"}),
                  max_pixels: int = 9600 * 7200, read_metadata: bool = False) -> ImageInfo:
    """Size and format of an image file, fully decoded once, and with ``read_metadata`` what its
    metadata says of its licence, creator and mining; ``ImageRejected`` otherwise."""
    with open_image(data, formats, max_pixels) as img:
        width, height = img.size
        metadata = file_metadata(img) if read_metadata else None  # before draft(), which drops the header's info
        if img.format == "JPEG":
            img.draft(img.mode, (max(1, width // 8), max(1, height // 8)))  # decode at 1/8 scale
        load_pixels(img)
        return ImageInfo(width, height, img.format, metadata)
