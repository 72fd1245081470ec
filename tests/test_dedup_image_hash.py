import io

import pytest
from PIL import Image, ImageDraw

from focuscrawl.dedup.image_hash import ImageHashError, parse_image_hash, phash_bytes
from focuscrawl.dedup.index import SimHashIndex
from focuscrawl.dedup.simhash import hamming


def picture(seed: int, size=(320, 240)) -> Image.Image:
    img = Image.new("RGB", size, (250, 250, 250))
    d = ImageDraw.Draw(img)
    for i in range(6):
        x = (seed * 37 + i * 53) % size[0]
        y = (seed * 91 + i * 29) % size[1]
        d.ellipse([x, y, x + 60 + 7 * i, y + 40 + 5 * seed % 30], fill=((seed * 60 + i * 40) % 256, 80, 160))
    return img


def encode(img: Image.Image, fmt="PNG", **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt, **kw)
    return buf.getvalue()


def test_same_picture_resized_and_recompressed_is_close():
    img = picture(1)
    a = phash_bytes(encode(img))
    b = phash_bytes(encode(img.resize((160, 120)), "JPEG", quality=60))
    c = phash_bytes(encode(picture(5)))
    assert hamming(a, b) <= 4
    assert hamming(a, c) > 10
    index = SimHashIndex(4, 5)
    index.add(a)
    index.add(c)
    assert [i for i, _ in index.query(b)] == [0]


def test_broken_images_raise_clear_error():
    with pytest.raises(ImageHashError):
        phash_bytes(b"not an image")
    with pytest.raises(ImageHashError):
        phash_bytes(encode(picture(2))[:60])  # truncated


def test_parse_image_hash():
    assert parse_image_hash("ff00") == 0xFF00
    assert parse_image_hash(7) == 7
    assert parse_image_hash("") is None and parse_image_hash(None) is None
    with pytest.raises(ValueError):
        parse_image_hash("xyz")


def test_flat_images_have_no_hash_so_they_never_collapse():
    yellow = encode(Image.new("RGB", (640, 427), (222, 200, 81)), "JPEG")
    blue = encode(Image.new("RGB", (300, 200), (20, 40, 200)))
    assert phash_bytes(yellow) is None and phash_bytes(blue) is None
    assert phash_bytes(encode(picture(3))) is not None
