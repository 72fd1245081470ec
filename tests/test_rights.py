"""The pure functions behind opt-outs and licences (focuscrawl.rights): directive parsing,
TDMRep rules, robots.txt AI groups, SPDX normalisation, markup and file metadata."""
from __future__ import annotations

import io
import json

import pytest
from lxml import etree
from PIL import Image, PngImagePlugin
from scrapy.http import Headers

from focuscrawl.rights.directives import (SOURCES, OptOut, PageSignals, agent_header_directives,
                                          header_directives, image_file_reason,
                                          parse_directives, robots_named_agents, tdm_reserved)
from focuscrawl.rights.licenses import (PUBLIC_DOMAIN_MARK, Rights, file_metadata, license_filter, merge_rights,
                                        page_rights, rights_elements, spdx_id, with_file_rights)
from focuscrawl.rights.policy import OptOutPolicy, count_names, robots_tokens
from focuscrawl.rights.tdmrep import TdmRules
from focuscrawl.rights.usage import UsageRules, usage_denial
from tests.support.optoutsite import CC_BY as CC_BY_URL, XMP, mining_xmp

US = frozenset({"focuscrawl"})


@pytest.mark.parametrize("value, expected", [
    ("noindex, NoFollow", {"noindex", "nofollow"}),
    ("none", {"none"}),
    ("max-snippet:20, noimageai", {"max-snippet", "noimageai"}),
    (" , ,, ", set()),
    ("noai" + ",x" * 100_000, {"noai", "x"}),
])
def test_parse_directives(value, expected):
    assert parse_directives(value) == expected


def test_header_directives_apply_unscoped_and_our_scope_only():
    assert header_directives(["noai", "googlebot: noindex", "focuscrawl: nofollow, noimageindex"], US) == {
        "noai", "nofollow", "noimageindex"}
    assert header_directives(["max-snippet: 10, noindex"], US) == {"max-snippet", "noindex"}  # not a user agent
    assert header_directives(["otherbot: none"], US) == set()


def test_tdm_reservation_values():
    assert tdm_reserved("1") and tdm_reserved(" 1 ")
    assert not tdm_reserved("0") and not tdm_reserved("yes") and not tdm_reserved(None) and not tdm_reserved("")


def test_tdmrep_rules_match_robots_style_patterns_and_any_reservation_wins():
    rules = TdmRules.parse(json.dumps([
        {"location": "/free/*", "tdm-reservation": 0},
        {"location": "/*.jpg$", "tdm-reservation": 1, "tdm-policy": "https://x.test/p"},
        {"location": "/news/", "tdm-reservation": 1},
    ]).encode())
    assert rules.reservation("http://x.test/free/a.html") == (False, "")
    assert rules.reservation("http://x.test/free/a.jpg") == (True, "https://x.test/p")  # stricter wins
    assert rules.reservation("http://x.test/a.jpg?x=1") == (False, "")  # $ anchors the end
    assert rules.reservation("http://x.test/news/today") == (True, "")
    assert rules.reservation("http://x.test/other") == (False, "")


@pytest.mark.parametrize("body, readable, problems", [
    (b"<html>not json</html>", False, 0),
    (b'{"location": "/", "tdm-reservation": 1}', True, 0),  # one object, not an array
    (b'[{"location": 5}, "x", {"location": "/a", "tdm-reservation": "maybe"}]', True, 3),
    (b"[" * 100_000 + b"]" * 100_000, False, 0),
    (b"\xff\xfe garbage", False, 0),
])
def test_tdmrep_bad_files_never_raise(body, readable, problems):
    rules = TdmRules.parse(body)
    assert rules.readable == readable and rules.problems == problems
    rules.reservation("http://x.test/a")


def test_robots_named_agents():
    body = b"User-agent: *\nDisallow:\n\nuser-agent:  GPTBot  # OpenAI\nDisallow: /\nUser-Agent: ccbot\n"
    assert robots_named_agents(body, ["GPTBot", "CCBot", "Google-Extended"]) == ("GPTBot", "CCBot")


@pytest.mark.parametrize("value, expected", [
    ("https://creativecommons.org/licenses/by/4.0/", "CC-BY-4.0"),
    ("http://creativecommons.org/licenses/by-nc-sa/2.0/de/deed.en", "CC-BY-NC-SA-2.0-DE"),
    ("//creativecommons.org/licenses/by-nd/3.0", "CC-BY-ND-3.0"),
    ("CC BY-SA 4.0", "CC-BY-SA-4.0"),
    ("cc-by-nc 4.0", "CC-BY-NC-4.0"),
    ("CC0", "CC0-1.0"),
    ("https://creativecommons.org/publicdomain/zero/1.0/", "CC0-1.0"),
    ("https://creativecommons.org/publicdomain/mark/1.0/", PUBLIC_DOMAIN_MARK),
    ("https://creativecommons.org/licenses/xyz/4.0/", ""),
    ("All rights reserved", ""),
    ("", ""),
])
def test_spdx_id(value, expected):
    assert spdx_id(value) == expected


def test_license_filter_classes_and_patterns():
    commercial = license_filter("commercial")
    assert commercial("CC-BY-4.0") and commercial("CC0-1.0") and commercial(PUBLIC_DOMAIN_MARK)
    assert not commercial("CC-BY-NC-4.0") and not commercial("")
    assert license_filter("cc")("CC-BY-NC-ND-4.0") and not license_filter("cc")("")
    assert license_filter("unknown")("") and not license_filter("known")("")
    assert license_filter("cc-by-sa-*,CC0-1.0")("CC-BY-SA-3.0") and not license_filter("CC-BY-SA-*")("CC-BY-4.0")
    with pytest.raises(ValueError):
        license_filter(" , ")


def _root(html: str):
    return etree.fromstring(html.encode(), etree.HTMLParser())


def test_page_rights_reads_meta_links_and_jsonld():
    html = ("<html><head><meta name='ROBOTS' content='noindex'><meta name='focuscrawl' content='noimageai'>"
            "<meta name='googlebot' content='nofollow'><meta name='tdm-reservation' content='1'>"
            "<meta name='tdm-policy' content='https://p.test/'><meta name='DC.creator' content='Ann'>"
            "<script type='application/ld+json'>{\"@type\": \"Article\", \"license\": {\"@id\": "
            "\"https://creativecommons.org/licenses/by/4.0/\"}, \"image\": {\"@type\": \"ImageObject\", "
            "\"url\": [\"a.jpg\"], \"license\": \"CC0\", \"creator\": [{\"name\": \"Bo\"}, \"Cy\"]}}</script>"
            "</head><body><a rel='nofollow License' href='/lic'>licence</a></body></html>")
    found = page_rights(rights_elements(_root(html)), "http://s.test/x/", US)
    assert found.signals == PageSignals(frozenset({"noindex", "noimageai"}), True, "https://p.test/")
    assert found.page.license == "CC-BY-4.0" and found.page.license_source == "jsonld:page"
    assert found.page.creator == "Ann" and found.page.creator_source == "dcterms"
    image = found.image("http://s.test/x/a.jpg")
    assert (image.license, image.creator, image.license_source) == ("CC0-1.0", "Bo; Cy", "jsonld:ImageObject")
    assert found.image("http://s.test/other.jpg").license == "CC-BY-4.0"


def test_page_rights_survive_hostile_jsonld():
    html = ("<html><head><script type='application/ld+json'>{oops</script>"
            "<script type='application/ld+json'>" + "[" * 10000 + "]" * 10000 + "</script>"
            "<script type='application/ld+json'>\"just a string\"</script>"
            "<script type='application/ld+json'>{\"@type\": [\"ImageObject\"], \"license\": 5, \"url\": 7}</script>"
            "<link rel='license' href='http://[bad'></head></html>")
    found = page_rights(rights_elements(_root(html)), "http://s.test/", US)
    assert found.problems == 2 and found.images == {}


def file_rights(img) -> Rights:
    return file_metadata(img).rights


def test_file_rights_from_exif_xmp_and_iptc():
    img = Image.new("RGB", (20, 20))
    exif = Image.Exif()
    exif[0x013B], exif[0x8298] = "Ann Artist", "(c) Ann, CC BY 4.0"
    buf = io.BytesIO()
    img.save(buf, "JPEG", exif=exif.tobytes())
    found = file_rights(Image.open(io.BytesIO(buf.getvalue())))
    assert (found.creator, found.creator_source, found.copyright_notice) == ("Ann Artist", "exif", "(c) Ann, CC BY 4.0")
    assert found.license == "CC-BY-4.0" and found.license_source == "exif"
    info = PngImagePlugin.PngInfo()
    info.add_itxt("XML:com.adobe.xmp", XMP)
    buf = io.BytesIO()
    img.save(buf, "PNG", pnginfo=info)
    found = file_rights(Image.open(io.BytesIO(buf.getvalue())))
    assert (found.license, found.creator, found.license_source) == ("CC-BY-NC-4.0", "Xmp Maker", "xmp")
    info = PngImagePlugin.PngInfo()
    info.add_itxt("XML:com.adobe.xmp", '<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>')
    buf = io.BytesIO()
    img.save(buf, "PNG", pnginfo=info)
    assert file_rights(Image.open(io.BytesIO(buf.getvalue()))).empty()  # no entity is resolved


def _png_with_xmp(xmp: str) -> Image.Image:
    info = PngImagePlugin.PngInfo()
    info.add_itxt("XML:com.adobe.xmp", xmp)
    buf = io.BytesIO()
    Image.new("RGB", (20, 20)).save(buf, "PNG", pnginfo=info)
    return Image.open(io.BytesIO(buf.getvalue()))


def test_file_metadata_reads_iptc_data_mining_and_tdmrep_from_xmp():
    found = file_metadata(_png_with_xmp(mining_xmp(data_mining="DMI-PROHIBITED-AIMLTRAINING",
                                                   reservation="1", policy="https://p.test/tdm")))
    assert found.mining == {"DataMining": "http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED-AIMLTRAINING",
                            "tdm:reservation": "1", "tdm:policy": "https://p.test/tdm"}
    assert found.rights.tdm_policy == "https://p.test/tdm" and found.rights.license == "CC-BY-4.0"
    # the attribute form, and a "reservation" of another namespace that is not TDMRep's
    other = ('<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
             '<rdf:Description xmlns:plus="http://ns.useplus.org/ldf/xmp/1.0/" xmlns:o="http://other.test/ns/" '
             'plus:DataMining="http://ns.useplus.org/ldf/vocab/DMI-ALLOWED" o:reservation="1"/></rdf:RDF></x:xmpmeta>')
    assert file_metadata(_png_with_xmp(other)).mining == {"DataMining": "http://ns.useplus.org/ldf/vocab/DMI-ALLOWED"}
    assert file_metadata(Image.new("RGB", (4, 4))).mining == {}
    # undeclared prefixes: the recovering parser keeps "plus:DataMining" as a name, which
    # etree.QName refused (the whole packet was lost, the image dropped as a download error)
    sloppy = ('<x:xmpmeta><rdf:RDF><rdf:Description><plus:DataMining>DMI-PROHIBITED</plus:DataMining>'
              '<tdm:reservation>1</tdm:reservation><xmpRights:WebStatement>' + CC_BY_URL +
              '</xmpRights:WebStatement></rdf:Description></rdf:RDF></x:xmpmeta>')
    found = file_metadata(_png_with_xmp(sloppy))
    assert found.mining == {"DataMining": "DMI-PROHIBITED", "tdm:reservation": "1"}
    assert found.rights.license == "CC-BY-4.0"


@pytest.mark.parametrize("mining, expected", [
    ({"DataMining": "http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED"}, "image_metadata:dmi-prohibited"),
    ({"DataMining": "http://ns.useplus.org/ldf/vocab/DMI-PROHIBITED-GENAIMLTRAINING/"},
     "image_metadata:dmi-prohibited-genaimltraining"),
    ({"DataMining": "DMI-PROHIBITED-EXCEPTSEARCHENGINEINDEXING"}, "image_metadata:dmi-prohibited-exceptsearchengineindexing"),
    ({"DataMining": "dmi-prohibited-seeconstraint"}, "image_metadata:dmi-prohibited-seeconstraint"),
    ({"DataMining": "http://ns.useplus.org/ldf/vocab/DMI-ALLOWED"}, ""),
    ({"DataMining": "http://ns.useplus.org/ldf/vocab/DMI-UNSPECIFIED"}, ""),
    ({"DataMining": "x" * 100_000}, ""),
    ({"tdm:reservation": "1"}, "tdmrep:xmp"),
    ({"tdm:reservation": "0", "tdm:policy": "https://p.test"}, ""),
    ({"DataMining": "DMI-PROHIBITED", "tdm:reservation": "1"}, "image_metadata:dmi-prohibited"),
    ({}, ""),
])
def test_an_image_file_that_opts_out_of_mining(mining, expected):
    assert image_file_reason(mining, frozenset(SOURCES)) == expected
    relaxed = frozenset(SOURCES) - {expected.split(":")[0]}
    assert image_file_reason(mining, relaxed) in ("", "tdmrep:xmp")  # only the other source can still say no


def test_rights_precedence():
    page = Rights(license="CC-BY-4.0", license_raw="u", license_source="rel-license", creator="Page",
                  creator_source="dcterms")
    own = Rights(license="CC0-1.0", license_raw="v", license_source="jsonld:ImageObject")
    file = Rights(license="CC-BY-SA-4.0", license_raw="w", license_source="xmp", creator="File", creator_source="xmp",
                  copyright_notice="(c) File")
    assert merge_rights(own, page).creator == "Page" and merge_rights(own, page).license == "CC0-1.0"
    # the file beats what only the page said, not the image's own JSON-LD
    assert with_file_rights(page, file).license == "CC-BY-SA-4.0"
    assert with_file_rights(merge_rights(own, page), file).license == "CC0-1.0"
    assert with_file_rights(merge_rights(own, page), file).creator == "File"
    assert with_file_rights(page, file).copyright_notice == "(c) File"


def test_policy_decisions_and_settings(tmp_path):
    from focuscrawl.resources import project_settings

    policy = OptOutPolicy.from_settings(project_settings({}))
    assert policy.relaxed() == [] and "gptbot" in {a.lower() for a in policy.ai_agents}
    headers = Headers({"X-Robots-Tag": ["googlebot: noai", "nofollow"], "tdm-reservation": "1",
                       "tdm-policy": "https://p.test"})
    decision = policy.page(headers, PageSignals(frozenset({"noimageindex"})), {"robots_ai:gptbot": ""})
    assert decision.nofollow == ["x_robots_tag:nofollow"]
    assert decision.no_images == ["meta_robots:noimageindex", "tdmrep:header", "robots_ai:gptbot"]
    assert decision.no_text == ["tdmrep:header", "robots_ai:gptbot"] and decision.tdm_policy == "https://p.test"
    assert sorted(count_names(decision)) == ["image_pages/meta_robots", "image_pages/robots_ai",
                                             "image_pages/tdmrep", "nofollow_pages/x_robots_tag",
                                             "text_pages/robots_ai", "text_pages/tdmrep"]
    relaxed = OptOutPolicy.from_settings(project_settings({"FOCUSCRAWL_OPTOUTS": "meta_robots"}))
    assert relaxed.relaxed() == ["x_robots_tag", "tdmrep", "robots_ai", "image_metadata", "content_signals"]
    assert relaxed.page(headers, None, None).no_text == []
    assert relaxed.image_response(Headers({"X-Robots-Tag": "noimageai"}), None) == ""
    assert policy.image_response(Headers({"X-Robots-Tag": "noimageai"}), None) == "x_robots_tag:noimageai"
    assert policy.image_file({"DataMining": "DMI-PROHIBITED"}) == "image_metadata:dmi-prohibited"
    signalled = Headers({"Content-Signal": "search=yes", "Content-Usage": "train-genai=n"})
    assert policy.image_response(signalled, None) == "content_signals:train-genai=n"
    assert policy.page(signalled, None, None).no_text == ["content_signals:train-genai=n"]
    assert relaxed.image_response(signalled, None) == "" and relaxed.page(signalled, None, None).no_text == []
    assert relaxed.image_file({"DataMining": "DMI-PROHIBITED"}) == ""
    with pytest.raises(ValueError, match="unknown opt-out nosuch"):
        OptOutPolicy.from_settings(project_settings({"FOCUSCRAWL_OPTOUTS": "meta_robots,nosuch"}))
    assert robots_tokens("MyBot/2.0 (+http://x)") == {"focuscrawl", "mybot"}


def test_the_page_analysis_collects_the_same_elements_in_its_link_walk():
    from focuscrawl.analysis import page_links

    html = ("<html><head><meta name='robots' content='noindex'><link rel='license' href='/l'>"
            "<script type='application/ld+json'>{}</script></head><body><a href='/x'>x</a>"
            "<a rel='license' href='/y'>y</a><img src='a.jpg'><meta name='late' content='1'></body></html>")
    root = _root(html)
    markup: list = []
    links, images = page_links(root, "http://s.test/", None, markup)
    assert markup == rights_elements(root) and len(markup) == 5
    assert (links, images) == page_links(root, "http://s.test/")


def test_changed_settings_names_what_differs_from_the_defaults_whatever_its_type():
    from focuscrawl.output.manifest import changed_settings
    from focuscrawl.resources import project_settings

    assert changed_settings(project_settings({})) == {}
    changed = changed_settings(project_settings({"FOCUSCRAWL_PAGE_BUDGET": "500", "DOWNLOAD_DELAY": 2,
                                                 "FOCUSCRAWL_OPTOUTS": "meta_robots", "FOCUSCRAWL_SEEDS": "x",
                                                 "FOCUSCRAWL_MAX_PAGES_PER_HOST": "0.5"}))
    assert changed == {"FOCUSCRAWL_PAGE_BUDGET": 500, "DOWNLOAD_DELAY": 2.0, "FOCUSCRAWL_OPTOUTS": ["meta_robots"],
                       "FOCUSCRAWL_MAX_PAGES_PER_HOST": "0.5"}


@pytest.mark.parametrize("value, expected", [
    ("search=yes, ai-train=no", "ai-train=no"),
    ("AI-Train = No ,search=yes", "ai-train=no"),
    ("search=yes, ai-train=yes, ai-input=no", ""),
    ("train-ai=n", "train-ai=n"),
    ("train-ai=y, train-genai=n", "train-genai=n"),
    ('train-ai="n"', "train-ai=n"),
    ("train-ai=?0", "train-ai=?0"),
    ("ai-train", ""),
    ("ai-train=maybe", ""),
    ("," * 100_000 + "ai-train=no", ""),  # past the value's length limit
])
def test_usage_denial(value, expected):
    assert usage_denial(value) == expected


CLOUDFLARE = (b"# As a condition of accessing this website, you agree to abide by the following content signals:\n"
              b"# ai-train=no means ...\nUser-Agent: *\nContent-Signal: search=yes, ai-train=no\nAllow: /\n")


@pytest.mark.parametrize("body, url, expected", [
    (CLOUDFLARE, "http://s.test/any/page", "ai-train=no"),
    # a group naming us is ours, not "*"'s
    (b"User-agent: *\nContent-Signal: ai-train=no\n\nUser-agent: focuscrawl\nAllow: /\n", "http://s.test/a", ""),
    (b"User-agent: *\nAllow: /\n\nUser-agent: other\nUser-agent: FocusCrawl\nContent-Usage: train-ai=n\n",
     "http://s.test/a", "train-ai=n"),
    # another crawler's group says nothing to us
    (b"User-agent: GPTBot\nContent-Signal: ai-train=no\n\nUser-agent: *\nAllow: /\n", "http://s.test/a", ""),
    # a path-scoped line (robots.txt patterns)
    (b"User-agent: *\nContent-Usage: /photos/*.jpg$ train-ai=n\n", "http://s.test/photos/a/b.jpg", "train-ai=n"),
    (b"User-agent: *\nContent-Usage: /photos/*.jpg$ train-ai=n\n", "http://s.test/photos/b.jpg?x=1", ""),
    (b"User-agent: *\nContent-Usage: /photos/*.jpg$ train-ai=n\n", "http://s.test/text/", ""),
    # a line before any group applies to every crawler
    (b"Content-Signal: ai-train=no\nUser-agent: focuscrawl\nAllow: /\n", "http://s.test/a", "ai-train=no"),
    (b"User-agent: *\nContent-Signal: search=yes, ai-train=yes\n", "http://s.test/a", ""),
    (b"\xff\xfe garbage \x00\nContent-Signal ai-train=no\nUser-agent *\n", "http://s.test/a", ""),
    (b"", "http://s.test/a", ""),
])
def test_usage_rules_of_robots_txt(body, url, expected):
    assert UsageRules.parse(body, US).denial(url) == expected


def test_usage_rules_of_a_huge_robots_txt_stay_bounded():
    body = b"User-agent: *\n" + b"Content-Signal: /p ai-train=no\n" * 200_000
    rules = UsageRules.parse(body, US)
    assert 0 < len(rules.rules) <= 1000 and rules.denial("http://s.test/p") == "ai-train=no"


def test_directives_addressed_to_ai_training_crawlers():
    ai = frozenset({"gptbot", "ccbot"})
    assert agent_header_directives(["GPTBot: noindex, nofollow", "noai", "googlebot: noai", "CCBot:noimageai"],
                                   ai) == {"gptbot:noindex", "gptbot:nofollow", "ccbot:noimageai"}
    decision = OptOut()
    decision.add_agents("robots_ai", ["gptbot:noindex", "gptbot:nofollow", "ccbot:noimageai", "gptbot:noai"])
    assert decision.nofollow == []  # their nofollow steers their crawl, not ours
    assert decision.no_text == ["robots_ai:gptbot"] and decision.no_images == ["robots_ai:ccbot", "robots_ai:gptbot"]
    html = ("<html><head><meta name='GPTBot' content='noindex'><meta name='ccbot' content='nofollow'>"
            "<meta name='googlebot' content='noai'></head></html>")
    found = page_rights(rights_elements(_root(html)), "http://s.test/", US, ai)
    assert found.signals.ai_robots == {"gptbot:noindex"} and found.signals.robots == frozenset()
    assert found.says_anything()
    assert page_rights(rights_elements(_root(html)), "http://s.test/", US).signals.ai_robots == frozenset()
