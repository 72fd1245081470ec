"""Download each unique image with Scrapy's media-pipeline machinery (a ``FilesPipeline``).

The original bytes are stored unchanged as ``images/<sha1(url)>.<ext>`` in the run
directory (no re-encoding, unlike ``ImagesPipeline``), written atomically. Real
size and format are read with Pillow in a thread (``focuscrawl.images.inspect``):
decompression bombs are rejected from the header (``FOCUSCRAWL_IMAGE_MAX_PIXELS``),
files larger than ``FOCUSCRAWL_IMAGE_MAX_BYTES`` are cancelled by the downloader
(per-request ``download_maxsize``), broken or truncated images are rejected. Every
rejection drops the item with a reason counted as ``focuscrawl/images/failed/<reason>``.
"""
from __future__ import annotations

import hashlib
import logging
import os
from io import BytesIO
from pathlib import Path
from typing import Any, Iterable

from PIL import Image
from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem, IgnoreRequest, NotConfigured
from scrapy.http.request import NO_CALLBACK
from scrapy.pipelines.files import FilesPipeline, FSFilesStore
from scrapy.utils.asyncio import run_in_thread

from focuscrawl.images.inspect import FORMAT_EXTENSIONS, ImageRejected, allowed_formats, inspect_image
from focuscrawl.images.rules import ImageRules, needs_measuring, size_reason
from focuscrawl.archive.replay import NotArchived
from focuscrawl.items import ImageItem
from focuscrawl.output.files import atomic_write_bytes
from focuscrawl.output.run_state import RunState
from focuscrawl.pipelines.image_records import ImageDropped
from focuscrawl.output.records import url_sha1
from focuscrawl.output.run import RunOutput
from focuscrawl.rights.licenses import Rights, with_file_rights
from focuscrawl.rights.policy import SITE_OPTOUT_META, OptOutPolicy, source_of
from focuscrawl.scrapy_compat import (ExpectedMediaFailure, forget_media_result, is_decompression_too_big,
                                      is_over_download_maxsize, is_too_many_redirects)

logger = logging.getLogger(__name__)

# Download failures (besides the Pillow rejections of focuscrawl.images.inspect).
HTTP_STATUS = "http_status"  # not 200
EMPTY = "empty"
TOO_BIG_FILE = "too_big_file"  # cancelled at FOCUSCRAWL_IMAGE_MAX_BYTES
FILTERED = "filtered"  # robots.txt, offsite or another downloader middleware said no
NOT_ARCHIVED = "not_archived"  # a replay (focuscrawl warc): the archives hold no record of it
DOWNLOADED = "downloaded"
TOO_MANY_REDIRECTS = "too_many_redirects"  # over REDIRECT_MAX_TIMES: a redirect loop
TOO_BIG_DECODED = "too_big_decoded"  # Content-Encoding inflates it over the size limit (gzip bomb)
DOWNLOAD_ERROR = "download_error"  # connection, DNS, timeout
WRITE_FAILED = "write_failed"  # storing the file failed (a full disk): not counted, the image stays pending
OPTED_OUT = "opted_out"  # the image response, its host or its own metadata opts out (focuscrawl.rights.policy)


def _ignored_reason(exc: IgnoreRequest) -> str:
    """Which downloader middleware said no: Scrapy's RedirectMiddleware and
    HttpCompressionMiddleware raise a plain ``IgnoreRequest`` too."""
    if is_decompression_too_big(exc):
        return TOO_BIG_DECODED
    if is_too_many_redirects(exc):
        return TOO_MANY_REDIRECTS
    if isinstance(exc, NotArchived):
        return NOT_ARCHIVED
    return FILTERED


def _meta(response, request) -> dict:
    """The meta of the request that got ``response`` (a redirect's, else ``request``'s)."""
    final = getattr(response, "request", None)
    return (final if final is not None else request).meta


class AtomicFSFilesStore(FSFilesStore):
    """Files appear whole or not at all: a killed crawl leaves no truncated image behind."""

    def __init__(self, basedir) -> None:
        super().__init__(basedir)
        self._folders: set[str] = set()

    def persist_file(self, path, buf, info, meta=None, headers=None) -> None:
        folder, _, _ = path.rpartition("/")
        if folder not in self._folders:  # one mkdir per folder (the images are all in one)
            os.makedirs(os.path.join(self.basedir, folder), exist_ok=True)  # thread-safe, unlike FSFilesStore's
            self._folders.add(folder)
        atomic_write_bytes(os.path.join(self.basedir, path), buf.getvalue(), fsync=False)


class ImageRejectedFile(ExpectedMediaFailure):
    """A counted, expected rejection: MediaPipeline logs it without a traceback."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


class ImageOptedOut(ImageRejectedFile):
    """The image's owner said no (``reason``: ``source:directive``): counted under ``focuscrawl/optout``."""

    def __init__(self, optout: str) -> None:
        super().__init__(OPTED_OUT, optout)
        self.optout = optout


class ImageDownloadPipeline(FilesPipeline):
    """Downloads kept images (Scrapy's FilesPipeline), inspects and stores them.

    ``__init__`` keeps the signature of Scrapy's ``FilesPipeline`` (``store_uri, *,
    crawler``), which reads its own settings there; ``from_crawler`` reads focuscrawl's."""

    MEDIA_NAME = "image"
    LOG_FAILED_RESULTS = False  # failures are counted and logged once, without the item
    STORE_SCHEMES = {**FilesPipeline.STORE_SCHEMES, "": AtomicFSFilesStore, "file": AtomicFSFilesStore}

    def __init__(self, store_uri: str, *, crawler: Crawler, run: RunOutput | None, max_bytes: int,
                 max_pixels: int, formats: Iterable[str], rules: ImageRules, shared_store: bool = False,
                 optouts: OptOutPolicy | None = None) -> None:
        super().__init__(store_uri, crawler=crawler)
        self.optouts = optouts or OptOutPolicy()
        self.stats = crawler.stats
        self.max_bytes = max_bytes
        self.max_pixels = max_pixels
        self.formats = allowed_formats(formats)
        self.rules = rules
        #: the run directory (its ``failure`` after a failed write)
        self.run = run
        #: each image's download request until its item completes: its fingerprint, cached on
        #: the request by Scrapy's fingerprinter, finds the media cache entry to forget
        self._requests: dict[str, Request] = {}
        #: only a run directory that had images when the crawl opened (a resumed crawl, an
        #: output folder used again) can hold one before this crawl fetches it: the merge
        #: pipeline sends each URL once, so a new folder needs no look per image. A store
        #: shared by several crawls (``FOCUSCRAWL_IMAGE_STORE``) is not looked in: each
        #: crawl stores what it fetches, as if alone
        self.reuse_stored = not shared_store and Path(store_uri, "images").is_dir()
        Image.MAX_IMAGE_PIXELS = self.max_pixels  # Pillow's own guard agrees (process-wide)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> "ImageDownloadPipeline":
        state = crawler.get_extension(RunState)
        run = state.output
        if run is None:
            raise NotConfigured("no FOCUSCRAWL_OUTPUT_DIR: images are not downloaded")
        s = crawler.settings
        shared = s.get("FOCUSCRAWL_IMAGE_STORE")
        return cls(shared or str(run.dir), crawler=crawler, run=run,
                   max_bytes=s.getint("FOCUSCRAWL_IMAGE_MAX_BYTES"), max_pixels=s.getint("FOCUSCRAWL_IMAGE_MAX_PIXELS"),
                   formats=s.getlist("FOCUSCRAWL_IMAGE_FORMATS"), rules=ImageRules.from_settings(s),
                   shared_store=bool(shared), optouts=OptOutPolicy.from_settings(s))

    # -- requests --------------------------------------------------------------------
    def get_media_requests(self, item: Any, info) -> list[Request]:
        if not isinstance(item, ImageItem) or not item.get("image_url"):
            return []
        headers = {"Referer": item["page_url"]} if item.get("page_url") else {}
        request = Request(item["image_url"], callback=NO_CALLBACK, headers=headers,
                          meta={"download_maxsize": self.max_bytes, "download_warnsize": 0, "focuscrawl_image": True})
        self._requests[item["image_url"]] = request
        return [request]

    def file_path(self, request: Request, response=None, info=None, *, item: Any = None) -> str:
        ext = (item.get("extension") if item is not None else None) or Path(request.url).suffix.lstrip(".")
        return f"images/{url_sha1(request.url)}.{(ext or 'bin').lower()}"

    # -- results ---------------------------------------------------------------------
    def _measured(self, item: Any) -> bool:
        return item is not None and needs_measuring(item.get("html_width"), item.get("html_height"), self.rules)

    def _inspect(self, data: bytes, measured: bool = False):
        """Pillow's verdict and the bytes' SHA-1 (in a thread: hashlib lets go of the GIL); a
        file whose own metadata opts out is rejected (``OPTED_OUT``), and an image without HTML
        size (``measured``) must also pass the size limits."""
        found = inspect_image(data, self.formats, self.max_pixels, read_metadata=True)
        optout = self.optouts.image_file(found.metadata.mining)
        if optout:  # before anything is stored
            raise ImageRejected(OPTED_OUT, optout)
        if measured:
            reason = size_reason(found.width, found.height, self.rules)
            if reason:
                raise ImageRejected(reason, f"measured {found.width}x{found.height}")
        return found, hashlib.sha1(data).hexdigest()

    def _inspect_and_store(self, data: bytes, path: str, info, measured: bool = False):
        inspected = self._inspect(data, measured)
        self.store.persist_file(path, BytesIO(data), info)
        return inspected

    async def media_to_download(self, request, info, *, item=None):
        """An image already in the run directory (a resumed crawl) is inspected, not fetched."""
        if not self.reuse_stored:
            return None
        path = Path(self.store.basedir, self.file_path(request, info=info, item=item))
        if not path.is_file():
            return None
        try:
            data = path.read_bytes()
            found, checksum = await run_in_thread(self._inspect, data, self._measured(item))
        except (OSError, ImageRejected):
            return None  # download again
        self.inc_stats("uptodate")
        return self._file_info(request, path.relative_to(self.store.basedir).as_posix(), data, found, checksum,
                               "uptodate")

    async def media_downloaded(self, response, request, info, *, item=None):
        if response.status != 200:
            raise ImageRejectedFile(HTTP_STATUS, str(response.status))
        if not response.body:
            raise ImageRejectedFile(EMPTY)
        optout = self.optouts.image_response(response.headers, _meta(response, request).get(SITE_OPTOUT_META))
        if optout:
            raise ImageOptedOut(optout)
        path = self.file_path(request, response=response, info=info, item=item)
        try:  # decode and store off the reactor thread
            found, checksum = await run_in_thread(self._inspect_and_store, response.body, path, info,
                                                  self._measured(item))
        except ImageRejected as exc:
            if exc.reason == OPTED_OUT:  # the file's own metadata
                raise ImageOptedOut(exc.detail) from None
            raise ImageRejectedFile(exc.reason, exc.detail) from None
        except OSError as exc:  # a full disk: the crawl stops, the image stays pending (not dropped)
            if self.run is None:
                raise
            self.run.fail(exc)
            raise ImageRejectedFile(WRITE_FAILED, str(exc)) from None
        self.inc_stats("downloaded")
        return self._file_info(request, path, response.body, found, checksum, "downloaded")

    @staticmethod
    def _file_info(request, path: str, data: bytes, found, checksum: str, status: str) -> dict[str, Any]:
        return {"url": request.url, "path": path, "checksum": checksum, "status": status,
                "width": found.width, "height": found.height, "format": found.format, "size": len(data),
                "rights": found.metadata.rights}

    def media_failed(self, failure, request, info):
        exc = failure.value
        if isinstance(exc, ImageRejectedFile):  # raised by media_downloaded
            raise exc
        if isinstance(exc, IgnoreRequest):
            raise ImageRejectedFile(_ignored_reason(exc), str(exc))
        if is_over_download_maxsize(exc):
            raise ImageRejectedFile(TOO_BIG_FILE, str(exc))
        raise ImageRejectedFile(DOWNLOAD_ERROR, f"{type(exc).__name__}: {exc}")

    def item_completed(self, results, item, info):
        if not isinstance(item, ImageItem):
            return item
        # the image records send each URL once: drop MediaPipeline's per-URL cache entry
        forget_media_result(self, info, self._requests.pop(item["image_url"], None) or Request(item["image_url"]))
        ok, value = results[0]
        if self.run is not None and self.run.failure is not None:
            # nothing is written after a failed write: left in images.pending, downloaded again on resume
            raise DropItem(f"image {item['image_url']}: a write of the run failed", log_level="DEBUG")
        reason = None if ok else getattr(value.value, "reason", None) or DOWNLOAD_ERROR
        if reason == NOT_ARCHIVED:  # a replay: a candidate pair, fetched (and measured if unsized) later
            item["image_status"] = NOT_ARCHIVED
            self.stats.inc_value("focuscrawl/images/candidates/not_archived")
            if self._measured(item):
                self.stats.inc_value("focuscrawl/images/candidates/not_archived_unsized")
            return item
        if self._measured(item):  # kept without HTML size: rescued, or dropped as measured
            self.stats.inc_value(f"focuscrawl/images/size_measured/{'rescued' if ok else 'dropped'}")
        if not ok:
            exc = value.value
            if isinstance(exc, ImageOptedOut):
                self.stats.inc_value(f"focuscrawl/optout/images/{source_of(exc.optout)}")
            else:
                self.stats.inc_value(f"focuscrawl/images/failed/{reason}")
            logger.debug("image dropped (%s): %s on %s: %s", reason, item["image_url"], item.get("page_url"), exc)
            raise ImageDropped(reason, f"image {item['image_url']}: {reason}")  # its record is marked dropped
        item["image_path"] = value["path"]
        item["width"], item["height"] = value["width"], value["height"]
        item["image_format"], item["image_size"] = value["format"], value["size"]
        item["image_sha1"] = value["checksum"]
        item["image_status"] = DOWNLOADED
        if value.get("rights") is not None and not value["rights"].empty():
            item["rights"] = with_file_rights(Rights.from_dict(item.get("rights")), value["rights"]).as_dict()
        self.stats.inc_value("focuscrawl/images/downloaded")
        self.stats.inc_value("focuscrawl/images/bytes", value["size"])
        if item.get("extension") and FORMAT_EXTENSIONS.get(value["format"]) != \
                {"jpeg": "jpg", "jpe": "jpg"}.get(item["extension"], item["extension"]):
            self.stats.inc_value("focuscrawl/images/format_differs_from_extension")
        return item
