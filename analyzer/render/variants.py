"""The variants of a program that reads its command line, as text and JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence

from chainlens.analyzer.model.document import Document, sorted_keys
from chainlens.analyzer.render.graphs import render_text, results_to_json
from chainlens.analyzer.variants import Variant, shown_command_line


def render_variants_text(path: str, found: list[Variant]) -> str:
    """The graphs of each variant, headed by its command line."""
    out: list[str] = []
    if found:
        out.append(f"{path}: {found[0].result.flink_version.describe()}\n")
    for variant in found:
        same = "; ".join(shown_command_line(a) for a in variant.same_as)
        out.append(
            f"{path}: variant: {shown_command_line(variant.argv)}"
            + (f" (the same jobs with: {same})" if same else "")
            + "\n"
        )
        out.append(render_text([variant.result], with_version=False))
    return "".join(out)


def variants_to_json(path: str, found: list[Variant]) -> dict[str, object]:
    """The variants in JSON: each command line with its jobs."""
    return {
        "path": path,
        "variants": [
            {
                "argv": list(v.argv),
                "same_as": [list(a) for a in v.same_as],
                "result": results_to_json([v.result]),
            }
            for v in found
        ],
    }


def render_variants_json(files: Sequence[tuple[str, list[Variant]]]) -> str:
    """``graph --all-variants --format json``: each file's variants."""
    document = sorted_keys(
        {"files": [variants_to_json(path, found) for path, found in files]}
    )
    return Document(json.dumps(document, indent=2) + "\n", document)
