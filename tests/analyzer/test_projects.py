"""Programs split across their own modules: followed, exact, located, never silent."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from chainlens.analyzer import Config, ConfigResolver, check_paths, check_text
from chainlens.analyzer.api import analyze_source
from chainlens.analyzer.importers import importers_of
from tests.oracle.check import differences
from tests.support import FIXTURES, first_arguments

PROJECTS = FIXTURES / "projects"
MAINS = sorted(PROJECTS.glob("*/main.py"))


@pytest.mark.parametrize("program", MAINS, ids=[p.parent.name for p in MAINS])
def test_project_matches_flink(program: Path) -> None:
    expected = json.loads(
        program.with_suffix(".expected.json").read_text(encoding="utf-8")
    )
    assert differences(program, expected) == []


def _analyse(path: Path) -> object:
    return analyze_source(str(path), path.read_text(encoding="utf-8"), Config())


def test_operators_are_located_in_the_module_that_creates_them() -> None:
    main = PROJECTS / "package_relative" / "main.py"
    result = analyze_source(str(main), main.read_text(encoding="utf-8"))
    (job,) = result.jobs
    assert job.stream_graph is not None
    members = [m for n in job.stream_graph.nodes for m in (n.members or (n,))]
    where = {
        str(m.name): (Path(m.range.path).name if m.range.path else None)
        for m in members
        if m.range is not None
    }
    assert where["double"] == "transforms.py"
    assert where["evens"] == "transforms.py"
    assert where["Source: Collection Source"] == "sources.py"
    double = next(m for m in members if str(m.name) == "double")
    assert double.range is not None
    assert double.range.via is not None
    # the program reaches the module through build(env), line 14 of main.py
    assert double.range.via.start.line == 14
    assert double.range.via.path is None
    assert sorted(Path(m).name for m in result.modules) == [
        "__init__.py",
        "sources.py",
        "steps.py",
        "transforms.py",
    ]


def test_findings_about_module_code_are_reported_where_the_file_reaches_it(
    tmp_path: Path,
) -> None:
    project = tmp_path / "p"
    shutil.copytree(PROJECTS / "helpers_flat", project)
    main = project / "main.py"
    text = main.read_text(encoding="utf-8").replace(".uid(KEYED_UID)", "")
    (finding,) = [
        f
        for f in check_text(str(main), text, Config()).findings
        if f.diagnostic.code.code == "CL101"
    ]
    # the reduce is in main.py here: a fix is offered
    assert finding.fixable
    steps = project / "helpers.py"
    steps.write_text(
        "from pyflink.common import Types\n\n\n"
        "def totals(stream):\n"
        "    return stream.key_by(lambda e: e[0], key_type=Types.STRING()) \\\n"
        "        .reduce(lambda a, b: (a[0], a[1] + b[1]))\n",
        encoding="utf-8",
    )
    moved = text.replace(
        "    totals = clicks(env).union(views(env)) \\\n"
        "        .key_by(lambda e: e[0], key_type=Types.STRING()) \\\n"
        "        .reduce(lambda a, b: (a[0], a[1] + b[1]))\n",
        "    totals = helpers.totals(clicks(env).union(views(env)))\n",
    ).replace("import sinks\n", "import helpers\nimport sinks\n")
    assert moved != text
    (finding,) = [
        f
        for f in check_text(str(main), moved, Config()).findings
        if f.diagnostic.code.code == "CL101"
    ]
    line = moved.split("\n").index(
        "    totals = helpers.totals(clicks(env).union(views(env)))"
    )
    assert finding.diagnostic.range.start.line == line + 1
    assert finding.diagnostic.range.path is None
    assert finding.diagnostic.message.endswith(" [in helpers.py:6]")
    assert "helpers.py:6:10." in finding.diagnostic.explanation
    (related,) = finding.diagnostic.related
    assert related.range.path == str(steps)
    assert not finding.fixable  # the fix would have to edit helpers.py
    # a suppression goes where the finding is shown
    lines = moved.split("\n")
    lines[line] += "  # chainlens: ignore[CL101]"
    quiet = check_text(str(main), "\n".join(lines), Config()).findings
    assert not [f for f in quiet if f.diagnostic.code.code in ("CL101", "CL901")]


def test_a_src_layout_resolves_like_an_installed_package(tmp_path: Path) -> None:
    flat = PROJECTS / "package_relative"
    project = tmp_path / "proj"
    (project / "src").mkdir(parents=True)
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    shutil.copytree(flat / "pipeline", project / "src" / "pipeline")
    (project / "scripts").mkdir()
    shutil.copy(flat / "main.py", project / "scripts" / "run.py")
    ours = analyze_source(
        str(project / "scripts" / "run.py"), (flat / "main.py").read_text()
    )
    reference = analyze_source(str(flat / "main.py"), (flat / "main.py").read_text())

    def ids(result: object) -> list[tuple[str, str]]:
        return [
            (v.id, str(v.name))
            for job in result.jobs  # type: ignore[attr-defined]
            for v in job.job_graph.vertices
        ]

    assert ids(ours) == ids(reference)
    assert len(ids(ours)) == 3


def _program(body: str) -> str:
    return (
        "from pyflink.common import Types\n"
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        f"{body}"
        "env = StreamExecutionEnvironment.get_execution_environment()\n"
        "stream = env.from_collection([1, 2], type_info=Types.INT())\n"
        "helper(stream).print()\n"
        "env.execute('job')\n"
    )


@pytest.mark.parametrize(
    ("files", "import_line", "says"),
    [
        # a module of the project with a syntax error
        ({"helpers.py": "def helper(s:\n"}, "from helpers import helper\n", "parsed"),
        # a module not in the project (an installed package): not followed
        ({}, "from somewhere_else import helper\n", "does not follow"),
        # a relative import in the program itself (it runs as a script)
        ({}, "from .helpers import helper\n", "relative import"),
    ],
)
def test_what_is_not_followed_is_said_with_its_location(
    tmp_path: Path, files: dict[str, str], import_line: str, says: str
) -> None:
    for name, text in files.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    main = tmp_path / "main.py"
    text = _program(import_line)
    result = analyze_source(str(main), text)
    assert not any(j.error for j in result.jobs)  # never "Flink rejects"
    notes = [u for u in result.unknowns if says in u.reason]
    assert notes, [u.reason for u in result.unknowns]
    assert all(u.range is not None for u in notes)


def test_an_import_cycle_and_a_module_run_once(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "import b\nCOUNT = []\nCOUNT.append(1)\n\n\ndef helper(s):\n"
        "    return b.twice(s)\n"
    )
    (tmp_path / "b.py").write_text(
        "import a\nfrom pyflink.common import Types\n\n\ndef twice(s):\n"
        "    return s.map(lambda x: x * 2, output_type=Types.INT())\n"
    )
    main = tmp_path / "main.py"
    text = _program("from a import helper\nimport a\nimport a as again\n")
    result = analyze_source(str(main), text)
    (job,) = result.jobs
    assert job.job_graph is not None
    assert {str(n.name) for n in job.stream_graph.nodes} >= {"Map"}  # type: ignore[union-attr]


def test_the_editor_buffer_of_a_module_is_read_not_the_disk(tmp_path: Path) -> None:
    helper = tmp_path / "helpers.py"
    helper.write_text(
        "def helper(s):\n    return s.filter(lambda x: x > 0)\n", encoding="utf-8"
    )
    unsaved = "def helper(s):\n    return s.filter(lambda x: x > 0).name('kept')\n"
    main = tmp_path / "main.py"
    text = _program("from helpers import helper\n")

    def read(path: Path) -> str | None:
        return unsaved if path == helper else path.read_text(encoding="utf-8")

    names = {
        str(n.name)
        for n in analyze_source(str(main), text, read=read).jobs[0].stream_graph.nodes  # type: ignore[union-attr]
    }
    assert "kept" in names


# ------------------------------------------- checking a module of the project


def _project_with_a_helper(tmp_path: Path) -> tuple[Path, Path, Path]:
    """helpers_flat with its keyed reduce moved into helpers.py, without uid."""
    project = tmp_path / "p"
    shutil.copytree(PROJECTS / "helpers_flat", project)
    main = project / "main.py"
    helpers = project / "helpers.py"
    helpers.write_text(
        "from pyflink.common import Types\n\n\n"
        "def totals(stream):\n"
        "    return stream.key_by(lambda e: e[0], key_type=Types.STRING()) \\\n"
        "        .reduce(lambda a, b: (a[0], a[1] + b[1]))\n",
        encoding="utf-8",
    )
    text = main.read_text(encoding="utf-8")
    moved = text.replace(
        "    totals = clicks(env).union(views(env)) \\\n"
        "        .key_by(lambda e: e[0], key_type=Types.STRING()) \\\n"
        "        .reduce(lambda a, b: (a[0], a[1] + b[1])).uid(KEYED_UID)\n",
        "    totals = helpers.totals(clicks(env).union(views(env)))\n",
    ).replace("import sinks\n", "import helpers\nimport sinks\n")
    assert moved != text
    main.write_text(moved, encoding="utf-8")
    return project, main, helpers


def test_checking_only_a_module_reports_what_its_programs_find_in_it(
    tmp_path: Path,
) -> None:
    """``chainlens check helpers.py`` (a pre-commit run where only the module
    changed): the programs of the project that import it are analysed and
    their findings located in it are reported at its lines."""
    project, main, helpers = _project_with_a_helper(tmp_path)
    # a decoy that names the module only in a comment is not analysed
    (project / "other.py").write_text(
        "# helpers are elsewhere\nfrom pyflink.datastream import DataStream\n",
        encoding="utf-8",
    )
    assert importers_of(helpers) == [main]
    (checked,) = check_paths([helpers], ConfigResolver(), cwd=project)
    # the module's reduce also never reads its aggregate back (CL108)
    assert sorted(f.diagnostic.code.code for f in checked.findings) == [
        "CL101",
        "CL108",
    ]
    (finding,) = [f for f in checked.findings if f.diagnostic.code.code == "CL101"]
    assert finding.path == "helpers.py"
    assert finding.diagnostic.code.code == "CL101"
    start = finding.diagnostic.range.start
    assert (start.line, start.column) == (6, 9)
    assert "[in the program main.py:" in finding.diagnostic.message
    (related,) = finding.diagnostic.related
    assert related.range.path == str(main)
    assert not finding.fixable
    # checked together, the program reports it (at its call), the module not again
    both = check_paths([project], ConfigResolver(), cwd=project)
    shown = {(c.display, f.diagnostic.code.code) for c in both for f in c.findings}
    assert shown == {("main.py", "CL101"), ("main.py", "CL108")}
    # a suppression comment in the module silences it, and is not "unused"
    lines = helpers.read_text(encoding="utf-8").split("\n")
    lines[5] += "  # chainlens: ignore[CL101, CL108]"
    helpers.write_text("\n".join(lines), encoding="utf-8")
    (quiet,) = check_paths([helpers], ConfigResolver(), cwd=project)
    assert quiet.findings == ()


def test_the_importers_of_a_package_module_through_relative_imports() -> None:
    project = PROJECTS / "package_relative"
    main = project / "main.py"
    for module in sorted((project / "pipeline").glob("*.py")):
        assert main in importers_of(module), module


_GATEWAY_ENV = """\
from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.java_gateway import get_gateway


class GatewayEnv(StreamExecutionEnvironment):
    def __init__(self):
        jvm = get_gateway().jvm
        super().__init__(
            jvm.org.apache.flink.streaming.api.environment
            .StreamExecutionEnvironment.getExecutionEnvironment()
        )


env = GatewayEnv()
env.set_parallelism(2)
env.from_collection([1, 2], type_info=Types.INT()).print()
env.execute("gateway_env")
"""


def test_an_env_subclass_on_an_unknown_java_environment_is_a_partial_job() -> None:
    result = analyze_source("gw.py", _GATEWAY_ENV)
    (job,) = result.jobs
    assert job.error is None
    assert job.job_graph is not None
    # its operators are shown, and the job says where it stops being known
    assert [str(v.name) for v in job.job_graph.vertices] == [
        "Source: Collection Source",
        "Sink: Print to Std. Out",
    ]
    (note,) = [u for u in job.unknowns if "Java environment" in u.reason]
    assert note.range is not None
    # at super().__init__ (the method name, as every call is located)
    assert (note.range.start.line, note.range.start.column) == (9, 16)


def test_an_env_subclass_given_to_code_not_followed_marks_its_job_partial() -> None:
    text = _GATEWAY_ENV.replace(
        "        jvm = get_gateway().jvm\n        super().__init__(\n"
        "            jvm.org.apache.flink.streaming.api.environment\n"
        "            .StreamExecutionEnvironment.getExecutionEnvironment()\n"
        "        )\n",
        "        super().__init__(\n"
        "            StreamExecutionEnvironment.get_execution_environment()\n"
        "            ._j_stream_execution_environment\n"
        "        )\n",
    ).replace(
        'env.execute("gateway_env")',
        "from pyflink.table import StreamTableEnvironment\n"
        "StreamTableEnvironment.create(env)\n"
        'env.execute("gateway_env")',
    )
    assert "getExecutionEnvironment" not in text
    (job,) = analyze_source("env.py", text).jobs
    assert job.job_graph is not None
    # the environment went into the Table API at line 18: the job says so
    escapes = [u for u in job.unknowns if "Table API" in u.reason]
    assert escapes
    assert {u.range.start.line for u in escapes if u.range is not None} == {18}


def test_an_inherited_env_method_on_an_instance_built_on_no_env_is_said() -> None:
    # its __init__ never calls StreamExecutionEnvironment.__init__ (PyFlink
    # fails on the first inherited method): each call is a located unknown
    text = _GATEWAY_ENV.replace(
        "        jvm = get_gateway().jvm\n        super().__init__(\n"
        "            jvm.org.apache.flink.streaming.api.environment\n"
        "            .StreamExecutionEnvironment.getExecutionEnvironment()\n"
        "        )\n",
        "        self.name = 'gateway'\n",
    )
    result = analyze_source("noenv.py", text)
    assert not result.jobs
    notes = [u for u in result.unknowns if "inherited from" in u.reason]
    assert [(u.range.start.line if u.range else None) for u in notes] == [12, 13, 14]
    assert "GatewayEnv.execute()" in notes[-1].reason


def test_a_call_on_the_java_environment_marks_its_job_partial() -> None:
    text = (
        "from pyflink.common import Types\n"
        "from pyflink.datastream import StreamExecutionEnvironment\n\n\n"
        "class JobEnv(StreamExecutionEnvironment):\n"
        "    def tune(self):\n"
        "        self._j_stream_execution_environment.setParallelism(3)\n\n\n"
        "env = JobEnv(\n"
        "    StreamExecutionEnvironment.get_execution_environment()\n"
        "    ._j_stream_execution_environment\n"
        ")\n"
        "env.tune()\n"
        "env.from_collection([1, 2], type_info=Types.INT()).print()\n"
        "env.execute('java_call')\n"
    )
    (job,) = analyze_source("java_call.py", text).jobs
    assert job.job_graph is not None
    (note,) = [u for u in job.unknowns if "setParallelism()" in u.reason]
    assert note.range is not None
    assert note.range.start.line == 7


def test_a_module_the_program_imports_is_parsed_once_per_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each edit of a program replays the modules it imports: a module whose
    text did not change is not parsed (nor guarded) again, and its operators
    are still located in it, on every analysis and across threads; an edit of
    the module is read and parsed anew."""
    import ast
    import threading

    helper = tmp_path / "helpers_parsed_once.py"
    before = (
        "\n" * 3 + "def helper(s):\n    return s.filter(lambda x: x > 0).name('kept')\n"
    )
    helper.write_text(before, encoding="utf-8")
    main = tmp_path / "main.py"
    edited = before.replace("'kept'", "'now'").replace("\n\n\n", "\n", 1)
    calls = first_arguments(monkeypatch, ast, "parse")

    def parsed() -> list[str]:  # the module's parses
        return [source for source in calls if source in (before, edited)]

    def located(text: str, read: object = None) -> tuple[int, str | None]:
        result = analyze_source(str(main), text, read=read)  # type: ignore[arg-type]
        (job,) = result.jobs
        assert job.stream_graph is not None
        (kept,) = [n for n in job.stream_graph.nodes if n.api == "filter"]
        assert kept.range is not None
        return kept.range.start.line, kept.range.path

    found = []
    for n in range(3):  # three versions of the program
        found.append(
            located(_program(f"from helpers_parsed_once import helper\n{'#' * n}\n"))
        )
    threads = [
        threading.Thread(
            target=lambda: found.append(
                located(_program("from helpers_parsed_once import helper\n"))
            )
        )
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert found == [(5, str(helper))] * 7
    assert parsed() == [before]  # the module, once

    assert located(
        _program("from helpers_parsed_once import helper\n"),
        read=lambda path: (
            edited if path == helper else path.read_text(encoding="utf-8")
        ),
    ) == (3, str(helper))
    assert parsed() == [before, edited]


def test_a_module_edited_in_the_editor_is_parsed_once_for_its_programs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor's module that builds no job is checked through the programs
    that import it: they replay the module's text as the editor parsed it,
    not a second parse of it, and find in it what they find without that."""
    import libcst as cst

    from chainlens.analyzer import ModuleCache, check_document
    from chainlens.analyzer.extract import own_modules
    from chainlens.analyzer.extract.modules import ParsedModules

    _, _, helpers = _project_with_a_helper(tmp_path)
    text = helpers.read_text(encoding="utf-8")
    cache = ModuleCache(keep_current_only=True)
    check_document(str(helpers), text, Config(), cache=cache, verify_fixes=False)
    real = cst.parse_module
    parsed = first_arguments(monkeypatch, cst, "parse_module")
    for n in range(3):
        edited = text.replace("a[1] + b[1]", f"a[1] + b[1] + {n}")
        assert edited != text
        parsed.clear()
        seen = check_document(str(helpers), edited, Config(), cache=cache)
        assert not any(source == edited for source in parsed)
        with monkeypatch.context() as fresh_parses:  # parsed anew, by LibCST
            fresh_parses.setattr(cst, "parse_module", real)
            fresh_parses.setattr(own_modules, "PARSED", ParsedModules())
            fresh = check_text(str(helpers), edited, Config())
        assert seen.result is not None
        assert fresh.result is not None
        assert seen.result.diagnostics == fresh.result.diagnostics
        assert "CL101" in {d.code.code for d in seen.result.diagnostics}
