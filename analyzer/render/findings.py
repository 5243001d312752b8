"""Render ``chainlens check`` findings: text, JSON, SARIF 2.1.0, GitHub annotations.

Pure functions from findings to text; the command line decides where it goes.
:func:`render_report` is what ``check`` and ``savepoint`` print: the findings
in the format asked for, with a command's :class:`Section` (the savepoint
gate's base, savepoint or upgrade) over the text and in the JSON document.
Positions inside chainlens are 1-based lines and 0-based code-point columns;
every format here shows 1-based columns (as ruff, editors and SARIF do).

A finding's message is one short line; its explanation (why, what Flink does,
how to fix it) is shown in the text under the finding when asked
(``explain``, the ``full`` format), and is a field of its own in JSON and a
property of the SARIF result.  The text is coloured when ``colour`` says so
(the command line decides: a terminal, ``NO_COLOR``, ``FORCE_COLOR``).
"""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Final
from urllib.parse import quote

from chainlens.analyzer.check import FileCheck
from chainlens.analyzer.model.diagnostic import (
    TEXT_FORMATS,
    Finding,
    Fix,
    RuleInfo,
    Severity,
)
from chainlens.analyzer.model.document import Document
from chainlens.analyzer.model.flink_versions import FlinkVersion
from chainlens.analyzer.model.source import SourceRange, path_of

SARIF_SCHEMA: Final = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION: Final = "2.1.0"
JSON_SCHEMA_VERSION: Final = 1

_SARIF_LEVEL: Final = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFO: "note",
    Severity.HINT: "note",
}
_GITHUB_COMMAND: Final = {
    Severity.ERROR: "error",
    Severity.WARNING: "warning",
    Severity.INFO: "notice",
    Severity.HINT: "notice",
}
#: ANSI SGR codes of the text's parts (as ruff colours them).
_BOLD: Final = "1"
_STYLE: Final = {
    "path": _BOLD,
    "punctuation": "36",
    "code": "1;31",
    "fixable": "36",
    "note": "2",
    Severity.ERROR: "1;31",
    Severity.WARNING: "1;33",
    Severity.INFO: "1;34",
    Severity.HINT: "1;36",
}
#: The width the explanation is wrapped to, under its finding.
_EXPLANATION_WIDTH: Final = 88

_SEVERITY_ORDER: Final = (
    Severity.ERROR,
    Severity.WARNING,
    Severity.INFO,
    Severity.HINT,
)


@dataclass(frozen=True, slots=True)
class CheckSummary:
    """Counts for the closing line and the JSON summary."""

    files_checked: int
    fixed: int = 0
    #: files where fixes would change something (``--diff``) or changed (``--fix``)
    files_fixed: int = 0
    #: the Flink versions the files were analysed for, with how many files each
    flink_versions: tuple[tuple[FlinkVersion, int], ...] = ()


@dataclass(frozen=True, slots=True)
class Section:
    """What a command adds to the findings' report: a heading over the text
    (what is said on standard error beside a SARIF or GitHub report) and one
    key of the JSON document."""

    heading: str
    key: str
    document: Mapping[str, object]


def check_summary(files: Sequence[FileCheck]) -> CheckSummary:
    """The closing counts of the files checked (and the Flink lines used)."""
    analysed = [f for f in files if f.analysed]
    return CheckSummary(
        files_checked=len(analysed),
        fixed=sum(f.fixed for f in analysed),
        files_fixed=sum(1 for f in analysed if f.fixed),
        flink_versions=count_versions(f.flink_version for f in analysed),
    )


def render_report(
    findings: Sequence[Finding],
    summary: CheckSummary,
    *,
    format: str = "text",
    version: str,
    fixing: bool = False,
    quiet: bool = False,
    statistics: bool = False,
    command: str = "check",
    section: Section | None = None,
    rules: Sequence[RuleInfo] = (),
    working_directory_uri: str | None = None,
    explain: bool = False,
    colour: bool = False,
) -> str:
    """The report of a ``check`` (or ``savepoint``: ``command``, whose
    ``--fix`` the text names) in ``format``: text, concise, full, json, sarif
    or github; with ``statistics`` the findings per rule instead.  ``section``
    heads the text and is a key of the JSON document.  ``explain`` (and the
    ``full`` format) puts each finding's explanation under it; ``colour``
    colours the text formats."""
    if statistics:
        report = render_statistics(findings, as_json=format == "json")
    elif format == "json":
        document = json_document(findings, summary, version=version)
        if section is not None:
            document[section.key] = dict(section.document)
        return Document(_dumps(document), document)
    elif format == "sarif":
        report = render_sarif(
            findings,
            rules,
            version=version,
            working_directory_uri=working_directory_uri,
            flink_versions=summary.flink_versions,
        )
    elif format == "github":
        report = render_github(findings)
    else:
        report = render_text(
            findings,
            summary,
            fixing=fixing,
            with_summary=not quiet,
            command=command,
            explain=explain or format == "full",
            notes=format != "concise",
            colour=colour,
        )
    if section is not None and format in TEXT_FORMATS:
        return f"{section.heading}\n{report}"
    return report


def _dumps(document: object) -> str:
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def count_versions(
    versions: Iterable[FlinkVersion],
) -> tuple[tuple[FlinkVersion, int], ...]:
    """Count the files per Flink version (and what chose it), oldest first."""
    counts = Counter(versions)
    return tuple(
        sorted(
            counts.items(),
            key=lambda item: (
                tuple(int(p) for p in item[0].version.split(".")),
                item[0].source,
            ),
        )
    )


def versions_line(summary: CheckSummary) -> str | None:
    """``Flink 1.20 (apache-flink pinned in requirements.txt:3)``, or one part
    per version and source with its number of files; None when no file was
    analysed."""
    versions = summary.flink_versions
    if not versions:
        return None
    if len(versions) == 1:
        return f"Analysed for {versions[0][0].describe()}."
    parts = [f"{v.describe()}: {_plural(n, 'file')}" for v, n in versions]
    return "Analysed for " + "; ".join(parts) + "."


def sort_key(finding: Finding) -> tuple[str, int, int, str, str]:
    """Order findings by file, position, code, message (the output order)."""
    start = finding.diagnostic.range.start
    return (
        finding.path,
        start.line,
        start.column,
        finding.diagnostic.code.code,
        finding.diagnostic.message,
    )


# ---------------------------------------------------------------------------
# text


def render_text(
    findings: Sequence[Finding],
    summary: CheckSummary,
    *,
    fixing: bool = False,
    with_summary: bool = True,
    command: str = "check",
    explain: bool = False,
    notes: bool = True,
    colour: bool = False,
) -> str:
    """Return ruff-style lines and a summary (which names ``command``'s
    ``--fix``).

    Each finding is ``path:line:col: CODE [*] severity: message`` (``[*]`` when
    ``--fix`` resolves it), followed (with ``notes``) by its related locations,
    indented, and (with ``explain``) by its explanation, indented and wrapped.
    ``colour`` styles the path, the code, the marker and the severity with
    ANSI codes.
    """
    paint = _painter(colour)
    out: list[str] = []
    for finding in sorted(findings, key=sort_key):
        d = finding.diagnostic
        marker = " " + paint("fixable", "[*]") if finding.fixable else ""
        out.append(
            f"{_where(finding.path, d.range, paint)}{paint('punctuation', ':')} "
            f"{paint('code', d.code.code)}{marker} "
            f"{paint(d.severity, d.severity.value)}: {d.message}"
        )
        for related in d.related if notes else ():
            out.append(
                f"    {_where(finding.path, related.range, paint)}"
                f"{paint('punctuation', ':')} {paint('note', 'note')}: "
                f"{related.message}"
            )
        if explain and d.explanation:
            out.extend(
                textwrap.wrap(
                    d.explanation,
                    _EXPLANATION_WIDTH,
                    initial_indent="    ",
                    subsequent_indent="    ",
                    break_long_words=False,
                    break_on_hyphens=False,
                )
            )
    if with_summary:
        out.append(summary_line(findings, summary, fixing=fixing, command=command))
        versions = versions_line(summary)
        if versions is not None:
            out.append(versions)
    return "".join(line + "\n" for line in out)


def summary_line(
    findings: Sequence[Finding],
    summary: CheckSummary,
    *,
    fixing: bool = False,
    command: str = "check",
) -> str:
    """Return the closing line of the text report."""
    files = _plural(summary.files_checked, "PyFlink file")
    if not findings and not summary.fixed:
        return f"All checks passed! ({files} checked)"
    counts = Counter(f.diagnostic.severity for f in findings)
    parts = [
        f"{counts[s]} info" if s is Severity.INFO else _plural(counts[s], s.value)
        for s in _SEVERITY_ORDER
        if counts[s]
    ]
    if fixing:
        return (
            f"Found {_plural(len(findings) + summary.fixed, 'finding')} in {files} "
            f"({summary.fixed} fixed, {len(findings)} remaining"
            + (f": {', '.join(parts)}" if parts else "")
            + ")."
        )
    affected = len({f.path for f in findings})
    line = (
        f"Found {_plural(len(findings), 'finding')} ({', '.join(parts)}) in "
        f"{_plural(affected, 'file')} of {files} checked."
    )
    fixable = sum(1 for f in findings if f.fixable)
    unsafe = sum(1 for f in findings if f.unsafe_fixable)
    if fixable:
        line += f"\n[*] {fixable} fixable with `chainlens {command} --fix`."
    if unsafe:
        line += (
            f"\n{unsafe} more {'fix' if unsafe == 1 else 'fixes'} "
            f"{'is' if unsafe == 1 else 'are'} unsafe (they move the operator IDs "
            "savepoints are restored by): `--fix --unsafe-fixes` applies them."
        )
    return line


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _painter(colour: bool) -> Callable[[str | Severity, str], str]:
    """A function that wraps a part of the text in its ANSI style (or not)."""

    def paint(part: str | Severity, text: str) -> str:
        return f"\x1b[{_STYLE[part]}m{text}\x1b[0m" if colour else text

    return paint


def _plain(part: str | Severity, text: str) -> str:
    return text


def _where(
    path: str,
    where: SourceRange,
    paint: Callable[[str | Severity, str], str] = _plain,
) -> str:
    colon = paint("punctuation", ":")
    return (
        f"{paint('path', path_of(path, where))}{colon}{where.start.line}{colon}"
        f"{where.start.column + 1}"
    )


# ---------------------------------------------------------------------------
# JSON


def _fix_to_json(fix: Fix) -> dict[str, object]:
    return {
        "description": fix.description,
        "safe": fix.safe,
        "edits": [
            {"range": e.range.to_json(), "new_text": e.new_text} for e in fix.edits
        ],
    }


def finding_to_json(finding: Finding) -> dict[str, object]:
    """Return the JSON form of one finding (columns 0-based, as in ``graph``):
    ``fix`` is the first fix (the safe one when there is one), ``alternatives``
    the others (e.g. the plain uid, unsafe)."""
    d = finding.diagnostic
    return {
        "path": finding.path,
        "code": d.code.code,
        "name": d.code.name,
        "severity": d.severity.value,
        "message": d.message,
        "explanation": d.explanation,
        "range": d.range.to_json(),
        "related": [
            {"message": r.message, "range": r.range.to_json()} for r in d.related
        ],
        "fix": _fix_to_json(d.fix) if d.fix is not None else None,
        "alternatives": [_fix_to_json(f) for f in d.alternatives],
        "job_index": d.job_index,
        "fingerprint": finding.fingerprint,
    }


def render_json(
    findings: Sequence[Finding], summary: CheckSummary, *, version: str
) -> str:
    """Return the JSON document of a check run (``schema_version`` 1)."""
    document = json_document(findings, summary, version=version)
    return Document(_dumps(document), document)


def json_document(
    findings: Sequence[Finding], summary: CheckSummary, *, version: str
) -> dict[str, object]:
    """The JSON document of a check run (``schema_version`` 1), as data."""
    ordered = sorted(findings, key=sort_key)
    counts = Counter(f.diagnostic.severity.value for f in ordered)
    doc = {
        "schema_version": JSON_SCHEMA_VERSION,
        "tool": "chainlens",
        "version": version,
        "summary": {
            "files_checked": summary.files_checked,
            "findings": len(ordered),
            "fixed": summary.fixed,
            "fixable": sum(1 for f in ordered if f.fixable),
            "by_severity": {s.value: counts.get(s.value, 0) for s in _SEVERITY_ORDER},
            "flink_versions": [
                {**v.to_json(), "files": n} for v, n in summary.flink_versions
            ],
        },
        "findings": [finding_to_json(f) for f in ordered],
    }
    return doc


# ---------------------------------------------------------------------------
# SARIF 2.1.0 (as GitHub code scanning reads it)


def render_sarif(
    findings: Sequence[Finding],
    rules: Sequence[RuleInfo],
    *,
    version: str,
    working_directory_uri: str | None = None,
    flink_versions: Sequence[tuple[FlinkVersion, int]] = (),
) -> str:
    """Return a SARIF 2.1.0 log with one run.

    ``tool.driver.rules`` lists every known rule (stable across runs, with its
    docs as ``help`` and their prose before the example as
    ``fullDescription``); each result has ``ruleId``/``ruleIndex``, ``level``,
    the short message, the finding's explanation as ``properties.explanation``,
    one location and ``partialFingerprints.primaryLocationLineHash``.  Relative
    paths use the ``%SRCROOT%`` base (the working directory).
    """
    ordered = sorted(findings, key=sort_key)
    known = {rule.code: rule for rule in rules}
    for finding in ordered:  # a code without registry entry still gets a rule
        code = finding.diagnostic.code
        if code.code not in known:
            known[code.code] = RuleInfo(
                code.code, code.name, finding.diagnostic.severity, True, code.name
            )
    rule_list = sorted(known.values(), key=lambda r: r.code)
    index = {rule.code: i for i, rule in enumerate(rule_list)}
    run: dict[str, object] = {
        "tool": {
            "driver": {
                "name": "chainlens",
                "version": version,
                "semanticVersion": version,
                "rules": [_sarif_rule(rule) for rule in rule_list],
            }
        },
        "columnKind": "unicodeCodePoints",
        "results": [_sarif_result(f, index[f.diagnostic.code.code]) for f in ordered],
        "properties": {
            "flinkVersions": [{**v.to_json(), "files": n} for v, n in flink_versions]
        },
    }
    if working_directory_uri is not None:
        run["originalUriBaseIds"] = {"%SRCROOT%": {"uri": working_directory_uri}}
        run["invocations"] = [
            {
                "executionSuccessful": True,
                "workingDirectory": {"uri": working_directory_uri},
            }
        ]
    doc = {"$schema": SARIF_SCHEMA, "version": SARIF_VERSION, "runs": [run]}
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def _sarif_rule(rule: RuleInfo) -> dict[str, object]:
    summary = rule.summary.strip() or rule.name
    doc = rule.doc.strip() or summary
    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": _limit(summary, 1024)},
        "fullDescription": {"text": _limit(_description(doc, summary), 1024)},
        "help": {"text": doc, "markdown": doc},
        "defaultConfiguration": {
            "level": _SARIF_LEVEL[rule.severity],
            "enabled": rule.enabled_by_default,
        },
        "properties": {
            "tags": ["pyflink", "flink"],
            "precision": "high",
            "problem.severity": {
                Severity.ERROR: "error",
                Severity.WARNING: "warning",
            }.get(rule.severity, "recommendation"),
        },
    }


def _sarif_result(finding: Finding, rule_index: int) -> dict[str, object]:
    d = finding.diagnostic
    result: dict[str, object] = {
        "ruleId": d.code.code,
        "ruleIndex": rule_index,
        "level": _SARIF_LEVEL[d.severity],
        "message": {"text": d.message},
        "locations": [{"physicalLocation": _physical(finding.path, d.range)}],
        "partialFingerprints": {
            "primaryLocationLineHash": finding.fingerprint or "0:1"
        },
    }
    if d.explanation:
        result["properties"] = {"explanation": d.explanation}
    if d.related:
        result["relatedLocations"] = [
            {
                "id": i,
                "physicalLocation": _physical(finding.path, r.range),
                "message": {"text": r.message},
            }
            for i, r in enumerate(d.related, start=1)
        ]
    if d.fixes:
        result["fixes"] = [
            {
                "description": {
                    "text": fix.description + ("" if fix.safe else " (unsafe)")
                },
                "artifactChanges": [
                    {
                        "artifactLocation": _artifact(finding.path),
                        "replacements": [
                            {
                                "deletedRegion": _region(e.range),
                                "insertedContent": {"text": e.new_text},
                            }
                            for e in fix.edits
                        ],
                    }
                ],
            }
            for fix in d.fixes
        ]
    return result


def _physical(path: str, where: SourceRange) -> dict[str, object]:
    return {
        "artifactLocation": _artifact(path_of(path, where)),
        "region": _region(where),
    }


def _artifact(path: str) -> dict[str, str]:
    posix = PurePosixPath(path.replace("\\", "/"))
    if posix.is_absolute():
        return {"uri": "file://" + quote(str(posix))}
    return {"uri": quote(str(posix)), "uriBaseId": "%SRCROOT%"}


def _region(where: SourceRange) -> dict[str, int]:
    start, end = where.start, where.end
    if (end.line, end.column) < (start.line, start.column):
        end = start
    return {
        "startLine": max(start.line, 1),
        "startColumn": start.column + 1,
        "endLine": max(end.line, 1),
        "endColumn": end.column + 1,
    }


def _first_paragraph(doc: str, fallback: str) -> str:
    for block in doc.split("\n\n"):
        text = " ".join(line.strip() for line in block.splitlines() if line.strip())
        text = text.lstrip("#").strip()
        if text and not text.lower().startswith(("what it does", "## ")):
            return text
    return fallback


def _description(doc: str, fallback: str) -> str:
    """The rule doc's prose before its example (what it does, why it is bad),
    one paragraph a line, without the section headings."""
    _, what, rest = doc.partition("## What it does")
    prose = (rest if what else doc).split("## Example", 1)[0]
    paragraphs = []
    for block in prose.split("\n\n"):
        lines = [line.strip() for line in block.splitlines()]
        text = " ".join(line for line in lines if line and not line.startswith("#"))
        if text:
            paragraphs.append(text)
    return "\n\n".join(paragraphs) or _first_paragraph(doc, fallback)


def _limit(text: str, size: int) -> str:
    return text if len(text) <= size else text[: size - 1] + "…"


# ---------------------------------------------------------------------------
# GitHub Actions workflow commands


def render_github(findings: Sequence[Finding]) -> str:
    """Return one workflow command per finding.

    ``::error file=...,line=...,col=...,title=...::message`` (``warning`` and
    ``notice`` for the lower severities), escaped as the Actions toolkit does.
    """
    out: list[str] = []
    for finding in sorted(findings, key=sort_key):
        d = finding.diagnostic
        start, end = d.range.start, d.range.end
        if (end.line, end.column) < (start.line, start.column):
            end = start
        props = [
            ("file", finding.path),
            ("line", str(start.line)),
            ("endLine", str(end.line)),
            ("col", str(start.column + 1)),
            ("endColumn", str(end.column + 1)),
            ("title", f"chainlens ({d.code.code} {d.code.name})"),
        ]
        rendered = ",".join(f"{k}={_escape_property(v)}" for k, v in props)
        message = f"{_where(finding.path, d.range)}: {d.code.code} {d.message}"
        out.append(
            f"::{_GITHUB_COMMAND[d.severity]} {rendered}::{_escape_data(message)}"
        )
    return "".join(line + "\n" for line in out)


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


# ---------------------------------------------------------------------------
# --statistics


def statistics(
    findings: Iterable[Finding], names: Mapping[str, str] | None = None
) -> list[dict[str, object]]:
    """Return per-code counts, most frequent first: code, name, count, fixable."""
    counts: Counter[str] = Counter()
    fixable: Counter[str] = Counter()
    seen_names: dict[str, str] = dict(names or {})
    for finding in findings:
        code = finding.diagnostic.code
        counts[code.code] += 1
        fixable[code.code] += finding.fixable
        seen_names.setdefault(code.code, code.name)
    return [
        {
            "code": code,
            "name": seen_names.get(code, ""),
            "count": count,
            "fixable": fixable[code],
        }
        for code, count in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    ]


def render_statistics(findings: Sequence[Finding], *, as_json: bool = False) -> str:
    """Return the ``--statistics`` table (or JSON list) of findings per rule."""
    rows = statistics(findings)
    if as_json:
        return json.dumps(rows, indent=2) + "\n"
    if not rows:
        return ""
    width = max(len(str(row["count"])) for row in rows)
    code_width = max(len(str(row["code"])) for row in rows)
    lines = []
    for row in rows:
        count = int(str(row["count"]))
        fix_count = int(str(row["fixable"]))
        marker = "[*]" if fix_count == count else ("[-]" if fix_count else "[ ]")
        lines.append(
            f"{str(row['count']).rjust(width)}  {str(row['code']).ljust(code_width)}  "
            f"{marker} {row['name']}"
        )
    return "\n".join(lines) + "\n"
