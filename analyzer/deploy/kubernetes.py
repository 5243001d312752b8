"""Flink Kubernetes Operator resources: ``FlinkDeployment`` and ``FlinkSessionJob``.

Read from YAML (several documents per file), never applied.  What the
operator makes of them (``FlinkConfigBuilder``): ``spec.flinkConfiguration``
is the cluster's configuration, ``spec.job.parallelism`` becomes
``parallelism.default``, ``spec.job.args`` go to PyFlink's ``PythonDriver``
(``-py``/``--python``, ``-pym``, ``-pyfs``, then the program's own
arguments), ``spec.job.upgradeMode`` says whether an upgrade restores state
(``stateless``, ``savepoint``, ``last-state``), ``allowNonRestoredState`` and
``initialSavepointPath`` how.  A ``FlinkSessionJob`` runs on the session
cluster of the ``FlinkDeployment`` named by ``spec.deploymentName``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from chainlens.analyzer.deploy import program_args
from chainlens.analyzer.deploy.programs import Located, locate, locate_module
from chainlens.analyzer.deploy.values import Collector
from chainlens.analyzer.deploy.yaml_nodes import (
    Source,
    get,
    items,
    line_of,
    scalar,
    sequence,
)
from chainlens.analyzer.model.deployment import Deployment, Origin, Setting

KINDS = ("FlinkDeployment", "FlinkSessionJob")
_PYTHON_DRIVER = "org.apache.flink.client.python.PythonDriver"
_VERSION = re.compile(r"^v(\d+)_(\d+)$")
_IMAGE_VERSION = re.compile(r"(?:^|[^0-9.])(\d+\.\d+)(?:\.\d+)?(?:$|[^0-9.])")


@dataclass(slots=True)
class Context:
    """What a reader needs to find programs in the repository."""

    root: Path
    dockerfiles: list[Path] = field(default_factory=list)
    overrides: dict[str, str] = field(default_factory=dict)


@dataclass(slots=True)
class SessionCluster:
    """A ``FlinkDeployment`` without a job: the cluster session jobs run on."""

    name: str
    flink_version: Setting | None
    configuration: list[tuple[str, Setting]]


def is_candidate(text: str) -> bool:
    """Cheap test: may the text hold an operator resource?"""
    return "FlinkDeployment" in text or "FlinkSessionJob" in text


def read(
    path: Path,
    shown: str,
    source: Source,
    documents: list[yaml.Node],
    context: Context,
    sessions: dict[str, SessionCluster],
) -> Iterator[Deployment]:
    """The deployments of the resources in ``documents`` (one file)."""
    for document in documents:
        kind = scalar(get(document, "kind"))
        api = scalar(get(document, "apiVersion")) or ""
        if kind not in KINDS or not api.startswith("flink.apache.org/"):
            continue
        collector = Collector(shown, source)
        found = _read_one(path, kind, document, collector, context, sessions)
        if found is not None:
            yield found


def flink_line(text: str) -> str | None:
    """``v1_20`` -> ``1.20``."""
    match = _VERSION.match(text.strip())
    return f"{match.group(1)}.{match.group(2)}" if match else None


def image_line(image: str) -> str | None:
    """The Flink line an image's tag names (``flink:1.20-java17`` -> 1.20)."""
    tag = image.rpartition(":")[2] if ":" in image.rpartition("/")[2] else ""
    match = _IMAGE_VERSION.search(tag)
    return match.group(1) if match else None


def configuration(
    node: yaml.Node | None, collector: Collector, field: str
) -> list[tuple[str, Setting]]:
    """``flinkConfiguration`` (flat keys, or nested maps joined with dots)."""
    out: list[tuple[str, Setting]] = []

    def walk(current: yaml.Node, prefix: str) -> None:
        for key, value, _line in items(current):
            full = f"{prefix}.{key}" if prefix else key
            if isinstance(value, yaml.MappingNode):
                walk(value, full)
                continue
            if isinstance(value, yaml.SequenceNode):
                texts = [scalar(v) or "" for v in value.value]
                setting = collector.text(
                    ";".join(texts), line_of(value), f"{field}.{full}"
                )
            else:
                setting = collector.node(value, f"{field}.{full}")
            if setting is not None:
                out.append((full, setting))

    if node is not None:
        walk(node, "")
    return out


def _read_one(
    path: Path,
    kind: str,
    document: yaml.Node,
    collector: Collector,
    context: Context,
    sessions: dict[str, SessionCluster],
) -> Deployment | None:
    name_node = get(document, "metadata", "name")
    name = scalar(name_node) or f"{path.stem}:{line_of(document)}"
    name = collector.shown_text(name)
    spec = get(document, "spec")
    version = collector.node(get(spec, "flinkVersion"), "spec.flinkVersion")
    if version is not None:
        line = flink_line(version.value)
        if line is None:
            collector.problem(
                "invalid-value",
                f"spec.flinkVersion {version.value!r} is not a version of the "
                "operator's form (v1_20, v2_0)",
                version.origin.line,
                "spec.flinkVersion",
            )
            version = None
        else:
            version = Setting(line, version.origin)
    image = collector.node(get(spec, "image"), "spec.image")
    config = configuration(
        get(spec, "flinkConfiguration"), collector, "spec.flinkConfiguration"
    )
    job = get(spec, "job")
    if kind == "FlinkDeployment" and job is None:
        sessions[name] = SessionCluster(name, version, config)
        return None
    if kind == "FlinkSessionJob":
        cluster_name = scalar(get(spec, "deploymentName"))
        cluster = sessions.get(cluster_name or "")
        if cluster is not None:
            version = version or cluster.flink_version
            own = {k for k, _ in config}
            config = [
                *[(k, v) for k, v in cluster.configuration if k not in own],
                *config,
            ]
        elif cluster_name:
            collector.unknown(
                "session cluster",
                f"the FlinkDeployment {cluster_name!r} (its Flink version and "
                "configuration) is not in the files read",
                line_of(get(spec, "deploymentName") or document),
                "spec.deploymentName",
            )
    if version is None and image is not None:
        line = image_line(image.value)
        if line is not None:
            version = Setting(line, image.origin)
    entry = scalar(get(job, "entryClass")) or ""
    args_node = get(job, "args")
    tokens: list[program_args.Token] = []
    args_known = True
    for item in sequence(args_node) or []:
        text = scalar(item)
        if text is None:
            args_known = False
            continue
        why = collector.why_unknown(text)
        if why is not None:
            collector.unknown("spec.job.args", why, line_of(item), "spec.job.args")
            args_known = False
        tokens.append(program_args.Token(collector.shown_text(text), line_of(item)))
    if args_node is not None and sequence(args_node) is None:
        why = collector.why_unknown(scalar(args_node) or "")
        collector.unknown(
            "spec.job.args",
            why or "not a list of strings",
            line_of(args_node),
            "spec.job.args",
        )
        args_known = False
    parsed = program_args.parse(tokens, run=False)
    python = "python" in parsed.values or "module" in parsed.values
    if entry and entry != _PYTHON_DRIVER and not python:
        return None  # a Java job
    if not entry and "python" not in parsed.values and "module" not in parsed.values:
        return None
    here = path.parent
    program = module = None
    located = Located(None, None)
    if "python" in parsed.values:
        token = parsed.values["python"]
        program = collector.text(token.text, token.line, "spec.job.args -py")
        if program is not None:
            located = locate(
                program.value,
                token.line,
                "spec.job.args -py",
                collector,
                here=here,
                root=context.root,
                dockerfiles=context.dockerfiles,
                overrides=context.overrides,
                in_image=True,
            )
    elif "module" in parsed.values:
        token = parsed.values["module"]
        module = collector.text(token.text, token.line, "spec.job.args -pym")
        files = parsed.values.get("files")
        if module is not None:
            located = locate_module(
                module.value,
                [f for f in (files.text.split(",") if files else []) if f],
                token.line,
                "spec.job.args -pym",
                collector,
                here=here,
                root=context.root,
                dockerfiles=context.dockerfiles,
                overrides=context.overrides,
                in_image=True,
            )
    else:
        collector.problem(
            "program-missing",
            "PythonDriver is given neither -py nor -pym: there is no program to run",
            line_of(args_node or job or document),
            "spec.job.args",
        )
    for token in parsed.missing:
        collector.problem(
            "invalid-value",
            f"{token.text} lacks its value",
            token.line,
            "spec.job.args",
        )
    arguments = tuple(t.text for t in parsed.arguments) if args_known else None
    arguments_origin = (
        Origin(collector.shown, parsed.arguments[0].line, "spec.job.args")
        if parsed.arguments
        else Origin(
            collector.shown,
            line_of(args_node if args_node is not None else job or document),
            "spec.job.args",
        )
    )
    parallelism = collector.node(get(job, "parallelism"), "spec.job.parallelism")
    upgrade = collector.node(get(job, "upgradeMode"), "spec.job.upgradeMode")
    if upgrade is None and get(job, "upgradeMode") is None:
        # the operator's default (JobSpec.upgradeMode = stateless)
        upgrade = Setting(
            "stateless",
            Origin(collector.shown, line_of(job or document), "spec.job.upgradeMode"),
        )
    elif upgrade is not None and upgrade.value not in (
        "stateless",
        "savepoint",
        "last-state",
    ):
        collector.problem(
            "invalid-value",
            f"spec.job.upgradeMode {upgrade.value!r} is none of stateless, "
            "savepoint, last-state",
            upgrade.origin.line,
            "spec.job.upgradeMode",
        )
        upgrade = None
    allow = collector.node(
        get(job, "allowNonRestoredState"), "spec.job.allowNonRestoredState"
    )
    if allow is not None:
        allow = Setting(allow.value.lower(), allow.origin)
    initial = collector.node(
        get(job, "initialSavepointPath"), "spec.job.initialSavepointPath"
    )
    if parallelism is not None:
        # FlinkConfigBuilder: spec.job.parallelism is parallelism.default
        config = [(k, v) for k, v in config if k != "parallelism.default"]
        config.append(("parallelism.default", parallelism))
    return Deployment(
        name=name,
        kind=kind,
        origin=Origin(collector.shown, line_of(document), f"{kind} {name}"),
        program=program,
        program_path=located.path,
        program_mapping=located.how,
        module=module,
        arguments=arguments,
        arguments_origin=arguments_origin,
        parallelism=parallelism,
        flink_version=version,
        image=image,
        configuration=tuple(config),
        upgrade_mode=upgrade,
        allow_non_restored_state=allow,
        initial_savepoint=initial,
        unknowns=tuple(collector.unknowns),
        problems=tuple(collector.problems),
    )
