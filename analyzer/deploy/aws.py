"""AWS Managed Service for Apache Flink applications (``describe-application``
output, CloudFormation ``AWS::KinesisAnalyticsV2::Application``, JSON or YAML).

What the service does with them: ``RuntimeEnvironment`` (``FLINK-1_20``) is
the Flink version; ``ParallelismConfiguration`` with ``ConfigurationType:
CUSTOM`` gives the parallelism (``DEFAULT``: 1); the property group
``kinesis.analytics.flink.run.options`` names the Python program
(``python``, relative to the code archive's root) or module (``pyModule``);
the program gets no command-line arguments.  Snapshots restore on update
unless ``SnapshotsEnabled`` is false or the restore type is
``SKIP_RESTORE_FROM_SNAPSHOT``; ``AllowNonRestoredState`` of the run
configuration drops unclaimed state.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import yaml

from chainlens.analyzer.deploy.kubernetes import Context
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
from chainlens.analyzer.model.deployment import (
    SAVEPOINT,
    STATELESS,
    Deployment,
    Origin,
    Setting,
)

RUN_OPTIONS = "kinesis.analytics.flink.run.options"
_RUNTIME = re.compile(r"^FLINK-(\d+)_(\d+)$")
_CFN_TYPE = "AWS::KinesisAnalyticsV2::Application"


def is_candidate(text: str) -> bool:
    """Cheap test: may the text hold a Managed Flink application?"""
    return "RuntimeEnvironment" in text and "FLINK-" in text


def _first(node: yaml.Node | None, *paths: tuple[str, ...]) -> yaml.Node | None:
    for path in paths:
        found = get(node, *path)
        if found is not None:
            return found
    return None


def applications(document: yaml.Node) -> Iterator[tuple[str, yaml.Node, str]]:
    """``(name, application node, field prefix)`` of each application of a
    document: a describe-application answer, or CloudFormation resources."""
    detail = get(document, "ApplicationDetail")
    if detail is not None:
        yield (
            scalar(get(detail, "ApplicationName")) or "application",
            detail,
            ("ApplicationDetail"),
        )
        return
    for key, resource, _line in items(get(document, "Resources")):
        if scalar(get(resource, "Type")) == _CFN_TYPE:
            props = get(resource, "Properties")
            if props is not None:
                name = scalar(get(props, "ApplicationName")) or key
                yield name, props, f"Resources.{key}.Properties"
    if get(document, "RuntimeEnvironment") is not None:
        yield scalar(get(document, "ApplicationName")) or "application", document, ""


def read(
    path: Path,
    shown: str,
    source: Source,
    documents: list[yaml.Node],
    context: Context,
) -> Iterator[Deployment]:
    """The Managed Flink applications of one file."""
    for document in documents:
        for name, app, prefix in applications(document):
            collector = Collector(shown, source)
            found = _read_app(path, name, app, prefix, collector, context)
            if found is not None:
                yield found


def _read_app(
    path: Path,
    name: str,
    app: yaml.Node,
    prefix: str,
    collector: Collector,
    context: Context,
) -> Deployment | None:
    def field(*parts: str) -> str:
        return ".".join(p for p in (prefix, *parts) if p)

    runtime = collector.node(
        get(app, "RuntimeEnvironment"), field("RuntimeEnvironment")
    )
    version = None
    if runtime is not None:
        match = _RUNTIME.match(runtime.value)
        if match is None:
            return None  # SQL or another runtime
        version = Setting(f"{match.group(1)}.{match.group(2)}", runtime.origin)
    config = _first(
        app,
        ("ApplicationConfigurationDescription",),
        ("ApplicationConfiguration",),
    )
    config_name = (
        "ApplicationConfigurationDescription"
        if get(app, "ApplicationConfigurationDescription") is not None
        else "ApplicationConfiguration"
    )
    flink = _first(
        config,
        ("FlinkApplicationConfigurationDescription",),
        ("FlinkApplicationConfiguration",),
    )
    par = _first(
        flink,
        ("ParallelismConfigurationDescription",),
        ("ParallelismConfiguration",),
    )
    parallelism = None
    if par is not None:
        kind = scalar(get(par, "ConfigurationType")) or "DEFAULT"
        if kind == "CUSTOM":
            parallelism = collector.node(
                get(par, "Parallelism"), field(config_name, "Parallelism")
            )
        else:
            parallelism = Setting(
                "1",
                Origin(
                    collector.shown,
                    line_of(par),
                    field(config_name, "ParallelismConfiguration (DEFAULT)"),
                ),
            )
        auto = scalar(get(par, "AutoScalingEnabled"))
        if auto is not None and auto.lower() == "true":
            collector.unknown(
                "parallelism",
                "AutoScalingEnabled: the service changes the parallelism while "
                "the application runs",
                line_of(get(par, "AutoScalingEnabled") or par),
                "AutoScalingEnabled",
            )
    else:
        parallelism = Setting(
            "1",
            Origin(
                collector.shown, line_of(app), "parallelism (the service's default)"
            ),
        )
    groups = _first(
        config,
        ("EnvironmentPropertyDescriptions", "PropertyGroupDescriptions"),
        ("EnvironmentProperties", "PropertyGroups"),
    )
    options: dict[str, tuple[yaml.Node, int]] = {}
    for group in sequence(groups) or []:
        if scalar(get(group, "PropertyGroupId")) != RUN_OPTIONS:
            continue
        for key, value, _line in items(get(group, "PropertyMap")):
            options[key] = (value, line_of(value))
    located = Located(None, None)
    program = module = None
    here = path.parent
    if "python" in options:
        program = collector.node(options["python"][0], f"{RUN_OPTIONS}.python")
        if program is not None:
            located = locate(
                program.value,
                program.origin.line,
                f"{RUN_OPTIONS}.python",
                collector,
                here=here,
                root=context.root,
                dockerfiles=(),
                overrides=context.overrides,
                in_image=False,
            )
    elif "pyModule" in options:
        module = collector.node(options["pyModule"][0], f"{RUN_OPTIONS}.pyModule")
        files = scalar(options["pyFiles"][0]) if "pyFiles" in options else None
        if module is not None:
            located = locate_module(
                module.value,
                [f for f in (files or "").split(",") if f],
                module.origin.line,
                f"{RUN_OPTIONS}.pyModule",
                collector,
                here=here,
                root=context.root,
                dockerfiles=(),
                overrides=context.overrides,
                in_image=False,
            )
    else:
        if groups is None and version is None:
            return None
        collector.problem(
            "program-missing",
            f"no property group {RUN_OPTIONS} with 'python' or 'pyModule': the "
            "application runs no Python program (a Java application?)",
            line_of(groups if groups is not None else app),
            RUN_OPTIONS,
        )
        return None
    snapshots = _first(
        config,
        ("ApplicationSnapshotConfigurationDescription", "SnapshotsEnabled"),
        ("ApplicationSnapshotConfiguration", "SnapshotsEnabled"),
    )
    run = _first(
        config,
        ("RunConfigurationDescription",),
    ) or get(app, "RunConfiguration")
    restore_type = _first(
        run,
        ("ApplicationRestoreConfigurationDescription", "ApplicationRestoreType"),
        ("ApplicationRestoreConfiguration", "ApplicationRestoreType"),
    )
    upgrade = Setting(SAVEPOINT, Origin(collector.shown, line_of(app), "snapshots"))
    if snapshots is not None and (scalar(snapshots) or "").lower() == "false":
        upgrade = Setting(
            STATELESS, Origin(collector.shown, line_of(snapshots), "SnapshotsEnabled")
        )
    elif (
        restore_type is not None
        and scalar(restore_type) == "SKIP_RESTORE_FROM_SNAPSHOT"
    ):
        upgrade = Setting(
            STATELESS,
            Origin(collector.shown, line_of(restore_type), "ApplicationRestoreType"),
        )
    allow_node = _first(
        run,
        ("FlinkRunConfigurationDescription", "AllowNonRestoredState"),
        ("FlinkRunConfiguration", "AllowNonRestoredState"),
    )
    allow = collector.node(allow_node, "AllowNonRestoredState")
    if allow is not None:
        allow = Setting(allow.value.lower(), allow.origin)
    configuration = (
        (("parallelism.default", parallelism),) if parallelism is not None else ()
    )
    return Deployment(
        name=collector.shown_text(name),
        kind="AWS Managed Flink",
        origin=Origin(collector.shown, line_of(app), f"application {name}"),
        program=program,
        program_path=located.path,
        program_mapping=located.how,
        module=module,
        arguments=(),
        arguments_origin=Origin(
            collector.shown, line_of(app), "no command-line arguments on the service"
        ),
        parallelism=parallelism,
        flink_version=version,
        configuration=configuration,
        upgrade_mode=upgrade,
        allow_non_restored_state=allow,
        unknowns=tuple(collector.unknowns),
        problems=tuple(collector.problems),
    )
