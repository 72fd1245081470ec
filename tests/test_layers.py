"""The package's layers import only downward, and no module imports itself back through
others (issue #29): a change to the run directory cannot break the maths, and a module can
be read, tested and replaced from the layers below it alone.

Static: every ``import`` and ``from ... import`` of the package's modules, at module level
or inside a function (a function-local import is a dependency too, only a later one)."""
from __future__ import annotations

import ast
from pathlib import Path

import focuscrawl

PACKAGE = Path(focuscrawl.__file__).parent

#: The layers, lowest first. A module may import its own layer and the layers below.
#: A module belongs to the layer of its longest matching name (``output.files`` is a file
#: format everything writes with, the rest of ``output/`` is the run directory).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("foundation: settings, bundled resources, child processes, numba's compiled kernels, items, URLs, "
     "Scrapy internals, file, TSV and image-record formats",
     ("focuscrawl", "focuscrawl.settings", "focuscrawl.resources", "focuscrawl.processes", "focuscrawl.compiled",
      "focuscrawl.items",
      "focuscrawl.urls", "focuscrawl.scrapy_compat", "focuscrawl.logformatter", "focuscrawl.fingerprints",
      "focuscrawl.output.files", "focuscrawl.output.tsv", "focuscrawl.output.records")),
    ("pure maths of texts: text extraction, image contexts, near-duplicates, language models",
     ("focuscrawl.text", "focuscrawl.context", "focuscrawl.dedup", "focuscrawl.lm", "focuscrawl.rights")),
    ("models built on them and a page's analysis: topic bundles, image rules and scores, what "
     "focuses the crawl (link scores, the link learner), the crawl's scorer, the page analysis, "
     "the run-directory reader, the test web",
     ("focuscrawl.topic", "focuscrawl.images", "focuscrawl.focus", "focuscrawl.crawl_scorer",
      "focuscrawl.analysis", "focuscrawl.analysis_pool", "focuscrawl.corpus", "focuscrawl.altfilter",
      "focuscrawl.testweb")),
    ("crawl state: the run directory, the frontier, WARC files",
     ("focuscrawl.output", "focuscrawl.frontier", "focuscrawl.archive")),
    ("Scrapy components", ("focuscrawl.middlewares", "focuscrawl.pipelines", "focuscrawl.extensions",
                           "focuscrawl.distributed")),
    ("spiders", ("focuscrawl.spiders",)),
    ("commands and tools around a crawl (and every ``*.cli`` module)",
     ("focuscrawl.cli", "focuscrawl.crawl_cli", "focuscrawl.shell", "focuscrawl.ranking", "focuscrawl.fetch_cli", "focuscrawl.export",
      "focuscrawl.eval", "focuscrawl.annotate", "focuscrawl.demo", "focuscrawl.archive.engine")),
)
#: a subpackage's ``cli`` module registers a ``focuscrawl`` command: the top layer
COMMAND_MODULE = "cli"

#: (importer, imported) -> why this upward import must stay. Empty: none is needed.
ALLOWED_UPWARD: dict[tuple[str, str], str] = {}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _imported(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The package's modules an import statement loads (``from a import b``: ``a.b`` when
    ``b`` is a module, else ``a``)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".") if MODULES[module].name == "__init__.py" else module.split(".")[:-1]
            base = ".".join(package[:len(package) - node.level + 1] + ([base] if base else []))
        names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base for alias in node.names]
    found = []
    for name in names:
        while name not in MODULES and "." in name:
            name = name.rsplit(".", 1)[0]
        if name in MODULES and name != module:
            found.append(name)
    return found


def _imports() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        graph[module] = {target for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                         if isinstance(node, (ast.Import, ast.ImportFrom)) for target in _imported(module, node)}
    return graph


def layer_of(module: str) -> int | None:
    if module.rsplit(".", 1)[-1] == COMMAND_MODULE:
        return len(LAYERS) - 1
    best, length = None, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            matches = module == prefix or (prefix != "focuscrawl" and module.startswith(prefix + "."))
            if matches and len(prefix) > length:
                best, length = index, len(prefix)
    return best


def test_every_module_has_a_layer():
    assert [m for m in sorted(MODULES) if layer_of(m) is None] == []


def test_layers_import_only_downward():
    upward = []
    for module, targets in sorted(_imports().items()):
        for target in sorted(targets):
            if layer_of(target) > layer_of(module) and (module, target) not in ALLOWED_UPWARD:
                upward.append(f"{module} ({LAYERS[layer_of(module)][0].split(':')[0]}) imports {target} "
                              f"({LAYERS[layer_of(target)][0].split(':')[0]})")
    assert not upward, "upward imports:\n" + "\n".join(upward)


def test_allowed_exceptions_are_still_needed():
    graph = _imports()
    assert [pair for pair in ALLOWED_UPWARD if pair[1] not in graph.get(pair[0], ())] == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    cycles.append(sorted(component))
    return cycles


def test_no_import_cycles():
    cycles = _cycles(_imports())
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_checks_see_upward_and_function_local_imports():
    """The checks themselves: a function-local upward import and a cycle are found."""
    tree = ast.parse("def f():\n    from focuscrawl.spiders.focused import page_links\n")
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom))
    assert _imported("focuscrawl.analysis", node) == ["focuscrawl.spiders.focused"]
    assert layer_of("focuscrawl.spiders.focused") > layer_of("focuscrawl.analysis")
    assert layer_of("focuscrawl.output.files") < layer_of("focuscrawl.lm.scorer") < layer_of("focuscrawl.output.run")
    assert layer_of("focuscrawl.topic.cli") == len(LAYERS) - 1
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
