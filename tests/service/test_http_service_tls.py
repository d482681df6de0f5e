"""The one small HTTP service over TLS (the lab's token issuer uses it): verified by our CA,
and a client that never finishes its handshake does not hold up the others."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

import httpx
import pytest

from ca.authority import CertificateAuthority
from orchestrator.http_service import Answer, HttpService


def test_a_tls_service_answers_verified_clients_past_a_silent_one(tmp_path: Path) -> None:
    ca = CertificateAuthority.init(tmp_path / "ca")
    host = ca.issue_host("localhost", ips=["127.0.0.1"])
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(host.cert), str(host.key))
    routes = {"/hello": lambda query: Answer.json(200, {"query": query})}
    service = HttpService(("127.0.0.1", 0), routes, tls=context, log_requests=False).start()
    try:
        url = f"https://127.0.0.1:{service.port}/hello?x=1"
        with socket.create_connection(("127.0.0.1", service.port)):  # connects, says nothing
            verified = ssl.create_default_context(cafile=str(ca.cert_path))
            with httpx.Client(verify=verified, timeout=5) as http:
                assert http.get(url).json() == {"query": "x=1"}
        with (
            httpx.Client(verify=ssl.create_default_context(), timeout=5) as http,
            pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"),
        ):
            http.get(url)  # the system's trust store does not know our CA
    finally:
        service.close()
