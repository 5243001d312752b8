"""CL301 deployment-program-missing: a descriptor runs a program that does not exist."""

from __future__ import annotations

from collections.abc import Iterator
from typing import ClassVar

from chainlens.analyzer.model.diagnostic import Diagnostic, RuleCode, Severity
from chainlens.analyzer.rules.base import RuleContext


class DeploymentProgramMissing:
    """## What it does
    Reports a deployment descriptor whose program is not in the repository: a
    `FlinkDeployment` or `FlinkSessionJob` whose `spec.job.args` name a
    `-py` file that no `COPY` of the project's Dockerfiles puts in the image,
    a `flink run -py` line, or a Managed Flink application naming a file
    that does not exist.  The finding is located at the descriptor's line.

    ## Why is this bad?
    The job fails at submission (PyFlink's `PythonDriver` cannot open the
    file), or runs another program than the one in review: a renamed or moved
    program whose descriptor was not updated.  chainlens cannot analyse the
    job the deployment runs, so none of its other findings cover it.

    ## Example
    ```yaml
    # k8s/orders.yaml; the Dockerfile has COPY jobs/ /opt/flink/usrlib/jobs/
    apiVersion: flink.apache.org/v1beta1
    kind: FlinkDeployment
    metadata:
      name: orders
    spec:
      job:
        args: ["-py", "/opt/flink/usrlib/jobs/order.py"]  # no jobs/order.py
    ```

    Use instead:
    ```yaml
    apiVersion: flink.apache.org/v1beta1
    kind: FlinkDeployment
    metadata:
      name: orders
    spec:
      job:
        args: ["-py", "/opt/flink/usrlib/jobs/orders.py"]
    ```
    """

    code: ClassVar[RuleCode] = RuleCode("CL301", "deployment-program-missing")
    #: its examples are descriptors (YAML), its findings a descriptor's
    descriptor_rule: ClassVar[bool] = True
    severity: ClassVar[Severity] = Severity.ERROR
    enabled_by_default: ClassVar[bool] = True
    fixable: ClassVar[bool] = False

    def check(self, context: RuleContext) -> Iterator[Diagnostic]:
        """Nothing in a Python file: the findings are the descriptors'
        (``chainlens.analyzer.deploy.findings``)."""
        return iter(())
