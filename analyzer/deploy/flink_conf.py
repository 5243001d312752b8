"""Flink's configuration files: ``config.yaml`` (2.x) and ``flink-conf.yaml`` (1.x).

``config.yaml`` is standard YAML: keys nested (``parallelism: {default: 4}``)
or flat (``parallelism.default: 4``) mean the same key, a list is the values
joined with ``;`` (``GlobalConfiguration``/``YamlParserUtils``).
``flink-conf.yaml`` is not parsed as YAML by Flink 1.x: each line is ``key:
value``, split at the first ``": "``, ``#`` starting a comment
(``GlobalConfiguration.loadYAMLResource``); it is read the same way here.
"""

from __future__ import annotations

from pathlib import Path

from chainlens.analyzer.deploy.kubernetes import configuration
from chainlens.analyzer.deploy.values import Collector
from chainlens.analyzer.deploy.yaml_nodes import YamlError, compose_all, prepare
from chainlens.analyzer.files import MAX_SETTINGS_BYTES, read_text_bounded, reason
from chainlens.analyzer.model.deployment import Origin, Setting

NAMES = ("config.yaml", "flink-conf.yaml")


def read_config_file(
    path: Path, shown: str, collector: Collector | None = None
) -> tuple[list[tuple[str, Setting]], Collector]:
    """The keys of a Flink configuration file, each with its line."""
    try:
        text = read_text_bounded(path, MAX_SETTINGS_BYTES)
    except (OSError, UnicodeDecodeError) as exc:
        why = reason(exc) if isinstance(exc, OSError) else "not valid UTF-8"
        collector = collector or Collector(shown)
        collector.problem("unreadable", f"cannot read {shown}: {why}", 1)
        return [], collector
    if path.name == "flink-conf.yaml":
        collector = collector or Collector(shown)
        return _legacy(text, collector), collector
    source = prepare(text)
    collector = collector or Collector(shown, source)
    try:
        documents = compose_all(source)
    except YamlError as exc:
        collector.problem("unreadable", f"not YAML: {exc.message}", exc.line)
        return [], collector
    out: list[tuple[str, Setting]] = []
    for document in documents[:1]:
        out.extend(configuration(document, collector, ""))
    return [
        (k, Setting(v.value, Origin(v.origin.path, v.origin.line, k))) for k, v in out
    ], collector


def _legacy(text: str, collector: Collector) -> list[tuple[str, Setting]]:
    out: list[tuple[str, Setting]] = []
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        key, sep, value = line.partition(": ")
        if not sep:
            if line.endswith(":"):
                key, value = line[:-1], ""
            else:
                collector.problem(
                    "invalid-value",
                    f"'{line}' is no 'key: value' line: Flink ignores it",
                    number,
                )
                continue
        setting = collector.text(value.strip(), number, key.strip())
        if setting is not None:
            out.append((key.strip(), setting))
    return out


def looks_like_flink_config(text: str) -> bool:
    """Cheap test of a ``config.yaml``: does it set Flink keys?"""
    return any(
        word in text
        for word in (
            "parallelism",
            "taskmanager",
            "jobmanager",
            "pipeline",
            "execution",
            "state.",
            "rest.",
        )
    )
