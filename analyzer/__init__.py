"""chainlens.analyzer: PyFlink source -> StreamGraph -> JobGraph, without a JVM."""
