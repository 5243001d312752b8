"""Located values read from a descriptor, and what cannot be known of them."""

from __future__ import annotations

import yaml

from chainlens.analyzer.deploy.yaml_nodes import (
    Source,
    is_tagged,
    line_of,
    restore_templates,
    scalar,
    template_of,
    variable_of,
)
from chainlens.analyzer.model.deployment import (
    DeployProblem,
    DeployUnknown,
    Origin,
    Setting,
)


class Collector:
    """Reads values of one descriptor file, noting unknowns and problems."""

    def __init__(self, shown: str, source: Source | None = None) -> None:
        self.shown = shown
        self.source = source or Source("", ())
        self.unknowns: list[DeployUnknown] = []
        self.problems: list[DeployProblem] = []

    def origin(self, line: int, field: str = "") -> Origin:
        """An origin in this file."""
        return Origin(self.shown, line, field)

    def unknown(self, subject: str, reason: str, line: int, field: str = "") -> None:
        """Note a value that cannot be known statically."""
        item = DeployUnknown(subject, reason, self.origin(line, field))
        if item not in self.unknowns:
            self.unknowns.append(item)

    def problem(self, code: str, message: str, line: int, field: str = "") -> None:
        """Note something wrong in the descriptor."""
        item = DeployProblem(code, message, self.origin(line, field))
        if item not in self.problems:
            self.problems.append(item)

    def why_unknown(self, text: str) -> str | None:
        """Why a text value is not known statically (None: it is known)."""
        template = template_of(text, self.source)
        if template is not None:
            return f"a Helm template ({template}), filled in when the chart is rendered"
        variable = variable_of(text)
        if variable is not None:
            return f"the variable {variable}, set only where it runs"
        return None

    def text(self, text: str, line: int, field: str) -> Setting | None:
        """A text value at ``line``; None (and an unknown) when not static."""
        why = self.why_unknown(text)
        if why is not None:
            self.unknown(field, why, line, field)
            return None
        return Setting(text, self.origin(line, field))

    def node(self, node: yaml.Node | None, field: str) -> Setting | None:
        """A scalar node's value; None when absent or not static (noted)."""
        if node is None:
            return None
        tag = is_tagged(node)
        if tag is not None:
            self.unknown(
                field,
                f"{tag} is resolved by CloudFormation when the stack is deployed",
                line_of(node),
                field,
            )
            return None
        value = scalar(node)
        if value is None:
            if not isinstance(node, yaml.ScalarNode):
                self.problem(
                    "invalid-value",
                    f"{field} must be a single value",
                    line_of(node),
                    field,
                )
            return None
        return self.text(value, line_of(node), field)

    def shown_text(self, text: str) -> str:
        """A value as written (templates put back), for messages."""
        return restore_templates(text, self.source)
