"""What ``check`` prints of a finding: the short message, the explanation on
demand (``--show explanation``, ``-v``, ``--output-format full``), both in JSON
and SARIF, and colour only on a terminal (``NO_COLOR``, ``FORCE_COLOR``)."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from chainlens.analyzer.model.diagnostic import MESSAGE_LIMIT
from tests.support import FIXTURES, chainlens

PROGRAM = (FIXTURES / "check" / "missing_uid.py").read_text(encoding="utf-8")
CL101 = "jobs/totals.py:8:6: CL101 [*] warning: Keyed reduce() 'Reduce' keeps state"
MESSAGE = "Keyed reduce() 'Reduce' keeps state but has no uid()"
ESCAPE = "\x1b["


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.chainlens]\nroot = true\nextend-select = ["CL106"]\n', encoding="utf-8"
    )
    (tmp_path / "jobs").mkdir()
    (tmp_path / "jobs" / "totals.py").write_text(PROGRAM, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    for name in ("NO_COLOR", "FORCE_COLOR", "TERM"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


def _explanation(code: str = "CL101") -> str:
    document = json.loads(chainlens("check", "--format", "json")[1])
    (finding,) = [f for f in document["findings"] if f["code"] == code]
    explanation: str = finding["explanation"]
    return explanation


def _explained(out: str, head: str) -> str:
    """The indented lines under the finding line starting with ``head`` (its
    notes left out), unwrapped."""
    lines = out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith(head))
    block = []
    for line in lines[at + 1 :]:
        if not line.startswith("    "):
            break
        if ": note: " not in line:
            block.append(line.strip())
    return " ".join(block)


def test_the_default_text_is_the_short_message_alone(project: Path) -> None:
    code, out, _ = chainlens("check")
    assert code == 1
    assert f"{CL101} but has no uid()\n" in out
    explanation = _explanation()
    assert explanation.startswith("Keyed reduce() 'Reduce' keeps the running")
    assert "90bea66de1c231edf33913ecd54406c1" in explanation  # its operator ID
    assert "90bea66de1c231edf33913ecd54406c1" not in out.split("\n")[0]
    assert _explained(out, CL101) == ""


@pytest.mark.parametrize(
    "flags",
    [["--show", "explanation"], ["-v"], ["--verbose"], ["--output-format", "full"]],
)
def test_the_explanation_is_printed_under_its_finding(
    project: Path, flags: list[str]
) -> None:
    code, out, _ = chainlens("check", *flags)
    assert code == 1
    assert f"{CL101} but has no uid()\n" in out
    assert _explained(out, CL101) == _explanation()
    # wrapped for a person, indented under its finding
    block = out.split(f"{CL101} but has no uid()\n", 1)[1].split("\n")
    assert all(len(line) <= 92 for line in block[:3])
    # the related locations stay where they were: under the finding, as notes
    chain = _explanation("CL106")
    assert " ".join(chain.split()) == _explained(out, "jobs/totals.py:8:6: CL106")
    assert (
        "\n    jobs/totals.py:7:6: note: upstream operator the map PyFlink adds for "
        "key_by() ('_stream_key_by_map_operator')\n    'Reduce' is not chained"
    ) in out


def test_concise_is_one_line_per_finding(project: Path) -> None:
    code, out, _ = chainlens("check", "--output-format", "concise", "-q")
    assert code == 1
    assert out.splitlines() == [
        f"{CL101} but has no uid()",
        "jobs/totals.py:8:6: CL106 info: 'Reduce' is not chained to "
        "'_stream_key_by_map_operator': HASH edge, possibly other parallelism",
        "jobs/totals.py:8:6: CL108 warning: PyFlink's reduce() never restores the "
        "running value of 'Reduce'",
    ]


def test_json_carries_both_and_sarif_the_explanation_as_a_property(
    project: Path,
) -> None:
    document = json.loads(chainlens("check", "--format", "json")[1])
    for finding in document["findings"]:
        assert len(finding["message"]) <= MESSAGE_LIMIT
        assert finding["explanation"]
    (cl101,) = [f for f in document["findings"] if f["code"] == "CL101"]
    assert cl101["message"] == MESSAGE
    sarif = json.loads(chainlens("check", "--format", "sarif")[1])
    run = sarif["runs"][0]
    (result,) = [r for r in run["results"] if r["ruleId"] == "CL101"]
    assert result["message"] == {"text": MESSAGE}
    assert result["properties"] == {"explanation": cl101["explanation"]}
    (rule,) = [r for r in run["tool"]["driver"]["rules"] if r["id"] == "CL101"]
    # the rule's doc, what it does and why, without its headings and example
    full = rule["fullDescription"]["text"]
    assert full.startswith("Finds stateful operators without a `uid()`.")
    assert "Flink stores an operator's state in checkpoints" in full
    assert "##" not in full
    assert "```" not in full
    github = chainlens("check", "--format", "github")[1]
    assert "::warning file=jobs/totals.py,line=8,endLine=8,col=6" in github
    assert f"jobs/totals.py:8:6: CL101 {MESSAGE}\n" in github


# ---------------------------------------------------------------------------
# colour


def test_no_colour_in_a_pipe_or_a_file_unless_forced(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert ESCAPE not in chainlens("check")[1]
    monkeypatch.setenv("FORCE_COLOR", "1")
    out = chainlens("check")[1]
    assert "\x1b[1;31mCL101\x1b[0m \x1b[36m[*]\x1b[0m \x1b[1;33mwarning\x1b[0m" in out
    assert "\x1b[1mjobs/totals.py\x1b[0m\x1b[36m:\x1b[0m8\x1b[36m:\x1b[0m6" in out
    # a report written to a file is never coloured, nor JSON
    chainlens("check", "-o", "report.txt")
    assert ESCAPE not in (project / "report.txt").read_text(encoding="utf-8")
    assert ESCAPE not in chainlens("check", "--format", "json")[1]


def _on_a_terminal(project: Path, **env: str) -> str:
    """Run ``chainlens check`` with its standard output on a pseudo-terminal."""
    leader, follower = pty.openpty()
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in ("NO_COLOR", "FORCE_COLOR", "TERM")
    }
    process = subprocess.Popen(
        [sys.executable, "-P", "-m", "chainlens.hooks.entry", "check"],
        cwd=project,
        stdout=follower,
        stderr=subprocess.DEVNULL,
        env={**environ, "TERM": "xterm", **env},
    )
    os.close(follower)
    chunks = []
    try:
        while True:
            ready, _, _ = select.select([leader], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the follower closed: the process ended
                break
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(leader)
        process.wait(timeout=60)
    return b"".join(chunks).decode("utf-8")


def test_colour_on_a_terminal_and_no_colour_with_no_color(project: Path) -> None:
    coloured = _on_a_terminal(project)
    assert "\x1b[1;31mCL101\x1b[0m" in coloured
    assert "\x1b[1;33mwarning\x1b[0m" in coloured
    assert ESCAPE not in _on_a_terminal(project, NO_COLOR="1")
    assert ESCAPE not in _on_a_terminal(project, TERM="dumb")
    # an empty NO_COLOR is not set (no-color.org)
    assert ESCAPE in _on_a_terminal(project, NO_COLOR="")


# ---------------------------------------------------------------------------
# max parallelism -1


def test_a_max_parallelism_not_set_is_said_so_and_json_keeps_the_number() -> None:
    program = str(FIXTURES / "pipelines" / "example_orders.py")
    code, out, _ = chainlens("graph", program, "--default-parallelism", "4")
    assert code == 0
    assert "max parallelism -1" not in out
    assert "parallelism 4, max parallelism not set (Flink derives it), " in out
    code, out, _ = chainlens(
        "graph", program, "--default-parallelism", "4", "--format", "json"
    )
    vertices = json.loads(out)["files"][0]["jobs"][0]["job_graph"]["vertices"]
    assert {v["max_parallelism"] for v in vertices} == {-1}
    # a max parallelism set is shown as it is
    program = str(FIXTURES / "pipelines" / "env_max_parallelism.py")
    out = chainlens("graph", program, "--default-parallelism", "4")[1]
    assert re.search(r"max parallelism \d+, ", out)
