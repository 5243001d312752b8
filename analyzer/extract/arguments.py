"""The part of argparse the evaluator models: a program's command line.

``add_argument`` records an option on an :class:`ArgParser`; ``parse_args``
gives a :class:`Namespace` from the command line chainlens is told the program
runs with (``--argv``), or from the options' defaults when it is not told
(what a required argument would be stays unknown).  The options that switch
variants of the program on are listed for ``chainlens graph --variants``.
"""

from __future__ import annotations

from chainlens.analyzer.extract.interface import Args
from chainlens.analyzer.extract.values import ArgParser, Namespace, Opaque, QualifiedRef
from chainlens.analyzer.model.source import SourceRange
from chainlens.analyzer.model.values import CommandLineOption, Symbol


def add_argument(parser: ArgParser, args: Args) -> None:
    """Mirror ``parser.add_argument(*flags, **options)``: its destination as
    argparse derives it from the longest flag."""
    flags = [f for f in args.positional if isinstance(f, str)]
    option: dict[str, object] = dict(args.keywords)
    option["flags"] = flags
    if "dest" not in option and flags:
        longest = max(flags, key=len)
        option["dest"] = longest.lstrip("-").replace("-", "_")
    parser.options.append(option)


def defaults(
    parser: ArgParser, where: SourceRange | None
) -> tuple[Namespace, list[str]]:
    """The namespace of a program run without arguments (its defaults), and the
    destinations of the required arguments (unknown values located at
    ``where``)."""
    namespace = parse_arguments(parser, [])
    required = []
    for option in parser.options:
        flags = option.get("flags")
        names = flags if isinstance(flags, list) else []
        positional = not any(str(f).startswith("-") for f in names)
        needed = option.get("required") is True or (
            positional and option.get("nargs") not in ("?", "*")
        )
        if needed and "default" not in option:
            dest = str(option.get("dest", ""))
            required.append(dest)
            namespace.values[dest] = Symbol(
                f"`args.{dest}`",
                "a required command-line argument (give it with --argv)",
                where,
            )
    return namespace, required


def switches(parser: ArgParser) -> list[CommandLineOption]:
    """The options of ``parser`` that switch a variant of the program on."""
    found: list[CommandLineOption] = []
    for option in parser.options:
        flags = option.get("flags")
        names = [str(f) for f in flags] if isinstance(flags, list) else []
        longs = [f for f in names if f.startswith("-")]
        if not longs:
            continue  # a positional argument: always given
        flag = max(longs, key=len)
        action = option.get("action")
        choices = option.get("choices")
        if action in ("store_true", "store_false"):
            found.append(CommandLineOption(flag, ((flag,),)))
        elif isinstance(choices, list | tuple) and all(
            isinstance(c, str | int) for c in choices
        ):
            default = option.get("default")
            found.append(
                CommandLineOption(
                    flag,
                    tuple((flag, str(c)) for c in choices if c != default)[:4],
                )
            )
        elif option.get("default") is None and action in (None, "store"):
            found.append(CommandLineOption(flag, ((flag, "VALUE"),)))
    return found


def parse_arguments(parser: ArgParser, args: list[str]) -> Namespace:
    """Mirror the common subset of argparse: options, flags, positionals."""
    values: dict[str, object] = {}
    by_flag: dict[str, dict[str, object]] = {}
    positionals: list[dict[str, object]] = []
    option: dict[str, object] | None
    for option in parser.options:
        dest = str(option.get("dest", ""))
        action = option.get("action")
        default = option.get("default", False if action == "store_true" else None)
        if action == "store_false":
            default = option.get("default", True)
        values[dest] = default
        flags = option.get("flags")  # a list (add_argument)
        names = flags if isinstance(flags, list) else []
        if any(str(f).startswith("-") for f in names):
            for flag in names:
                by_flag[str(flag)] = option
        else:
            positionals.append(option)
    index = 0
    while index < len(args):
        token = args[index]
        index += 1
        name, _, inline = token.partition("=")
        option = by_flag.get(name)
        if option is None:
            if not token.startswith("-") and positionals:
                option = positionals.pop(0)
                values[str(option["dest"])] = _convert(option, token)
            continue
        action = option.get("action")
        if action in ("store_true", "store_false"):
            values[str(option["dest"])] = action == "store_true"
            continue
        if inline or _:
            raw = inline
        elif index < len(args):
            raw = args[index]
            index += 1
        else:
            continue
        values[str(option["dest"])] = _convert(option, raw)
    return Namespace(values)


def _convert(option: dict[str, object], raw: str) -> object:
    kind = option.get("type")
    if isinstance(kind, QualifiedRef) and kind.qualname in (
        "builtins.int",
        "builtins.float",
    ):
        try:
            return int(raw) if kind.qualname == "builtins.int" else float(raw)
        except ValueError:
            return Opaque("bad argument")
    return raw
