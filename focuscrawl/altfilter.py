"""Recognise auto-generated ALT texts (the thesis's future work, SPEC §6 end).

CMSs and cameras fill ``alt`` with text no person wrote: file names
(``IMG_0042.jpg``), upload paths (``wp content uploads 2015 02``), camera counters
(``DSC_0001``), placeholders (``image``, ``img1``, ``photo 3``), hashes and slugs
(``cute-cat-on-sofa-1024x768``). Such an ALT says nothing about the image and
misleads the text score. ``generated_alt_reason`` names the rule that fired, so
a corpus builder can see why a text was dropped. Language-independent: rules use
only the shape of the text, plus a short list of placeholder words.
"""
from __future__ import annotations

import re

IMAGE_EXTENSIONS = r"(?:jpe?g|png|gif|webp|bmp|tiff?|svg|avif|heic)"

_FILE_NAME = re.compile(rf"\.{IMAGE_EXTENSIONS}\b", re.IGNORECASE)
_URL_OR_PATH = re.compile(r"(?:[a-z]+://|^www\.|/[^/\s]+/)", re.IGNORECASE)  # tested on single tokens
_UPLOAD_PATH = re.compile(
    r"\b(?:wp[\s_-]*content|wp[\s_-]*uploads?|uploads?[\s_/-]+\d{4}[\s_/-]+\d{1,2}|sites[\s_/-]+default[\s_/-]+files"
    r"|media[\s_/-]+cache|images?[\s_/-]+stories|cdn[\s_-]|thumbs?[\s_/-]+\d)",
    re.IGNORECASE)
_CAMERA = re.compile(
    r"^(?:dsc[nf]?|img|imag|pict?|p|dcim|sam|gopr|dji|mvimg|pxl|vid|photo|dscn|cimg|hpim|imgp|_mg|mg)"
    r"[\s_-]?\d{3,}(?:[\s_-]\d+)*(?:[\s_-]?(?:edit(?:ed)?|copy|small|large|web|\d+))*$",
    re.IGNORECASE)
_PLACEHOLDER_WORDS = (
    "image", "images", "img", "picture", "pic", "pics", "photo", "photos", "foto", "fotos", "bild", "bilder",
    "graphic", "icon", "logo", "banner", "thumbnail", "thumb", "placeholder", "untitled", "null", "none",
    "undefined", "alt", "alt text", "spacer", "default", "featured image", "image description",
    "no image", "screenshot", "screen shot", "attachment", "avatar", "header", "slide", "slider",
    "photo credit", "click to enlarge", "enlarge", "download", "insert image", "unnamed", "file", "logos",
    "item image", "main image", "main article image", "article image", "post image", "header image", "hero image",
    "lead image", "product image", "navigation image", "thumbnail image", "article thumb", "image placeholder",
)
_PLACEHOLDER = re.compile(
    r"^[(\[]?(?:" + "|".join(re.escape(w).replace(r"\ ", r"[\s_-]+") for w in _PLACEHOLDER_WORDS)
    + r")(?:[\s_#-]*\d+)?[)\]]?$", re.IGNORECASE)
_SCREENSHOT = re.compile(r"^(?:screen[\s_-]?shot|bildschirmfoto|capture|scan)\b.*\d", re.IGNORECASE)
_HASH_TOKEN = re.compile(r"^(?=[^\s]*\d)(?=[^\s]*[a-f])[0-9a-f]{12,}$|^[0-9a-f]{8}-[0-9a-f]{4}-", re.IGNORECASE)
_DIMENSIONS = re.compile(r"\b\d{2,4}\s*[x×]\s*\d{2,4}\b")
#: one token of >= 3 parts joined by - or _ (a file name without extension), or any token with "_"
_SLUG = re.compile(r"^[^\s_-]+(?:[_-]+[^\s_-]+){2,}$|^[^\s]*[^\s_]_[^\s_]")
#: two lowercase words of >= 3 characters joined by "-" ("todays-paper"; not "e-mail", "Maine-Coon")
_LOWER_SLUG = re.compile(r"^[a-z0-9]{3,}-[a-z0-9]{3,}$")
#: an identifier: image words glued to other characters ("dcsimg", "wximage", "logo2x"),
#: a retina suffix, or a few letters and a long number ("image5554754", "Rmb8090")
_IDENTIFIER = re.compile(r"^(?:[a-z0-9]*(?:img|image|logo)[a-z0-9]+|[a-z0-9]+(?:img|image|logo)[a-z0-9]*"
                         r"|\S+[@_-]?[23]x|[a-z]{1,5}[_-]?\d{4,})$", re.IGNORECASE)


def generated_alt_reason(alt: str | None) -> str | None:
    """The rule by which ``alt`` looks auto-generated, or None if it reads like a person wrote it.

    An empty ALT is not "generated" (there is simply no text) and returns None.
    """
    text = " ".join((alt or "").split())
    if not text:
        return None
    tokens = text.split()
    single = len(tokens) == 1
    if _FILE_NAME.search(text):
        return "file-name"
    if _UPLOAD_PATH.search(text):
        return "upload-path"
    if single and _URL_OR_PATH.search(text.strip("[]()<>")):
        return "url-or-path"
    if _CAMERA.match(text):
        return "camera-name"
    if _PLACEHOLDER.match(text):
        return "placeholder"
    if _SCREENSHOT.match(text):
        return "screenshot"
    if any(_HASH_TOKEN.match(tok) for tok in tokens):
        return "hash"
    if _DIMENSIONS.search(text) and len(tokens) <= 4:
        return "dimensions"
    if single:
        letters = sum(ch.isalpha() for ch in text)
        digits = sum(ch.isdigit() for ch in text)
        if digits >= 3 and digits > letters:
            return "mostly-digits"
        if _SLUG.match(text) or _LOWER_SLUG.match(text):
            return "slug"
        if _IDENTIFIER.match(text) and text.lower() != text.upper():
            return "identifier"
    return None


def is_generated_alt(alt: str | None) -> bool:
    """True if ``alt`` looks auto-generated (see ``generated_alt_reason``)."""
    return generated_alt_reason(alt) is not None
