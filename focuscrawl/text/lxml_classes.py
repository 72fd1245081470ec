"""lxml.html's element classes looked up in C, for trafilatura's parsers.

lxml.html's parsers pick each element's Python class (``HtmlElement``, ``FormElement``, ...)
with ``HtmlElementClassLookup.lookup``, a Python method that lxml calls every time it hands
out an element: ~3,000 calls a page in trafilatura, ~5% of its time.
:func:`html_class_lookup` gives every node the same class with lxml's lookups in C (a
registry of lxml.html's per-tag classes over a default of its element, comment, processing
instruction and entity classes); :func:`install` sets it on trafilatura's HTML parser and on
lxml.html's default one (readability's fragments). Same classes, same trees, same text.
"""
from __future__ import annotations

from functools import cache

import lxml.html
from lxml import etree


def html_class_lookup() -> etree.ElementNamespaceClassLookup | None:
    """A C lookup that gives each node the class ``lxml.html.HtmlElementClassLookup`` gives it
    (tag names are lower case in lxml.html's trees); ``None`` if this lxml keeps its per-tag
    classes elsewhere."""
    classes = getattr(lxml.html.HtmlElementClassLookup(), "_element_classes", None)
    if not isinstance(classes, dict):
        return None
    lookup = etree.ElementNamespaceClassLookup(etree.ElementDefaultClassLookup(
        element=lxml.html.HtmlElement, comment=lxml.html.HtmlComment, pi=lxml.html.HtmlProcessingInstruction,
        entity=lxml.html.HtmlEntity))
    registry = lookup.get_namespace(None)
    for tag, cls in classes.items():
        registry[tag] = cls
    return lookup


@cache
def install() -> None:
    """Set :func:`html_class_lookup` on trafilatura's HTML parser and lxml.html's default
    parser (once a process)."""
    lookup = html_class_lookup()
    if lookup is None:
        return
    import trafilatura.utils

    for parser in (trafilatura.utils.HTML_PARSER, lxml.html.html_parser):
        parser.set_element_class_lookup(lookup)
