"""A deployment applied to the analysis, as configuration.

What the cluster gives the program, with Flink's precedence (the program's own
settings still win when it runs, as they do in Flink: they are applied after
these): the effective Flink configuration (``-D`` and ``flinkConfiguration``
over the configuration file), ``parallelism.default`` from the deployment's
parallelism, the program's command-line arguments and the Flink version.
What the command line of chainlens sets explicitly (``--argv``,
``--default-parallelism``, ``--flink``, ``--flink-version``) wins over the
deployment.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from dataclasses import replace
from pathlib import Path

from chainlens.analyzer.config import (
    Config,
    ConfigError,
    ConfigLayer,
    ConfigResolver,
    parse_config_table,
)
from chainlens.analyzer.model.deployment import Deployment, DeployProblem
from chainlens.analyzer.model.flink_versions import (
    FlinkVersion,
    VersionError,
    parse_version,
)


class DeploymentError(Exception):
    """A deployment chainlens cannot analyse for (a Flink version it does not
    model, no program in the repository)."""


def version_of(deployment: Deployment) -> FlinkVersion | None:
    """The Flink version the deployment runs, and where it is said."""
    setting = deployment.flink_version
    if setting is None:
        return None
    try:
        line = parse_version(setting.value)
    except VersionError as exc:
        raise DeploymentError(
            f"{setting.origin}: {deployment.label} runs Flink {setting.value}: {exc}"
        ) from None
    return FlinkVersion(
        line, f"deployment:{deployment.name} ({setting.origin.describe()})"
    )


def checked_configuration(
    deployment: Deployment,
) -> tuple[dict[str, str], list[DeployProblem]]:
    """The deployment's Flink keys, each value checked as chainlens checks
    ``--flink``: a bad value of a key chainlens reads is a problem (and left
    out), never a silently different graph."""
    out: dict[str, str] = {}
    problems: list[DeployProblem] = []
    for key, setting in deployment.configuration:
        try:
            layer = parse_config_table({"flink": {key: setting.value}}, "<deployment>")
        except ConfigError as exc:
            problems.append(
                DeployProblem(
                    "invalid-value",
                    f"{key}: {exc.message}",
                    setting.origin,
                )
            )
            continue
        out.update(layer.settings.flink)
    return out, problems


def apply_deployment(
    config: Config, deployment: Deployment, keep: Collection[str] = ()
) -> Config:
    """``config`` with the deployment's values (``keep``: the fields the
    command line set, which win: ``argv``, ``default_parallelism``,
    ``flink_config``, ``flink_version``)."""
    flink, _problems = checked_configuration(deployment)
    changes: dict[str, object] = {"deployment": deployment}
    if "flink_config" not in keep:
        changes["flink_config"] = {**config.flink_config, **flink}
    else:
        changes["flink_config"] = {**flink, **config.flink_config}
    parallelism = flink.get("parallelism.default")
    if "default_parallelism" not in keep and parallelism is not None:
        changes["default_parallelism"] = int(parallelism)
    if "argv" not in keep:
        changes["argv"] = deployment.arguments
    if "flink_version" not in keep:
        version = version_of(deployment)
        if version is not None:
            changes["flink_version"] = version
    return replace(config, **changes)  # type: ignore[arg-type]


def kept_by(layer: ConfigLayer | None) -> frozenset[str]:
    """The fields the command line's layer sets (they win over a deployment)."""
    if layer is None:
        return frozenset()
    settings = layer.settings
    kept = set()
    if settings.argv is not None:
        kept.add("argv")
    if settings.default_parallelism is not None:
        kept.add("default_parallelism")
    if settings.flink:
        kept.add("flink_config")
    if settings.flink_version is not None:
        kept.add("flink_version")
    return frozenset(kept)


class DeploymentResolver(ConfigResolver):
    """The settings of each file, with one deployment applied to its program.

    Other files (the program's own modules checked on their own) get their
    settings as without a deployment.
    """

    def __init__(
        self,
        deployment: Deployment,
        cli: ConfigLayer | None = None,
        *,
        config_file: str | Path | None = None,
        isolated: bool = False,
    ) -> None:
        super().__init__(cli, config_file=config_file, isolated=isolated)
        self.deployment = deployment
        self._keep = kept_by(cli)

    def config_for(self, path: str | Path) -> Config:
        """The settings of ``path``; the deployment's applied to its program."""
        config = super().config_for(path)
        program = self.deployment.program_path
        if program is not None and os.path.abspath(path) == os.path.abspath(program):
            return apply_deployment(config, self.deployment, self._keep)
        return config
