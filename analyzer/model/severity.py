"""How a finding is reported, in a module of its own: the command line's
options name the severities without loading the findings' model."""

from __future__ import annotations

import enum


class Severity(enum.Enum):
    """How a finding is reported (LSP's levels, in the same order)."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"
    HINT = "hint"
