"""The exported image of each ranked entry: resized and re-encoded to one format, in worker processes.

The resize modes mean what img2dataset's mean, so a model's data loader sees what it
would see from an img2dataset download of the same URLs:

* ``no``: the image's own size;
* ``keep_ratio``: the smaller side becomes ``image_size`` (aspect kept);
* ``center_crop``: as ``keep_ratio``, then the centre ``image_size`` square;
* ``border``: the larger side becomes ``image_size``, then white borders to a square.

Images are upscaled too (img2dataset's default). Every image is decoded and re-encoded
(``jpg``, ``webp`` or ``png``), so one shard set holds one image key and no metadata
(EXIF orientation is applied first, transparency is composited on white). Decoding goes
through ``focuscrawl.images.inspect.open_image``: a decompression bomb is refused from its
header; a JPEG is decoded at the smallest scale the target size allows (``draft``), so
a worker holds about one image at a time.
"""
from __future__ import annotations

import hashlib
import io
import math
import multiprocessing
from collections import deque
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from itertools import islice
from typing import Iterable, Iterator

from PIL import Image, ImageOps

from focuscrawl.cli import CommandError
from focuscrawl.images.inspect import ImageRejected, load_pixels, open_image

RESIZE_MODES = ("no", "keep_ratio", "center_crop", "border")
#: export format -> Pillow's format name
ENCODE_FORMATS = {"jpg": "JPEG", "webp": "WEBP", "png": "PNG"}
#: quality when none is asked for: img2dataset's 95 for jpg and webp; png's is zlib's level (Pillow's default)
DEFAULT_QUALITY = {"jpg": 95, "webp": 95, "png": 6}
QUALITY_RANGE = {"jpg": (1, 100), "webp": (0, 100), "png": (0, 9)}
BACKGROUND = (255, 255, 255)
RESAMPLE = Image.Resampling.LANCZOS
#: EXIF orientations that turn the picture by 90 degrees (width and height swap)
_TURNED = frozenset({5, 6, 7, 8})

SUCCESS = "success"
FAILED_TO_DOWNLOAD = "failed_to_download"  # no downloaded file in the run directory
FAILED_TO_RESIZE = "failed_to_resize"  # Pillow refused it: bomb, truncated, not an image
#: a candidate pair of a replay whose archives hold no copy of the image: its URL is to be fetched
NOT_FETCHED = "not_fetched"
STATUSES = (SUCCESS, FAILED_TO_DOWNLOAD, FAILED_TO_RESIZE, NOT_FETCHED)


@dataclass(frozen=True)
class ImageOptions:
    """How exported images are made (``rank --image-size --resize-mode --encode-format --encode-quality``)."""

    max_pixels: int  # FOCUSCRAWL_IMAGE_MAX_PIXELS: larger images are refused as decompression bombs
    image_size: int | None = None
    resize_mode: str = "no"
    encode_format: str = "jpg"
    encode_quality: int | None = None  # None: DEFAULT_QUALITY of the format

    def __post_init__(self) -> None:
        if self.resize_mode not in RESIZE_MODES:
            raise ValueError(f"unknown resize mode {self.resize_mode!r} (choose from {', '.join(RESIZE_MODES)})")
        if self.encode_format not in ENCODE_FORMATS:
            raise ValueError(f"unknown encode format {self.encode_format!r} "
                             f"(choose from {', '.join(ENCODE_FORMATS)})")
        if self.resize_mode != "no" and not self.image_size:
            raise ValueError(f"--resize-mode {self.resize_mode} needs --image-size N")
        if self.image_size is not None and self.image_size < 1:
            raise ValueError("--image-size must be at least 1")
        lo, hi = QUALITY_RANGE[self.encode_format]
        if not lo <= self.quality <= hi:
            raise ValueError(f"--encode-quality for {self.encode_format} must be within [{lo}, {hi}]"
                             + (" (png: the zlib compression level)" if self.encode_format == "png" else ""))

    @property
    def quality(self) -> int:
        return DEFAULT_QUALITY[self.encode_format] if self.encode_quality is None else self.encode_quality

    def as_dict(self) -> dict:
        return {"image_size": self.image_size, "resize_mode": self.resize_mode,
                "encode_format": self.encode_format, "encode_quality": self.quality}


@dataclass(frozen=True)
class ExportedImage:
    """One entry's image as exported: ``data`` (None unless ``status`` is success and bytes
    were asked for), its size, the size of the downloaded file, and the SHA-256 of ``data``."""

    status: str
    width: int | None = None
    height: int | None = None
    original_width: int | None = None
    original_height: int | None = None
    data: bytes | None = None
    sha256: str | None = None
    error_message: str | None = None


def target_size(width: int, height: int, options: ImageOptions) -> tuple[int, int]:
    """The exported size of a ``width`` x ``height`` picture (pure: ``encode_image`` makes exactly this)."""
    n = options.image_size
    if options.resize_mode == "no" or not n:
        return width, height
    if options.resize_mode in ("center_crop", "border"):
        return n, n
    scale = n / min(width, height)  # keep_ratio: the smaller side becomes n
    return (n, max(1, round(height * scale))) if width <= height else (max(1, round(width * scale)), n)


def _draft_size(width: int, height: int, options: ImageOptions) -> tuple[int, int] | None:
    """The least size a JPEG must be decoded at for the resize (None: full size)."""
    n = options.image_size
    if options.resize_mode == "no" or not n:
        return None
    side = max(width, height) if options.resize_mode == "border" else min(width, height)
    scale = n / side
    return (math.ceil(width * scale), math.ceil(height * scale)) if scale < 1 else None


def _rgb(img: Image.Image) -> Image.Image:
    """RGB pixels; transparency composited on white (as img2dataset does)."""
    if img.has_transparency_data:
        rgba = img.convert("RGBA")
        flat = Image.new("RGB", rgba.size, BACKGROUND)
        flat.paste(rgba, mask=rgba.getchannel("A"))
        return flat
    return img if img.mode == "RGB" else img.convert("RGB")


def _resized(img: Image.Image, size: tuple[int, int], options: ImageOptions) -> Image.Image:
    """``img`` (maybe decoded at a reduced scale) at ``size``, ``target_size`` of the original."""
    if options.resize_mode == "center_crop":
        return ImageOps.fit(img, size, RESAMPLE)
    if options.resize_mode == "border":
        return ImageOps.pad(img, size, RESAMPLE, color=BACKGROUND)
    return img if size == img.size else img.resize(size, RESAMPLE)


def encode_image(data: bytes, options: ImageOptions) -> tuple[bytes, tuple[int, int], tuple[int, int]]:
    """``(encoded bytes, exported size, original size)`` of an image file; ``ImageRejected`` if
    Pillow refuses it. The original size is the picture as shown (EXIF orientation applied)."""
    with open_image(data, max_pixels=options.max_pixels) as img:
        width, height = img.size
        if img.getexif().get(0x0112) in _TURNED:
            width, height = height, width
        draft = _draft_size(width, height, options)
        if draft is not None and img.format == "JPEG":
            img.draft(img.mode, draft if (width, height) == img.size else draft[::-1])
        load_pixels(img)
        upright = ImageOps.exif_transpose(img)
        out = _resized(_rgb(upright), target_size(width, height, options), options)
        buf = io.BytesIO()
        fmt = ENCODE_FORMATS[options.encode_format]
        params = {"compress_level": options.quality} if fmt == "PNG" else {"quality": options.quality}
        out.save(buf, fmt, **params)
        return buf.getvalue(), out.size, (width, height)


def export_image(path: str | None, options: ImageOptions) -> ExportedImage:
    """The exported image of the downloaded file at ``path`` (None: not downloaded). Runs in a worker."""
    if path is None:
        return ExportedImage(FAILED_TO_DOWNLOAD, error_message="no downloaded file")
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return ExportedImage(FAILED_TO_DOWNLOAD, error_message=f"cannot read the downloaded file: {exc}")
    try:
        encoded, (width, height), (original_width, original_height) = encode_image(data, options)
    except ImageRejected as exc:
        return ExportedImage(FAILED_TO_RESIZE, error_message=str(exc))
    except Exception as exc:  # noqa: BLE001 - Pillow raises many types on hostile files: one image fails
        return ExportedImage(FAILED_TO_RESIZE, error_message=f"{type(exc).__name__}: {exc}")
    return ExportedImage(SUCCESS, width, height, original_width, original_height, encoded,
                         hashlib.sha256(encoded).hexdigest())


def _batches(items: Iterable, n: int) -> Iterator[list]:
    """Lists of ``n`` items (the last may be shorter): ``itertools.batched`` before Python 3.12."""
    it = iter(items)
    while chunk := list(islice(it, n)):
        yield chunk


def _export_batch(paths: list[str | None], options: ImageOptions) -> list[ExportedImage]:
    return [export_image(path, options) for path in paths]


def export_images(paths: Iterable[str | None], options: ImageOptions, jobs: int,
                  batch: int = 16) -> Iterator[ExportedImage]:
    """``export_image`` of each path, in order, on ``jobs`` worker processes, ``batch`` images
    a task (one task per image costs more in inter-process traffic than a small image's
    encoding); at most ``2 * jobs`` tasks are in flight, so memory does not grow with the export."""
    if jobs < 1:
        raise ValueError("--jobs must be at least 1")
    # spawn: a fresh interpreter per worker (no copy of the parent's threads, e.g. pyarrow's pools)
    with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        pending: deque[Future] = deque()
        try:
            for chunk in _batches(paths, batch):
                pending.append(pool.submit(_export_batch, chunk, options))
                if len(pending) >= 2 * jobs:
                    yield from pending.popleft().result()
            while pending:
                yield from pending.popleft().result()
        except BrokenProcessPool:
            raise CommandError("an image worker process died (killed from outside, or out of memory); "
                               "no half-written file was kept") from None
        finally:
            for future in pending:
                future.cancel()
