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
    on = {d.range.start.line + 1 for d in asked}  # ours count lines from 1
    for ours in diagnostics:
        if ours.range.start.line not in on:
            continue
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


OPTIONS: Final = types.CodeActionOptions(code_action_kinds=KINDS, resolve_provider=True)


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
    asked = [d for d in params.context.diagnostics if d.source == SOURCE]
    if quick and asked:
        # only the fixes of the findings asked about are checked
        lines = (
            min(d.range.start.line for d in asked) + 1,
            max(d.range.start.line for d in asked) + 1,
        )
        checked = await ls.session.fixes(analysis, lines)
        if checked is None:
            return []  # the document changed: these would edit an old version
        actions.extend(quick_fixes(analysis, asked, params.range, checked))
    if every:
        if _resolves_edits(ls) and analysis.verify is not None:
            # every fix of the file checked only when this one is chosen
            action = fix_all_unresolved(analysis)
        else:
            diagnostics = await ls.session.fixes(analysis)
            if diagnostics is None:
                return []
            action = fix_all(analysis, diagnostics)
        if action is not None:
            actions.append(action)
    return actions


def _resolves_edits(ls: ChainlensServer) -> bool:
    """Whether the client asks for an action's edit when it is chosen."""
    capability = ls.client_capabilities.text_document
    support = capability.code_action if capability is not None else None
    resolve = support.resolve_support if support is not None else None
    return resolve is not None and "edit" in resolve.properties


def fix_all_unresolved(analysis: Analysis) -> types.CodeAction | None:
    """The fix of everything in the file, its edit made when it is chosen
    (``codeAction/resolve``): offered when some finding has a fix (checking
    them may leave none to apply: then choosing it changes nothing)."""
    if not any(d.fix_to_apply() is not None for d in analysis.diagnostics):
        return None
    return types.CodeAction(
        title="chainlens: fix all",
        kind=FIX_ALL,
        data={"uri": analysis.uri, "version": analysis.version},
    )


async def resolve(ls: ChainlensServer, action: types.CodeAction) -> types.CodeAction:
    """``codeAction/resolve``: the edit of the fix of everything in the file,
    every fix checked, for the version it was offered for (none once the
    document changed: the client's text is not that version any more)."""
    data = action.data if isinstance(action.data, dict) else {}
    uri, version = data.get("uri"), data.get("version")
    if action.kind != FIX_ALL or not isinstance(uri, str):
        return action
    analysis = await ls.session.current(uri)
    if analysis is None or analysis.version != version:
        return action
    diagnostics = await ls.session.fixes(analysis)
    if diagnostics is None:
        return action
    resolved = fix_all(analysis, diagnostics)
    if resolved is None:
        return action
    action.edit = resolved.edit
    return action
