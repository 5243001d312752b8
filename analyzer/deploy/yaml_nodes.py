"""YAML read as a tree of nodes with their lines (PyYAML's compose API).

Nothing is constructed: tags such as CloudFormation's ``!Ref`` stay on the
node (:func:`is_tagged`), and no Python object is ever built from the text.
Helm's ``{{ ... }}`` are not YAML: before parsing, each is replaced by a
placeholder (a line that is only a template action becomes a comment), so
the lines stay where they are and a value holding a placeholder is reported
as unknown with the template's own text (:func:`template_of`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import yaml

_TEMPLATE = re.compile(r"\{\{-?.*?-?\}\}")
_PLACEHOLDER = re.compile(r"__chainlens_template_(\d+)__")
#: a shell or envsubst variable: $VAR, ${VAR}, $(VAR)
_VARIABLE = re.compile(r"\$(\{[^}]*\}|\([^)]*\)|[A-Za-z_][A-Za-z0-9_]*)")


class YamlError(Exception):
    """Text that is not YAML; ``line`` is where the parser stopped (from 1)."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


@dataclass(frozen=True, slots=True)
class Source:
    """A YAML text with Helm's templates replaced, and those templates."""

    text: str
    templates: tuple[str, ...]


def prepare(text: str) -> Source:
    """Replace ``{{ ... }}`` by placeholders, keeping every line in place."""
    templates: list[str] = []
    if "{{" not in text:
        return Source(text, ())
    lines: list[str] = []
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped.startswith("{{") and _TEMPLATE.sub("", stripped).strip() == "":
            lines.append("#" + line)  # a template action alone on its line
            continue

        def placeholder(match: re.Match[str]) -> str:
            templates.append(match.group(0))
            return f"__chainlens_template_{len(templates) - 1}__"

        lines.append(_TEMPLATE.sub(placeholder, line))
    return Source("\n".join(lines), tuple(templates))


def compose_all(source: Source) -> list[yaml.Node]:
    """The documents of ``source`` as node trees (empty documents skipped)."""
    try:
        return [
            node
            for node in yaml.compose_all(source.text, Loader=yaml.SafeLoader)
            if node is not None
        ]
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise YamlError(str(exc.problem or exc).splitlines()[0], line) from None
    except yaml.YAMLError as exc:
        raise YamlError(str(exc).splitlines()[0], 1) from None


def line_of(node: yaml.Node) -> int:
    """The node's first line (from 1)."""
    return int(node.start_mark.line) + 1


def get(node: yaml.Node | None, *keys: str) -> yaml.Node | None:
    """The node at ``keys`` below ``node`` (mappings only), or None."""
    for key in keys:
        if not isinstance(node, yaml.MappingNode):
            return None
        found = None
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == key:
                found = v
        node = found
    return node


def items(node: yaml.Node | None) -> Iterator[tuple[str, yaml.Node, int]]:
    """The ``(key, value, line)`` of a mapping node (scalar keys)."""
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode):
                yield str(k.value), v, line_of(k)


def scalar(node: yaml.Node | None) -> str | None:
    """A scalar node's text (None for anything else, or ``null``)."""
    if isinstance(node, yaml.ScalarNode):
        if node.tag == "tag:yaml.org,2002:null" or (
            node.style is None and node.value in ("", "~", "null", "Null", "NULL")
        ):
            return None
        return str(node.value)
    return None


def sequence(node: yaml.Node | None) -> list[yaml.Node] | None:
    """A sequence node's items (None for anything else)."""
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return None


def is_tagged(node: yaml.Node) -> str | None:
    """The local tag of a node (``!Ref``, ``!Sub``), or None."""
    tag = str(node.tag or "")
    return tag if tag.startswith("!") else None


def template_of(text: str, source: Source) -> str | None:
    """The Helm template a value holds (its original text), or None."""
    match = _PLACEHOLDER.search(text)
    if match is None:
        return None
    return source.templates[int(match.group(1))]


def variable_of(text: str) -> str | None:
    """A shell variable a value holds (``$VAR``, ``${VAR}``), or None."""
    match = _VARIABLE.search(text)
    return match.group(0) if match else None


def restore_templates(text: str, source: Source) -> str:
    """``text`` with placeholders put back as the templates they stand for."""
    return _PLACEHOLDER.sub(lambda m: source.templates[int(m.group(1))], text)
