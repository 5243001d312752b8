"""The Flink version as an input: chosen, detected from pins, said in every
output; the PyFlink API of each version; the upgrade preview."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.config import (
    Config,
    ConfigError,
    ConfigResolver,
    command_line_layer,
)
from chainlens.analyzer.extract.pyflink_names import pyflink_names
from chainlens.analyzer.model.flink_versions import (
    FACTS,
    NEWEST,
    RELEASES,
    SUPPORTED,
    FlinkVersion,
    VersionError,
    newest_satisfying,
    parse_range,
    parse_version,
    profile,
)
from chainlens.analyzer.pins import _requirement, canonical_name, find_pin
from tests.support import ROOT

EXTRACT = ROOT / "analyzer" / "extract"
SUPPORTED_TEXT = "1.18, 1.19, 1.20, 2.0, 2.1, 2.2, 2.3"

PROGRAM_1X = """\
from pyflink.common import WatermarkStrategy
from pyflink.datastream import StreamExecutionEnvironment, TimeCharacteristic

env = StreamExecutionEnvironment.get_execution_environment()
env.set_stream_time_characteristic(TimeCharacteristic.EventTime)
env.from_collection([1, 2, 3]).key_by(lambda x: x).reduce(lambda a, b: a + b).print()
env.execute("totals")
"""

PROGRAM_METHOD_1X = """\
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_restart_strategy(None)
env.from_collection([1, 2, 3]).map(lambda x: x).print()
env.execute("job")
"""

PROGRAM_2X = """\
from pyflink.datastream import AsyncDataStream, StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([1, 2, 3]).print()
env.execute("job")
"""


def _analyse(text: str, version: str):  # type: ignore[no-untyped-def]
    config = Config(default_parallelism=4, flink_version=FlinkVersion(version, "flag"))
    return analyze_source("job.py", text, config)


# ------------------------------------------------------------------ versions


def test_versions_parse_and_malformed_ones_name_the_supported() -> None:
    assert parse_version("1.20") == "1.20"
    assert parse_version("1.20.5") == "1.20"
    assert parse_version(" 2.3.0 ") == "2.3"
    for bad in ("1.17", "2.4", "3", "abc", "", "2.3.0rc1"):
        with pytest.raises(VersionError, match=re.escape(SUPPORTED_TEXT)):
            parse_version(bad)
    assert parse_range("1.20..2.3") == ("1.20", "2.3")
    with pytest.raises(VersionError):
        parse_range("1.20-2.3")


@pytest.mark.parametrize(
    ("spec", "line"),
    [
        ("==1.20.5", "1.20"),
        ("==1.20.*", "1.20"),
        ("~=1.19.0", "1.19"),
        (">=1.18,<2", "1.20"),
        (">=1.20.3", "2.3"),
        ("<2.1", "2.0"),
        ("", "2.3"),
        ("==1.17.2", None),
        (">=2.4", None),
    ],
)
def test_a_range_picks_the_newest_supported_version(spec: str, line: str) -> None:
    assert newest_satisfying(spec) == line


def test_every_fact_holds_for_every_version_exactly_once() -> None:
    for name in {f.name for f in FACTS}:
        for version in SUPPORTED:
            holding = [f for f in FACTS if f.name == name and version in f.holds]
            assert len(holding) == 1, (name, version, holding)
            assert profile(version).value(name) is holding[0].value
    assert set(RELEASES) == set(SUPPORTED)


# ------------------------------------------------------------------ choosing


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("name", "text", "line", "version"),
    [
        (
            "requirements.txt",
            "pyflink-extras\n# comment\napache-flink==1.19.3\n",
            3,
            "1.19",
        ),
        ("requirements-prod.txt", "apache_flink>=1.18,<1.20  # lts\n", 1, "1.19"),
        (
            "pyproject.toml",
            '[project]\nname = "jobs"\ndependencies = [\n  "requests",\n'
            '  "apache-flink~=1.20.0",\n]\n',
            5,
            "1.20",
        ),
        (
            "pyproject.toml",
            '[project]\nname = "jobs"\n[project.optional-dependencies]\n'
            'flink = ["apache-flink==2.1.0"]\n',
            4,
            "2.1",
        ),
        (
            "pyproject.toml",
            '[tool.poetry.dependencies]\npython = "^3.11"\napache-flink = "^1.19"\n',
            3,
            "1.20",
        ),
        (
            "setup.cfg",
            "[metadata]\nname = jobs\n[options]\ninstall_requires =\n"
            "    apache-flink==1.18.1\n",
            5,
            "1.18",
        ),
        ("Pipfile", '[packages]\napache-flink = "==2.0.2"\n', 2, "2.0"),
        (
            "Pipfile.lock",
            json.dumps(
                {"default": {"apache-flink": {"version": "==1.20.1"}}}, indent=1
            ),
            3,
            "1.20",
        ),
        (
            "poetry.lock",
            '[[package]]\nname = "apache-flink-libraries"\nversion = "2.2.0"\n\n'
            '[[package]]\nname = "apache-flink"\nversion = "2.2.0"\n',
            6,
            "2.2",
        ),
        (
            "uv.lock",
            'version = 1\n[[package]]\nname = "apache-flink"\nversion = "1.19.3"\n',
            3,
            "1.19",
        ),
    ],
)
def test_a_pin_chooses_the_version_and_is_named_with_its_line(
    tmp_path: Path, name: str, text: str, line: int, version: str
) -> None:
    pin_file = _write(tmp_path / name, text)
    program = _write(tmp_path / "jobs" / "job.py", PROGRAM_1X)
    config = ConfigResolver().config_for(program)
    assert config.flink_version == FlinkVersion(version, f"pin:{pin_file}:{line}")


def test_the_nearest_of_pins_and_config_wins_and_the_flag_wins_over_all(
    tmp_path: Path,
) -> None:
    (tmp_path / ".git").mkdir()
    root_config = _write(
        tmp_path / "pyproject.toml", '[tool.chainlens]\nflink-version = "2.3"\n'
    )
    pin = _write(tmp_path / "legacy" / "requirements.txt", "apache-flink==1.20.5\n")
    legacy = _write(tmp_path / "legacy" / "job.py", PROGRAM_1X)
    modern = _write(tmp_path / "modern" / "job.py", PROGRAM_1X)
    resolver = ConfigResolver()
    # the pin is nearer to the legacy job than the root config
    assert resolver.config_for(legacy).flink_version == FlinkVersion(
        "1.20", f"pin:{pin}:1"
    )
    assert resolver.config_for(modern).flink_version == FlinkVersion(
        "2.3", f"config:{root_config}"
    )
    # a config in the pin's own folder wins over the pin
    own = _write(
        tmp_path / "legacy" / "chainlens.toml",
        'flink-version = "1.19"\n[[overrides]]\nfiles = ["job.py"]\n'
        'flink-version = "1.18"\n',
    )
    assert ConfigResolver().config_for(legacy).flink_version == FlinkVersion(
        "1.18", f"config:{own}"
    )
    flag = ConfigResolver(command_line_layer(flink_version="2.1"))
    assert flag.config_for(legacy).flink_version == FlinkVersion("2.1", "flag")
    # nothing: the newest
    alone = _write(tmp_path / "elsewhere" / ".git" / "x", "")
    assert find_pin(alone.parent.parent) is None


#: requirement lines: plain version clauses (read by packaging's specifiers
#: alone) and the rest (extras, markers, URLs, mistakes: its requirement parser)
REQUIREMENTS = [
    "apache-flink==2.3.0",
    " apache-flink == 2.3.0 ",
    "apache-flink\t==2.3.0",
    "Apache_Flink>=1.20,<2",
    "APACHE-FLINK==2.3.0",
    "apache.flink~=1.20.0",
    "apache-flink >= 1.19 , < 2.0",
    "apache-flink!=2.0,>=1.18",
    "apache-flink==2.3.*",
    "apache-flink===2.3.0",
    "apache-flink==1!2.0",
    "apache-flink==2.3+local",
    "apache-flink==1.20.0rc1",
    "apache-flink",
    "apache-flink==",
    "apache-flink==2.3.0,",
    "apache-flink ==2.3.0,,>=1",
    "apache-flink , ==2",
    "apache-flink==abc",
    "apache-flink~=2",
    "apache-flink~=1.20.*",
    "apache-flink==2.3 extra",
    "apache-flink-==2",
    "apache--flink==2",
    "apache-flinkx==2",
    "apache-flink[extra]==2.3",
    "apache-flink==2.3; python_version>'3'",
    "apache-flink @ https://example.com/apache_flink-2.3.0.whl",
    "apache-flink(==2.3)",
    "pyflink==1",
    "-e apache-flink",
    "",
]


@pytest.mark.parametrize("line", REQUIREMENTS)
def test_a_requirement_reads_as_packaging_reads_it(line: str) -> None:
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    try:
        req = Requirement(line.strip())
    except InvalidRequirement:
        expected = None
    else:
        named = canonicalize_name(req.name) == "apache-flink"
        expected = str(req.specifier) if named else None
    assert _requirement(line) == expected
    name = line.strip().partition("=")[0]
    assert canonical_name(name) == canonicalize_name(name)


def test_no_pin_above_the_repository_root(tmp_path: Path) -> None:
    _write(tmp_path / "requirements.txt", "apache-flink==1.18.1\n")
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    program = _write(tmp_path / "repo" / "job.py", PROGRAM_1X)
    assert ConfigResolver().config_for(program).flink_version == FlinkVersion(
        NEWEST, "default"
    )


def test_a_requirements_file_added_renamed_or_removed_is_seen(tmp_path: Path) -> None:
    """A folder's requirements files are listed again once the folder changed
    (they are kept by its modification time between edits)."""
    (tmp_path / ".git").mkdir()
    for name in ("README.md", "requirements-notes.md", "requirementstxt"):
        _write(tmp_path / name, "apache-flink==1.18.1\n")
    settled = time.time_ns() - 10_000_000_000  # (its listing is kept)
    os.utime(tmp_path, ns=(settled, settled))
    assert find_pin(tmp_path) is None
    assert find_pin(tmp_path) is None
    first = _write(tmp_path / "requirements-dev.txt", "apache-flink==1.19.3\n")
    pin = find_pin(tmp_path)
    assert pin is not None
    assert (pin.path, str(pin.specifier)) == (first, "==1.19.3")
    second = _write(tmp_path / "requirements.txt", "apache-flink==1.20.5\n")
    pin = find_pin(tmp_path)
    assert pin is not None
    assert pin.path == first  # the first in name order
    first.rename(tmp_path / "requirements-dev.txt.old")
    pin = find_pin(tmp_path)
    assert pin is not None
    assert pin.path == second
    second.unlink()
    assert find_pin(tmp_path) is None


def test_a_resolver_looks_for_pins_once_per_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each folder's pin files are looked for once per resolver (a listing and
    eight stats a folder: a check of 1,000 programs spent a fifth of its
    serial part there), with the answers of a walk per file."""
    from chainlens.analyzer import pins

    (tmp_path / ".git").mkdir()
    _write(tmp_path / "requirements.txt", "apache-flink==1.20.5\n")
    _write(tmp_path / "a" / "b" / "Pipfile", '[packages]\napache-flink = "==2.0.2"\n')
    programs = [
        _write(tmp_path / folder / f"job_{n}.py", PROGRAM_1X)
        for folder in ("a", "a/b", "a/b/c", "a/b/c/d", "e", "e/f")
        for n in range(3)
    ]
    expected = {p: find_pin(p.parent) for p in programs}
    looked: list[Path] = []
    real = pins.pin_of_directory

    def counted(directory: Path) -> pins.Pin | None:
        looked.append(directory)
        return real(directory)

    monkeypatch.setattr(pins, "pin_of_directory", counted)
    resolver = ConfigResolver()
    for program in programs:
        pin = expected[program]
        assert pin is not None
        assert resolver.config_for(program).flink_version.source == (
            f"pin:{pin.path}:{pin.line}"
        )
    assert sorted(looked) == sorted(set(looked))  # each folder once
    # the root, a, a/b (a pin), a/b/c, a/b/c/d, e, e/f
    assert len(looked) == 7
    known: dict[Path, pins.Pin | None] = {}
    for program in programs:
        assert find_pin(program.parent, known) == expected[program]


def test_bad_versions_are_one_line_errors(tmp_path: Path) -> None:
    configured = tmp_path / "configured"
    _write(configured / "pyproject.toml", '[tool.chainlens]\nflink-version = "1.17"\n')
    with pytest.raises(ConfigError) as bad:
        ConfigResolver().config_for(_write(configured / "job.py", PROGRAM_1X))
    assert str(bad.value) == (
        f"{configured / 'pyproject.toml'}: tool.chainlens.flink-version: Flink 1.17 "
        "is not supported (supported: 1.18, 1.19, 1.20, 2.0, 2.1, 2.2, 2.3)"
    )
    _write(configured / "pyproject.toml", "[tool.chainlens]\nflink-version = 1.2\n")
    with pytest.raises(ConfigError, match="as a string"):
        ConfigResolver().config_for(configured / "job.py")
    other = tmp_path / "pinned"
    _write(other / "requirements.txt", "\napache-flink==1.16.3\n")
    with pytest.raises(ConfigError) as pinned:
        ConfigResolver().config_for(_write(other / "job.py", PROGRAM_1X))
    assert str(pinned.value).startswith(f"{other / 'requirements.txt'}:2: ")
    assert "1.18, 1.19, 1.20, 2.0, 2.1, 2.2, 2.3" in str(pinned.value)
    assert "\n" not in str(pinned.value)


# ------------------------------------------------------------------ the API


def test_the_tables_of_names_agree_with_the_newest_one() -> None:
    newest = json.loads((EXTRACT / "pyflink_names.json").read_text())
    older = json.loads((EXTRACT / "pyflink_names_versions.json").read_text())
    assert older["base"] == newest["version"] == RELEASES[NEWEST]
    assert set(older["versions"]) == set(SUPPORTED) - {NEWEST}
    for line, diff in older["versions"].items():
        assert diff["release"] == RELEASES[line]
        assert pyflink_names(line).version == RELEASES[line]


def test_the_table_of_star_names_covers_every_line() -> None:
    star = json.loads((EXTRACT / "pyflink_star_names.json").read_text())
    assert star["base"] == RELEASES[NEWEST]
    assert set(star["versions"]) == set(SUPPORTED) - {NEWEST}
    for line, diff in star["versions"].items():
        assert diff["release"] == RELEASES[line]


def test_an_api_removed_in_2_0_is_fine_on_1_20_and_an_error_naming_1_x_on_2_3() -> None:
    on_1_20 = _analyse(PROGRAM_1X, "1.20")
    assert on_1_20.problems == ()
    assert len(on_1_20.jobs) == 1
    assert on_1_20.jobs[0].job_graph is not None
    on_2_3 = _analyse(PROGRAM_1X, "2.3")
    (problem,) = on_2_3.problems
    assert problem.code == "flink-error"
    assert "PyFlink 2.3.0 has no TimeCharacteristic" in problem.message
    assert "(PyFlink 1.18-1.20 has it)" in problem.message
    assert on_2_3.jobs == ()
    on_2_0 = _analyse(PROGRAM_METHOD_1X, "2.0")
    (problem,) = on_2_0.problems
    assert "set_restart_strategy() does not exist in PyFlink 2.0.2" in problem.message
    assert "(PyFlink 1.18-1.20 has it)" in problem.message
    # 1.x has the method, and fails inside it on None (as real Flink 1.20 does)
    (problem,) = _analyse(PROGRAM_METHOD_1X, "1.18").problems
    assert "'_j_restart_strategy_configuration'" in problem.message
    fine = PROGRAM_METHOD_1X.replace("(None)", "(strategy)")
    assert _analyse(fine, "1.18").problems == ()


def test_an_api_added_in_2_2_is_an_error_on_1_20() -> None:
    assert _analyse(PROGRAM_2X, "2.3").problems == ()
    (problem,) = _analyse(PROGRAM_2X, "1.20").problems
    assert "PyFlink 1.20.5 has no AsyncDataStream in pyflink.datastream" in (
        problem.message
    )
    assert "(PyFlink 2.2-2.3 has it)" in problem.message


# ------------------------------------------------------------------ outputs


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-P", "-m", "chainlens.hooks.entry", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
    )


def test_every_output_says_the_version_and_where_it_came_from(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    _write(tmp_path / "requirements.txt", "apache-flink==1.20.5\n")
    _write(tmp_path / "job.py", PROGRAM_1X)
    pin = {"version": "1.20", "source": f"pin:{tmp_path / 'requirements.txt'}:1"}
    text = _cli("graph", "job.py", cwd=tmp_path)
    assert text.stdout.splitlines()[0] == (
        f"job.py: Flink 1.20 (apache-flink pinned in {tmp_path / 'requirements.txt'}:1)"
    )
    graph = json.loads(_cli("graph", "job.py", "--format", "json", cwd=tmp_path).stdout)
    assert graph["files"][0]["flink_version"] == pin
    check = _cli("check", "job.py", "--flink-version", "1.19", cwd=tmp_path)
    assert "Analysed for Flink 1.19 (--flink-version)." in check.stdout
    as_json = json.loads(
        _cli("check", "job.py", "--format", "json", cwd=tmp_path).stdout
    )
    assert as_json["summary"]["flink_versions"] == [{**pin, "files": 1}]
    sarif = json.loads(
        _cli("check", "job.py", "--format", "sarif", cwd=tmp_path).stdout
    )
    assert sarif["runs"][0]["properties"]["flinkVersions"] == [{**pin, "files": 1}]
    bad = _cli("check", "job.py", "--flink-version", "1.17", cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.splitlines() == [
        "chainlens check: error: --flink-version: Flink 1.17 is not supported "
        "(supported: 1.18, 1.19, 1.20, 2.0, 2.1, 2.2, 2.3)",
        "usage: chainlens check [options] [PATH ...]",
    ]


def test_the_upgrade_preview_names_what_breaks(tmp_path: Path) -> None:
    _write(tmp_path / "job.py", PROGRAM_1X)
    done = _cli("graph", "job.py", "--flink-version", "1.20..2.3", cwd=tmp_path)
    lines = done.stdout.splitlines()
    assert lines[0] == "job.py: upgrade from Flink 1.20 to Flink 2.3"
    assert lines[1].startswith("  job.py:2:1: fails on Flink 2.3: PyFlink 2.3.0 has no")
    assert "job 0 'totals': not compared: the job is not submitted on Flink 2.3" in (
        done.stdout
    )
    assert "state: Flink does not guarantee" in done.stdout
    doc = json.loads(
        _cli(
            "graph",
            "job.py",
            "--flink-version",
            "1.20..2.3",
            "--format",
            "json",
            cwd=tmp_path,
        ).stdout
    )
    (file,) = doc["files"]
    assert file["from"] == {"version": "1.20", "source": "flag"}
    assert file["breaks_state"] is True
    assert [c["kind"] for c in file["removed_apis"]] == ["api-removed"]
    same = _cli("graph", "job.py", "--flink-version", "1.18..1.20", cwd=tmp_path)
    assert "job 0 'totals': no change" in same.stdout
    assert "state:" not in same.stdout
    bad = _cli("graph", "job.py", "--flink-version", "1.20..3.0", cwd=tmp_path)
    assert bad.returncode == 2
    assert "Flink 3.0 is not supported" in bad.stderr


PROGRAM_COLLECT = """\
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
with env.from_collection([1, 2, 3]).map(lambda x: x + 1).execute_and_collect() as it:
    print(list(it))
"""

PROGRAM_JAVA_SINK = """\
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import SinkFunction

env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([1, 2, 3]).add_sink(
    SinkFunction("org.apache.flink.streaming.api.functions.sink.legacy.DiscardingSink")
)
env.execute("job")
"""


def _collect_sink(result):  # type: ignore[no-untyped-def]
    (job,) = result.jobs
    (op,) = [
        op
        for v in job.job_graph.vertices
        for op in v.operators
        if op.name == "Sink: Data stream collect sink"
    ]
    return op


def test_the_collect_sink_has_a_uid_from_2_0_on() -> None:
    old, new = _analyse(PROGRAM_COLLECT, "1.20"), _analyse(PROGRAM_COLLECT, "2.0")
    assert _collect_sink(old).uid is None
    assert str(_collect_sink(new).uid).startswith("dataStreamCollect_")
    assert _collect_sink(old).operator_id != _collect_sink(new).operator_id


def test_java_classes_moved_to_legacy_in_2_0() -> None:
    assert _analyse(PROGRAM_JAVA_SINK, "2.3").problems == ()
    (problem,) = _analyse(PROGRAM_JAVA_SINK, "1.20").problems
    assert problem.message.startswith(
        "Could not found the Java class "
        "'org.apache.flink.streaming.api.functions.sink.legacy.DiscardingSink'"
    )
    assert "'org.apache.flink.streaming.api.functions.sink.DiscardingSink'" in (
        problem.message
    )
    old_name = PROGRAM_JAVA_SINK.replace("sink.legacy.", "sink.")
    assert _analyse(old_name, "1.20").problems == ()
    assert len(_analyse(old_name, "2.1").problems) == 1


def test_the_upgrade_preview_shows_the_collect_sink_id_moving(tmp_path: Path) -> None:
    _write(tmp_path / "job.py", PROGRAM_COLLECT)
    done = _cli(
        "graph",
        "job.py",
        "--flink-version",
        "1.20..2.0",
        "--format",
        "json",
        cwd=tmp_path,
    )
    (file,) = json.loads(done.stdout)["files"]
    (job,) = file["jobs"]
    moved = [c for c in job["changes"] if c["kind"] == "operator-id"]
    assert len(moved) == 1
    assert "Sink: Data stream collect sink" in moved[0]["message"]
    assert moved[0]["breaks_state"] is False
    assert file["breaks_state"] is True  # 1.x -> 2.x: no state guarantee


def test_a_java_class_load_inside_a_handled_try_is_not_a_failure() -> None:
    guarded = PROGRAM_JAVA_SINK.replace(
        "env.from_collection([1, 2, 3]).add_sink(\n",
        "try:\n    sink = SinkFunction(\n"
        '        "org.apache.flink.streaming.api.functions.sink.legacy."\n'
        '        "DiscardingSink"\n'
        "    )\nexcept TypeError:\n"
        '    sink = SinkFunction("org.apache.flink.streaming.api.functions.sink.'
        'DiscardingSink")\nenv.from_collection([1, 2, 3]).add_sink(\n',
    ).replace(
        '    SinkFunction("org.apache.flink.streaming.api.functions.sink.legacy.'
        'DiscardingSink")\n',
        "    sink\n",
    )
    assert "except TypeError" in guarded
    assert "add_sink(\n    sink\n)" in guarded
    result = _analyse(guarded, "1.20")
    assert result.problems == ()
    assert len(result.jobs) == 1


KEYED = """\
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.from_collection([1, 2, 3]).key_by(lambda x: x).reduce(
    lambda a, b: a + b
).uid("totals").print()
env.execute("totals")
"""


def test_an_upgrade_is_a_savepoint_base(tmp_path: Path) -> None:
    """``savepoint --flink-version A..B``: the program on A is the base of the
    same program on B (what restoring across the upgrade meets)."""
    _write(tmp_path / "old.py", PROGRAM_1X)
    done = _cli("savepoint", "old.py", "--flink-version", "1.20..2.3", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith(
        "Upgrade: each program on Flink 1.20 is the base of the same program on "
        "Flink 2.3"
    )
    assert "old.py:2:1: CL000 error: PyFlink raises here" in done.stdout
    assert "Flink does not guarantee that state saved by Flink 1.20" in done.stderr
    doc = json.loads(
        _cli(
            "savepoint",
            "old.py",
            "--flink-version",
            "1.20..2.3",
            "--format",
            "json",
            cwd=tmp_path,
        ).stdout
    )
    assert doc["upgrade"]["from"] == "1.20"
    assert doc["upgrade"]["to"] == "2.3"
    assert doc["upgrade"]["state"].startswith("Flink does not guarantee")
    _write(tmp_path / "keyed.py", KEYED)
    same = _cli("savepoint", "keyed.py", "--flink-version", "1.18..1.20", cwd=tmp_path)
    assert same.returncode == 0, same.stdout + same.stderr
    assert "Analysed for Flink 1.20 (--flink-version)." in same.stdout
    assert "does not guarantee" not in same.stderr


def test_an_upgrade_with_a_git_base(tmp_path: Path) -> None:
    """With ``--base``, the base revision runs on A and the work tree on B: a
    uid renamed during the upgrade is still a state the new job cannot restore."""
    _write(tmp_path / "keyed.py", KEYED)
    git = ["git", "-c", "user.email=t@example.invalid", "-c", "user.name=t"]
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "base"]):
        subprocess.run([*git, *args], cwd=tmp_path, check=True)
    _write(tmp_path / "keyed.py", KEYED.replace('uid("totals")', 'uid("sums")'))
    done = _cli(
        "savepoint",
        "keyed.py",
        "--base",
        "HEAD",
        "--flink-version",
        "1.20..2.2",
        cwd=tmp_path,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "on Flink 1.20, the work tree on 2.2" in done.stdout
    assert "CL201" in done.stdout
    assert "Analysed for Flink 2.2 (--flink-version)." in done.stdout


#: a class of the JVM view's .legacy package, its name literal or not known
PROGRAM_LEGACY_PACKAGE = """import os
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import SourceFunction
from pyflink.java_gateway import get_gateway

env = StreamExecutionEnvironment.get_execution_environment()
legacy = get_gateway().jvm.org.apache.flink.streaming.api.functions.source.legacy
source_class = CLASS
env.add_source(SourceFunction(source_class(1, 10)), "n", Types.LONG()).print()
env.execute()
"""


@pytest.mark.parametrize(
    "chosen",
    ['getattr(legacy, os.environ["SOURCE_CLASS"])', "legacy.SocketTextStreamFunction"],
)
def test_a_class_of_a_package_1x_lacks_fails_whichever_it_is(chosen: str) -> None:
    """1.x has no .legacy package at all: any class of it fails, also one
    named at run time; 2.x has the package (a name it is not known to have
    stays an unknown)."""
    program = PROGRAM_LEGACY_PACKAGE.replace("CLASS", chosen)
    (problem,) = _analyse(program, "1.20").problems
    assert problem.message.startswith(
        "Could not found the Java class "
        "'org.apache.flink.streaming.api.functions.source.legacy."
    )
    assert "Flink 1.20 has no package" in problem.message
    assert problem.range is not None
    assert problem.range.start.line == 10
    newer = _analyse(program, "2.0")
    assert newer.problems == ()
    assert len(newer.jobs) == 1
