"""``flink run`` and ``flink run-application`` command lines in scripts, Makefiles
and CI workflows.

Words are split as a shell does (:mod:`shlex`), never run.  A command is a
``flink`` executable (``flink``, ``./bin/flink``, ``$FLINK_HOME/bin/flink``)
followed by ``run`` or ``run-application``; its options are Flink's
(:mod:`.program_args`): ``-py``/``-pym``/``-pyfs``, ``-p``, ``-D key=value``,
``-s``, ``-n``, then the program's own arguments.  Flink's precedence
(``CliFrontend.getEffectiveConfiguration``): the configuration file, then
``-D``, then ``-p`` (``ProgramOptions.applyToConfiguration``).  A job
submitted without ``-s`` starts without state.  ``FLINK_CONF_DIR=DIR`` on the
command or exported before it names the configuration file's folder.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import yaml

from chainlens.analyzer.deploy import program_args
from chainlens.analyzer.deploy.kubernetes import Context
from chainlens.analyzer.deploy.programs import Located, locate, locate_module
from chainlens.analyzer.deploy.values import Collector
from chainlens.analyzer.deploy.yaml_nodes import (
    YamlError,
    compose_all,
    line_of,
    prepare,
)
from chainlens.analyzer.model.deployment import (
    SAVEPOINT,
    STATELESS,
    Deployment,
    Origin,
    Setting,
)

_SEPARATORS = {";", "&&", "||", "|", "&", "(", ")", ";;"}
_PREFIXES = {"exec", "sudo", "time", "env", "nohup", "command"}


@dataclass(frozen=True, slots=True)
class Command:
    """One ``flink run`` found: its words after ``run``, its line, the variables
    set before it."""

    line: int
    tokens: list[program_args.Token]
    action: str
    environment: dict[str, program_args.Token]


#: a ``flink`` executable followed by ``run`` on one line (a cheap test, no parse)
_MENTION = re.compile(r"flink[\"']?\s+run\b")


def is_candidate(text: str) -> bool:
    """Cheap test: may the text hold a ``flink run``?"""
    return "flink" in text and _MENTION.search(text) is not None


def shell_commands(text: str, first_line: int = 1) -> Iterator[Command]:
    """The ``flink run`` commands of a shell text (lines from ``first_line``)."""
    exported: dict[str, program_args.Token] = {}
    for line, words in _logical_lines(text, first_line):
        command: list[program_args.Token] = []
        for word in [*words, program_args.Token(";", line)]:
            if word.text in _SEPARATORS:
                found = _flink_run(command, exported)
                if found is not None:
                    yield found
                command = []
            else:
                command.append(word)


def _logical_lines(
    text: str, first_line: int
) -> Iterator[tuple[int, list[program_args.Token]]]:
    pending: list[program_args.Token] = []
    start = first_line
    for offset, raw in enumerate(text.split("\n")):
        number = first_line + offset
        line = raw.rstrip()
        if line.startswith("\t"):  # a Makefile recipe line
            line = line.lstrip("\t").lstrip("@-")
        if not pending:
            start = number
        continued = line.endswith("\\")
        body = line[:-1] if continued else line
        try:
            lexer = shlex.shlex(body, posix=True, punctuation_chars=";&|")
            lexer.whitespace_split = True
            lexer.commenters = "#"
            words = list(lexer)
        except ValueError:
            words = body.split()
        pending.extend(program_args.Token(w, number) for w in words)
        if continued:
            continue
        if pending:
            yield start, pending
        pending = []
    if pending:
        yield start, pending


def _flink_run(
    words: list[program_args.Token], exported: dict[str, program_args.Token]
) -> Command | None:
    environment = dict(exported)
    i = 0
    while i < len(words):
        word = words[i].text
        name, eq, value = word.partition("=")
        if eq and name.isidentifier():
            environment[name] = program_args.Token(value, words[i].line)
            i += 1
            continue
        if word == "export" and i + 1 < len(words):
            for item in words[i + 1 :]:
                key, eq2, val = item.text.partition("=")
                if eq2 and key.isidentifier():
                    exported[key] = program_args.Token(val, item.line)
            return None
        if word in _PREFIXES:
            i += 1
            continue
        break
    if i + 1 >= len(words):
        return None
    if posixpath.basename(words[i].text) != "flink":
        return None
    action = words[i + 1].text
    if action not in ("run", "run-application"):
        return None
    return Command(words[i].line, words[i + 2 :], action, environment)


def workflow_commands(text: str) -> Iterator[Command]:
    """The ``flink run`` commands in a CI workflow's shell steps (every string
    of the YAML that holds one: GitHub's ``run:``, GitLab's ``script:``)."""
    source = prepare(text)
    try:
        documents = compose_all(source)
    except YamlError:
        return
    for document in documents:
        yield from _strings(document)


def _strings(node: yaml.Node) -> Iterator[Command]:
    if isinstance(node, yaml.ScalarNode):
        value = str(node.value)
        if is_candidate(value):
            first = line_of(node) + (1 if node.style in ("|", ">") else 0)
            yield from shell_commands(value, first)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from _strings(item)
    elif isinstance(node, yaml.MappingNode):
        for _key, item in node.value:
            yield from _strings(item)


def read(
    path: Path,
    shown: str,
    commands: list[Command],
    context: Context,
    config_files: dict[str, list[tuple[str, Setting]]],
) -> Iterator[Deployment]:
    """The deployments of the ``flink run`` commands of one file.

    ``config_files``: the project's Flink configuration files (by folder
    relative to the root, with their keys), for ``FLINK_CONF_DIR``.
    """
    for command in commands:
        found = _read_command(path, shown, command, context, config_files)
        if found is not None:
            yield found


def _read_command(
    path: Path,
    shown: str,
    command: Command,
    context: Context,
    config_files: dict[str, list[tuple[str, Setting]]],
) -> Deployment | None:
    collector = Collector(shown)
    parsed = program_args.parse(command.tokens, run=True)
    if "python" not in parsed.values and "module" not in parsed.values:
        return None  # a Java job
    here = path.parent
    located = Located(None, None)
    program = module = None
    if "python" in parsed.values:
        token = parsed.values["python"]
        program = collector.text(token.text, token.line, "-py")
        if program is not None:
            located = locate(
                program.value,
                token.line,
                "-py",
                collector,
                here=here,
                root=context.root,
                dockerfiles=context.dockerfiles,
                overrides=context.overrides,
                in_image=False,
            )
    else:
        token = parsed.values["module"]
        module = collector.text(token.text, token.line, "-pym")
        files = parsed.values.get("files")
        if module is not None:
            located = locate_module(
                module.value,
                [f for f in (files.text.split(",") if files else []) if f],
                token.line,
                "-pym",
                collector,
                here=here,
                root=context.root,
                dockerfiles=context.dockerfiles,
                overrides=context.overrides,
                in_image=False,
            )
    for token in parsed.missing:
        collector.problem(
            "invalid-value", f"{token.text} lacks its value", token.line, token.text
        )
    # the configuration file, then -D, then -p
    configuration: dict[str, Setting] = {}
    conf_files: tuple[str, ...] = ()
    conf_dir = command.environment.get("FLINK_CONF_DIR")
    if conf_dir is not None:
        why = collector.why_unknown(conf_dir.text)
        if why is not None:
            collector.unknown("FLINK_CONF_DIR", why, conf_dir.line, "FLINK_CONF_DIR")
        else:
            folder = (here / conf_dir.text).resolve()
            try:
                key = folder.relative_to(context.root).as_posix()
            except ValueError:
                key = str(folder)
            keys = config_files.get(key)
            if keys is None:
                collector.unknown(
                    "Flink configuration",
                    f"FLINK_CONF_DIR={conf_dir.text} holds no config.yaml or "
                    "flink-conf.yaml in the repository",
                    conf_dir.line,
                    "FLINK_CONF_DIR",
                )
            else:
                configuration.update(keys)
                conf_files = (key,)
    for key, value, token in parsed.dynamic:
        setting = collector.text(value, token.line, f"-D {key}")
        if setting is not None:
            configuration[key] = setting
    parallelism = None
    if "parallelism" in parsed.values:
        token = parsed.values["parallelism"]
        parallelism = collector.text(token.text, token.line, "-p")
        if parallelism is not None:
            configuration["parallelism.default"] = parallelism
    savepoint = None
    if "savepoint" in parsed.values:
        token = parsed.values["savepoint"]
        savepoint = collector.text(token.text, token.line, "-s")
        if savepoint is None:
            savepoint = Setting(token.text, Origin(shown, token.line, "-s"))
        upgrade = Setting(SAVEPOINT, Origin(shown, token.line, "-s"))
    else:
        upgrade = Setting(
            STATELESS, Origin(shown, command.line, "flink run without -s")
        )
    allow = None
    if "allow non restored state" in parsed.flags:
        token = parsed.flags["allow non restored state"]
        allow = Setting("true", Origin(shown, token.line, token.text))
    arguments: tuple[str, ...] | None = tuple(t.text for t in parsed.arguments)
    for token in parsed.arguments:
        why = collector.why_unknown(token.text)
        if why is not None:
            collector.unknown("program argument", why, token.line, "arguments")
            arguments = None
    name = f"{shown}:{command.line}"
    return Deployment(
        name=name,
        kind=f"flink {command.action}",
        origin=Origin(shown, command.line, f"flink {command.action}"),
        program=program,
        program_path=located.path,
        program_mapping=located.how,
        module=module,
        arguments=arguments,
        arguments_origin=Origin(
            shown,
            parsed.arguments[0].line if parsed.arguments else command.line,
            "arguments",
        ),
        parallelism=parallelism,
        configuration=tuple(configuration.items()),
        upgrade_mode=upgrade,
        allow_non_restored_state=allow,
        initial_savepoint=savepoint,
        unknowns=tuple(collector.unknowns),
        problems=tuple(collector.problems),
        configuration_files=conf_files,
    )
