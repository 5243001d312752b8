"""One module per ``chainlens`` command: its options (``add_parser``) and its run.

Each parses nothing more than argparse gave it, calls the engine
(``chainlens.analyzer``) and prints what the engine rendered.
"""
