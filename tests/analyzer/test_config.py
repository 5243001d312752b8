"""Configuration: discovery, layering, per-path overrides, the command line, errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from chainlens.analyzer.check import check_file
from chainlens.analyzer.config import (
    Config,
    ConfigError,
    ConfigResolver,
    command_line_layer,
    find_config,
    glob_matches_entry,
    glob_matches_path,
    load_config_file,
)
from chainlens.analyzer.model.diagnostic import Severity
from chainlens.analyzer.rules import is_enabled
from chainlens.analyzer.rules.cl901_unused_suppression import UnusedSuppression
from chainlens.hooks.cli import main
from tests import support

FIXTURES = support.FIXTURES / "check"


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _job(directory: Path, name: str = "job.py") -> Path:
    return _write(
        directory / name, (FIXTURES / "missing_uid.py").read_text(encoding="utf-8")
    )


# ---------------------------------------------------------------------------
# discovery


def test_no_config_gives_the_defaults(tmp_path: Path) -> None:
    config = find_config(_job(tmp_path))
    assert config.select is None
    assert config.default_parallelism is None
    assert config.argv is None
    assert config.flink_config == {}
    assert config == Config(config_files=config.config_files)


def test_all_keys_of_a_pyproject_section(tmp_path: Path) -> None:
    _write(
        tmp_path / "pyproject.toml",
        """
[project]
name = "jobs"

[tool.chainlens]
select = ["CL1"]
extend-select = ["CL102"]
ignore = ["CL106"]
default-parallelism = 4
argv = ["--input", "/data/in"]
severity = { CL101 = "error", dropped-uid = "info" }
exclude = ["generated"]
extend-exclude = ["legacy"]
respect-gitignore = false

[tool.chainlens.flink]
"python.operator-chaining.enabled" = false
"execution.runtime-mode" = "BATCH"
"parallelism.default" = 8
""",
    )
    config = find_config(_job(tmp_path))
    assert config.select == ("CL1",)
    assert config.extend_select == ("CL102",)
    assert config.ignore == ("CL106",)
    assert config.default_parallelism == 4
    assert config.argv == ("--input", "/data/in")
    assert config.severities == {"CL101": Severity.ERROR, "dropped-uid": Severity.INFO}
    assert config.flink_config == {
        "python.operator-chaining.enabled": "false",
        "execution.runtime-mode": "BATCH",
        "parallelism.default": "8",
    }
    assert config.config_files == (str(tmp_path / "pyproject.toml"),)


def test_unquoted_dotted_flink_keys_are_flink_keys(tmp_path: Path) -> None:
    # In TOML, an unquoted a.b.c = x is a nested table; in Flink it is one key.
    _write(
        tmp_path / "chainlens.toml",
        "[flink]\npipeline.operator-chaining.enabled = false\n",
    )
    config = find_config(_job(tmp_path))
    assert config.flink_config == {"pipeline.operator-chaining.enabled": "false"}


def test_pyproject_without_the_section_is_skipped(tmp_path: Path) -> None:
    _write(tmp_path / "chainlens.toml", "default-parallelism = 3\n")
    _write(tmp_path / "jobs" / "pyproject.toml", "[project]\nname = 'x'\n")
    assert find_config(_job(tmp_path / "jobs")).default_parallelism == 3


def test_within_a_directory_dotfile_beats_file_beats_pyproject(tmp_path: Path) -> None:
    _write(tmp_path / "pyproject.toml", "[tool.chainlens]\ndefault-parallelism = 1\n")
    job = _job(tmp_path)
    assert find_config(job).default_parallelism == 1
    _write(tmp_path / "chainlens.toml", "default-parallelism = 2\n")
    assert find_config(job).default_parallelism == 2
    _write(tmp_path / ".chainlens.toml", "default-parallelism = 3\n")
    config = find_config(job)
    assert config.default_parallelism == 3
    assert config.config_files == (str(tmp_path / ".chainlens.toml"),)


def test_nearest_wins_and_layers_merge(tmp_path: Path) -> None:
    _write(
        tmp_path / "pyproject.toml",
        """[tool.chainlens]
default-parallelism = 4
argv = ["--outer"]
ignore = ["CL106"]
severity = { CL101 = "error", CL103 = "info" }
flink = { "execution.runtime-mode" = "BATCH", "python.execution-mode" = "thread" }
""",
    )
    _write(
        tmp_path / "team" / "chainlens.toml",
        """default-parallelism = 8
extend-select = ["CL102"]
ignore = ["CL107"]
severity = { CL101 = "hint" }
flink = { "execution.runtime-mode" = "STREAMING" }
""",
    )
    outer = find_config(_job(tmp_path))
    inner = find_config(_job(tmp_path / "team" / "jobs"))
    assert outer.default_parallelism == 4
    assert inner.default_parallelism == 8  # nearest wins
    assert inner.argv == ("--outer",)  # not set nearer: inherited
    assert inner.ignore == ("CL106", "CL107")  # accumulate
    assert inner.extend_select == ("CL102",)
    assert inner.severities == {"CL101": Severity.HINT, "CL103": Severity.INFO}
    assert inner.flink_config == {
        "execution.runtime-mode": "STREAMING",
        "python.execution-mode": "thread",
    }
    assert inner.config_files == (
        str(tmp_path / "pyproject.toml"),
        str(tmp_path / "team" / "chainlens.toml"),
    )


def test_select_starts_the_selection_afresh(tmp_path: Path) -> None:
    _write(
        tmp_path / "chainlens.toml", 'ignore = ["CL101"]\nextend-select = ["CL102"]\n'
    )
    _write(tmp_path / "sub" / "chainlens.toml", 'select = ["CL1"]\n')
    config = find_config(_job(tmp_path / "sub"))
    assert (config.select, config.extend_select, config.ignore) == (("CL1",), (), ())


def test_root_true_stops_the_walk(tmp_path: Path) -> None:
    _write(tmp_path / "chainlens.toml", "default-parallelism = 4\nargv = []\n")
    _write(tmp_path / "service" / "chainlens.toml", "root = true\nignore = ['CL106']\n")
    config = find_config(_job(tmp_path / "service" / "jobs"))
    assert config.default_parallelism is None
    assert config.argv is None
    assert config.ignore == ("CL106",)


def test_per_file_ignores_and_overrides_are_relative_to_their_config(
    tmp_path: Path,
) -> None:
    _write(
        tmp_path / "pyproject.toml",
        """[tool.chainlens]
default-parallelism = 2

[tool.chainlens.per-file-ignores]
"tests/**" = ["CL101"]
"*_backfill.py" = ["CL106"]

[[tool.chainlens.overrides]]
files = ["batch/**"]
default-parallelism = 16
ignore = ["CL107"]
flink = { "execution.runtime-mode" = "BATCH" }

[[tool.chainlens.overrides]]
files = ["batch/nightly.py"]
argv = ["--date", "2024-01-01"]
""",
    )
    plain = find_config(_job(tmp_path / "streaming"))
    assert (plain.default_parallelism, plain.ignore, plain.flink_config) == (2, (), {})
    nightly = find_config(_job(tmp_path / "batch", "nightly.py"))
    assert nightly.default_parallelism == 16
    assert nightly.ignore == ("CL107",)
    assert nightly.flink_config == {"execution.runtime-mode": "BATCH"}
    assert nightly.argv == ("--date", "2024-01-01")
    assert find_config(_job(tmp_path / "batch", "hourly.py")).argv is None
    assert find_config(_job(tmp_path / "tests" / "unit")).ignore == ("CL101",)
    assert find_config(_job(tmp_path / "jobs", "orders_backfill.py")).ignore == (
        "CL106",
    )


def test_command_line_is_the_last_layer_and_per_file_ignores_apply_after_it(
    tmp_path: Path,
) -> None:
    _write(
        tmp_path / "chainlens.toml",
        'default-parallelism = 2\nignore = ["CL106"]\n'
        '[per-file-ignores]\n"legacy_*.py" = ["CL101"]\n',
    )
    cli = command_line_layer(select=["CL1"], default_parallelism=6, flink={"a.b": True})
    resolver = ConfigResolver(cli)
    config = resolver.config_for(_job(tmp_path))
    assert config.default_parallelism == 6
    assert config.select == ("CL1",)
    assert config.ignore == ()  # --select starts afresh
    assert config.flink_config == {"a.b": "true"}
    assert resolver.config_for(_job(tmp_path, "legacy_x.py")).ignore == ("CL101",)


def test_explicit_config_file_and_isolated(tmp_path: Path) -> None:
    _write(tmp_path / "chainlens.toml", "default-parallelism = 2\n")
    other = _write(
        tmp_path / "elsewhere" / "pyproject.toml", "[tool.chainlens]\nargv = []\n"
    )
    job = _job(tmp_path)
    explicit = ConfigResolver(config_file=other).config_for(job)
    assert (explicit.default_parallelism, explicit.argv) == (None, ())
    assert ConfigResolver(isolated=True).config_for(job).default_parallelism is None
    with pytest.raises(ConfigError, match=r"has no \[tool\.chainlens\] section"):
        ConfigResolver(
            config_file=_write(tmp_path / "p" / "pyproject.toml", "[project]\n")
        )


def test_a_flink_key_from_config_changes_the_graph(tmp_path: Path) -> None:
    job = _job(tmp_path)
    chained = check_file(job, find_config(job)).result
    _write(
        tmp_path / "chainlens.toml",
        '[flink]\n"pipeline.operator-chaining.enabled" = false\n',
    )
    unchained = check_file(job, find_config(job)).result
    vertices = [len(r.jobs[0].job_graph.vertices) for r in (chained, unchained)]  # type: ignore[union-attr]
    assert vertices[1] > vertices[0]


# ---------------------------------------------------------------------------
# errors name the file and the key


@pytest.mark.parametrize(
    ("text", "key", "message"),
    [
        (
            "[tool.chainlens]\nselct = ['CL1']\n",
            "tool.chainlens.selct",
            "unknown key; did you mean 'select'?",
        ),
        (
            "[tool.chainlens]\ndefault-parallelism = '4'\n",
            "tool.chainlens.default-parallelism",
            "expected a whole number from 1 to 32768 (Flink's largest max "
            "parallelism), got a string ('4')",
        ),
        (
            "[tool.chainlens]\ndefault-parallelism = 0\n",
            "tool.chainlens.default-parallelism",
            "from 1 to 32768",
        ),
        (
            "[tool.chainlens]\ndefault-parallelism = 100000000000000000000000\n",
            "tool.chainlens.default-parallelism",
            "from 1 to 32768",
        ),
        (
            "[tool.chainlens]\nunsafe-fixes = 'yes'\n",
            "tool.chainlens.unsafe-fixes",
            "expected true or false",
        ),
        (
            "[tool.chainlens]\nseverity = { CL101 = 'fatal' }\n",
            "tool.chainlens.severity.CL101",
            "expected one of 'error', 'warning', 'info', 'hint', "
            "got a string ('fatal')",
        ),
        (
            "[tool.chainlens]\nargv = '--x'\n",
            "tool.chainlens.argv",
            "expected a list of strings",
        ),
        (
            "[tool.chainlens]\nignore = ['CL 101']\n",
            "tool.chainlens.ignore",
            "'CL 101' is not a rule selector",
        ),
        (
            "[tool.chainlens]\nroot = 'yes'\n",
            "tool.chainlens.root",
            "expected true or false",
        ),
        (
            "[tool.chainlens.flink]\n'execution.runtime-mode' = 'FAST'\n",
            'tool.chainlens.flink."execution.runtime-mode"',
            "expected one of STREAMING, BATCH, AUTOMATIC",
        ),
        (
            "[tool.chainlens.flink]\n'python.operator-chaining.enabled' = 'nope'\n",
            'tool.chainlens.flink."python.operator-chaining.enabled"',
            "expected true or false",
        ),
        (
            "[tool.chainlens.flink]\nx = [1]\n",
            'tool.chainlens.flink."x"',
            "expected a string, number or boolean",
        ),
        (
            "[[tool.chainlens.overrides]]\nignore = ['CL101']\n",
            "tool.chainlens.overrides[0].files",
            "is required",
        ),
        (
            "[[tool.chainlens.overrides]]\nfiles = ['a']\nexclude = ['b']\n",
            "tool.chainlens.overrides[0].exclude",
            "unknown key",
        ),
        (
            "[tool.chainlens]\nper-file-ignores = { 'a/**' = 'CL101' }\n",
            "tool.chainlens.per-file-ignores.a/**",
            "expected a list of strings",
        ),
    ],
)
def test_bad_values_name_file_and_key(
    tmp_path: Path, text: str, key: str, message: str
) -> None:
    path = _write(tmp_path / "pyproject.toml", text)
    with pytest.raises(ConfigError) as caught:
        load_config_file(path)
    assert caught.value.path == str(path)
    assert caught.value.key == key
    assert message in caught.value.message
    assert str(caught.value).startswith(f"{path}: {key}: ")


def test_invalid_toml_names_file_and_line(tmp_path: Path) -> None:
    path = _write(tmp_path / "chainlens.toml", "select = ['CL1'\nignore = []\n")
    with pytest.raises(ConfigError) as caught:
        find_config(_job(tmp_path))
    assert caught.value.path == str(path)
    assert "invalid TOML" in caught.value.message
    assert "line" in caught.value.message


_BAD_FILES = [
    ("[tool.chainlens]\nselct = ['CL1']\n", "tool.chainlens.selct", True),
    ("[tool.chainlens]\nignore = ['CL999']\n", "tool.chainlens.ignore", False),
    (
        "[tool.chainlens]\nseverity = { no-such-rule = 'error' }\n",
        "tool.chainlens.severity.no-such-rule",
        False,
    ),
    ("[tool.chainlens\n", None, True),
]


@pytest.mark.parametrize(
    ("command", "config", "key"),
    [("check", config, key) for config, key, _ in _BAD_FILES]
    # graph runs no rules, so it checks the file but not whether selectors name rules
    + [("graph", config, key) for config, key, for_graph in _BAD_FILES if for_graph],
)
def test_bad_config_exits_2_with_the_file_and_key(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    config: str,
    key: str | None,
) -> None:
    _write(tmp_path / "pyproject.toml", config)
    job = _job(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main([command, str(job)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("chainlens: error: ")
    assert str(tmp_path / "pyproject.toml") in captured.err
    if key:
        assert f": {key}: " in captured.err
    assert "Traceback" not in captured.err


def test_bad_command_line_selector_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["check", str(_job(tmp_path)), "--ignore", "CL999", "--isolated"]) == 2
    assert "--ignore: 'CL999' matches no rule" in capsys.readouterr().err
    assert main(["check", str(tmp_path), "--flink", "novalue", "--isolated"]) == 2
    assert (
        main(
            [
                "check",
                str(tmp_path),
                "--isolated",
                "--flink",
                "execution.runtime-mode=FAST",
            ]
        )
        == 2
    )
    assert "--flink: expected one of STREAMING" in capsys.readouterr().err


# ---------------------------------------------------------------------------
# selection and globs


@pytest.mark.parametrize(
    ("select", "extend", "ignore", "default", "expected"),
    [
        (None, (), (), True, True),
        (None, (), (), False, False),
        # a prefix selects only the rules on by default under it (as ruff's preview)
        (None, ("CL9",), (), False, False),
        (None, ("CL901",), (), False, True),
        (None, ("CL9",), (), True, True),
        (("CL1",), (), (), True, False),
        (("CL9",), (), ("CL901",), True, False),
        (("CL901",), (), ("CL9",), True, True),  # the more specific selector wins
        (("ALL",), (), ("unused-suppression",), True, False),
        (None, (), ("CL",), True, False),
    ],
)
def test_one_selection_model_for_every_rule(
    select: tuple[str, ...] | None,
    extend: tuple[str, ...],
    ignore: tuple[str, ...],
    default: bool,
    expected: bool,
) -> None:
    """CL901 is selected like every other rule (there is one selection model)."""

    class Unused(UnusedSuppression):
        enabled_by_default = default

    config = Config(select=select, extend_select=extend, ignore=ignore)
    assert is_enabled(Unused(), config) is expected


def test_globs() -> None:
    root = Path("/p")
    assert glob_matches_path("tests/**", Path("/p/tests/a/b.py"), root)
    assert glob_matches_path("tests", Path("/p/src/tests/b.py"), root)
    assert glob_matches_path("*_backfill.py", Path("/p/jobs/x_backfill.py"), root)
    assert not glob_matches_path("tests/**", Path("/p/src/tests/b.py"), root)
    assert not glob_matches_path("jobs/*.py", Path("/p/jobs/a/b.py"), root)
    assert glob_matches_path("jobs/**/*.py", Path("/p/jobs/a/b.py"), root)
    assert glob_matches_path("jobs/**/*.py", Path("/p/jobs/b.py"), root)
    assert not glob_matches_path("tests/**", Path("/q/tests/b.py"), root)
    assert glob_matches_entry("build", Path("/p/x/build"), root)
    assert not glob_matches_entry("build", Path("/p/build/x.py"), root)
    assert not glob_matches_entry("build", Path("/p"), Path("/p/build").parent)
    assert glob_matches_entry("gen/[ab]_*.py", Path("/p/gen/a_1.py"), root)
    assert not glob_matches_entry("gen/[!ab]_*.py", Path("/p/gen/a_1.py"), root)


def test_default_exclusions_do_not_apply_above_the_project(tmp_path: Path) -> None:
    project = tmp_path / "build" / "project"  # the project itself lives under build/
    _write(project / "pyproject.toml", "[tool.chainlens]\n")
    resolver = ConfigResolver()
    assert not resolver.is_excluded(_job(project))
    assert resolver.is_excluded(_job(project / "build"))
    assert resolver.is_excluded(_job(project / "x" / ".venv" / "lib"))


def test_the_documented_example_config_is_valid(tmp_path: Path) -> None:
    section = (support.ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    example = section.split("```toml\n", 1)[1].split("```", 1)[0]
    _write(tmp_path / "pyproject.toml", example)
    batch = find_config(_job(tmp_path / "batch"))
    assert batch.select == ("CL1",)
    assert batch.default_parallelism == 16
    assert batch.flink_config["execution.runtime-mode"] == "BATCH"
    assert batch.flink_config["python.operator-chaining.enabled"] == "false"
    assert find_config(_job(tmp_path / "tests")).ignore == ("CL107", "CL101")


def _entry_matches_as_paths(pattern: str, entry: Path, anchor: Path) -> bool:
    """The exclusion match by ``pathlib`` (what ``glob_matches_entry`` did)."""
    from chainlens.analyzer.config import glob_regex

    try:
        relative = entry.relative_to(anchor)
    except ValueError:
        return False
    if not relative.parts:
        return False
    stripped = pattern.strip()
    regex = glob_regex(stripped.lstrip("/").removeprefix("./").rstrip("/"))
    if "/" in stripped.rstrip("/"):
        return regex.fullmatch(relative.as_posix()) is not None
    return regex.fullmatch(entry.name) is not None


def test_an_exclusion_matches_entries_as_paths_do() -> None:
    import itertools
    import random

    from chainlens.analyzer.config import DEFAULT_EXCLUDE, glob_matches_entry

    names = ["a", "b", ".venv", "build", "x.py", "a b", "ü", "**", "a.py"]
    rng = random.Random(7)
    entries = {Path("/"), Path("/a"), Path("/ab")}
    for _ in range(400):
        parts = rng.choices(names, k=rng.randint(1, 4))
        entries.add(Path("/", *parts))
    anchors = [Path("/"), Path("/a"), Path("/a/b"), Path("/ab"), Path("/build")]
    patterns = [
        *DEFAULT_EXCLUDE,
        "a/b",
        "/a",
        "./a/*.py",
        "**/x.py",
        "a/**",
        "*",
        " build/ ",
        "a b",
        "?.py",
    ]
    for entry, anchor, pattern in itertools.product(entries, anchors, patterns):
        assert glob_matches_entry(pattern, entry, anchor) == _entry_matches_as_paths(
            pattern, entry, anchor
        ), (pattern, entry, anchor)


class _Clock:
    """Times for the files a test changes, each later than the last, and a
    clock an hour ahead of them all (every time is then old enough to be
    trusted: what the machine's other folders do does not matter)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import time

        from chainlens.analyzer import files

        self.now = time.time_ns()
        ahead = self.now + 3_600_000_000_000
        monkeypatch.setattr(files.time, "time_ns", lambda: ahead)

    def touch(self, *paths: Path) -> None:
        import os

        self.now += 1_000_000_000
        for path in paths:
            os.utime(path, ns=(self.now, self.now))


def test_a_config_kept_between_edits_follows_the_files_it_was_read_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The config an editor asks for on every edit is the one made last while
    nothing it was read from, or looked for, changed; a config file written
    above, edited, or removed, and a pin of apache-flink changed, make it
    again: always what a resolver made now says."""
    from chainlens.analyzer.config import ConfigCache

    clock = _Clock(monkeypatch)
    project = tmp_path / "project"
    job = _job(project / "jobs")
    cache = ConfigCache()

    def asked() -> Config:
        kept = cache.config_for(job)
        assert kept == ConfigResolver().config_for(job)
        return kept

    first = asked()
    assert asked() is first  # nothing changed: the config made last
    config = _write(project / "chainlens.toml", 'ignore = ["CL101"]\n')
    clock.touch(config, project)
    written = asked()
    assert "CL101" in written.ignore
    assert asked() is written
    config.write_text('ignore = ["CL102"]\n', encoding="utf-8")  # (as long)
    clock.touch(config)
    assert "CL102" in asked().ignore
    pin = _write(project / "requirements.txt", "apache-flink==1.19.1\n")
    clock.touch(pin, project)
    assert asked().flink_version.version == "1.19"
    pin.write_text("apache-flink==1.20.0\n", encoding="utf-8")
    clock.touch(pin)
    assert asked().flink_version.version == "1.20"
    config.unlink()
    clock.touch(project)
    assert "CL102" not in asked().ignore
    # above the repository (where the walk for a pin stops): a config file
    # made there is seen by its folder's time alone
    (project / ".git").mkdir()
    clock.touch(project)
    assert asked() is asked()
    outer = _write(tmp_path / "chainlens.toml", 'ignore = ["CL103"]\n')
    clock.touch(outer, tmp_path)
    assert "CL103" in asked().ignore


def test_a_config_changed_within_a_tick_of_the_clock_is_not_kept(
    tmp_path: Path,
) -> None:
    """A file changed less than a second ago may change again with the same
    time: the config read from it is made again until then."""
    from chainlens.analyzer.config import ConfigCache

    job = _job(tmp_path / "jobs")
    _write(tmp_path / "jobs" / "chainlens.toml", 'ignore = ["CL101"]\n')
    cache = ConfigCache()
    first = cache.config_for(job)
    assert cache.config_for(job) is not first
    assert cache.config_for(job) == first
