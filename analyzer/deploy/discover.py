"""The deployments of a project: descriptors found, read and linked.

One walk of the project (the default exclusions, hidden folders skipped but
``.github``/``.gitlab``) collects the files that may describe a deployment:
YAML and JSON files, shell scripts, Makefiles, Dockerfiles, Flink
configuration files.  Each is first tested with a substring search (no
parse), so a large repository costs one ``scandir`` per folder and one read
of the few candidates.  ``[tool.chainlens.deployments]`` can name the
descriptors instead (``paths``), leave some out (``exclude``), name the Flink
configuration file ``flink run`` jobs get (``flink-conf``) and map program
paths no ``COPY`` explains (``programs``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

import yaml

from chainlens.analyzer.config import (
    DEFAULT_EXCLUDE,
    DeploymentSettings,
    glob_matches_path,
)
from chainlens.analyzer.deploy import aws, commands, kubernetes
from chainlens.analyzer.deploy.flink_conf import read_config_file
from chainlens.analyzer.deploy.kubernetes import Context, SessionCluster
from chainlens.analyzer.deploy.yaml_nodes import (
    Source,
    YamlError,
    compose_all,
    get,
    prepare,
    scalar,
    sequence,
)
from chainlens.analyzer.files import read_text_bounded
from chainlens.analyzer.model.deployment import (
    Deployment,
    DeployProblem,
    DeployUnknown,
    Origin,
    Setting,
)

#: Descriptors larger than this are not read (reported).
MAX_DESCRIPTOR_BYTES: Final = 2_000_000
_YAML: Final = (".yaml", ".yml", ".json")
_SHELL: Final = (".sh", ".bash", ".mk")
_MAKEFILES: Final = ("Makefile", "makefile", "GNUmakefile")
_HIDDEN_KEPT: Final = (".github", ".gitlab", ".circleci", ".buildkite")
_KUSTOMIZATION: Final = ("kustomization.yaml", "kustomization.yml", "Kustomization")

#: Reads a file of the project as text (the work tree, or a git revision).
ReadText = Callable[[Path], str | None]


@dataclass(frozen=True, slots=True)
class Discovered:
    """The deployments found in a project."""

    root: Path
    deployments: tuple[Deployment, ...]
    #: the descriptor files read (relative to the root)
    files: tuple[str, ...]
    problems: tuple[DeployProblem, ...] = ()


@dataclass(slots=True)
class _Files:
    yaml: list[Path] = field(default_factory=list)
    shell: list[Path] = field(default_factory=list)
    dockerfiles: list[Path] = field(default_factory=list)
    flink_conf: list[Path] = field(default_factory=list)
    kustomizations: list[Path] = field(default_factory=list)


def _is_dockerfile(name: str) -> bool:
    lower = name.lower()
    return (
        lower == "dockerfile"
        or lower.startswith("dockerfile.")
        or lower.endswith(".dockerfile")
    )


def _walk(root: Path) -> _Files:
    found = _Files()
    excluded = set(DEFAULT_EXCLUDE)
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            name = entry.name
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if name in excluded or (
                    name.startswith(".") and name not in _HIDDEN_KEPT
                ):
                    continue
                stack.append(Path(entry.path))
                continue
            _classify(Path(entry.path), name, found)
    return found


def _classify(path: Path, name: str, found: _Files) -> None:
    if name in ("config.yaml", "flink-conf.yaml"):
        found.flink_conf.append(path)
    if name in _KUSTOMIZATION:
        found.kustomizations.append(path)
    if name.endswith(_YAML) or name == ".gitlab-ci.yml":
        found.yaml.append(path)
    elif name.endswith(_SHELL) or name in _MAKEFILES:
        found.shell.append(path)
    elif _is_dockerfile(name):
        found.dockerfiles.append(path)


def _shown(path: Path, root: Path) -> str:
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def _read(path: Path, read: ReadText | None) -> str | None:
    if read is not None:
        return read(path)
    try:  # a regular file of at most the limit (a FIFO is never waited on)
        return read_text_bounded(path, MAX_DESCRIPTOR_BYTES)
    except (OSError, UnicodeDecodeError):
        return None


def _nearest_first(dockerfiles: Sequence[Path], descriptor: Path) -> list[Path]:
    """Dockerfiles of the descriptor's folder and the folders above it first
    (nearest first), then the others."""

    def key(path: Path) -> tuple[int, int, str]:
        folder = path.parent
        if descriptor.parent == folder or descriptor.parent.is_relative_to(folder):
            return (0, -len(folder.parts), str(path))
        return (1, 0, str(path))

    return sorted(dockerfiles, key=key)


def discover_deployments(
    root: Path,
    settings: DeploymentSettings | None = None,
    *,
    read: ReadText | None = None,
    only: Iterable[Path] | None = None,
) -> Discovered:
    """Find and read the deployments of the project at ``root``.

    ``read`` reads a file's text (the default: the work tree); ``only``
    limits the descriptors read to these files (the Dockerfiles and Flink
    configuration files of the project are still used).
    """
    root = Path(os.path.abspath(root))
    files = _walk(root)
    overrides = dict(settings.programs) if settings is not None else {}
    if settings is not None and settings.paths is not None:
        chosen = {
            p
            for p in (*files.yaml, *files.shell)
            if any(glob_matches_path(g, p, settings.directory) for g in settings.paths)
        }
        files.yaml = [p for p in files.yaml if p in chosen]
        files.shell = [p for p in files.shell if p in chosen]
    if settings is not None and settings.exclude:

        def kept(path: Path) -> bool:
            return not any(
                glob_matches_path(g, path, settings.directory) for g in settings.exclude
            )

        files.yaml = [p for p in files.yaml if kept(p)]
        files.shell = [p for p in files.shell if kept(p)]
    if only is not None:
        wanted = {Path(os.path.abspath(p)) for p in only}
        files.yaml = [p for p in files.yaml if p in wanted]
        files.shell = [p for p in files.shell if p in wanted]
        for path in wanted:  # named explicitly: read even if not found by name
            if path not in files.yaml and path not in files.shell:
                if path.name.endswith(_YAML):
                    files.yaml.append(path)
                else:
                    files.shell.append(path)
    problems: list[DeployProblem] = []
    config_files = _config_files(root, files, settings, read)
    patched = _kustomized(root, files.kustomizations, read)
    sessions: dict[str, SessionCluster] = {}
    parsed: list[tuple[Path, str, Source, list[yaml.Node]]] = []
    for path in sorted(files.yaml):
        if (
            path.name in ("config.yaml", "flink-conf.yaml")
            or path.name in _KUSTOMIZATION
        ):
            continue
        text = _read(path, read)
        if text is None:
            continue
        interesting = (
            kubernetes.is_candidate(text)
            or aws.is_candidate(text)
            or (not path.name.endswith(".json") and commands.is_candidate(text))
        )
        if not interesting:
            continue
        source = prepare(text)
        shown = _shown(path, root)
        try:
            documents = compose_all(source)
        except YamlError as exc:
            if kubernetes.is_candidate(text) or aws.is_candidate(text):
                problems.append(
                    DeployProblem(
                        "unreadable",
                        f"not YAML: {exc.message}",
                        Origin(shown, exc.line),
                    )
                )
            continue
        parsed.append((path, text, source, list(documents)))
        if kubernetes.is_candidate(text):  # first pass: the session clusters
            for _ in kubernetes.read(
                path, shown, source, documents, Context(root), sessions
            ):
                pass
    deployments: list[Deployment] = []
    for path, text, source, documents in parsed:
        shown = _shown(path, root)
        context = Context(root, _nearest_first(files.dockerfiles, path), overrides)
        found: list[Deployment] = []
        if kubernetes.is_candidate(text):
            found.extend(
                kubernetes.read(path, shown, source, documents, context, sessions)
            )
        if aws.is_candidate(text):
            found.extend(aws.read(path, shown, source, documents, context))
        if not found and commands.is_candidate(text):
            found.extend(
                commands.read(
                    path,
                    shown,
                    list(commands.workflow_commands(text)),
                    context,
                    config_files,
                )
            )
        deployments.extend(_with_patches(d, path, patched) for d in found)
    for path in sorted(files.shell):
        text = _read(path, read)
        if text is None or not commands.is_candidate(text):
            continue
        shown = _shown(path, root)
        context = Context(root, _nearest_first(files.dockerfiles, path), overrides)
        deployments.extend(
            commands.read(
                path, shown, list(commands.shell_commands(text)), context, config_files
            )
        )
    if settings is not None and settings.flink_conf is not None:
        conf = (settings.directory / settings.flink_conf).resolve()
        key = _shown(conf.parent, root)
        if key in config_files:
            deployments = [
                _with_config_file(d, key, config_files[key]) for d in deployments
            ]
        else:
            problems.append(
                DeployProblem(
                    "unreadable",
                    f"[tool.chainlens.deployments] flink-conf {settings.flink_conf} "
                    "is no Flink configuration file of the repository",
                    Origin(_shown(settings.directory / "pyproject.toml", root), 1),
                )
            )
    return Discovered(
        root,
        tuple(deployments),
        tuple(sorted({d.origin.path for d in deployments})),
        tuple(problems),
    )


def _config_files(
    root: Path,
    files: _Files,
    settings: DeploymentSettings | None,
    read: ReadText | None,
) -> dict[str, list[tuple[str, Setting]]]:
    """The Flink configuration files, by folder (relative to the root);
    ``config.yaml`` wins over ``flink-conf.yaml`` in one folder, as Flink
    1.19+ reads it first."""
    out: dict[str, list[tuple[str, Setting]]] = {}
    for path in sorted(files.flink_conf, key=lambda p: p.name != "config.yaml"):
        key = _shown(path.parent, root)
        if key in out:
            continue
        text = _read(path, read)
        if text is None or (path.name == "config.yaml" and not _looks_like_flink(text)):
            continue
        keys, _collector = read_config_file(path, _shown(path, root))
        out[key] = keys
    return out


def _looks_like_flink(text: str) -> bool:
    from chainlens.analyzer.deploy.flink_conf import looks_like_flink_config

    return looks_like_flink_config(text) and "apiVersion" not in text


def _with_config_file(
    deployment: Deployment, key: str, keys: list[tuple[str, Setting]]
) -> Deployment:
    """The deployment with a configuration file under its own keys (Flink's
    precedence: ``-D``, ``flinkConfiguration`` and ``-p`` win)."""
    from dataclasses import replace

    if deployment.configuration_files:
        return deployment
    own = dict(deployment.configuration)
    merged = [(k, v) for k, v in keys if k not in own]
    return replace(
        deployment,
        configuration=(*merged, *deployment.configuration),
        configuration_files=(key,),
    )


def _kustomized(
    root: Path, kustomizations: Sequence[Path], read: ReadText | None
) -> dict[Path, Origin]:
    """Files and folders whose resources a kustomization patches."""
    out: dict[Path, Origin] = {}
    for path in kustomizations:
        text = _read(path, read)
        if text is None:
            continue
        try:
            documents = compose_all(prepare(text))
        except YamlError:
            continue
        for document in documents:
            patch = None
            for key in ("patches", "patchesStrategicMerge", "patchesJson6902"):
                node = get(document, key)
                if node is not None:
                    patch = node
            if patch is None:
                continue
            origin = Origin(_shown(path, root), patch.start_mark.line + 1, "patches")
            for item in sequence(get(document, "resources")) or []:
                value = scalar(item)
                if value is not None:
                    out[(path.parent / value).resolve()] = origin
    return out


def _with_patches(
    deployment: Deployment, path: Path, patched: dict[Path, Origin]
) -> Deployment:
    from dataclasses import replace

    resolved = path.resolve()
    for target, origin in patched.items():
        if resolved == target or resolved.is_relative_to(target):
            note = DeployUnknown(
                "kustomize patch",
                "a kustomization patches this resource; the values shown are the "
                "resource's own, before the patch",
                origin,
            )
            return replace(deployment, unknowns=(*deployment.unknowns, note))
    return deployment


class DeploymentNotFoundError(Exception):
    """``--deployment NAME`` names none (or several) of the project's deployments."""


def select(discovered: Discovered, wanted: str, cwd: Path) -> list[Deployment]:
    """The deployments ``wanted`` names: a deployment's name, or a descriptor
    file (every deployment in it)."""
    as_path = Path(os.path.abspath(cwd / wanted))
    by_file = [
        d
        for d in discovered.deployments
        if (discovered.root / d.origin.path).resolve() == as_path.resolve()
    ]
    if by_file:
        return by_file
    by_name = [d for d in discovered.deployments if d.name == wanted]
    if len(by_name) > 1:
        raise DeploymentNotFoundError(
            f"{wanted!r} names {len(by_name)} deployments ("
            + ", ".join(str(d.origin) for d in by_name)
            + "): give the descriptor file"
        )
    if by_name:
        return by_name
    known = ", ".join(sorted({d.name for d in discovered.deployments})) or "none"
    raise DeploymentNotFoundError(
        f"no deployment named {wanted!r} in {discovered.root} (found: {known})"
    )
