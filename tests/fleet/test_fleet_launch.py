"""The driver JVM started before PySpark is imported (chainlens.fleet.launch)."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from chainlens.fleet import launch

pytestmark = pytest.mark.spark


def _fake_spark(root: Path, script: str) -> Path:
    """A SPARK_HOME whose bin/spark-submit is *script* (a shell script)."""
    submit = root / "bin" / "spark-submit"
    submit.parent.mkdir(parents=True)
    submit.write_text("#!/bin/sh\n" + script, encoding="utf-8")
    submit.chmod(submit.stat().st_mode | stat.S_IXUSR)
    return root


def test_spark_home_is_the_installed_package_without_importing_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("pyspark")
    monkeypatch.delenv("SPARK_HOME", raising=False)
    home = launch.spark_home()
    assert home is not None
    assert (home / "bin" / "spark-submit").is_file()
    assert (home / "__init__.py").is_file()  # the pyspark package itself


def test_a_jvm_that_exits_at_once_is_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("needs Java")
    home = _fake_spark(tmp_path / "spark", "echo 'no such class' >&2\nexit 3\n")
    monkeypatch.setenv("SPARK_HOME", str(home))
    repos = tmp_path / "repos" / "a"
    repos.mkdir(parents=True)
    (repos / "job.py").write_text("x = 1\n", encoding="utf-8")
    out = tmp_path / "out"
    from chainlens.fleet.cli import main

    assert main(["scan", str(repos.parent), "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    log = tmp_path / "out.spark.log"
    assert err == (
        "chainlens: error: Spark did not start: the Spark driver JVM exited with "
        f"3; its output is in {log}\n"
    )
    assert "no such class" in log.read_text(encoding="utf-8")
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "out.spark.log",
        "repos",
        "spark",
    ]
    assert _children_running("chainlens.fleet.daemon") == []  # fork server stopped


def _children_running(marker: str) -> list[int]:
    found = []
    for task in Path("/proc/self/task").iterdir():
        for pid in (task / "children").read_text().split():
            try:
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if marker.encode() in command:
                found.append(int(pid))
    return found


def test_pyspark_connects_to_the_started_jvm_and_it_ends_with_stdin(
    tmp_path: Path,
) -> None:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("needs Java")
    home = launch.spark_home()
    assert home is not None
    settings = {"spark.master": "local[1]", "spark.ui.enabled": "false"}
    with open(tmp_path / "jvm.log", "ab") as log:
        jvm = launch.DriverJvm.start(home, settings, log)
    try:
        gateway = jvm.gateway()
        assert gateway.proc is jvm.process
        # the port and secret were for PySpark only, not for later processes
        assert "PYSPARK_GATEWAY_PORT" not in os.environ
        assert "PYSPARK_GATEWAY_SECRET" not in os.environ
        version = gateway.jvm.java.lang.System.getProperty("java.version")
        assert str(version).split(".")[0].isdigit()
        gateway.shutdown()
    finally:
        jvm.stop()
    assert jvm.process.returncode is not None
    assert sys.modules.get("pyspark") is not None


CONVERTERS = """
import json, sys
from chainlens.fleet import launch
import pyspark  # registers its Py4J converters
wrapped = launch.lazy_numpy_converters() if sys.argv[1] == "lazy" else 0
with open(sys.argv[2], "ab") as log:
    jvm = launch.DriverJvm.start(launch.spark_home(), {"spark.master": "local[1]"}, log)
try:
    # many calls into the JVM with Python strings, each asking the converters
    context = pyspark.SparkContext(gateway=jvm.gateway())
    loaded = sorted(m for m in ("pandas", "numpy") if m in sys.modules)
    import numpy
    Arrays = context._jvm.java.util.Arrays
    array = Arrays.toString(numpy.array([1, 2], dtype="int32"))
    context.stop()
finally:
    jvm.stop()
print(json.dumps({"wrapped": wrapped, "loaded": loaded, "array": array}))
"""


@pytest.mark.parametrize("mode", ["lazy", "as-registered"])
def test_numpy_converters_load_nothing_until_numpy_values_are_passed(
    mode: str, tmp_path: Path
) -> None:
    """PySpark's NumPy converters import pandas on the first call into the
    JVM; wrapped, they do not, and NumPy arrays still arrive as Java arrays."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("needs Java")
    done = subprocess.run(
        [sys.executable, "-c", CONVERTERS, mode, str(tmp_path / "jvm.log")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["array"] == "[1, 2]"
    if mode == "lazy":
        assert (result["wrapped"], result["loaded"]) == (2, [])
    else:  # what the wrapping avoids
        assert result["loaded"] == ["numpy", "pandas"]
