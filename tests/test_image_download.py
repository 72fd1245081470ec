"""ImageDownloadPipeline looks for an already stored image only where one can be."""
import asyncio

import pytest
from PIL import Image
from scrapy import Request

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
