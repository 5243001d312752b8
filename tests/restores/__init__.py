"""Restores on real Flink: the cases, the runner, what the probes read back."""
