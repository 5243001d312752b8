"""Savepoints as Flink writes them, read without a JVM.

A savepoint's ``_metadata`` (:mod:`.metadata`): each operator state's ID,
parallelism, max parallelism, name and uid; the state files it points at
(:mod:`.state`): the states' names, kinds, serializers, TTL and sampled
values; and whether those values fit a declared PyFlink type (:mod:`.values`).
Pure readers: the rules (CL204 on a real savepoint's states) and the gate
(:mod:`chainlens.analyzer.gate`) use them.
"""
