"""The HTML rules that decide which ``<img>`` elements are candidates (SPEC §6 steps 1-2).

Every drop has a named reason; the middleware counts them as ``focuscrawl/images/dropped/<reason>``.
"""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from scrapy.settings import BaseSettings

from focuscrawl import settings as defaults
from focuscrawl.text.html import drop_nul_and_replacement

# Drop reasons, in the order the rules are checked.
NO_ALT_TITLE = "no_alt_title"  # neither a non-blank alt nor title attribute
NO_SRC = "no_src"  # no src attribute, or a blank one
BAD_SRC = "bad_src"  # src is not an http(s) URL (data:, javascript:, broken)
SIZE_UNSPECIFIED = "size_unspecified"  # width/height missing or not a pixel number
TOO_SMALL = "too_small"
TOO_LARGE = "too_large"
FORMAT = "format"  # URL path extension not among the kept formats
PAGE_LIMIT = "page_limit"  # more candidates on the page than FOCUSCRAWL_IMAGE_MAX_PER_PAGE
DROP_REASONS = (NO_ALT_TITLE, NO_SRC, BAD_SRC, SIZE_UNSPECIFIED, TOO_SMALL, TOO_LARGE, FORMAT, PAGE_LIMIT)

_PIXELS = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:px)?\s*$", re.I)


@dataclass(frozen=True)
class ImageRules:
    """Limits of the HTML rules; defaults are the settings' (the thesis values, SPEC §6)."""

    min_width: int = defaults.FOCUSCRAWL_IMAGE_MIN_WIDTH
    min_height: int = defaults.FOCUSCRAWL_IMAGE_MIN_HEIGHT
    max_width: int = defaults.FOCUSCRAWL_IMAGE_MAX_WIDTH
    max_height: int = defaults.FOCUSCRAWL_IMAGE_MAX_HEIGHT
    kick_unspecified: bool = defaults.FOCUSCRAWL_IMAGE_KICK_UNSPECIFIED
    #: keep an image without pixel width/height and apply the size limits to its real
    #: size after download instead (FOCUSCRAWL_IMAGE_MEASURE_UNSIZED)
    measure_unspecified: bool = defaults.FOCUSCRAWL_IMAGE_MEASURE_UNSIZED
    formats: frozenset[str] = frozenset(defaults.FOCUSCRAWL_IMAGE_FORMATS)
    max_per_page: int = defaults.FOCUSCRAWL_IMAGE_MAX_PER_PAGE
    #: attributes holding the real URL of a lazy-loaded image, used when ``src`` is
    #: missing or a ``data:`` placeholder (first non-blank wins)
    lazy_src: tuple[str, ...] = tuple(defaults.FOCUSCRAWL_IMAGE_LAZY_SRC)

    @classmethod
    def from_settings(cls, settings: BaseSettings) -> "ImageRules":
        return cls(
            min_width=settings.getint("FOCUSCRAWL_IMAGE_MIN_WIDTH"),
            min_height=settings.getint("FOCUSCRAWL_IMAGE_MIN_HEIGHT"),
            max_width=settings.getint("FOCUSCRAWL_IMAGE_MAX_WIDTH"),
            max_height=settings.getint("FOCUSCRAWL_IMAGE_MAX_HEIGHT"),
            kick_unspecified=settings.getbool("FOCUSCRAWL_IMAGE_KICK_UNSPECIFIED"),
            measure_unspecified=settings.getbool("FOCUSCRAWL_IMAGE_MEASURE_UNSIZED"),
            formats=frozenset(f.lower().lstrip(".") for f in settings.getlist("FOCUSCRAWL_IMAGE_FORMATS")),
            max_per_page=settings.getint("FOCUSCRAWL_IMAGE_MAX_PER_PAGE"),
            lazy_src=tuple(a.lower() for a in settings.getlist("FOCUSCRAWL_IMAGE_LAZY_SRC")),
        )


def clean_attribute(value: str | None) -> str:
    """An attribute's text with NULs/replacement characters dropped and white space collapsed."""
    if not value:
        return ""
    return " ".join(drop_nul_and_replacement(value).split())  # str.split's white space is re's \s


def html_dimension(value: str | None) -> int | None:
    """Pixels from an HTML ``width``/``height`` attribute (``"600"``, ``"600px"``); else ``None``.

    Percentages, ``auto`` and garbage count as unspecified.
    """
    if value is None:
        return None
    m = _PIXELS.match(value)
    return int(float(m.group(1))) if m else None


def url_extension(url: str) -> str:
    """Lower-case extension of the URL's path (``"jpg"``), ``""`` when it has none."""
    ext = posixpath.splitext(urlsplit(url).path)[1]
    return ext[1:].lower()


def resolve_src(src: str, base_url: str) -> str | None:
    """Absolute http(s) URL of an image ``src``; ``None`` for other schemes or broken URLs."""
    try:
        url = urljoin(base_url, src.strip())
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return parts._replace(fragment="").geturl()


#: image sources remembered resolved (``resolved_src``): a site's logo, buttons and gallery
#: images recur on its pages, each resolved once
SRC_MEMO = 4096


def resolved_src(raw_src: str, base_url: str) -> tuple[str | None, str]:
    """``resolve_src(raw_src, base_url)`` and that URL's ``url_extension``, memoised across pages.

    A source with a path resolves against the base's scheme, host and folder only (``urljoin``
    drops the base's last path segment, query and fragment), so the pages of a folder share
    the entries of their images; a source without a path (``?q``, ``#f``) is resolved anew."""
    folder = _base_folder(base_url) if raw_src[:1] not in ("?", "#") else None
    if folder is None:
        return _resolve_with_extension(raw_src, base_url)
    return _resolved_in_folder(raw_src, folder)


@lru_cache(maxsize=256)
def _base_folder(base_url: str) -> str | None:
    """``scheme://host/folder/`` of an http(s) base URL (``None``: another kind of base)."""
    try:
        parts = urlsplit(base_url)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return urlunsplit((parts.scheme, parts.netloc, parts.path[:parts.path.rfind("/") + 1], "", ""))


def _resolve_with_extension(raw_src: str, base_url: str) -> tuple[str | None, str]:
    src = resolve_src(raw_src, base_url)
    return src, (url_extension(src) if src else "")


_resolved_in_folder = lru_cache(maxsize=SRC_MEMO)(_resolve_with_extension)


@dataclass
class ImageAttributes:
    """What the rules read from one ``<img>``."""

    src: str | None  # absolute URL, when resolvable
    raw_src: str  # the attribute value it came from
    lazy: bool  # taken from a lazy-loading attribute instead of src
    alt: str
    title: str
    width: int | None
    height: int | None
    extension: str
    css_class: str
    style: str


def read_attributes(attrib, base_url: str, lazy_src: tuple[str, ...] = ()) -> ImageAttributes:
    """Cleaned attributes of an ``<img>`` (``attrib`` is the element's attribute mapping).

    A missing/blank ``src`` or a ``data:`` placeholder gives way to the first
    non-blank lazy-loading attribute of ``lazy_src``.
    """
    raw_src = (attrib.get("src") or "").strip()
    lazy = False
    if not raw_src or raw_src[:5].lower() == "data:":
        for name in lazy_src:
            value = (attrib.get(name) or "").strip()
            if value:
                raw_src, lazy = value, True
                break
    src, extension = resolved_src(raw_src, base_url) if raw_src else (None, "")
    return ImageAttributes(
        src=src,
        raw_src=raw_src,
        lazy=lazy,
        alt=clean_attribute(attrib.get("alt")),
        title=clean_attribute(attrib.get("title")),
        width=html_dimension(attrib.get("width")),
        height=html_dimension(attrib.get("height")),
        extension=extension,
        css_class=clean_attribute(attrib.get("class")),
        style=clean_attribute(attrib.get("style")),
    )


def drop_reason(attrib, attrs: ImageAttributes, rules: ImageRules) -> str | None:
    """The first rule the image fails, or ``None`` when it is a candidate."""
    if not attrs.alt and not attrs.title:
        return NO_ALT_TITLE
    if not attrs.raw_src:
        return NO_SRC
    if attrs.src is None:
        return BAD_SRC
    if attrs.width is None or attrs.height is None:
        if rules.kick_unspecified and not rules.measure_unspecified:
            return SIZE_UNSPECIFIED
    else:
        reason = size_reason(attrs.width, attrs.height, rules)
        if reason:
            return reason
    if attrs.extension not in rules.formats:
        return FORMAT
    return None


def size_reason(width: int, height: int, rules: ImageRules) -> str | None:
    """TOO_SMALL or TOO_LARGE for a size (from the HTML, or measured), else ``None``."""
    if width < rules.min_width or height < rules.min_height:
        return TOO_SMALL
    if width > rules.max_width or height > rules.max_height:
        return TOO_LARGE
    return None


def needs_measuring(html_width: int | None, html_height: int | None, rules: ImageRules) -> bool:
    """A candidate whose size limits are checked on the downloaded file."""
    return rules.measure_unspecified and (html_width is None or html_height is None)


_LETTERS = re.compile(r"[^\W\d_]+")


@lru_cache(maxsize=SRC_MEMO)  # the same image URLs recur across pages
def src_guess_string(url: str) -> str:
    """The image URL as words (SPEC §6 step 3).

    Scheme and ``www.`` removed, the path's file extension dropped, percent-escapes
    decoded, split on everything that is not a letter (numbers go), lower-cased.
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        parts = None
    if parts is None or not parts.netloc:
        rest = re.sub(r"^[a-z][a-z0-9+.-]*:(//)?", "", url, flags=re.I)
    else:
        host = parts.netloc.rsplit("@", 1)[-1]
        path = parts.path
        stem, ext = posixpath.splitext(path)
        if ext and "/" not in ext:
            path = stem
        rest = " ".join(unquote(p) for p in (host, path, parts.query) if p)
    rest = re.sub(r"^www\.", "", rest.strip(), flags=re.I)
    return " ".join(w.lower() for w in _LETTERS.findall(rest))
