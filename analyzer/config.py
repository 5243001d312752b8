"""Analysis settings (frozen, one per analysed file)."""

from __future__ import annotations

from dataclasses import dataclass, field

from chainlens.analyzer.model.diagnostic import Severity

#: Files larger than this are not analysed (reported instead).
MAX_FILE_BYTES = 5_000_000


@dataclass(frozen=True, slots=True)
class Config:
    """What the analysis needs to know that the program does not say itself.

    ``default_parallelism`` is the environment's default parallelism (Flink's
    local default is the machine's core count); ``None`` keeps it symbolic, so
    results hold for any value.  ``argv`` lets programs that read their command
    line (``sys.argv``, argparse) be analysed as they would run with it.
    """

    default_parallelism: int | None = None
    max_file_bytes: int = MAX_FILE_BYTES
    #: the command-line arguments the program is assumed to run with (after the
    #: program name); None: not known, so values read from them are unknown.
    argv: tuple[str, ...] | None = None
    #: rule selection, as in ruff: codes or prefixes ("CL1", "CL101"); ``select``
    #: None means the rules enabled by default.
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    #: per-rule severity overrides: code -> severity
    severities: dict[str, Severity] = field(default_factory=dict)
    #: Flink/PyFlink configuration keys the program does not set itself
    #: (``pipeline.*``, ``python.*``, ``execution.*`` ...), as strings.
    flink_config: dict[str, str] = field(default_factory=dict)
