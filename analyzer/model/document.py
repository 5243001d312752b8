"""A JSON document as a command prints it, with the data it was made from.

The renderers of JSON return a :class:`Document`: printed, it is the text;
a command run once per deployment nests its ``data`` in the document of every
run, and never reads the text back.
"""

from __future__ import annotations

from typing import Any


class Document(str):
    """The text of a JSON document, and (``data``) what it encodes, its keys
    in the order the text has them."""

    data: Any

    def __new__(cls, text: str, data: Any) -> Document:
        document = super().__new__(cls, text)
        document.data = data
        return document


def sorted_keys(value: Any) -> Any:
    """``value`` with every mapping's keys sorted (as ``json.dumps(...,
    sort_keys=True)`` writes them)."""
    if isinstance(value, dict):
        return {k: sorted_keys(value[k]) for k in sorted(value)}
    if isinstance(value, list | tuple):
        return [sorted_keys(v) for v in value]
    return value
