"""The command line's parser: one-line errors and options anywhere, as ruff's.

Only :mod:`argparse` is imported here, so that a command that does not analyse
(``chainlens fleet``, which starts Spark) parses its arguments as every other
command does without loading the analysis.
"""

from __future__ import annotations

import argparse
import copy
import sys
from collections.abc import Sequence
from typing import Any, NoReturn


class _IntermixedSubParsers(argparse._SubParsersAction):  # type: ignore[type-arg]
    """The subcommands, each parsing its options and paths in any order
    (``check jobs -q --select CL1 jobs/clicks.py``), as ruff does; a command
    with subcommands of its own (``cluster diff``) passes them on."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[object] | None,
        option_string: str | None = None,
    ) -> None:
        assert isinstance(values, list)
        name, rest = values[0], values[1:]
        if self.dest is not argparse.SUPPRESS:
            setattr(namespace, self.dest, name)
        chosen = self.choices.get(name)
        if chosen is None:
            super().__call__(parser, namespace, values, option_string)
            return
        nested = any(isinstance(a, argparse._SubParsersAction) for a in chosen._actions)
        # after "--" every word is a path: the plain parse says so
        plain = nested or "--" in rest
        parse = chosen.parse_known_args if plain else chosen.parse_known_intermixed_args
        sub, extra = parse(rest, None)
        for key, value in vars(sub).items():
            setattr(namespace, key, value)
        if extra:
            vars(namespace).setdefault(argparse._UNRECOGNIZED_ARGS_ATTR, [])
            getattr(namespace, argparse._UNRECOGNIZED_ARGS_ATTR).extend(extra)


class CommandParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, ``PROG: error: ...``,
    then the command's short usage line (never the whole usage of its options),
    as ruff reports a mistake; its subcommands' parsers are of this class too,
    and take their options between and after their paths."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", _IntermixedSubParsers)

    def short_usage(self) -> str:
        """``usage: chainlens check [options] [PATH ...]``: one line."""
        formatter = self._get_formatter()
        words = [self.prog, "[options]"]
        for action in self._get_positional_actions():
            if hasattr(action, "save_nargs"):  # hidden by the intermixed parse
                action = copy.copy(action)
                action.nargs = action.save_nargs
            metavar = action.metavar or action.dest
            words.append(formatter._format_args(action, str(metavar)))
        return "usage: " + " ".join(word for word in words if word)

    def fail(self, message: str) -> None:
        """Print the one-line error and the short usage to standard error."""
        self._print_message(f"{self.prog}: error: {message}\n", sys.stderr)
        self._print_message(f"{self.short_usage()}\n", sys.stderr)

    def error(self, message: str) -> NoReturn:
        self.fail(message)
        self.exit(2)
