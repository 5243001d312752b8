"""A piece of text whose one literal changed, made from its last version's
nodes instead of parsed again.

Typing a parallelism or a name changes one number or one string of one
chunk of a long function; LibCST parses a chunk of a few long lines in
milliseconds, most of what an edit's parse costs.  When the new text is the
old one with one integer or one plain string literal changed (a token of its
own: not part of a float, a name, a comment, another string or an
f-string), the new module is the old one with that one node replaced: its
parents along the path are made again, every other node is the very node it
was (what the replay, its positions and the state it recorded know nodes
by).

Which node the literal is, is found by counting: the literals of the same
text before it, as tokens of the chunk and as nodes in source order.  The
module made must write out the new text exactly (LibCST's code of it), or it
is not used.  Anything else (two tokens changed, a literal that becomes
another kind of token, a node of the same text in an f-string) returns None:
the chunk is parsed.
"""

from __future__ import annotations

import re

import libcst as cst

from chainlens.analyzer.extract.lexer import TOKEN, shared_end, shared_start
from chainlens.analyzer.extract.positions import nodes_of, walked_fields

#: an integer literal as one token (a float, a complex or a hexadecimal
#: number is none: its node is another kind or its digits another token)
_INTEGER = re.compile(r"[0-9][0-9_]*\Z")
#: a string literal that is one node, ``SimpleString`` (no f-string)
_STRING = re.compile(r"[rRbBuU]{0,2}['\"]")


def patched(old_text: str, old: cst.Module, new_text: str) -> cst.Module | None:
    """``old`` (the module of ``old_text``) with the one literal ``new_text``
    changed in it replaced, or None (see the module's text)."""
    if old_text.count("\n") != new_text.count("\n"):
        return None
    start = shared_start(old_text, new_text)
    end = shared_end(old_text, new_text, min(len(old_text), len(new_text)) - start)
    edited = _token(old_text, start, len(old_text) - end)
    typed = _token(new_text, start, len(new_text) - end)
    if edited is None or typed is None or _kind(edited[1]) is not _kind(typed[1]):
        return None
    (at, before), after = edited, typed[1]
    kind = _kind(before)
    if kind is None:
        return None
    # which of the chunk's tokens alike it is (a node alike that is no token
    # of its own, in an f-string, makes the counts differ)
    place = total = 0
    for found in TOKEN.finditer(old_text):
        if found[0] == before and _alone(old_text, found.start(), found.end()):
            if found.start() < at:
                place += 1
            total += 1
    alike = [n for n in nodes_of(old, frozenset({kind})) if _value(n) == before]
    if len(alike) != total or place >= total:
        return None
    try:
        made = _replaced(old, alike[place], kind(value=after))
    except (cst.CSTValidationError, TypeError, ValueError):
        return None
    return made if made.code == new_text else None


def _alone(text: str, start: int, stop: int) -> bool:
    """Whether the token ``text[start:stop]`` is a literal of its own: a
    string, or digits no ``.`` or word character touches (not a float's,
    a name's)."""
    if not text[start].isdigit():
        return True
    before = text[start - 1] if start else " "
    after = text[stop] if stop < len(text) else " "
    return not (before == "." or before.isalnum() or after == ".")


def _token(text: str, start: int, stop: int) -> tuple[int, str] | None:
    """Where the token of ``text``'s line holding ``text[start:stop]`` starts,
    and the token, when that lies in one token (a token alone: no ``.`` or
    word character touching it)."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    line_end = len(text) if line_end < 0 else line_end
    if stop > line_end:
        return None
    line = text[line_start:line_end]
    low, high = start - line_start, stop - line_start
    for found in TOKEN.finditer(line):
        if found.start() <= low and high <= found.end():
            if not _alone(line, found.start(), found.end()):
                return None
            return line_start + found.start(), found[0]
        if found.start() > low:
            return None
    return None


def _value(node: cst.CSTNode) -> str | None:
    return node.value if isinstance(node, cst.Integer | cst.SimpleString) else None


def _kind(token: str) -> type[cst.Integer] | type[cst.SimpleString] | None:
    if _INTEGER.match(token):
        return cst.Integer
    if _STRING.match(token) and token[-1] in "'\"":
        return cst.SimpleString
    return None


def _replaced(root: cst.Module, target: cst.CSTNode, new: cst.CSTNode) -> cst.Module:
    """``root`` with ``target`` replaced by ``new``: the nodes on the path
    from the root to it made again, the rest shared."""
    path = _path(root, target)
    replacement: object = new
    for parent, name, index in reversed(path):
        value = getattr(parent, name)
        if index is not None:
            items = list(value)
            items[index] = replacement
            value = type(value)(items)
        else:
            value = replacement
        replacement = parent.with_changes(**{name: value})
    assert isinstance(replacement, cst.Module)
    return replacement


def _path(
    root: cst.CSTNode, target: cst.CSTNode
) -> list[tuple[cst.CSTNode, str, int | None]]:
    """Each node from ``root`` down to ``target``'s parent, with the field
    (and the index in it) that leads on."""
    parents: dict[int, tuple[cst.CSTNode, str, int | None]] = {}
    stack: list[cst.CSTNode] = [root]
    while stack:
        node = stack.pop()
        if node is target:
            path = []
            while id(node) in parents:
                step = parents[id(node)]
                path.append(step)
                node = step[0]
            return path[::-1]
        for name in walked_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, cst.CSTNode):
                parents[id(value)] = (node, name, None)
                stack.append(value)
            elif isinstance(value, (tuple, list)):
                for index, item in enumerate(value):
                    if isinstance(item, cst.CSTNode):
                        parents[id(item)] = (node, name, index)
                        stack.append(item)
    raise ValueError("the node is not under the root")
