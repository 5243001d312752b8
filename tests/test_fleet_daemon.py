"""The local scan's Python daemon takes PySpark from the installed package.

Only the zips inside the importable PySpark package are dropped from the path
(the same code, compiled once into its bytecode cache); anything else stays.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from chainlens.fleet import daemon


def _package(root: Path, name: str) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("", encoding="utf-8")
    return folder


def test_spark_zips_inside_the_installed_package_leave_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site-packages"
    pyspark = _package(site, "pyspark")
    _package(site, "py4j")
    lib = pyspark / "python" / "lib"
    lib.mkdir(parents=True)
    spark_zip, py4j_zip = lib / "pyspark.zip", lib / "py4j-0.10.9.9-src.zip"
    cluster_zip = tmp_path / "cluster" / "pyspark.zip"  # a cluster's own: kept
    path = [str(spark_zip), str(py4j_zip), str(cluster_zip), str(site)]
    monkeypatch.setattr(sys, "path", list(path))
    daemon.prefer_installed_pyspark()
    assert sys.path == [str(cluster_zip), str(site)]


def test_py4j_zip_stays_when_py4j_is_not_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site-packages"
    pyspark = _package(site, "pyspark")
    py4j_zip = pyspark / "python" / "lib" / "py4j-src.zip"
    spark_zip = pyspark / "python" / "lib" / "pyspark.zip"
    monkeypatch.setattr(sys, "path", [str(spark_zip), str(py4j_zip), str(site)])
    daemon.prefer_installed_pyspark()
    assert sys.path == [str(py4j_zip), str(site)]


def test_nothing_changes_without_an_installed_pyspark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = [str(tmp_path / "spark" / "python" / "lib" / "pyspark.zip"), str(tmp_path)]
    monkeypatch.setattr(sys, "path", list(path))
    daemon.prefer_installed_pyspark()
    assert sys.path == path
