"""Reference pages generated from the code, so that they cannot drift from it.

``{focuscrawl-settings}`` lists every setting of ``focuscrawl/settings.py`` with its default
and its ``#:`` doc comment, grouped by the module's ``# --- Section ---`` lines;
``{focuscrawl-cli}`` prints the ``--help`` of every ``focuscrawl`` subcommand from the
argparse parsers the command builds (``focuscrawl.cli.build_parser``).
"""
from __future__ import annotations

import argparse
import ast
import os
import pprint
import re
from dataclasses import dataclass, field
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

#: ``# --- Title (docs/X.md) -----`` starts a section of settings.py
SECTION = re.compile(r"^# -{3}\s*(.+?)\s*-{3,}\s*$")
#: a section title's trailing pointer to other docs, ``(SPEC §5; docs/CRAWL.md)``
TITLE_NOTE = re.compile(r"\s*\([^()]*\)$")
#: ``code`` / `code` / **strong** in a doc comment
INLINE = re.compile(r"``(.+?)``|`([^`]+)`|\*\*(.+?)\*\*")
#: the title prefix of settings.py's sections of internal knobs
ADVANCED = "Advanced:"
#: a default shown inline when its source is one short line, else as a block
INLINE_DEFAULT_CHARS = 60


@dataclass
class Setting:
    name: str
    default_source: str
    value: object
    doc: str
    section: str
    advanced: bool = False


@dataclass
class Section:
    title: str
    settings: list[Setting] = field(default_factory=list)


def read_settings(path: Path, values: dict[str, object]) -> list[Section]:
    """The settings of ``path`` in source order: name, default, ``#:`` doc comment (the lines
    right above the assignment) and section. Settings in a section whose title starts with
    "Advanced:" are marked ``advanced``."""
    source = path.read_text(encoding="utf-8")
    lines = source.splitlines()
    tree = ast.parse(source)
    sections = [Section("Project")]
    section_starts = sorted((n, SECTION.match(line).group(1)) for n, line in enumerate(lines, 1)
                            if SECTION.match(line))
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            name = node.targets[0].id
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
            name = node.target.id
        else:
            continue
        if not name.isupper():
            continue
        while section_starts and section_starts[0][0] < node.lineno:
            sections.append(Section(TITLE_NOTE.sub("", section_starts.pop(0)[1])))
        doc_lines = []
        n = node.lineno - 1  # 1-based line above the assignment
        while n >= 1 and lines[n - 1].lstrip().startswith("#:"):
            doc_lines.insert(0, lines[n - 1].lstrip()[2:].strip())
            n -= 1
        doc = " ".join(doc_lines)
        default_source = " ".join(ast.get_source_segment(source, node.value).split())
        sections[-1].settings.append(Setting(
            name, default_source, values.get(name), doc, sections[-1].title,
            advanced=sections[-1].title.startswith(ADVANCED)))
    return [s for s in sections if s.settings]


def inline_nodes(text: str) -> list[nodes.Node]:
    """``text`` as docutils nodes, with code spans and bold set."""
    out: list[nodes.Node] = []
    pos = 0
    for match in INLINE.finditer(text):
        if match.start() > pos:
            out.append(nodes.Text(text[pos:match.start()]))
        code = match.group(1) or match.group(2)
        out.append(nodes.literal(code, code) if code else nodes.strong(match.group(3), match.group(3)))
        pos = match.end()
    if pos < len(text):
        out.append(nodes.Text(text[pos:]))
    return out


def setting_id(name: str) -> str:
    return nodes.make_id(name)


class SettingsDirective(SphinxDirective):
    """Every setting of focuscrawl/settings.py: FOCUSCRAWL_* first, then the Scrapy settings the
    project sets, then the advanced section; each with its default and doc comment."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from focuscrawl import settings as module

        path = Path(module.__file__)
        self.env.note_dependency(str(path))
        values = {name: getattr(module, name) for name in dir(module) if name.isupper()}
        sections = read_settings(path, values)
        user = [s for s in sections if not s.settings[0].advanced]
        advanced = [s for s in sections if s.settings[0].advanced]
        result: list[nodes.Node] = []
        for title, picked in (
            ("focuscrawl settings", lambda s: s.name.startswith("FOCUSCRAWL_")),
            ("Scrapy settings focuscrawl sets", lambda s: not s.name.startswith("FOCUSCRAWL_")),
        ):
            result.append(self._part(title, user, picked))
        if advanced:
            result.append(self._part("Advanced settings", advanced, lambda s: True))
        return result

    def _part(self, title: str, sections: list[Section], picked) -> nodes.section:
        part = nodes.section(ids=[nodes.make_id(title)])
        part += nodes.title(title, title)
        for section in sections:
            chosen = [s for s in section.settings if picked(s)]
            if not chosen:
                continue
            heading = section.title.removeprefix(ADVANCED).strip()
            group = nodes.section(ids=[nodes.make_id(f"{title} {heading}")])
            group += nodes.title(heading, heading)
            items = nodes.definition_list()
            for setting in chosen:
                items += self._item(setting)
            group += items
            part += group
        return part

    def _item(self, setting: Setting) -> nodes.definition_list_item:
        term = nodes.term(ids=[setting_id(setting.name)])
        term += nodes.literal(setting.name, setting.name)
        definition = nodes.definition()
        if "\n" not in setting.default_source and len(setting.default_source) <= INLINE_DEFAULT_CHARS:
            term += nodes.Text(" = ")
            term += nodes.literal(setting.default_source, setting.default_source)
        else:
            text = pprint.pformat(setting.value, width=88, sort_dicts=False)
            definition += nodes.literal_block(text, text, language="python")
        if setting.doc:
            definition.insert(0, nodes.paragraph("", "", *inline_nodes(setting.doc)))
        item = nodes.definition_list_item()
        item += term
        item += definition
        return item


def subcommands(parser: argparse.ArgumentParser, path: str):
    """(command path, parser, help) of every subcommand under ``parser``, depth first."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            seen = set()
            for name, sub in action.choices.items():
                if id(sub) in seen:  # an alias
                    continue
                seen.add(id(sub))
                full = f"{path} {name}"
                yield full, sub, helps.get(name) or ""
                yield from subcommands(sub, full)


class CliDirective(SphinxDirective):
    """The --help of ``focuscrawl`` and each of its subcommands, as argparse prints it."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from focuscrawl import cli

        columns = os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = "88"  # argparse wraps at the terminal's width: a fixed one here
        try:
            parser = cli.build_parser()
            result: list[nodes.Node] = []
            top = parser.format_help()
            result.append(nodes.literal_block(top, top, language="text"))
            for path, sub, help_text in subcommands(parser, "focuscrawl"):
                section = nodes.section(ids=[nodes.make_id(path)])
                section += nodes.title(path, path)
                if help_text:
                    section += nodes.paragraph("", "", *inline_nodes(help_text))
                text = sub.format_help()
                section += nodes.literal_block(text, text, language="text")
                result.append(section)
        finally:
            if columns is None:
                os.environ.pop("COLUMNS", None)
            else:
                os.environ["COLUMNS"] = columns
        return result


def setup(app: Sphinx) -> dict:
    app.add_directive("focuscrawl-settings", SettingsDirective)
    app.add_directive("focuscrawl-cli", CliDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
