"""Savepoints in an object store, read from a real S3-compatible server.

moto's server runs on 127.0.0.1 (a process of this module, stopped by its
process ID), with authentication on: after the few unauthenticated calls that
create an IAM user with a policy allowing everything and its access key,
every request must be signed with a key moto knows.  A real savepoint
(``tests/fixtures/savepoints/cluster/counts-2.3``: taken by a Flink 2.3
standalone cluster with ``tests/tools/flink_cluster.py savepoint``, its state
in files of its own) is uploaded to a bucket.  chainlens then reads it with
the credentials and endpoint the environment gives, as the AWS SDK takes them
(``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_ENDPOINT_URL``).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from chainlens.analyzer import read_metadata
from chainlens.analyzer.deploy.object_store import (
    StoreError,
    StoreLimits,
    fetch_savepoint_files,
    is_remote,
    read_remote_metadata,
)
from chainlens.hooks.cli import main

pytest.importorskip("s3fs")
pytest.importorskip("moto")
boto3 = pytest.importorskip("boto3")

ROOT = Path(__file__).resolve().parents[1]
SAVEPOINT = ROOT / "tests" / "fixtures" / "savepoints" / "cluster" / "counts-2.3"
PROGRAM = ROOT / "tests" / "fixtures" / "deployments_gate" / "counts.py"
#: the calls made before moto checks signatures: user, policy, access key
UNSIGNED_SETUP_CALLS = 3


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """moto's server with one bucket holding the savepoint; the environment
    (endpoint and credentials) a user of it has."""
    port = _free_port()
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    env = {
        **os.environ,
        "INITIAL_NO_AUTH_ACTION_COUNT": str(UNSIGNED_SETUP_CALLS),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    with open(log, "wb") as output:
        server = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=output,
            stderr=subprocess.STDOUT,
            env=env,
        )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError(log.read_text()) from None
                time.sleep(0.2)
        endpoint = f"http://127.0.0.1:{port}"
        anonymous = {
            "endpoint_url": endpoint,
            "region_name": "us-east-1",
            "aws_access_key_id": "setup",
            "aws_secret_access_key": "setup",
        }
        iam = boto3.client("iam", **anonymous)
        iam.create_user(UserName="reader")
        iam.put_user_policy(
            UserName="reader",
            PolicyName="all",
            PolicyDocument=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [{"Effect": "Allow", "Action": "*", "Resource": "*"}],
                }
            ),
        )
        key = iam.create_access_key(UserName="reader")["AccessKey"]
        signed = {
            **anonymous,
            "aws_access_key_id": key["AccessKeyId"],
            "aws_secret_access_key": key["SecretAccessKey"],
        }
        s3 = boto3.client("s3", **signed)
        s3.create_bucket(Bucket="points")
        for file in SAVEPOINT.iterdir():
            s3.upload_file(str(file), "points", f"prod/savepoint-1/{file.name}")
        s3.put_object(Bucket="points", Key="empty/_metadata", Body=b"")
        s3.put_object(Bucket="points", Key="junk/_metadata", Body=b"not metadata")
        yield {
            "AWS_ENDPOINT_URL": endpoint,
            "AWS_ACCESS_KEY_ID": key["AccessKeyId"],
            "AWS_SECRET_ACCESS_KEY": key["SecretAccessKey"],
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_CONFIG_FILE": os.devnull,
            "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        }
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=10)


@pytest.fixture
def aws(store: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    for name in list(os.environ):
        if name.startswith("AWS_"):
            monkeypatch.delenv(name)
    for name, value in store.items():
        monkeypatch.setenv(name, value)
    return store


def test_urls_of_object_stores_are_remote() -> None:
    for url in ("s3://b/k", "s3a://b/k", "gs://b/k"):
        assert is_remote(url)
    assert is_remote("abfs://c@a.dfs.core.windows.net/p")
    assert not is_remote("/tmp/points")
    assert not is_remote("file:///tmp/points")
    assert not is_remote("hdfs://nn/points")  # no filesystem package chosen for it


def test_the_metadata_read_from_s3_is_the_local_files(aws: dict[str, str]) -> None:
    remote = read_remote_metadata("s3://points/prod/savepoint-1")
    local = read_metadata(SAVEPOINT)
    assert remote.path == "s3://points/prod/savepoint-1/_metadata"
    assert remote.operators == local.operators
    assert remote.checkpoint_id == local.checkpoint_id
    # s3a:// (Flink's Hadoop S3 scheme) and the _metadata object itself
    again = read_remote_metadata("s3a://points/prod/savepoint-1/_metadata")
    assert again.operators == local.operators


def test_savepoint_gate_against_s3(
    aws: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        [
            "savepoint",
            str(PROGRAM),
            "--savepoint",
            "s3://points/prod/savepoint-1",
            "--default-parallelism",
            "1",
            "--format",
            "json",
        ]
    )
    document = json.loads(capsys.readouterr().out)
    assert code == 0, document
    assert document["savepoint"]["path"] == "s3://points/prod/savepoint-1/_metadata"
    assert document["savepoint"]["verdict"] == "restores"


def test_state_files_are_fetched_bounded(aws: dict[str, str], tmp_path: Path) -> None:
    got = fetch_savepoint_files("s3://points/prod/savepoint-1/", tmp_path)
    names = sorted(p.name for p in got.iterdir())
    assert names == sorted(p.name for p in SAVEPOINT.iterdir())
    assert len(names) > 1  # _metadata and the state written to files of its own
    for name in names:
        assert (got / name).read_bytes() == (SAVEPOINT / name).read_bytes()
    (tmp_path / "few").mkdir()
    with pytest.raises(StoreError, match="more than the 1 chainlens fetches"):
        fetch_savepoint_files(
            "s3://points/prod/savepoint-1", tmp_path / "few", StoreLimits(state_files=1)
        )
    with pytest.raises(StoreError, match="bytes of state files, more than"):
        fetch_savepoint_files(
            "s3://points/prod/savepoint-1",
            tmp_path / "few",
            StoreLimits(state_bytes=10),
        )
    assert list((tmp_path / "few").iterdir()) == []


def test_a_savepoint_is_fetched_whole_when_asked(
    aws: dict[str, str], tmp_path: Path
) -> None:
    from chainlens.analyzer import load_savepoint

    shown, metadata = load_savepoint(
        "s3://points/prod/savepoint-1", fetch_into=tmp_path
    )
    assert shown == "s3://points/prod/savepoint-1"
    assert metadata.path == "s3://points/prod/savepoint-1/_metadata"
    # its state files fetched too: what the states are is read from them
    assert metadata.operators == read_metadata(SAVEPOINT, states=True).operators
    assert any(o.saved is not None and o.saved.states for o in metadata.operators)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in SAVEPOINT.iterdir()
    )


def test_a_metadata_larger_than_the_bound_is_refused(aws: dict[str, str]) -> None:
    with pytest.raises(StoreError, match="larger than 100 bytes"):
        read_remote_metadata(
            "s3://points/prod/savepoint-1", StoreLimits(metadata_bytes=100)
        )


def _one_line_error(
    capsys: pytest.CaptureFixture[str], location: str, timeout: str = "60"
) -> str:
    code = main(
        ["savepoint", str(PROGRAM), "--savepoint", location, "--timeout", timeout]
    )
    err = capsys.readouterr().err
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_a_missing_object_is_one_line(
    aws: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error(capsys, "s3://points/prod/savepoint-2")
    assert line == (
        "chainlens: error: s3://points/prod/savepoint-2/_metadata: no such object"
    )


def test_empty_and_corrupt_objects_are_one_line(
    aws: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert "the file is empty" in _one_line_error(capsys, "s3://points/empty")
    assert "not Flink checkpoint metadata" in _one_line_error(
        capsys, "s3://points/junk"
    )


def test_wrong_credentials_are_denied_in_one_line(
    aws: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-the-secret")
    line = _one_line_error(capsys, "s3://points/prod/savepoint-1")
    assert line.startswith(
        "chainlens: error: s3://points/prod/savepoint-1/_metadata: access denied"
    ), line
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIAUNKNOWNUNKNOWN00")
    line = _one_line_error(capsys, "s3://points/prod/savepoint-1")
    assert ": access denied" in line, line


def test_a_store_that_does_not_answer_times_out_in_one_line(
    aws: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # accepts connections, never answers
    accepted: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        silent.settimeout(0.2)
        while not stop.is_set():
            try:
                accepted.append(silent.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        port = silent.getsockname()[1]
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{port}")
        started = time.monotonic()
        line = _one_line_error(capsys, "s3://points/prod/savepoint-1", "3")
        took = time.monotonic() - started
        assert "did not answer within 3 s" in line, line
        assert took < 20, took
    finally:
        stop.set()
        thread.join(timeout=5)
        for connection in accepted:
            connection.close()
        silent.close()


def test_without_the_cloud_extra_the_error_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "fsspec", None)
    line = _one_line_error(capsys, "gs://points/prod/savepoint-1")
    assert "pip install 'chainlens[cloud]'" in line, line


def test_the_savepoint_a_deployment_names_is_the_gates(
    aws: dict[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from tests.test_deployments_gate import edit, make_repo

    repo = make_repo(tmp_path)
    edit(
        repo,
        "upgradeMode: savepoint\n",
        "upgradeMode: savepoint\n"
        "    initialSavepointPath: s3://points/prod/savepoint-1\n",
    )
    monkeypatch.chdir(repo)
    code = main(["savepoint", "--deployment", "counts", "--format", "json"])
    (entry,) = json.loads(capsys.readouterr().out)["deployments"]
    assert code == 0, entry
    saved = entry["result"]["savepoint"]
    assert saved["path"] == "s3://points/prod/savepoint-1/_metadata"
    assert saved["verdict"] == "restores"
    assert main(["savepoint", "--deployment", "counts"]) == 0
    heading = capsys.readouterr().out
    assert (
        "compared with the savepoint it restores from: s3://points/prod/savepoint-1 "
        "(spec.job.initialSavepointPath at deployment.yaml:17)" in heading
    ), heading
    # with --base the git base is still the gate's
    assert main(["savepoint", "--deployment", "counts", "--base", "HEAD"]) == 0
    assert "Savepoint: s3://" not in capsys.readouterr().out
