"""A deployment of a program: what the cluster will run it with, each value located.

Plain data (no reading, no I/O): the readers of ``analyzer/deploy/`` build it
from Kubernetes Operator resources, Flink configuration files, ``flink run``
command lines and AWS Managed Service for Apache Flink applications; the
engine applies it as configuration (parallelism, Flink keys, the program's
arguments, the Flink version) and the savepoint gate reads how the job is
restored (upgrade mode, ``allowNonRestoredState``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

#: How a deployment restores state on an upgrade (the Kubernetes operator's
#: ``spec.job.upgradeMode``; a ``flink run`` with ``-s`` restores a savepoint).
STATELESS: Final = "stateless"
SAVEPOINT: Final = "savepoint"
LAST_STATE: Final = "last-state"


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a value is written: a file (as given) and its line (from 1)."""

    path: str
    line: int
    #: the field or option that holds it ("spec.job.parallelism", "-p")
    field: str = ""

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"

    def describe(self) -> str:
        """``spec.job.parallelism at k8s/prod.yaml:23``."""
        return f"{self.field} at {self}" if self.field else str(self)

    def to_json(self) -> dict[str, object]:
        """``{"path", "line", "field"}``."""
        return {"path": self.path, "line": self.line, "field": self.field}


@dataclass(frozen=True, slots=True)
class Setting:
    """One value of a deployment and where it comes from."""

    value: str
    origin: Origin

    def to_json(self) -> dict[str, object]:
        """``{"value", "from": ORIGIN}``."""
        return {"value": self.value, "from": self.origin.to_json()}


@dataclass(frozen=True, slots=True)
class DeployUnknown:
    """A value the descriptor gives that cannot be known statically (a Helm
    template, a shell variable, a path no ``COPY`` explains)."""

    subject: str
    reason: str
    origin: Origin

    def describe(self) -> str:
        """``k8s/prod.yaml:23: unknown spec.job.parallelism: a Helm template``."""
        return f"{self.origin}: unknown {self.subject}: {self.reason}"

    def to_json(self) -> dict[str, object]:
        """``{"subject", "reason", "from"}``."""
        return {
            "subject": self.subject,
            "reason": self.reason,
            "from": self.origin.to_json(),
        }


@dataclass(frozen=True, slots=True)
class DeployProblem:
    """Something wrong in a descriptor itself (a program that does not exist)."""

    code: str  # "program-missing", "invalid-value", "unreadable"
    message: str
    origin: Origin

    def to_json(self) -> dict[str, object]:
        """``{"code", "message", "from"}``."""
        return {
            "code": self.code,
            "message": self.message,
            "from": self.origin.to_json(),
        }


@dataclass(frozen=True, slots=True)
class Deployment:
    """One way the project's program is deployed (a target of the analysis).

    ``configuration`` is the effective Flink configuration with Flink's
    precedence already applied (``-D`` and ``flinkConfiguration`` over the
    configuration file); ``parallelism``, when set, is what the deployment
    makes ``parallelism.default`` (``spec.job.parallelism``, ``-p``, the
    application's parallelism).  The program's own settings still win over
    all of it when it runs.
    """

    name: str
    #: "FlinkDeployment", "FlinkSessionJob", "flink run", "AWS Managed Flink"
    kind: str
    #: where the deployment is declared (the resource, the command line)
    origin: Origin
    #: the program as the descriptor names it (a path in the image or archive)
    program: Setting | None = None
    #: that program in the repository (absolute), when it is known
    program_path: str | None = None
    #: how the program's path was found in the repository ("Dockerfile:12:
    #: COPY jobs/ /opt/flink/usrlib/jobs/", "relative to the descriptor")
    program_mapping: str | None = None
    #: ``-pym``: the program given as a module
    module: Setting | None = None
    #: the program's own command-line arguments (None: not known)
    arguments: tuple[str, ...] | None = None
    arguments_origin: Origin | None = None
    parallelism: Setting | None = None
    flink_version: Setting | None = None
    #: the image's tag (Kubernetes), for what it says of the Flink version
    image: Setting | None = None
    #: the effective Flink configuration: key -> its value and origin
    configuration: tuple[tuple[str, Setting], ...] = ()
    upgrade_mode: Setting | None = None
    allow_non_restored_state: Setting | None = None
    initial_savepoint: Setting | None = None
    unknowns: tuple[DeployUnknown, ...] = ()
    problems: tuple[DeployProblem, ...] = ()
    #: the Flink configuration files applied (outermost first)
    configuration_files: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """``deployment prod (FlinkDeployment, k8s/prod.yaml:3)``."""
        return f"deployment {self.name} ({self.kind}, {self.origin})"

    def setting(self, key: str) -> Setting | None:
        """The effective value of Flink key ``key``, if the deployment sets it."""
        for name, value in self.configuration:
            if name == key:
                return value
        return None

    @property
    def restores(self) -> bool | None:
        """Whether an upgrade restores state (None: not known)."""
        if self.upgrade_mode is None:
            return None
        return self.upgrade_mode.value != STATELESS

    @property
    def allows_non_restored(self) -> bool:
        """Whether state no operator claims is dropped instead of refused."""
        return (
            self.allow_non_restored_state is not None
            and self.allow_non_restored_state.value == "true"
        )

    def to_json(self) -> dict[str, object]:
        """The deployment, each value with where it comes from."""

        def one(item: Setting | None) -> object:
            return item.to_json() if item is not None else None

        return {
            "name": self.name,
            "kind": self.kind,
            "from": self.origin.to_json(),
            "program": one(self.program),
            "program_path": self.program_path,
            "program_mapping": self.program_mapping,
            "module": one(self.module),
            "arguments": list(self.arguments) if self.arguments is not None else None,
            "arguments_from": self.arguments_origin.to_json()
            if self.arguments_origin
            else None,
            "parallelism": one(self.parallelism),
            "flink_version": one(self.flink_version),
            "image": one(self.image),
            "configuration": {k: v.to_json() for k, v in self.configuration},
            "configuration_files": list(self.configuration_files),
            "upgrade_mode": one(self.upgrade_mode),
            "allow_non_restored_state": one(self.allow_non_restored_state),
            "initial_savepoint": one(self.initial_savepoint),
            "unknowns": [u.to_json() for u in self.unknowns],
            "problems": [p.to_json() for p in self.problems],
        }


@dataclass(frozen=True, slots=True)
class RunningVertex:
    """A task of a running job, as the cluster's REST API shows it."""

    #: the task's ID: its head operator's operator ID
    id: str
    name: str
    parallelism: int | None
    max_parallelism: int | None
    #: the chained operators' names, head first (the plan's description)
    operators: tuple[str, ...]
    #: (producer task ID, ship strategy) of each input
    inputs: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, object]:
        """The task as the cluster shows it."""
        return {
            "id": self.id,
            "name": self.name,
            "parallelism": self.parallelism,
            "max_parallelism": self.max_parallelism,
            "operators": list(self.operators),
            "inputs": [{"producer": p, "ship_strategy": s} for p, s in self.inputs],
        }


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A completed checkpoint or savepoint of a running job."""

    path: str
    #: "checkpoint" or "savepoint"
    kind: str
    checkpoint_id: int
    #: when it completed (milliseconds since the epoch)
    taken: int = 0

    def to_json(self) -> dict[str, object]:
        """``{"path", "kind", "checkpoint_id"}``."""
        return {
            "path": self.path,
            "kind": self.kind,
            "checkpoint_id": self.checkpoint_id,
        }


@dataclass(frozen=True, slots=True)
class RunningJob:
    """A job a Flink cluster runs (``/jobs/<id>``, its plan and checkpoints)."""

    url: str
    id: str
    name: str
    state: str
    #: the cluster's Flink version ("2.3.0")
    flink_version: str
    #: the parallelism the job was submitted with (None: not known)
    job_parallelism: int | None
    vertices: tuple[RunningVertex, ...]
    #: the latest completed checkpoint or savepoint with a path
    snapshot: Snapshot | None = None

    def to_json(self) -> dict[str, object]:
        """The job as the cluster shows it."""
        return {
            "url": self.url,
            "id": self.id,
            "name": self.name,
            "state": self.state,
            "flink_version": self.flink_version,
            "job_parallelism": self.job_parallelism,
            "vertices": [v.to_json() for v in self.vertices],
            "snapshot": self.snapshot.to_json() if self.snapshot else None,
        }
