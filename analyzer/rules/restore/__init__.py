"""What the savepoint rules (CL201-CL205) share: how Flink restores state.

Flink's state assignment (:mod:`.assignment`); the IDs state is saved under
and whether a change keeps them (:mod:`.ids`); the program compared with its
git base (:mod:`.baseline`) or with a real savepoint (:mod:`.savepoint`); each
job restored, state by state (:mod:`.restored_jobs`); and the fix that keeps
every state in the operator that wrote it (:mod:`.fix`).
"""
