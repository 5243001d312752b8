"""A deployment descriptor open in an editor: its findings at its own lines.

For each deployment the open text declares (read from the editor's buffer,
the rest of the project from disk):

* CL301 when its program does not exist, at the line naming it;
* when it restores state (its upgrade mode is not ``stateless``), the
  savepoint gate of ``chainlens savepoint --deployment NAME --base REF``: the
  program with the deployment as the base revision describes it against the
  program with the deployment as the buffer says.  A finding that breaks the
  restore (CL201-CL205) is reported on each line of the descriptor whose value
  changed since the base (the parallelism, a Flink key, the Flink version, the
  program's arguments), naming the change; where no value of the descriptor
  changed, the program's own change is the cause and its file reports it.

Also :func:`deployment_values`, the lines a hover shows of the deployment a
program is analysed for.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from chainlens.analyzer.config import Config, ConfigResolver
from chainlens.analyzer.deploy.apply import DeploymentResolver
from chainlens.analyzer.deploy.discover import (
    MAX_DESCRIPTOR_BYTES,
    discover_deployments,
)
from chainlens.analyzer.deploy.findings import deployment_findings
from chainlens.analyzer.deploy.targets import (
    base_settings,
    deployment_at,
    project_root,
)
from chainlens.analyzer.files import read_text_bounded
from chainlens.analyzer.gate.compare import compare_with_base
from chainlens.analyzer.history import HistoryError, Tree, base_for
from chainlens.analyzer.model.deployment import STATELESS, Deployment, Setting
from chainlens.analyzer.model.diagnostic import (
    MESSAGE_LIMIT,
    Diagnostic,
    RelatedLocation,
    clipped,
)
from chainlens.analyzer.model.source import SourcePosition, SourceRange

#: the rules of the gate reported in a descriptor
GATE_RULES = ("CL201", "CL202", "CL203", "CL204", "CL205")
#: file names of descriptors the editor checks
DESCRIPTOR_SUFFIXES = (".yaml", ".yml")


def is_descriptor_name(path: Path) -> bool:
    """Whether an open file may be a deployment descriptor the editor checks."""
    return path.name.endswith(DESCRIPTOR_SUFFIXES)


def descriptor_diagnostics(
    path: Path,
    text: str,
    resolver: ConfigResolver,
    base: str | None,
    *,
    gate: bool = True,
) -> tuple[Diagnostic, ...]:
    """The findings of the deployments ``text`` (the buffer of ``path``)
    declares, at their lines; ``base`` is the git revision of the gate
    (None: the merge-base with the default branch; ``gate`` False: CL301
    only)."""
    path = Path(os.path.abspath(path))
    root = project_root(path)

    def read(file: Path) -> str | None:
        if Path(os.path.abspath(file)) == path:
            return text
        try:
            return read_text_bounded(file, MAX_DESCRIPTOR_BYTES)
        except (OSError, UnicodeDecodeError):
            return None

    found = discover_deployments(
        root, resolver.deployment_settings(root), read=read, only=[path]
    )
    out: list[Diagnostic] = []
    for deployment in found.deployments:
        config = resolver.config_for(path)
        for finding in deployment_findings(deployment, root, config, cwd=root):
            out.append(finding.diagnostic)
        if deployment.program_path is None or deployment.problems:
            continue
        mode = deployment.upgrade_mode
        if not gate or mode is None or mode.value == STATELESS:
            continue
        out.extend(_gate(deployment, root, resolver, base))
    return tuple(out)


def _gate(
    deployment: Deployment, root: Path, resolver: ConfigResolver, base: str | None
) -> list[Diagnostic]:
    assert deployment.program_path is not None
    current = DeploymentResolver(deployment, resolver.cli)
    at_base = base_settings(deployment, resolver.cli, None, False)
    try:
        compared = compare_with_base(
            [deployment.program_path],
            current,
            base,
            cwd=root,
            select=GATE_RULES,
            at_base=at_base,
        )
    except HistoryError:
        return []  # no git base: nothing was deployed from it
    findings = [
        f
        for file in compared.files
        for f in file.findings
        if f.diagnostic.code.code in GATE_RULES
        and f.diagnostic.severity.value == "error"
    ]
    if not findings:
        return []
    before = _base_deployment(deployment, root, resolver, base)
    changes = _changes(before, deployment) if before is not None else []
    out = []
    for line, what in changes:
        where = SourceRange(SourcePosition(line, 0), SourcePosition(line + 1, 0))
        for finding in findings:
            diagnostic = finding.diagnostic
            at = diagnostic.range.start
            related = RelatedLocation(
                diagnostic.range, f"{finding.path}:{at.line}: {diagnostic.message}"
            )
            said = (
                f"{what} breaks the restore of {deployment.label}: "
                f"{diagnostic.message} [{finding.path}:{at.line}:{at.column + 1}]"
            )
            suffix = f" [{finding.path.rsplit('/', 1)[-1]}:{at.line}]"
            message = (
                clipped(
                    f"{what} breaks the restore: {diagnostic.message}",
                    MESSAGE_LIMIT - len(suffix),
                )
                + suffix
            )
            out.append(
                Diagnostic(
                    diagnostic.code,
                    message,
                    diagnostic.severity,
                    where,
                    related=(related,),
                    explanation=f"{said}. {diagnostic.explanation}".rstrip(),
                )
            )
    return out


def _base_deployment(
    deployment: Deployment, root: Path, resolver: ConfigResolver, base: str | None
) -> Deployment | None:
    """The deployment as the base revision describes it."""
    try:
        chosen = base_for(root, base)
    except HistoryError:
        return None
    tree = Tree(root, chosen.commit)
    return deployment_at(deployment, root, resolver, tree.text_of)


def _changes(before: Deployment, after: Deployment) -> list[tuple[int, str]]:
    """(line, what changed) of each value of ``after`` that differs from
    ``before``."""
    out: list[tuple[int, str]] = []

    def compare(label: str, old: Setting | None, new: Setting | None) -> None:
        if new is None:
            return
        if old is None or old.value != new.value:
            was = old.value if old is not None else "not set"
            out.append((new.origin.line, f"{label} {was} -> {new.value}"))

    compare("parallelism", before.parallelism, after.parallelism)
    compare("Flink version", before.flink_version, after.flink_version)
    old_keys = dict(before.configuration)
    for key, setting in after.configuration:
        if key == "parallelism.default" and after.parallelism is not None:
            continue
        compare(key, old_keys.get(key), setting)
    if (
        after.arguments is not None
        and after.arguments_origin is not None
        and before.arguments != after.arguments
    ):
        was = " ".join(before.arguments or ()) or "none"
        now = " ".join(after.arguments) or "none"
        out.append((after.arguments_origin.line, f"the arguments {was} -> {now}"))
    return sorted(set(out))


def deployment_values(config: Config) -> list[str]:
    """What the deployment a program is analysed for sets, one line each
    (``parallelism 8 in deployment prod, k8s/prod.yaml:23``); empty without
    one."""
    deployment = config.deployment
    if deployment is None:
        return []
    lines = []
    shown: Sequence[tuple[str, Setting | None]] = (
        ("parallelism", deployment.parallelism),
        ("Flink", deployment.flink_version),
        ("upgrade mode", deployment.upgrade_mode),
    )
    for label, setting in shown:
        if setting is not None:
            lines.append(
                f"{label} {setting.value} in deployment {deployment.name}, "
                f"{setting.origin}"
            )
    for key, setting in deployment.configuration:
        if key == "parallelism.default" and deployment.parallelism is not None:
            continue
        lines.append(
            f"{key} {setting.value} in deployment {deployment.name}, {setting.origin}"
        )
    if deployment.arguments is not None and deployment.arguments_origin is not None:
        lines.append(
            f"arguments {' '.join(deployment.arguments) or 'none'} in deployment "
            f"{deployment.name}, {deployment.arguments_origin}"
        )
    return lines
