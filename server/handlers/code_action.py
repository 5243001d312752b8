"""Code actions: add the missing uid, fix everything in the file, suppress a finding."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Final

from lsprotocol import types

from chainlens.analyzer import Diagnostic, SourcePosition, apply_fixes, suppression_fix
from chainlens.server.convert import SOURCE, TextLines, to_lsp_edits

if TYPE_CHECKING:
    from chainlens.server.app import ChainlensServer
    from chainlens.server.session import Analysis

FIX_ALL: Final = "source.fixAll.chainlens"
KINDS: Final[list[str]] = [
    types.CodeActionKind.QuickFix,
    types.CodeActionKind.SourceFixAll,
    FIX_ALL,
]


def _matches(lsp: types.Diagnostic, ours: Diagnostic, lines: TextLines) -> bool:
    return lsp.code == ours.code.code and lsp.range == lines.to_lsp_range(ours.range)


def _edit(uri: str, version: int, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
    return types.WorkspaceEdit(
        document_changes=[
            types.TextDocumentEdit(
                text_document=types.OptionalVersionedTextDocumentIdentifier(
                    uri=uri, version=version
                ),
                edits=edits,
            )
        ]
    )


def quick_fixes(
    analysis: Analysis,
    wanted: Sequence[types.Diagnostic],
    selection: types.Range,
    diagnostics: Sequence[Diagnostic] | None = None,
) -> list[types.CodeAction]:
    """Return the fix and suppress actions of the findings the client asks about
    (``diagnostics``: the analysis' findings with their fixes checked)."""
    actions: list[types.CodeAction] = []
    asked = [d for d in wanted if d.source == SOURCE]
    if diagnostics is None:
        diagnostics = analysis.diagnostics
    for ours in diagnostics:
        matching = [d for d in asked if _matches(d, ours, analysis.lines)]
        if not matching:
            continue
        preferred = ours.fix_to_apply()
        for fix in ours.fixes:
            actions.append(
                types.CodeAction(
                    title=fix.description + ("" if fix.safe else " (unsafe)"),
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=matching,
                    is_preferred=fix is preferred,
                    edit=_edit(
                        analysis.uri,
                        analysis.version,
                        to_lsp_edits(fix.edits, analysis.lines),
                    ),
                )
            )
        if ours.code.code == "CL000":
            continue
        suppress = suppression_fix(analysis.text, ours.range.start.line, ours.code.code)
        if suppress is not None:
            actions.append(
                types.CodeAction(
                    title=f"Suppress {ours.code.code} ({ours.code.name}) on this line",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=matching,
                    edit=_edit(
                        analysis.uri,
                        analysis.version,
                        to_lsp_edits(suppress.edits, analysis.lines),
                    ),
                )
            )
    return actions


def fix_all(
    analysis: Analysis, diagnostics: Sequence[Diagnostic] | None = None
) -> types.CodeAction | None:
    """Return one action applying every safe fix of the file (as ``check --fix``;
    ``diagnostics``: the analysis' findings with their fixes checked)."""
    if diagnostics is None:
        diagnostics = analysis.diagnostics
    fixed, count = apply_fixes(analysis.text, diagnostics)
    if not count or fixed == analysis.text:
        return None
    return types.CodeAction(
        title=f"chainlens: fix all ({count} fix{'es' if count != 1 else ''})",
        kind=FIX_ALL,
        edit=_edit(analysis.uri, analysis.version, [minimal_edit(analysis, fixed)]),
    )


def minimal_edit(analysis: Analysis, new_text: str) -> types.TextEdit:
    """Return one edit replacing only the span where ``new_text`` differs."""
    old = analysis.text
    start = 0
    limit = min(len(old), len(new_text))
    while start < limit and old[start] == new_text[start]:
        start += 1
    end_old, end_new = len(old), len(new_text)
    while (
        end_old > start
        and end_new > start
        and old[end_old - 1] == new_text[end_new - 1]
    ):
        end_old -= 1
        end_new -= 1
    return types.TextEdit(
        range=types.Range(
            start=_offset_position(analysis, start),
            end=_offset_position(analysis, end_old),
        ),
        new_text=new_text[start:end_new],
    )


def _offset_position(analysis: Analysis, offset: int) -> types.Position:
    before = analysis.text[:offset]
    line = before.count("\n") + before.count("\r") - before.count("\r\n")
    last_break = max(before.rfind("\n"), before.rfind("\r"))
    return analysis.lines.to_lsp_position(
        SourcePosition(line + 1, offset - (last_break + 1))
    )


OPTIONS: Final = types.CodeActionOptions(
    code_action_kinds=KINDS, resolve_provider=False
)


async def code_action(
    ls: ChainlensServer, analysis: Analysis, params: types.CodeActionParams
) -> list[types.CodeAction] | None:
    """``textDocument/codeAction``: the quick fixes of the findings in the
    range, and the fix of everything in the file.  The fixes are checked for
    the operator IDs they move here, once per analysis (an edit publishes the
    findings without that check)."""
    only = params.context.only
    actions: list[types.CodeAction] = []
    quick = not only or any(
        types.CodeActionKind.QuickFix.value.startswith(k) for k in only
    )
    every = not only or any(FIX_ALL.startswith(k) for k in only)
    asked = any(d.source == SOURCE for d in params.context.diagnostics)
    diagnostics = None
    if every or (quick and asked):
        diagnostics = await ls.session.fixes(analysis)
        if diagnostics is None:
            return []  # the document changed: these would edit an old version
    if quick:
        actions.extend(
            quick_fixes(analysis, params.context.diagnostics, params.range, diagnostics)
        )
    if every:
        action = fix_all(analysis, diagnostics)
        if action is not None:
            actions.append(action)
    return actions
