"""Every ``FOCUSCRAWL_*`` default lives in ``focuscrawl/settings.py`` only (issue #17).

Components read settings without fallbacks, as Scrapy's do; pure functions and plain
constructors may default a parameter only to the settings module's own value. The scans
below read the package source, so a literal default that creeps back in fails here."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import focuscrawl
from focuscrawl import settings as defaults
from focuscrawl.resources import project_settings

PACKAGE = Path(focuscrawl.__file__).parent
SOURCES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "settings.py" or p.parent != PACKAGE)
SETTINGS = {name: getattr(defaults, name) for name in dir(defaults) if name.startswith("FOCUSCRAWL_")}
#: ``settings.getint("FOCUSCRAWL_X", 3)``, ``os.environ.get("FOCUSCRAWL_X", "a")``: a second default
FALLBACK = re.compile(r"""get(int|float|bool|list|dict)?\(\s*["']FOCUSCRAWL_[A-Z_]+["']\s*,\s*[^)\s]""")
#: ``settings.get("FOCUSCRAWL_X") or "mark"``: the same, spelt with ``or`` (``or ""`` only normalises None)
OR_FALLBACK = re.compile(r"""get\w*\(\s*["']FOCUSCRAWL_[A-Z_]+["']\s*\)\s+or\s+(?!""|'')["'0-9\[(-]""")


def _literal(node: ast.AST | None):
    """The value of a literal expression (numbers, strings, tuples/lists of them), else a marker."""
    try:
        return ast.literal_eval(node) if node is not None else _literal
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return _literal


def _same_value(value, setting) -> bool:
    if isinstance(value, bool) or isinstance(setting, bool):
        return value is setting
    if isinstance(value, (int, float)) and isinstance(setting, (int, float)):
        return float(value) == float(setting)
    if isinstance(value, (list, tuple, set, frozenset)) and isinstance(setting, (list, tuple)):
        return list(value) == list(setting)
    return value == setting


def _setting_for(name: str, value) -> str | None:
    """The setting whose name ends with ``name`` (``max_parents`` -> ``FOCUSCRAWL_IMAGE_MAX_PARENTS``)
    and whose default equals ``value``: a copy of that default."""
    suffix = "_" + name.upper().lstrip("_")
    for setting, default in SETTINGS.items():
        if setting.endswith(suffix) and _same_value(value, default):
            return setting
    return None


def _copied_defaults(tree: ast.AST) -> list[tuple[int, str, str]]:
    found = []
    for node in ast.walk(tree):
        pairs: list[tuple[str, ast.AST | None, int]] = []
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs += [(a.arg, d, d.lineno) for a, d in zip(positional[len(positional) - len(args.defaults):],
                                                            args.defaults)]
            pairs += [(a.arg, d, d.lineno) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):  # dataclass fields, constants
            pairs.append((node.target.id, node.value, node.lineno))
        elif isinstance(node, ast.Assign):
            pairs += [(t.id, node.value, node.lineno) for t in node.targets if isinstance(t, ast.Name)]
        for name, value_node, line in pairs:
            value = _literal(value_node)
            if value is _literal or value is None or value in ("", (), [], 0, 1):
                continue  # not a literal, or too common a value to call a copy
            setting = _setting_for(name.removeprefix("DEFAULT_").removeprefix("default_"), value)
            if setting:
                found.append((line, name, setting))
    return found


def test_no_literal_fallback_for_a_setting_outside_settings_py():
    hits = [f"{path.relative_to(PACKAGE.parent)}:{n}: {line.strip()}"
            for path in SOURCES for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
            if FALLBACK.search(line) or OR_FALLBACK.search(line)]
    assert hits == []


#: parameters whose name and value match a setting by chance, with what they are instead
NOT_SETTINGS = {
    ("focuscrawl/text/sources.py", "timeout"): "the HTTP timeout of corpus downloads, not a Redis lease",
}


def test_no_copy_of_a_setting_default_outside_settings_py():
    copies = [f"{rel}:{line}: {name} copies {setting}"
              for path in SOURCES
              for rel in [path.relative_to(PACKAGE.parent).as_posix()]
              for line, name, setting in _copied_defaults(ast.parse(path.read_text("utf-8")))
              if (rel, name) not in NOT_SETTINGS]
    assert copies == []


def test_the_scan_finds_what_it_looks_for():
    """The scans are not vacuous: a fallback and copied defaults of each kind are caught."""
    assert FALLBACK.search('x = s.getint("FOCUSCRAWL_IMAGE_MAX_PARENTS", 5)')
    assert FALLBACK.search("os.environ.get('FOCUSCRAWL_ANNOTATION_DB', 'a.db')")
    assert not FALLBACK.search('x = s.getint("FOCUSCRAWL_IMAGE_MAX_PARENTS")')
    assert OR_FALLBACK.search('mode = (s.get("FOCUSCRAWL_NEARDUP_IMAGES") or "mark").lower()')
    assert OR_FALLBACK.search('n = s.getint("FOCUSCRAWL_IMAGE_MAX_PARENTS") or 5')
    assert not OR_FALLBACK.search('out = s.get("FOCUSCRAWL_OUTPUT_DIR") or ""')
    code = ("LINK_RAZOR = 3e4\n"
            "def f(max_parents=5, *, retrain_every: int = 20): pass\n"
            "class C:\n    lazy_src: tuple = ('data-src', 'data-lazy-src', 'data-original')\n"
            "def g(max_parents=defaults.FOCUSCRAWL_IMAGE_MAX_PARENTS): pass\n")
    assert [(name, setting) for _, name, setting in _copied_defaults(ast.parse(code))] == [
        ("LINK_RAZOR", "FOCUSCRAWL_LINK_RAZOR"), ("max_parents", "FOCUSCRAWL_IMAGE_MAX_PARENTS"),
        ("retrain_every", "FOCUSCRAWL_LEARNING_RETRAIN_EVERY"), ("lazy_src", "FOCUSCRAWL_IMAGE_LAZY_SRC")]


def test_project_settings_carry_every_default():
    """Entry points that build their own ``Settings`` start from ``project_settings``."""
    s = project_settings()
    assert {name: s.get(name) for name in SETTINGS} == SETTINGS


def test_project_settings_overrides_at_cmdline_priority():
    s = project_settings({"FOCUSCRAWL_IMAGE_MAX_PARENTS": 2})
    assert s.getint("FOCUSCRAWL_IMAGE_MAX_PARENTS") == 2
    assert s.getpriority("FOCUSCRAWL_IMAGE_MAX_PARENTS") == s.getpriority("BOT_NAME") + 20  # cmdline > project
    assert s.getint("FOCUSCRAWL_IMAGE_MAX_SIBLINGS") == defaults.FOCUSCRAWL_IMAGE_MAX_SIBLINGS
