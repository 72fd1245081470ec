"""A small local web where every page is about cats and carries one harvestable photo, and
each page (or its host, or its image) says one of the "no"s a site owner can say, beside
control pages that say nothing, or say it to another crawler. ``CASES`` lists what each
page must give: its text in sentences.txt.gz, its image in the corpus."""
from __future__ import annotations

import io
import json
from dataclasses import dataclass, field

from PIL import Image, PngImagePlugin

from tests.support.localweb import Page
from tests.support.toymodel import ON_TOPIC

SEED = "http://opt.test/"
CC_BY = "https://creativecommons.org/licenses/by/4.0/"
CC0 = "https://creativecommons.org/publicdomain/zero/1.0/"
XMP = ('<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
       '<rdf:Description xmlns:xmpRights="http://ns.adobe.com/xap/1.0/rights/" '
       'xmlns:dc="http://purl.org/dc/elements/1.1/" '
       'xmpRights:WebStatement="https://creativecommons.org/licenses/by-nc/4.0/">'
       '<dc:creator><rdf:Seq><rdf:li>Xmp Maker</rdf:li></rdf:Seq></dc:creator>'
       '</rdf:Description></rdf:RDF></x:xmpmeta>')


def mining_xmp(data_mining: str = "", reservation: str = "", policy: str = "") -> str:
    """An XMP packet with a CC BY licence and what it says of mining: IPTC's Data Mining
    (``plus:DataMining``, a PLUS ``DMI-*`` token) and TDMRep's ``tdm:reservation``/``tdm:policy``."""
    fields = (f"<plus:DataMining>http://ns.useplus.org/ldf/vocab/{data_mining}</plus:DataMining>" if data_mining
              else "")
    fields += f"<tdm:reservation>{reservation}</tdm:reservation>" if reservation else ""
    fields += f"<tdm:policy>{policy}</tdm:policy>" if policy else ""
    return ('<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
            '<rdf:Description xmlns:plus="http://ns.useplus.org/ldf/xmp/1.0/" xmlns:tdm="http://www.w3.org/ns/tdmrep/" '
            f'xmlns:xmpRights="http://ns.adobe.com/xap/1.0/rights/" xmpRights:WebStatement="{CC_BY}">{fields}'
            '</rdf:Description></rdf:RDF></x:xmpmeta>')


@dataclass
class Case:
    """One page: ``name`` (letters only: its marker word in text and ALT), where it lives,
    what its markup, page response and image response say, and what must come out."""

    name: str
    text: bool  # its text enters sentences.txt.gz
    image: bool  # its image enters images.tsv and the export
    host: str = "opt.test"
    head: str = ""  # extra <head> markup
    headers: dict = field(default_factory=dict)
    image_headers: dict = field(default_factory=dict)
    image_path: str = ""  # default /img/<name>.png
    image_kind: str = "png"  # png, exif (JPEG with EXIF), xmp (PNG with XMP), jpegxmp (JPEG with XMP)
    xmp: str = XMP  # the XMP packet of an xmp or jpegxmp image
    only_link: str = ""  # a page linked from this page alone
    source: str = ""  # the FOCUSCRAWL_OPTOUTS source that withholds it ("": a control)
    license: str = ""  # the SPDX id its export row must carry
    creator: str = ""

    @property
    def path(self) -> str:
        return f"/{self.name}"

    @property
    def url(self) -> str:
        return f"http://{self.host}{self.path}"

    @property
    def image_url(self) -> str:
        return f"http://{self.host}{self.image_path or f'/img/{self.name}.png'}"

    @property
    def marker(self) -> str:
        return f"mk{self.name}"


JSONLD = json.dumps({"@context": "https://schema.org", "@graph": [
    {"@type": "WebPage", "license": "https://creativecommons.org/licenses/by-sa/4.0/"},
    {"@type": "ImageObject", "contentUrl": "/img/jsonld.png", "license": CC0,
     "creator": {"@type": "Person", "name": "Jane Doe"}, "creditText": "Jane Doe / Cats Inc",
     "acquireLicensePage": "http://opt.test/buy"}]})
HOSTILE_HEAD = ('<script type="application/ld+json">{"license": [[[[</script>'
                '<script type="application/ld+json">' + "[" * 5000 + "]" * 5000 + '</script>'
                f'<meta name="robots" content="{"x" * 100_000}">'
                '<meta name="tdm-reservation" content="yes please">')

CASES = [
    Case("control", True, True, head=f'<link rel="license" href="{CC_BY}">', license="CC-BY-4.0"),
    Case("jsonld", True, True, head=f'<script type="application/ld+json">{JSONLD}</script>', license="CC0-1.0",
         creator="Jane Doe"),
    Case("exif", True, True, head=f'<link rel="license" href="{CC_BY}">', image_kind="exif",
         license="CC-BY-SA-4.0", creator="Exif Artist"),
    Case("xmp", True, True, image_kind="xmp", license="CC-BY-NC-4.0", creator="Xmp Maker"),
    Case("googlebot", True, True, head='<meta name="googlebot" content="noindex, noimageindex">'),
    Case("otherbot", True, True, headers={"X-Robots-Tag": "otherbot: noindex"}),
    Case("hostile", True, True, head=HOSTILE_HEAD),
    Case("nofollow", True, True, head='<meta name="robots" content="nofollow">', only_link="/onlynofollow",
         source="meta_robots"),
    Case("noindex", False, False, head='<meta name="robots" content="noindex">', source="meta_robots"),
    Case("noimageai", True, False, head='<meta name="robots" content="noimageai">', source="meta_robots"),
    Case("none", False, False, head='<meta name="robots" content="none">', only_link="/onlynone",
         source="meta_robots"),
    Case("conflict", False, False, head='<meta name="robots" content="index, follow">'
                                        '<meta name="ROBOTS" content="NoIndex">', source="meta_robots"),
    Case("owntoken", False, False, head='<meta name="focuscrawl" content="noai, noimageai">', source="meta_robots"),
    Case("xrtnoai", False, False, headers={"X-Robots-Tag": "noai"}, source="x_robots_tag"),
    Case("xrtscoped", False, False, headers={"X-Robots-Tag": "focuscrawl: noindex"}, source="x_robots_tag"),
    Case("imgxrt", True, False, image_headers={"X-Robots-Tag": "noimageai"}, source="x_robots_tag"),
    Case("imgtdm", True, False, image_headers={"tdm-reservation": "1"}, source="tdmrep"),
    Case("xmptdm", True, False, image_kind="jpegxmp", xmp=mining_xmp(reservation="1"), source="tdmrep"),
    Case("dmi", True, False, image_kind="xmp", xmp=mining_xmp("DMI-PROHIBITED-AIMLTRAINING"), source="image_metadata"),
    Case("dmijpeg", True, False, image_kind="jpegxmp", xmp=mining_xmp("DMI-PROHIBITED-GENAIMLTRAINING"),
         source="image_metadata"),
    Case("dmiallowed", True, True, image_kind="jpegxmp", xmp=mining_xmp("DMI-ALLOWED"), license="CC-BY-4.0"),
    Case("tdmmeta", False, False, head='<meta name="tdm-reservation" content="1">'
                                       '<meta name="tdm-policy" content="https://opt.test/policy.json">',
         source="tdmrep"),
    Case("tdmheader", False, False, headers={"tdm-reservation": "1"}, source="tdmrep"),
    Case("reserved", False, False, host="tdm.test", source="tdmrep"),
    Case("free", True, True, host="tdm.test"),
    Case("freeimg", True, False, host="tdm.test", image_path="/reserved/freeimg.png", source="tdmrep"),
    Case("aibots", False, False, host="ai.test", source="robots_ai"),
    Case("junk", True, True, host="junk.test"),
    Case("gptmeta", False, False, head='<meta name="GPTBot" content="noindex">', source="robots_ai"),
    Case("ccbotimg", True, False, head='<meta name="CCBot" content="noimageai">', source="robots_ai"),
    Case("aiheader", False, False, headers={"X-Robots-Tag": "ClaudeBot: noai"}, source="robots_ai"),
    Case("aiimghdr", True, False, image_headers={"X-Robots-Tag": "img2dataset: noimageindex"}, source="robots_ai"),
    Case("aifollow", True, True, head='<meta name="GPTBot" content="nofollow, noarchive">'),
    Case("signal", False, False, host="sig.test", source="content_signals"),
    Case("usagepath", False, False, host="usage.test", source="content_signals"),
    Case("usagefree", True, True, host="usage.test"),
    Case("sigheader", False, False, headers={"Content-Signal": "search=yes, ai-train=no"}, source="content_signals"),
    Case("sigyes", True, True, headers={"Content-Signal": "search=yes, ai-train=yes, ai-input=no"}),
    Case("imgusage", True, False, image_headers={"Content-Usage": "train-ai=n"}, source="content_signals"),
]
#: pages linked only from a nofollow page: never requested
NEVER_REQUESTED = ["opt.test/onlynofollow", "opt.test/onlynone"]


def _image(case: Case, index: int) -> bytes:
    img = Image.new("RGB", (640, 480), (10 * index % 255, 80, 160))
    buf = io.BytesIO()
    if case.image_kind == "exif":
        exif = Image.Exif()
        exif[0x013B] = "Exif Artist"
        exif[0x8298] = "CC BY-SA 4.0"
        img.save(buf, "JPEG", exif=exif.tobytes())
    elif case.image_kind == "xmp":
        info = PngImagePlugin.PngInfo()
        info.add_itxt("XML:com.adobe.xmp", case.xmp)
        img.save(buf, "PNG", pnginfo=info)
    elif case.image_kind == "jpegxmp":
        img.save(buf, "JPEG", xmp=case.xmp.encode())
    else:
        img.save(buf, "PNG")
    return buf.getvalue()


def page_html(case: Case) -> str:
    link = f'<a href="{case.only_link}">cat cat</a>' if case.only_link else ""
    return (f"<html><head><title>{case.name}</title>{case.head}</head><body><div><p>{ON_TOPIC} "
            f"The cat called {case.marker} sleeps on the warm mat all day.</p>"
            f'<img src="{case.image_path or f"/img/{case.name}.png"}" alt="cat cat cat {case.marker}" '
            f'width="640" height="480"><p>A tabby cat and a kitten, {case.marker} again.</p>{link}</div>'
            f"</body></html>")


def optout_site() -> dict:
    links = [(c.url, "cat cat tabby") for c in CASES]
    anchors = "".join(f'<a href="{u}">{a}</a> ' for u, a in links)
    pages = {("opt.test", "/"): Page(f"<html><body><p>{ON_TOPIC} The home of cats.</p>{anchors}</body></html>")}
    for i, case in enumerate(CASES):
        pages[(case.host, case.path)] = Page(page_html(case), headers=case.headers)
        content_type = "image/jpeg" if case.image_kind in ("exif", "jpegxmp") else "image/png"
        host_path = case.image_url.split("://", 1)[1].split("/", 1)
        pages[(host_path[0], "/" + host_path[1])] = Page(_image(case, i), content_type, headers=case.image_headers)
        if case.only_link:
            pages[(case.host, case.only_link)] = Page(f"<html><body><p>{ON_TOPIC} hidden</p></body></html>")
    pages[("tdm.test", "/.well-known/tdmrep.json")] = Page(json.dumps([
        {"location": "/reserved*", "tdm-reservation": 1, "tdm-policy": "https://tdm.test/policy.json"},
        {"location": "/free", "tdm-reservation": 0}]), "application/json")
    pages[("ai.test", "/robots.txt")] = Page("User-agent: GPTBot\nDisallow: /\n\nUser-agent: *\nAllow: /\n",
                                             "text/plain")
    # Cloudflare's managed robots.txt: our group is "*"
    pages[("sig.test", "/robots.txt")] = Page("# As a condition of accessing this website, you agree to abide by "
                                              "the following content signals: ...\nUser-Agent: *\n"
                                              "Content-Signal: search=yes, ai-train=no\nAllow: /\n", "text/plain")
    # a group that names us beats "*"; its Content-Usage covers one path
    pages[("usage.test", "/robots.txt")] = Page("User-agent: *\nContent-Usage: train-ai=n\n\n"
                                                "User-agent: otherbot\nUser-agent: focuscrawl\nAllow: /\n"
                                                "Content-Usage: /usagepath train-ai=n, search=y\n", "text/plain")
    pages[("junk.test", "/.well-known/tdmrep.json")] = Page('[{"location": 5}, "x", {"location": "/zzz", '
                                                            '"tdm-reservation": "maybe"}', "application/json")
    return pages
