"""The CA: files, extensions, renewal rules, openssl's verdict and a real TLS handshake."""

from __future__ import annotations

import contextlib
import datetime as dt
import socket
import ssl
import stat
import subprocess
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.x509.oid import ExtendedKeyUsageOID

from ca.authority import CAError, CertificateAuthority
from ca.names import DNError


def openssl(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["openssl", *args], capture_output=True, text=True, check=False)


@pytest.fixture
def ca(tmp_path: Path) -> CertificateAuthority:
    return CertificateAuthority.init(tmp_path / "ca")


def load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def test_ca_certificate_has_ca_extensions(ca: CertificateAuthority) -> None:
    cert = load(ca.cert_path)
    assert ca.subject_dn == "/DC=org/DC=tpc-bench/CN=tpc-bench CA"
    bc = cert.extensions.get_extension_for_class(x509.BasicConstraints)
    assert bc.critical and bc.value.ca
    ku = cert.extensions.get_extension_for_class(x509.KeyUsage)
    assert ku.critical and ku.value.key_cert_sign and ku.value.crl_sign
    ski = cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    aki = cert.extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
    assert aki.key_identifier == ski.digest
    assert cert.public_key().key_size >= 2048
    assert stat.S_IMODE(ca.key_path.stat().st_mode) == 0o600


def test_grid_security_directory_uses_openssl_subject_hash(ca: CertificateAuthority) -> None:
    digest = openssl("x509", "-hash", "-noout", "-in", str(ca.cert_path)).stdout.strip()
    names = sorted(p.name for p in ca.certdir.iterdir())
    assert names == sorted(f"{digest}{s}" for s in (".0", ".namespaces", ".r0", ".signing_policy"))
    policy = (ca.certdir / f"{digest}.signing_policy").read_text()
    assert "access_id_CA X509 '/DC=org/DC=tpc-bench/CN=tpc-bench CA'" in policy
    assert "cond_subjects globus '\"/DC=org/DC=tpc-bench/*\"'" in policy
    # The CRL is empty but valid: signed by the CA and parseable by openssl.
    crl = openssl("crl", "-in", str(ca.certdir / f"{digest}.r0"), "-CAfile", str(ca.cert_path))
    assert "verify OK" in crl.stderr + crl.stdout
    assert (
        "No Revoked Certificates"
        in openssl("crl", "-in", str(ca.certdir / f"{digest}.r0"), "-noout", "-text").stdout
    )


def test_issued_certificates_verify_with_openssl_including_crl(ca: CertificateAuthority) -> None:
    host = ca.issue_host("node1.example.org", ips=["127.0.0.1"], dns=["localhost"])
    client = ca.issue_client("orchestrator")
    for cred in (host, client):
        result = openssl("verify", "-CApath", str(ca.certdir), "-crl_check", str(cred.cert))
        assert result.returncode == 0, result.stderr
        assert result.stdout.strip().endswith("OK")
        assert stat.S_IMODE(cred.key.stat().st_mode) == 0o600
    cert = load(host.cert)
    assert host.subject_dn == "/DC=org/DC=tpc-bench/OU=Services/CN=node1.example.org"
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["node1.example.org", "localhost"]
    assert [str(a) for a in san.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(eku) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    ku = cert.extensions.get_extension_for_class(x509.KeyUsage).value
    assert ku.digital_signature and ku.key_encipherment and not ku.key_cert_sign
    bc = cert.extensions.get_extension_for_class(x509.BasicConstraints)
    assert bc.critical and not bc.value.ca
    assert load(client.cert).subject.rfc4514_string().startswith("CN=orchestrator,OU=People")


def test_serials_are_random(ca: CertificateAuthority) -> None:
    serials = {load(ca.issue_host(f"n{i}").cert).serial_number for i in range(4)}
    assert len(serials) == 4
    assert all(s.bit_length() > 64 for s in serials)


def test_init_keeps_an_existing_ca(tmp_path: Path) -> None:
    first = CertificateAuthority.init(tmp_path / "ca")
    fingerprint = load(first.cert_path).fingerprint(hashes.SHA256())
    again = CertificateAuthority.init(tmp_path / "ca")
    assert load(again.cert_path).fingerprint(hashes.SHA256()) == fingerprint
    with pytest.raises(CAError, match="a different CA already exists"):
        CertificateAuthority.init(tmp_path / "ca", subject="/DC=org/DC=other/CN=Other CA")


def test_custom_subject_and_bad_subjects(tmp_path: Path) -> None:
    ca = CertificateAuthority.init(tmp_path / "ca", subject="/DC=org/DC=example/O=Site/CN=Site CA")
    assert ca.issue_client("u").subject_dn == "/DC=org/DC=example/O=Site/OU=People/CN=u"
    for bad in ("CN=x", "/DC=org/XX=1/CN=y", "/DC=org", "/CN="):
        with pytest.raises(DNError):
            CertificateAuthority.init(tmp_path / f"bad{len(bad)}", subject=bad)


def test_load_without_a_ca_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(CAError, match=r"tpcbench ca init --dir"):
        CertificateAuthority.load(tmp_path / "nothing")


def test_host_certificate_is_kept_renewed_or_reissued(ca: CertificateAuthority) -> None:
    first = ca.issue_host("n1", ips=["10.0.0.1"])
    assert first.reissued
    kept = ca.issue_host("n1", ips=["10.0.0.1"])
    assert not kept.reissued
    assert load(kept.cert).serial_number == load(first.cert).serial_number
    moved = ca.issue_host("n1", ips=["10.0.0.2"])  # the SAN changed: a new certificate
    assert moved.reissued
    short = ca.issue_host("n2", days=5)  # expires within the renewal margin
    assert short.reissued
    assert ca.issue_host("n2", days=5).reissued
    expiry = load(short.cert).not_valid_after_utc
    assert expiry - dt.datetime.now(dt.UTC) < dt.timedelta(days=6)


def test_certificate_from_another_ca_is_replaced(tmp_path: Path) -> None:
    ours = CertificateAuthority.init(tmp_path / "ours")
    other = CertificateAuthority.init(tmp_path / "other", subject="/DC=org/DC=x/CN=X CA")
    stray = other.issue_host("n1")
    target = ours.directory / "hosts" / "n1"
    target.mkdir(parents=True)
    (target / "hostcert.pem").write_bytes(stray.cert.read_bytes())
    (target / "hostkey.pem").write_bytes(stray.key.read_bytes())
    assert ours.issue_host("n1").reissued
    assert (
        openssl("verify", "-CApath", str(ours.certdir), str(target / "hostcert.pem")).returncode
        == 0
    )


def test_invalid_names_and_addresses(ca: CertificateAuthority) -> None:
    with pytest.raises(CAError, match="invalid name"):
        ca.issue_host("../etc")
    with pytest.raises(CAError, match="invalid IP address"):
        ca.issue_host("n1", ips=["300.1.1.1"])


def test_real_tls_handshake_with_mutual_authentication(ca: CertificateAuthority) -> None:
    host = ca.issue_host("localhost", ips=["127.0.0.1"])
    client = ca.issue_client("orchestrator")
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(host.cert, host.key)
    server_ctx.load_verify_locations(capath=str(ca.certdir))
    server_ctx.verify_mode = ssl.CERT_REQUIRED
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    seen: dict[str, object] = {}

    def serve() -> None:
        conn, _ = listener.accept()
        with server_ctx.wrap_socket(conn, server_side=True) as tls:
            seen["peer"] = tls.getpeercert()
            tls.sendall(b"hello")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client_ctx = ssl.create_default_context(capath=str(ca.certdir))
    client_ctx.load_cert_chain(client.cert, client.key)
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        client_ctx.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        assert tls.recv(5) == b"hello"
    thread.join(10)
    listener.close()
    subject = dict(x[0] for x in seen["peer"]["subject"])  # type: ignore[index]
    assert subject["commonName"] == "orchestrator"


def test_tls_handshake_fails_against_an_unknown_ca(
    tmp_path: Path, ca: CertificateAuthority
) -> None:
    other = CertificateAuthority.init(tmp_path / "other", subject="/DC=org/DC=x/CN=X CA")
    host = other.issue_host("localhost", ips=["127.0.0.1"])
    server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_ctx.load_cert_chain(host.cert, host.key)
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        with contextlib.suppress(ssl.SSLError, OSError):
            server_ctx.wrap_socket(conn, server_side=True).close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    client_ctx = ssl.create_default_context(capath=str(ca.certdir))
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        pytest.raises(ssl.SSLCertVerificationError),
    ):
        client_ctx.wrap_socket(raw, server_hostname="127.0.0.1")
    thread.join(10)
    listener.close()
