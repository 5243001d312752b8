"""The Spark driver JVM, started before PySpark is imported.

PySpark starts its driver JVM with ``bin/spark-submit ... pyspark-shell`` and
learns the JVM's Py4J port and secret from a file the JVM writes (the path in
``_PYSPARK_DRIVER_CONN_INFO_PATH``); given ``PYSPARK_GATEWAY_PORT`` and
``PYSPARK_GATEWAY_SECRET`` it connects to a JVM already running instead.  The
JVM takes seconds to start and importing PySpark a fifth of a second, so the
scan starts the JVM here, the same way, before it imports PySpark, and connects
PySpark to it once both are ready.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shlex
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, BinaryIO, Final

#: How often to look for the JVM's connection file.
POLL_SECONDS: Final = 0.01


class JvmStartError(Exception):
    """The JVM ended before it opened its Py4J gateway."""


def spark_home() -> Path | None:
    """Where ``bin/spark-submit`` is: ``SPARK_HOME``, else the installed
    ``pyspark`` package (found without importing it); None without either."""
    configured = os.environ.get("SPARK_HOME")
    if configured:
        return Path(configured)
    try:
        spec = importlib.util.find_spec("pyspark")
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec else []:
        if (Path(location) / "bin" / "spark-submit").is_file():
            return Path(location)
    return None


def _ignore_interrupts() -> None:
    # the terminal's Ctrl-C is for the driver, which stops Spark itself
    signal.signal(signal.SIGINT, signal.SIG_IGN)


class DriverJvm:
    """A ``spark-submit pyspark-shell`` JVM on its way up."""

    def __init__(self, process: subprocess.Popen[bytes], folder: str) -> None:
        self.process = process
        self._folder = folder
        self._info = os.path.join(folder, "connection")

    @classmethod
    def start(cls, home: Path, settings: Mapping[str, str], log: BinaryIO) -> DriverJvm:
        """Start it with these Spark settings; its output goes to *log*."""
        command = [str(home / "bin" / "spark-submit")]
        for key, value in settings.items():
            command += ["--conf", f"{key}={value}"]
        command += shlex.split(os.environ.get("PYSPARK_SUBMIT_ARGS", "pyspark-shell"))
        folder = tempfile.mkdtemp(prefix="chainlens-jvm-")
        environ = {
            **os.environ,
            "SPARK_CONNECT_MODE": "0",
            "_PYSPARK_DRIVER_CONN_INFO_PATH": os.path.join(folder, "connection"),
        }
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,  # the JVM exits when this pipe closes
                stdout=log,
                stderr=log,
                env=environ,
                preexec_fn=_ignore_interrupts,
            )
        except BaseException:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        return cls(process, folder)

    def _port_and_secret(self) -> tuple[int, str]:
        """Wait for the connection file (port, then the secret's length and
        UTF-8 bytes, big-endian 32-bit integers)."""
        try:
            while not os.path.isfile(self._info):
                if self.process.poll() is not None:
                    raise JvmStartError(
                        f"the Spark driver JVM exited with {self.process.returncode}"
                    )
                time.sleep(POLL_SECONDS)
            # the file is written elsewhere and renamed into place: whole
            with open(self._info, "rb") as info:
                data = info.read()
        finally:
            shutil.rmtree(self._folder, ignore_errors=True)
        port, length = struct.unpack("!ii", data[:8])
        return port, data[8 : 8 + length].decode("utf-8")

    def gateway(self) -> Any:
        """Wait for the JVM; return PySpark's Py4J gateway connected to it."""
        from pyspark.java_gateway import launch_gateway

        port, secret = self._port_and_secret()
        given = {"PYSPARK_GATEWAY_PORT": str(port), "PYSPARK_GATEWAY_SECRET": secret}
        saved = {name: os.environ.get(name) for name in given}
        os.environ.update(given)
        try:
            gateway = launch_gateway()
        finally:  # not left for the processes this one starts later
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        gateway.proc = self.process  # what PySpark keeps of a JVM it started
        return gateway

    def stop(self) -> None:
        """Let the JVM exit (it does when its stdin closes)."""
        with contextlib.suppress(OSError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self._folder, ignore_errors=True)


class _WhenNumpyLoaded:
    """A Py4J input converter for NumPy values that is asked only about them."""

    def __init__(self, converter: Any) -> None:
        self.converter = converter

    def can_convert(self, value: object) -> bool:
        numpy = sys.modules.get("numpy")  # a NumPy value means NumPy is loaded
        return (
            numpy is not None
            and isinstance(value, (numpy.generic, numpy.ndarray))
            and self.converter.can_convert(value)
        )

    def convert(self, value: Any, client: Any) -> Any:
        return self.converter.convert(value, client)


def lazy_numpy_converters() -> int:
    """Keep PySpark's NumPy converters from loading pandas into the driver.

    Py4J asks every registered input converter about every argument of every
    call into the JVM that is not a Java object.  PySpark's two converters for
    NumPy values answer by importing its test helpers, which import pandas,
    NumPy and pyarrow: 0.7-0.9 CPU-s on the first call, while the JVM is
    starting and needs the cores.  Wrapped, they are asked only about NumPy
    values (and convert them as before); the scan passes none.  Returns how
    many were wrapped.
    """
    from py4j.protocol import INPUT_CONVERTER

    wrapped = 0
    for index, converter in enumerate(INPUT_CONVERTER):
        kind = type(converter)
        if kind.__module__.startswith("pyspark.") and kind.__name__.startswith("Numpy"):
            INPUT_CONVERTER[index] = _WhenNumpyLoaded(converter)
            wrapped += 1
    return wrapped
