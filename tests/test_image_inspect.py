import pytest

from focuscrawl.images.inspect import (
    DECOMPRESSION_BOMB, NOT_AN_IMAGE, TRUNCATED, UNSUPPORTED_FORMAT, ImageRejected, inspect_image,
)
from tests.support.imagesite import image_bytes, png_bomb, truncated_jpeg


@pytest.mark.parametrize("fmt", ["JPEG", "PNG", "GIF"])
def test_real_size_and_format(fmt):
    info = inspect_image(image_bytes(fmt, (640, 480)))
    assert (info.width, info.height, info.format) == (640, 480, fmt)


def _corrupted(fmt: str) -> bytes:
    """A whole file (it ends as its format ends) with 500 bytes of its image data overwritten."""
    import random

    data = bytearray(image_bytes(fmt, (640, 480), noise=True))
    rnd = random.Random(5)
    start = len(data) // 2
    data[start:start + 500] = bytes(rnd.randrange(256) for _ in range(500))
    return bytes(data)


@pytest.mark.parametrize("data, reason", [
    (truncated_jpeg(), TRUNCATED),
    (image_bytes("JPEG", noise=True)[:-2], TRUNCATED),  # all but its EOI marker
    (image_bytes("GIF", noise=True)[:3000], TRUNCATED),
    # complete but corrupt inside: only decoding tells (an end-marker check would keep them)
    (_corrupted("JPEG"), TRUNCATED),
    (_corrupted("PNG"), TRUNCATED),
    (image_bytes("PNG")[:-200], TRUNCATED),
    (png_bomb(), DECOMPRESSION_BOMB),
    (b"<html>not found</html>", NOT_AN_IMAGE),
    (image_bytes("WEBP"), UNSUPPORTED_FORMAT),
])
def test_rejections(data, reason):
    with pytest.raises(ImageRejected) as exc:
        inspect_image(data)
    assert exc.value.reason == reason


def test_bomb_limit_is_a_parameter():
    data = image_bytes("PNG", (1200, 1000), mode="1")
    assert inspect_image(data, max_pixels=2_000_000).width == 1200
    with pytest.raises(ImageRejected) as exc:
        inspect_image(data, max_pixels=1_000_000)
    assert exc.value.reason == DECOMPRESSION_BOMB
