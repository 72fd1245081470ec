"""The lean ``trim`` is trafilatura's (``" ".join(s.split())``) on every input, and replaces it
in every trafilatura module (focuscrawl.text.lean_trim, issue #16 memory)."""
import importlib
import pkgutil
import random
import sys

from focuscrawl.text import lean_trim
from focuscrawl.text.extractors import get_extractor


def reference(string: str) -> str:
    """``trafilatura.utils.trim`` as published (2.x)."""
    return " ".join(string.split()).strip()


def test_regex_space_is_the_whitespace_str_split_splits_on():
    for code in range(sys.maxunicode + 1):
        char = chr(code)
        assert bool(lean_trim._SPACE.match(char)) == (len(f"a{char}b".split()) == 2), hex(code)


def test_trim_equals_trafilaturas_on_short_and_long_texts():
    rng = random.Random(16)
    spaces = [" ", "  ", "\n", "\t", "\r\n", "\xa0", "\u3000", "\u2028", "\x1c", "\x85", " \n \t "]
    for n in (0, 1, 10, lean_trim.SHORT, lean_trim.SHORT + 1, 3 * lean_trim._PIECE + 7):
        for _ in range(3):
            parts, size = [], 0
            while size < n:
                part = rng.choice(spaces) if rng.random() < 0.3 else "w" * rng.randint(1, 12) + "é"
                parts.append(part)
                size += len(part)
            text = "".join(parts)[:n]
            assert lean_trim.trim(text) == reference(text)
    piece = lean_trim._PIECE
    for text in ("x" * (3 * piece),  # no whitespace at all
                 " " * piece + "a" + " " * piece,  # whitespace across every piece boundary
                 "a" * (piece - 1) + "  \n  " + "b" * piece,  # a run of spaces at the boundary
                 "a" * piece + "b" * 5 + " c",  # a word across the boundary
                 "\u3000" * (2 * piece + 3)):
        assert lean_trim.trim(text) == reference(text)
    assert lean_trim.trim(None) == ""


def test_install_replaces_trim_in_every_trafilatura_module():
    get_extractor("trafilatura")("<html><body><p>" + "The cat sat on the mat. " * 30 + "</p></body></html>")
    import trafilatura

    assert trafilatura.utils.trim is lean_trim.trim
    checked = 0
    for info in pkgutil.walk_packages(trafilatura.__path__, "trafilatura."):
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # optional dependencies of trafilatura's CLI and downloads
            continue
        if hasattr(module, "trim"):
            assert module.trim is lean_trim.trim, info.name
            checked += 1
    assert checked >= 8  # readability_lxml, external, main_extractor, htmlprocessing, baseline, ...
