"""``rank``'s export options (``--format -o --image-size --resize-mode --encode-format
--encode-quality --embed-images --jobs --shard-size``) and the ``ExportOptions`` they make."""
from __future__ import annotations

import argparse
import os
from pathlib import Path

from focuscrawl import settings as defaults
from focuscrawl.export.formats import DEFAULT_SHARD_SIZE, FORMATS, ExportOptions
from focuscrawl.export.images import DEFAULT_QUALITY, ENCODE_FORMATS, RESIZE_MODES, ImageOptions

#: the options that shape exported image bytes, and their defaults
IMAGE_ARGUMENTS = {"image_size": None, "resize_mode": None, "encode_format": "jpg", "encode_quality": None}


def default_jobs() -> int:
    """The CPUs this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def add_export_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=FORMATS, default="tsv", help="export format (default %(default)s)")
    p.add_argument("-o", "--output", required=True, metavar="OUT",
                   help="output file; for webdataset X.tar (shards X-000000.tar, X-000001.tar, ... beside it), "
                        "a shard pattern like out-%%06d.tar, or a directory (corpus-000000.tar, ...)")
    images = p.add_argument_group("exported images (webdataset, parquet --embed-images; as img2dataset's)")
    images.add_argument("--image-size", type=int, metavar="N", help="resize to N pixels as --resize-mode says "
                                                                    "(default: keep each image's size)")
    images.add_argument("--resize-mode", choices=RESIZE_MODES,
                        help="keep_ratio: smaller side N; center_crop: then the centre N x N; border: larger side N, "
                             "white borders to N x N; no: keep the size (default: border with --image-size, else no)")
    images.add_argument("--encode-format", choices=tuple(ENCODE_FORMATS), default="jpg",
                        help="every image is re-encoded to this one format, the shards' image key "
                             "(default %(default)s)")
    images.add_argument("--encode-quality", type=int, metavar="Q",
                        help="jpg 1-100, webp 0-100, png: zlib level 0-9 (default: "
                             + ", ".join(f"{k} {v}" for k, v in DEFAULT_QUALITY.items()) + ")")
    images.add_argument("--embed-images", action="store_true",
                        help="parquet: the image bytes in an 'image' column (Hugging Face's Image feature)")
    images.add_argument("--jobs", type=int, default=None, metavar="N",
                        help="worker processes that resize and encode (default: the CPUs, here %d)" % default_jobs())
    images.add_argument("--shard-size", type=int, default=DEFAULT_SHARD_SIZE, metavar="N",
                        help="webdataset: samples per shard (default %(default)s)")


def export_options(args: argparse.Namespace) -> ExportOptions:
    """The export ``args`` ask for; ``ValueError`` (one line) for options that do not go together."""
    with_images = args.format == "webdataset" or args.embed_images
    asked = [f"--{name.replace('_', '-')}" for name, default in IMAGE_ARGUMENTS.items()
             if getattr(args, name) != default]
    if asked and not with_images:
        raise ValueError(f"{', '.join(asked)}: only an export with image bytes has them "
                         "(--format webdataset, or --format parquet --embed-images)")
    resize_mode = args.resize_mode or ("border" if args.image_size else "no")
    images = ImageOptions(defaults.FOCUSCRAWL_IMAGE_MAX_PIXELS, args.image_size, resize_mode, args.encode_format,
                          args.encode_quality)
    jobs = default_jobs() if args.jobs is None else args.jobs
    if jobs < 1:
        raise ValueError("--jobs must be at least 1")
    return ExportOptions(args.format, Path(args.output), images, args.embed_images, jobs, args.shard_size)
