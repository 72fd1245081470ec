"""The auto-generated ALT filter: each rule fires on its kind and not on human ALT texts."""
from __future__ import annotations

import pytest

from focuscrawl.altfilter import generated_alt_reason, is_generated_alt


@pytest.mark.parametrize("alt,reason", [
    ("IMG_0042.jpg", "file-name"),
    ("kitten-on-sofa.JPEG", "file-name"),
    ("wp content uploads 2015 02 is the kitten healthy", "upload-path"),
    ("wp-content/uploads/2015/02/cat", "upload-path"),
    ("http://example.org/cat", "url-or-path"),
    ("DSC_0001", "camera-name"),
    ("DSCN4512", "camera-name"),
    ("IMG 20150312 123456", "camera-name"),
    ("P1010345", "camera-name"),
    ("image", "placeholder"),
    ("img1", "placeholder"),
    ("Photo 3", "placeholder"),
    ("featured image", "placeholder"),
    ("Screenshot 2015-03-12 at 10.42.11", "screenshot"),
    ("3f2a9c0b7d1e4f56a8b9", "hash"),
    ("cat 1024x768", "dimensions"),
    ("cute-cat-on-sofa", "slug"),
    ("2015_03_12_0042", "mostly-digits"),
])
def test_generated_alts_are_recognised_with_their_rule(alt, reason):
    assert generated_alt_reason(alt) == reason
    assert is_generated_alt(alt)


@pytest.mark.parametrize("alt", [
    "", None, "   ",
    "cat in cat carrier",
    "Athena the cat pounces on string from FroliCat FLIK automatic cat teaser",
    "Maine Coon kitten, 12 weeks old",
    "Photo of a tabby cat sleeping on a red blanket",
    "Image: a ginger cat in the snow",
    "Die Katze schläft auf dem Sofa",
    "Top 10 cat breeds of 2015",
    "Maine-Coon",
    "Logo of the Cat Fanciers' Association",
])
def test_human_alts_pass(alt):
    assert generated_alt_reason(alt) is None
