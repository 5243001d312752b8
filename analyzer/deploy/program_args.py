"""The options of ``flink run`` and of PyFlink's ``PythonDriver``, as Flink parses them.

Flink parses its command line with commons-cli, stopping at the first token
that is not one of its options (``CliFrontendParser``, ``CommandLineParser``
with ``stopAtNonOption``): that token and everything after it are the
program's own arguments (``sys.argv[1:]`` of the Python program).  The
Kubernetes operator passes ``spec.job.args`` to ``PythonDriver``, which
parses the Python options the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

#: PythonDriver's options (PythonDriverOptionsParserFactory); each takes a value.
PYTHON_OPTIONS: Final = {
    "-py": "python",
    "--python": "python",
    "-pym": "module",
    "--pyModule": "module",
    "-pyfs": "files",
    "--pyFiles": "files",
    "-pyreq": "requirements",
    "--pyRequirements": "requirements",
    "-pyarch": "archives",
    "--pyArchives": "archives",
    "-pyexec": "executable",
    "--pyExecutable": "executable",
    "-pyclientexec": "client executable",
    "--pyClientExecutable": "client executable",
    "-pypath": "python path",
    "--pyPythonPath": "python path",
}

#: ``flink run`` options that take a value (CliFrontendParser, Flink 1.18-2.3).
RUN_OPTIONS_WITH_VALUE: Final = {
    "-p": "parallelism",
    "--parallelism": "parallelism",
    "-s": "savepoint",
    "--fromSavepoint": "savepoint",
    "-c": "class",
    "--class": "class",
    "-C": "classpath",
    "--classpath": "classpath",
    "-j": "jarfile",
    "--jarfile": "jarfile",
    "-t": "target",
    "--target": "target",
    "-m": "jobmanager",
    "--jobmanager": "jobmanager",
    "-e": "executor",
    "--executor": "executor",
    "-rm": "restore mode",
    "--restoreMode": "restore mode",
    "-cm": "claim mode",
    "--claimMode": "claim mode",
}

#: ``flink run`` flags.
RUN_FLAGS: Final = {
    "-n": "allow non restored state",
    "--allowNonRestoredState": "allow non restored state",
    "-d": "detached",
    "--detached": "detached",
    "-sae": "shutdown on attached exit",
    "--shutdownOnAttachedExit": "shutdown on attached exit",
}


@dataclass(frozen=True, slots=True)
class Token:
    """One word of a command line and its line in the file."""

    text: str
    line: int


@dataclass(slots=True)
class Parsed:
    """What a command line says, each value with its token."""

    #: option name ("python", "parallelism", ...) -> its value's token
    values: dict[str, Token] = field(default_factory=dict)
    #: option name -> the token of the option itself (flags)
    flags: dict[str, Token] = field(default_factory=dict)
    #: ``-D key=value``: key -> the value and its token
    dynamic: list[tuple[str, str, Token]] = field(default_factory=list)
    #: the program's own arguments
    arguments: list[Token] = field(default_factory=list)
    #: options that lack their value
    missing: list[Token] = field(default_factory=list)


def parse(tokens: list[Token], *, run: bool) -> Parsed:
    """Parse ``flink run`` options (``run``) or ``PythonDriver``'s (not)."""
    out = Parsed()
    i = 0
    while i < len(tokens):
        token = tokens[i]
        word = token.text
        name, eq, inline = (
            word.partition("=")
            if word.startswith("--")
            else (
                word,
                "",
                "",
            )
        )
        if word == "--":
            out.arguments.extend(tokens[i + 1 :])
            break
        if run and word.startswith("-D"):
            rest = word[2:]
            if not rest:
                if i + 1 >= len(tokens):
                    out.missing.append(token)
                    break
                i += 1
                rest = tokens[i].text
            key, _, value = rest.partition("=")
            out.dynamic.append((key.strip(), value.strip(), tokens[i]))
            i += 1
            continue
        kind = PYTHON_OPTIONS.get(name)
        if kind is None and run:
            kind = RUN_OPTIONS_WITH_VALUE.get(name)
        if kind is not None:
            if eq:
                out.values[kind] = Token(inline, token.line)
            elif i + 1 < len(tokens):
                i += 1
                out.values[kind] = tokens[i]
            else:
                out.missing.append(token)
            i += 1
            continue
        if run and word in RUN_FLAGS:
            out.flags[RUN_FLAGS[word]] = token
            i += 1
            continue
        # the first word that is none of Flink's options: the program's own
        # arguments start here (commons-cli's stopAtNonOption)
        out.arguments.extend(tokens[i:])
        break
    return out
