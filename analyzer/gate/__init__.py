"""The savepoint gate: can the changed program restore the state its jobs saved?

The programs under some paths compared with the same programs at their git
base, with a real savepoint, or with themselves on another Flink version
(:mod:`.compare`: ``chainlens savepoint``, ``explain-id`` and the editor's
base); the base read with git itself, the work tree untouched (:mod:`.history`).
"""
