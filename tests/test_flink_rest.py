"""The Flink REST client's bounds, against HTTP servers of the test's own on
127.0.0.1 (no JVM): a redirect to another host is refused, an answer larger
than the bound is refused, a server that does not answer times out, Flink's
own error text is kept, and TLS is verified (a self-signed certificate is
refused until the caller trusts it).  ``test_cluster_live.py`` runs the
client against a real Flink cluster."""

from __future__ import annotations

import http.server
import shutil
import socket
import ssl
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from chainlens.analyzer import FlinkRest, RestError, RestLimits


class _Handler(http.server.BaseHTTPRequestHandler):
    routes: ClassVar[dict[str, tuple[int, dict[str, str], bytes]]] = {}

    def do_GET(self) -> None:
        status, headers, body = self.routes.get(self.path, (404, {}, b"{}"))
        if status == 0:  # never answer
            time.sleep(30)
            return
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def fake() -> Iterator[tuple[str, dict[str, tuple[int, dict[str, str], bytes]]]]:
    routes: ClassVar[dict[str, tuple[int, dict[str, str], bytes]]] = {}
    handler = type("Handler", (_Handler,), {"routes": routes})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", routes
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.filterwarnings("ignore")
def test_the_client_is_bounded(
    fake: tuple[str, dict[str, tuple[int, dict[str, str], bytes]]],
) -> None:
    url, routes = fake
    routes["/config"] = (200, {}, b'{"flink-version": "2.3.0"}')
    assert FlinkRest(url).flink_version() == "2.3.0"
    # a redirect to another host is not followed (one to the same host is)
    routes["/jobs/overview"] = (302, {"Location": "http://127.0.0.2:9/jobs"}, b"")
    with pytest.raises(RestError, match=r"redirected to http://127\.0\.0\.2:9"):
        FlinkRest(url).jobs()
    routes["/jobs/overview"] = (302, {"Location": url + "/v1/jobs/overview"}, b"")
    routes["/v1/jobs/overview"] = (200, {}, b'{"jobs": []}')
    assert FlinkRest(url).jobs() == []
    # an answer larger than the bound
    routes["/config"] = (200, {}, b'{"flink-version": "' + b"9" * 2000 + b'"}')
    with pytest.raises(RestError, match="larger than 1,000 bytes"):
        FlinkRest(url, RestLimits(max_bytes=1000)).flink_version()
    # Flink's own error text
    routes["/jobs/overview"] = (500, {}, b'{"errors": ["Internal server error."]}')
    with pytest.raises(RestError, match=r"HTTP 500: Internal server error\."):
        FlinkRest(url).jobs()
    # a server that does not answer
    routes["/config"] = (0, {}, b"")
    started = time.monotonic()
    with pytest.raises(RestError, match="did not answer within 1 s"):
        FlinkRest(url, RestLimits(timeout=1)).flink_version()
    assert time.monotonic() - started < 10
    with pytest.raises(RestError, match="not a Flink REST endpoint"):
        FlinkRest("ftp://127.0.0.1/")


@pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")
def test_tls_is_verified(tmp_path: Path) -> None:
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    routes = {"/config": (200, {}, b'{"flink-version": "2.3.0"}')}
    handler = type("Handler", (_Handler,), {"routes": routes})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"https://127.0.0.1:{server.server_address[1]}"
        with pytest.raises(RestError, match="TLS: CERTIFICATE_VERIFY_FAILED"):
            FlinkRest(url, RestLimits(timeout=5)).flink_version()
        trusted = ssl.create_default_context(cafile=str(cert))
        assert FlinkRest(url, context=trusted).flink_version() == "2.3.0"
    finally:
        server.shutdown()
        server.server_close()


def test_free_ports_are_free() -> None:
    from tests.tools.flink_cluster import free_ports

    ports = free_ports(5)
    assert len(set(ports)) == 5
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))
