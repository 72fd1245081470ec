"""Licence, creator and credit of a page and its images: from ``rel="license"`` links,
Dublin Core meta, schema.org JSON-LD (``license``, ``acquireLicensePage``, ``creator``,
``creditText``, ``copyrightNotice``) and the image file's own metadata (XMP, EXIF, IPTC).
Licences are normalised to SPDX ids where the value says which (``CC-BY-4.0``, ``CC0-1.0``);
the raw value and where it came from are kept."""
from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass, fields
from typing import Any, Iterator
from urllib.parse import urljoin

from lxml import etree

from focuscrawl.rights.directives import MAX_VALUE_CHARS, NO_IMAGES, PageSignals, parse_directives

#: the Creative Commons public-domain mark has no SPDX id: a LicenseRef of SPDX's form
PUBLIC_DOMAIN_MARK = "LicenseRef-PDM-1.0"
#: JSON-LD read from one page (a bigger block is skipped and counted)
MAX_JSONLD_BYTES = 1 << 20
MAX_JSONLD_NODES = 5000
MAX_FIELD_CHARS = 1000

_CC_URL = re.compile(r"creativecommons\.org/(licenses|publicdomain)/([a-z][a-z+\-]*)/(\d+(?:\.\d+)?)"
                     r"(?:/([a-z]{2}(?:-[a-z]{2,3})?))?", re.I)
_CC_TEXT = re.compile(r"\bcc[\s_\-]*((?:by)(?:[\s_\-]*(?:nc|sa|nd))*)[\s_\-]*(\d\.\d)?\b", re.I)
_CC0_TEXT = re.compile(r"\bcc[\s_\-]*(?:0|zero)\b", re.I)
_SPDX_CC = re.compile(r"^(CC-BY(?:-NC)?(?:-SA|-ND)?-\d\.\d(?:-[A-Z]{2,3})?|CC0-1\.0)$", re.I)


def spdx_id(value: str) -> str:
    """The SPDX id a licence value names ("" = not recognised): a Creative Commons URL or
    name (``https://creativecommons.org/licenses/by-sa/4.0/`` or ``CC BY-SA 4.0`` ->
    ``CC-BY-SA-4.0``; CC0 -> ``CC0-1.0``; the public-domain mark -> ``LicenseRef-PDM-1.0``)."""
    value = (value or "").strip()[:MAX_FIELD_CHARS]
    if not value:
        return ""
    if _SPDX_CC.match(value):
        return value.upper()
    url = _CC_URL.search(value)
    if url:
        kind, name, version, place = url.group(1).lower(), url.group(2).lower(), url.group(3), url.group(4)
        if kind == "publicdomain":
            return {"zero": "CC0-1.0", "mark": PUBLIC_DOMAIN_MARK}.get(name, "")
        parts = [p for p in name.split("-") if p]
        if not parts or parts[0] != "by" or not set(parts[1:]) <= {"nc", "sa", "nd"}:
            return ""
        return "-".join(["CC"] + [p.upper() for p in parts] + [version] + ([place.upper()] if place else []))
    if _CC0_TEXT.search(value):
        return "CC0-1.0"
    text = _CC_TEXT.search(value)
    if text and text.group(2):
        parts = re.split(r"[\s_\-]+", text.group(1).lower())
        return "-".join(["CC"] + [p.upper() for p in parts if p] + [text.group(2)])
    if re.search(r"public\s*domain\s*mark", value, re.I):
        return PUBLIC_DOMAIN_MARK
    return ""


#: licence classes ``rank --license`` knows besides SPDX ids and patterns
LICENSE_CLASSES = {
    "known": lambda spdx: bool(spdx),
    "unknown": lambda spdx: not spdx,
    "cc": lambda spdx: spdx.startswith(("CC-", "CC0-")) or spdx == PUBLIC_DOMAIN_MARK,
    "commercial": lambda spdx: (spdx.startswith(("CC-BY", "CC0-")) or spdx == PUBLIC_DOMAIN_MARK)
    and "-NC" not in spdx,
}


def license_filter(spec: str):
    """A predicate on SPDX ids from ``rank --license``: comma-separated classes (``cc``,
    ``commercial``, ``known``, ``unknown``) and SPDX ids or patterns (``CC-BY-*``); an id
    passes if any term matches. ``ValueError`` for an empty spec."""
    terms = [t.strip() for t in (spec or "").split(",") if t.strip()]
    if not terms:
        raise ValueError("--license needs a licence class (cc, commercial, known, unknown) or SPDX ids")

    def accepts(spdx: str) -> bool:
        spdx = spdx or ""
        for term in terms:
            test = LICENSE_CLASSES.get(term.lower())
            if test is not None:
                if test(spdx):
                    return True
            elif spdx and fnmatch.fnmatchcase(spdx.upper(), term.upper()):
                return True
        return False

    return accepts


@dataclass
class Rights:
    """Rights statements of one image or page; each ``*_source`` says where its value came from."""

    license: str = ""  # SPDX id ("" = none recognised)
    license_raw: str = ""  # the value as found (URL or text)
    license_source: str = ""
    creator: str = ""
    creator_source: str = ""
    credit_text: str = ""
    copyright_notice: str = ""
    acquire_license_page: str = ""
    tdm_policy: str = ""  # TDMRep's policy URL (tdm-policy meta, header or tdmrep.json)

    #: fields that are decided together: a licence's id, raw value and source come from one place
    GROUPS = (("license", "license_raw", "license_source"), ("creator", "creator_source"),
              ("credit_text",), ("copyright_notice",), ("acquire_license_page",), ("tdm_policy",))

    def as_dict(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in RIGHTS_FIELDS}  # dataclasses.asdict deep-copies: 20x slower

    @classmethod
    def from_dict(cls, values: dict | None) -> "Rights":
        values = values or {}
        return cls(**{name: str(values.get(name) or "") for name in RIGHTS_FIELDS})

    def set_license(self, raw: str, source: str) -> None:
        raw = _clean(raw)
        if raw and not self.license_raw:
            self.license_raw, self.license, self.license_source = raw, spdx_id(raw), source

    def set(self, name: str, value: str, source: str = "") -> None:
        value = _clean(value)
        if value and not getattr(self, name):
            setattr(self, name, value)
            if name == "creator":
                self.creator_source = source

    def empty(self) -> bool:
        return not (self.license or self.creator or self.credit_text or self.copyright_notice
                    or self.acquire_license_page or self.tdm_policy)


#: the field names of ``Rights``, in order: the rights columns of images.tsv and every export
RIGHTS_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Rights))


def merge_rights(*layers: Rights | None) -> Rights:
    """One ``Rights`` from several, most specific first: each group from the first layer that has it."""
    merged = Rights()
    for layer in layers:
        if layer is None:
            continue
        for group in Rights.GROUPS:
            if not getattr(merged, group[0]) and getattr(layer, group[0]):
                for name in group:
                    setattr(merged, name, getattr(layer, name))
    return merged


#: sources that speak for the whole page, not for one image: the file's own metadata is more specific
PAGE_SOURCES = frozenset({"jsonld:page", "rel-license", "dcterms"})


def with_file_rights(markup: Rights, file: Rights) -> Rights:
    """An image's rights once its file is read: the file's metadata replaces what only the
    page said (licence, creator) and fills what the markup left empty; an image's own
    JSON-LD stays first."""
    merged = Rights.from_dict(markup.as_dict())
    for group, source in ((("license", "license_raw", "license_source"), "license_source"),
                          (("creator", "creator_source"), "creator_source")):
        if getattr(file, group[0]) and (not getattr(markup, group[0]) or getattr(markup, source) in PAGE_SOURCES):
            for name in group:
                setattr(merged, name, getattr(file, name))
    for name in ("credit_text", "copyright_notice", "acquire_license_page", "tdm_policy"):
        if not getattr(merged, name):
            setattr(merged, name, getattr(file, name))
    return merged


def _clean(value: Any) -> str:
    return " ".join(str(value or "").split())[:MAX_FIELD_CHARS]


# -- the page's markup -------------------------------------------------------------------
_DC_LICENSE = frozenset({"dc.rights", "dcterms.rights", "dc.license", "dcterms.license", "dc:rights",
                         "dcterms:rights", "dcterms:license"})
_DC_CREATOR = frozenset({"dc.creator", "dcterms.creator", "dc:creator", "dcterms:creator"})


@dataclass
class PageRights:
    """What one page's markup says: its opt-out signals, the page's rights, and rights of
    images that JSON-LD describes (absolute image URL -> ``Rights``)."""

    signals: PageSignals
    page: Rights
    images: dict[str, Rights]
    problems: int = 0  # JSON-LD blocks not understood (skipped)

    def declared(self) -> bool:
        """Whether the markup declares any right (most pages: none)."""
        return bool(self.images) or not self.page.empty()

    def says_anything(self) -> bool:
        """Whether the markup says anything of opt-outs or rights (else the analysis keeps ``None``)."""
        return self.declared() or bool(self.signals.robots or self.signals.tdm or self.signals.tdm_policy
                                       or self.signals.ai_robots)

    def image(self, url: str) -> Rights:
        """The rights of the image at ``url``: its own (JSON-LD), then the page's."""
        return merge_rights(self.images.get(url), self.page)


def rights_elements(root) -> list:
    """The elements of a parsed page ``page_rights`` reads (the page analysis collects them
    while it walks the page for links)."""
    return [] if root is None else [el for el in root.iter("meta", "link", "a", "script")
                                    if el.tag != "a" or el.get("rel")]


def page_rights(elements, base_url: str, agents: frozenset[str], ai_agents: frozenset[str] = frozenset()
                ) -> PageRights:
    """Read a page's meta, link, ``<a rel>`` and JSON-LD ``elements`` (``rights_elements``;
    ``agents``: our robots tokens, lower case, for ``<meta name=AGENT>``; ``ai_agents``: the
    AI-training crawlers' tokens, lower case, whose ``<meta name=AGENT>`` withholds a page from
    a training corpus)."""
    robots: set[str] = set()
    ai_robots: set[str] = set()
    tdm, tdm_policy = False, ""
    page = Rights()
    images: dict[str, Rights] = {}
    problems = 0
    for el in elements:
        tag = el.tag
        if tag == "meta":
            name = (el.get("name") or el.get("property") or "").strip().lower()
            if not name:
                continue
            content = el.get("content") or ""
            if name == "robots" or name in agents:
                robots |= parse_directives(content)
            elif name in ai_agents:
                ai_robots |= {f"{name}:{d}" for d in parse_directives(content) & NO_IMAGES}
            elif name == "tdm-reservation":
                tdm = tdm or content.strip()[:16] == "1"
            elif name == "tdm-policy":
                tdm_policy = tdm_policy or _clean(content)
            elif name in _DC_LICENSE:
                page.set_license(content, "dcterms")
            elif name in _DC_CREATOR:
                page.set("creator", content, "dcterms")
        elif tag == "script":
            if (el.get("type") or "").strip().lower() != "application/ld+json":
                continue
            text = el.text or ""
            if len(text) > MAX_JSONLD_BYTES:
                problems += 1
                continue
            try:
                data = json.loads(text)
            except (ValueError, RecursionError):
                problems += 1
                continue
            problems += _read_jsonld(data, base_url, page, images)
        else:  # link or a
            rel = (el.get("rel") or "").lower().split()
            href = (el.get("href") or "").strip()
            if href and ("license" in rel or "dcterms.license" in rel):
                try:
                    href = urljoin(base_url, href)
                except ValueError:
                    pass
                page.set_license(href, "rel-license")
    return PageRights(PageSignals(frozenset(robots), tdm, tdm_policy, frozenset(ai_robots)), page, images, problems)


def _names(value: Any) -> str:
    """A JSON-LD person/organisation value as text: a string, ``{"name"}``, or a list of them."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return _names(value.get("name") or value.get("@id") or "")
    if isinstance(value, list):
        return "; ".join(n for n in (_names(v) for v in value[:20]) if n)
    return ""


def _url(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return _url(value.get("@id") or value.get("url") or value.get("name") or "")
    if isinstance(value, list) and value:
        return _url(value[0])
    return ""


def _nodes(data: Any) -> Iterator[dict]:
    """Every JSON object of a JSON-LD block (``@graph`` and nested values included), bounded."""
    stack, seen = [data], 0
    while stack and seen < MAX_JSONLD_NODES:
        node = stack.pop()
        seen += 1
        if isinstance(node, dict):
            yield node
            stack.extend(v for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend(node)


def _types(node: dict) -> set[str]:
    kind = node.get("@type")
    kinds = kind if isinstance(kind, list) else [kind]
    return {k.rsplit("/", 1)[-1] for k in kinds if isinstance(k, str)}


def _read_jsonld(data: Any, base_url: str, page: Rights, images: dict[str, Rights]) -> int:
    problems = 0
    for node in _nodes(data):
        if not any(k in node for k in ("license", "acquireLicensePage", "creator", "creditText",
                                       "copyrightNotice", "author")):
            continue
        rights = Rights()
        if _types(node) & {"ImageObject", "Photograph"}:
            source = "jsonld:ImageObject"
            targets = []
            for key in ("contentUrl", "url", "@id"):
                value = node.get(key)
                for v in value if isinstance(value, list) else [value]:
                    if isinstance(v, str) and v.strip():
                        try:
                            targets.append(urljoin(base_url, v.strip()))
                        except ValueError:
                            problems += 1
            if not targets:
                continue
        else:
            source, targets = "jsonld:page", []
        rights.set_license(_url(node.get("license")), source)
        rights.set("acquire_license_page", _url(node.get("acquireLicensePage")))
        rights.set("creator", _names(node.get("creator")) or (_names(node.get("author")) if not targets else ""),
                   source)
        rights.set("credit_text", node.get("creditText") if isinstance(node.get("creditText"), str) else "")
        rights.set("copyright_notice", node.get("copyrightNotice") if isinstance(node.get("copyrightNotice"), str)
                   else "")
        if targets:
            for url in targets:
                images[url] = merge_rights(images.get(url), rights)
        else:
            merged = merge_rights(page, rights)
            for name in RIGHTS_FIELDS:
                setattr(page, name, getattr(merged, name))
    return problems


# -- the image file's metadata -----------------------------------------------------------
_EXIF_ARTIST, _EXIF_COPYRIGHT = 0x013B, 0x8298
_IPTC_BYLINE, _IPTC_CREDIT, _IPTC_COPYRIGHT = (2, 80), (2, 110), (2, 116)


def _text(value: Any) -> str:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if isinstance(value, (list, tuple)):
        return "; ".join(_text(v) for v in value[:20])
    return _clean(value).replace("\x00", "")


#: TDMRep's XMP namespace (``tdm:reservation``, ``tdm:policy``): its names are kept as ``tdm:<name>``
TDMREP_XMP_NS = "http://www.w3.org/ns/tdmrep/"
#: the XMP fields read for rights, by local name
_XMP_RIGHTS = frozenset({"WebStatement", "license", "rights", "creator", "Credit", "CopyrightNotice", "UsageTerms"})
#: the XMP fields that say whether the file may be mined: IPTC's "Data Mining" (``plus:DataMining``,
#: PLUS's ``DMI-*`` vocabulary) and TDMRep's ``tdm:reservation`` and ``tdm:policy``
XMP_MINING = frozenset({"DataMining", "tdm:reservation", "tdm:policy"})


def _xmp_name(tag: str) -> str:
    """The local name of an lxml tag or attribute key (``{ns}name``, or ``prefix:name`` with an
    undeclared prefix), TDMRep's as ``tdm:name``. Read from the string: ``etree.QName`` raises on
    the names a recovering parser lets through (a whole XMP packet was then unread)."""
    if tag.startswith("{"):
        namespace, _, local = tag[1:].partition("}")
        return f"tdm:{local}" if namespace == TDMREP_XMP_NS else local
    prefix, _, local = tag.rpartition(":")  # a prefix the packet never declared
    return f"tdm:{local}" if prefix == "tdm" else local


def _xmp_values(xmp: bytes) -> dict[str, str]:
    """Name -> first text or ``rdf:resource`` of the XMP packet's rights and mining fields."""
    wanted = _XMP_RIGHTS | XMP_MINING
    found: dict[str, str] = {}
    try:
        parser = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, recover=True)
        root = etree.fromstring(xmp[:MAX_VALUE_CHARS * 64].strip(b"\x00 \r\n\t"), parser)
    except (etree.XMLSyntaxError, ValueError):
        return found
    if root is None:
        return found
    for el in root.iter():
        for key, value in el.attrib.items():  # the attribute form: xmpRights:WebStatement="..."
            name = _xmp_name(key)
            if name in wanted and name not in found and value.strip():
                found[name] = value
        if not isinstance(el.tag, str):
            continue
        name = _xmp_name(el.tag)
        if name in wanted and name not in found:
            resource = next((v for k, v in el.attrib.items() if _xmp_name(k) == "resource"), "")
            text = resource or " ".join(t.strip() for t in el.itertext() if t.strip())
            if text:
                found[name] = text
    return found


@dataclass(frozen=True)
class FileMetadata:
    """What an image file's own metadata says: its ``rights``, and ``mining``: the fields of
    ``XMP_MINING`` it declares (name -> value as found), for the opt-out policy to judge."""

    rights: Rights
    mining: dict[str, str]


def file_metadata(img) -> FileMetadata:
    """Rights from a Pillow image's own metadata: XMP (``xmpRights:WebStatement``,
    ``cc:license``, ``dc:rights``, ``dc:creator``, ``photoshop:Credit``, TDMRep's
    ``tdm:policy``), EXIF (``Copyright``, ``Artist``) and IPTC (copyright notice, by-line,
    credit), in that order of trust; and what its XMP says of mining it."""
    rights = Rights()
    xmp = img.info.get("xmp") or img.info.get("XML:com.adobe.xmp") or b""
    if isinstance(xmp, str):
        xmp = xmp.encode("utf-8", "replace")
    values = _xmp_values(xmp) if xmp else {}
    if values:
        rights.set_license(values.get("license") or values.get("WebStatement") or "", "xmp")
        rights.set("creator", values.get("creator", ""), "xmp")
        rights.set("copyright_notice", values.get("rights") or values.get("CopyrightNotice") or "")
        rights.set("credit_text", values.get("Credit", ""))
        rights.set("tdm_policy", values.get("tdm:policy", ""))
    try:
        exif = img.getexif()
    except Exception:  # a broken EXIF block says nothing; Pillow raises many kinds
        exif = {}
    rights.set("creator", _text(exif.get(_EXIF_ARTIST)), "exif")
    rights.set("copyright_notice", _text(exif.get(_EXIF_COPYRIGHT)))
    if img.format == "JPEG":
        try:
            from PIL import IptcImagePlugin

            iptc = IptcImagePlugin.getiptcinfo(img) or {}
        except Exception:  # broken IPTC, as above
            iptc = {}
        rights.set("creator", _text(iptc.get(_IPTC_BYLINE)), "iptc")
        rights.set("credit_text", _text(iptc.get(_IPTC_CREDIT)))
        rights.set("copyright_notice", _text(iptc.get(_IPTC_COPYRIGHT)))
    if not rights.license_raw and rights.copyright_notice and spdx_id(rights.copyright_notice):
        rights.set_license(rights.copyright_notice, "exif" if exif.get(_EXIF_COPYRIGHT) else "iptc")
    return FileMetadata(rights, {k: _clean(v) for k, v in values.items() if k in XMP_MINING})


def rights_columns() -> tuple[str, ...]:
    """The rights columns of images.tsv and of every export, in order."""
    return RIGHTS_FIELDS
