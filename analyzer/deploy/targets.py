"""Deployments as targets of ``graph``, ``check`` and ``savepoint``.

:func:`project_deployments` finds a project's deployments (its root: the git
repository, else the folder given); :func:`deployment_at` reads one again at
a git revision (a change to a descriptor is gated like a change to code);
:func:`describe` says, for every output, which deployment it is about and
where each value comes from; :func:`restore_verdict` what the deployment's
upgrade mode means for the savepoint gate.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from chainlens.analyzer.config import ConfigLayer, ConfigResolver
from chainlens.analyzer.deploy.apply import DeploymentResolver
from chainlens.analyzer.deploy.discover import (
    DeploymentNotFoundError,
    Discovered,
    discover_deployments,
    select,
)
from chainlens.analyzer.history import HistoryError, Tree, repository_root
from chainlens.analyzer.model.deployment import STATELESS, Deployment
from chainlens.analyzer.model.document import Document


def project_root(start: Path) -> Path:
    """The repository holding ``start`` (git's top level), else ``start``."""
    try:
        return repository_root(start)
    except HistoryError:
        return start if start.is_dir() else start.parent


def project_deployments(start: Path, resolver: ConfigResolver) -> Discovered:
    """The deployments of the project ``start`` is in."""
    root = project_root(Path(os.path.abspath(start)))
    return discover_deployments(root, resolver.deployment_settings(root))


def choose(discovered: Discovered, wanted: str | None, cwd: Path) -> list[Deployment]:
    """The deployments ``--deployment NAME|FILE`` names, or with None every
    deployment (``--all-deployments``)."""
    if wanted is None:
        if not discovered.deployments:
            raise DeploymentNotFoundError(
                f"no deployment found in {discovered.root} (FlinkDeployment, "
                "FlinkSessionJob, flink run, Managed Flink applications)"
            )
        return list(discovered.deployments)
    return select(discovered, wanted, cwd)


def deployment_at(
    deployment: Deployment,
    root: Path,
    resolver: ConfigResolver,
    read_at_base: object,
) -> Deployment | None:
    """The same deployment as the base revision describes it (None: its
    descriptor or the deployment did not exist then).  ``read_at_base`` reads
    a file at the base revision (``Tree.text_of``)."""
    descriptor = root / deployment.origin.path
    found = discover_deployments(
        root,
        resolver.deployment_settings(root),
        read=read_at_base,  # type: ignore[arg-type]
        only=[descriptor],
    )
    same = [d for d in found.deployments if d.name == deployment.name]
    if not same and deployment.kind.startswith("flink run"):
        # a command's name is its line: the file's only command is the same
        same = [d for d in found.deployments if d.origin.path == deployment.origin.path]
        same = same if len(same) == 1 else []
    return same[0] if same else None


def deployed_programs(discovered: Discovered) -> dict[str, Deployment]:
    """Each program a deployment runs (repository-relative ``/`` path) and that
    deployment; of several deployments of one program, the first by name (and
    descriptor, line)."""
    found: dict[str, Deployment] = {}
    ordered = sorted(
        discovered.deployments,
        key=lambda d: (d.name, d.origin.path, d.origin.line),
    )
    for deployment in ordered:
        if deployment.program_path is None:
            continue
        try:
            rel = Path(deployment.program_path).relative_to(discovered.root)
        except ValueError:
            continue
        found.setdefault(rel.as_posix(), deployment)
    return found


def deployments_at_commit(
    programs: Mapping[str, Deployment],
    root: Path,
    resolver: ConfigResolver,
    commit: str,
) -> dict[str, Deployment | None]:
    """The deployments of ``programs`` (:func:`deployed_programs`) as the
    revision ``commit`` describes them, each read again by
    :func:`deployment_at` from the blobs of that commit (nothing checked out):
    None where its descriptor or the deployment did not exist then.  Raises
    :class:`~chainlens.analyzer.history.HistoryError` when git cannot answer."""
    tree = Tree(root, commit)
    return {
        rel: deployment_at(deployment, root, resolver, tree.text_of)
        for rel, deployment in programs.items()
    }


def restore_verdict(deployment: Deployment) -> str | None:
    """What the gate says instead of comparing when the deployment restores
    nothing (None: it restores; compare)."""
    mode = deployment.upgrade_mode
    if mode is None or mode.value != STATELESS:
        return None
    return (
        f"{deployment.label} upgrades stateless ({mode.value}, "
        f"{mode.origin.describe()}): the job starts without state, nothing is "
        "restored, so no savepoint rule applies"
    )


def describe(deployment: Deployment) -> list[str]:
    """The lines every text output starts with for a deployment: what it is,
    each value and where it comes from, what is unknown, what is wrong."""
    lines = [f"Deployment {deployment.name} ({deployment.kind}, {deployment.origin})"]

    def add(label: str, value: str, origin: str) -> None:
        lines.append(f"  {label}: {value} ({origin})")

    if deployment.program is not None:
        where = deployment.program_path or "not found in the repository"
        via = f"; {deployment.program_mapping}" if deployment.program_mapping else ""
        add(
            "program",
            f"{deployment.program.value} -> {where}",
            deployment.program.origin.describe() + via,
        )
    if deployment.module is not None:
        add(
            "module",
            f"{deployment.module.value} -> {deployment.program_path or 'not found'}",
            deployment.module.origin.describe(),
        )
    if deployment.flink_version is not None:
        add(
            "Flink",
            deployment.flink_version.value,
            deployment.flink_version.origin.describe(),
        )
    for key, setting in deployment.configuration:
        add(key, setting.value, setting.origin.describe())
    if deployment.arguments is not None and deployment.arguments_origin is not None:
        shown = " ".join(deployment.arguments) or "none"
        add("arguments", shown, deployment.arguments_origin.describe())
    elif deployment.arguments is None:
        lines.append("  arguments: not known (see the unknowns)")
    for label, given in (
        ("upgrade mode", deployment.upgrade_mode),
        ("allowNonRestoredState", deployment.allow_non_restored_state),
        ("initial savepoint", deployment.initial_savepoint),
    ):
        if given is not None:
            add(label, given.value, given.origin.describe())
    for unknown in deployment.unknowns:
        lines.append(f"  {unknown.describe()}")
    for problem in deployment.problems:
        lines.append(f"  {problem.origin}: error: {problem.message}")
    return lines


def base_settings(
    deployment: Deployment,
    cli: ConfigLayer | None,
    config_file: str | None,
    isolated: bool,
) -> Callable[[Path, Tree], ConfigResolver]:
    """The base's settings for ``savepoint --base`` with a deployment: the
    deployment as the base revision describes it (so a change to the
    descriptor alone is gated); a deployment new since the base is compared
    as the work tree's (nothing at the base to restore differently)."""

    def at_base(root: Path, tree: Tree) -> ConfigResolver:
        plain = ConfigResolver(cli, config_file=config_file, isolated=isolated)
        before = deployment_at(deployment, root, plain, tree.text_of)
        return DeploymentResolver(
            before or deployment, cli, config_file=config_file, isolated=isolated
        )

    return at_base


def run_document(
    deployment: Deployment, *, verdict: str | None = None, result: object = None
) -> dict[str, object]:
    """One deployment's part of a command's JSON document: the deployment, the
    gate's verdict when it decided without comparing, and the command's own
    document for it (``result``: a :class:`Document`'s data)."""
    document: dict[str, object] = {"deployment": deployment.to_json()}
    if verdict is not None:
        document["verdict"] = verdict
    if result is not None:
        document["result"] = result
    return document


def render_runs_json(documents: list[dict[str, object]]) -> Document:
    """``--deployment``/``--all-deployments`` with ``--format json``: one
    document, a part per deployment."""
    document = {"deployments": documents}
    return Document(json.dumps(document, indent=2) + "\n", document)
