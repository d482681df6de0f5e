"""The token issuer's service as the chart runs it: documents that appear after the start
(a ConfigMap volume filling), and a renewed certificate served without a restart."""

from __future__ import annotations

import os
import socket
import ssl
from pathlib import Path

import httpx
from cryptography import x509
from cryptography.hazmat.primitives.serialization import Encoding

from ca.authority import CertificateAuthority
from ca.keys import key_pem, new_key, write_private, write_public
from ca.tokens import ensure_issuer_key, jwks
from orchestrator.http_service import HttpService
from orchestrator.token_issuer import (
    CertificateWatch,
    document_routes,
    issuer_documents,
    server_context,
)

URL = "https://token-issuer.bench.svc"


def served_serial(ca: CertificateAuthority, port: int) -> int:
    """The serial number of the certificate a new connection is served, verified by our CA."""
    context = ssl.create_default_context(cafile=str(ca.cert_path))
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    return x509.load_der_x509_certificate(der).serial_number


def test_documents_are_served_once_published_and_a_renewed_certificate_without_restart(
    tmp_path: Path,
) -> None:
    ca = CertificateAuthority.init(tmp_path / "ca")
    first = ca.issue_host("localhost", ips=["127.0.0.1"])
    documents = tmp_path / "documents"
    documents.mkdir()
    service = HttpService(
        ("127.0.0.1", 0),
        document_routes(documents),
        tls=server_context(first.cert, first.key),
        log_requests=False,
    ).start()
    watch = CertificateWatch(service, first.cert, first.key)
    base = f"https://127.0.0.1:{service.port}"
    verify = ssl.create_default_context(cafile=str(ca.cert_path))
    try:
        with httpx.Client(verify=verify, timeout=5) as http:
            assert http.get(base + "/jwks").status_code == 503  # not published yet
            key = ensure_issuer_key(ca.directory)
            for name, text in issuer_documents(URL, key).items():
                (documents / name).write_text(text)
            config = http.get(base + "/.well-known/openid-configuration").json()
            assert (config["issuer"], config["jwks_uri"]) == (URL, URL + "/jwks")
            assert http.get(base + "/jwks").json() == jwks(key)
        old = served_serial(ca, service.port)
        assert not watch.check()  # nothing changed
        # the renewal sidecar writes the new key first: a pair that does not match is kept out
        renewed_key = new_key()
        write_private(first.key, key_pem(renewed_key))
        os.utime(first.cert, ns=(1, 1))
        assert not watch.check()
        assert served_serial(ca, service.port) == old
        # then the certificate: served from the next connection on
        cert = ca.sign_host_key(renewed_key.public_key(), "localhost", ips=["127.0.0.1"], days=2)
        write_public(first.cert, cert.public_bytes(Encoding.PEM))
        assert watch.check()
        assert served_serial(ca, service.port) == cert.serial_number != old
    finally:
        service.close()
