"""Savepoints: what a real one holds, and whether a change can restore it.

A savepoint's ``_metadata`` read without a JVM (:mod:`.metadata`), the state
files it points at (:mod:`.state`) and whether their values fit a declared
PyFlink type (:mod:`.values`); the programs compared with their git base or
with a real savepoint (:mod:`.compare`, the ``chainlens savepoint`` gate), the
base read with git itself (:mod:`.history`).
"""
