"""ImageDownloadPipeline looks for an already stored image only where one can be, and inspects
and stores the images on threads of its own."""
import asyncio
import threading

import pytest
from PIL import Image
from scrapy import Request
from scrapy.http import Response

from focuscrawl.items import ImageItem
from focuscrawl.pipelines.download import ImageDownloadPipeline
from tests.support.crawler import focuscrawl_crawler
from tests.support.imagesite import image_bytes

URL = "http://127.0.0.1/a.jpg"


@pytest.fixture(autouse=True)
def pillow_limit():
    """The pipeline sets Pillow's process-wide pixel limit: put it back for the other tests."""
    saved = Image.MAX_IMAGE_PIXELS
    yield
    Image.MAX_IMAGE_PIXELS = saved


def pipeline(out):
    return ImageDownloadPipeline.from_crawler(focuscrawl_crawler(FOCUSCRAWL_OUTPUT_DIR=str(out)))


def test_a_new_run_directory_fetches_every_image_without_looking(tmp_path):
    p = pipeline(tmp_path / "out")
    assert not p.reuse_stored
    item = ImageItem(image_url=URL, extension="jpg")
    stored = tmp_path / "out" / p.file_path(Request(URL), item=item)
    stored.parent.mkdir(parents=True)
    stored.write_bytes(image_bytes("JPEG", (64, 48)))  # cannot come from elsewhere in a real crawl
    assert asyncio.run(p.media_to_download(Request(URL), None, item=item)) is None


def test_a_run_directory_with_images_is_looked_in(tmp_path):
    (tmp_path / "out" / "images").mkdir(parents=True)  # a resumed crawl, or the folder used again
    assert pipeline(tmp_path / "out").reuse_stored


def test_images_are_inspected_and_stored_on_the_pipelines_own_threads(tmp_path):
    """Not on asyncio's default executor (a thread per core + 4, a different one woken per
    image): on ``FOCUSCRAWL_IMAGE_THREADS`` threads of its own, ended at close."""
    p = ImageDownloadPipeline.from_crawler(focuscrawl_crawler(FOCUSCRAWL_OUTPUT_DIR=str(tmp_path / "out"),
                                                              FOCUSCRAWL_IMAGE_THREADS=1))
    items = [ImageItem(image_url=f"http://127.0.0.1/{i}.jpg", extension="jpg") for i in range(3)]

    async def download():
        results = []
        for item in items:
            body = image_bytes("JPEG", (64, 48))
            request = Request(item["image_url"])
            response = Response(item["image_url"], status=200, body=body, request=request)
            results.append(await p.media_downloaded(response, request, None, item=item))
        threads = {t.name for t in threading.enumerate()}
        return results, threads

    results, threads = asyncio.run(download())
    assert [(r["width"], r["height"], r["status"]) for r in results] == [(64, 48, "downloaded")] * 3
    assert all((tmp_path / "out" / r["path"]).is_file() for r in results)
    ours = {name for name in threads if name.startswith("focuscrawl-images")}
    assert len(ours) == 1 and not any(name.startswith("asyncio_") for name in threads)
    p.close_spider()
    assert not any(t.name.startswith("focuscrawl-images") for t in threading.enumerate())
