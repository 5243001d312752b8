"""chainlens.hooks: the command line and the pre-commit entry points."""
