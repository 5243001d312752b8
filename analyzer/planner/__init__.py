"""Flink's own Table planner, asked about the Table statements a program holds.

Only with ``--planner``: the statements chainlens read (DDL and query texts,
the type and parallelism of each DataStream going into the Table API, view
names, conversions) are handed to a worker run by a Python that has
apache-flink; the program itself is never run or imported.
"""
