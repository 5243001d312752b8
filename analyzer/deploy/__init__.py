"""Deployments: how the cluster will run the project's programs.

Descriptors are read, never executed: Kubernetes Operator resources
(:mod:`.kubernetes`), Flink configuration files (:mod:`.flink_conf`), ``flink
run`` command lines in scripts, Makefiles and CI workflows (:mod:`.commands`),
AWS Managed Service for Apache Flink applications (:mod:`.aws`), with the
``Dockerfile`` mapping a program inside an image back to the repository
(:mod:`.dockerfile`).  :mod:`.discover` finds them in a project;
:mod:`.apply` applies one to the analysis as configuration, with Flink's
precedence.
"""
