"""The signer's rules, case by case, on request objects as the API server returns them."""

from __future__ import annotations

import base64
import datetime as dt
import ipaddress
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID

from ca.authority import CertificateAuthority
from ca.csr_policy import (
    CLIENT_SIGNER,
    HOST_SIGNER,
    ISSUER_SIGNER,
    NODE_NAME_EXTRA,
    SignerPolicy,
    judge,
)
from orchestrator.cluster.certificate_request import (
    CertificateWanted,
    renewal_due,
    signing_request_pem,
)

POLICY = SignerPolicy(
    namespace="bench",
    servers_service_account="servers",
    orchestrator_service_account="orchestrator",
    node_labels={"tpc-bench.io/network": "100000"},
    max_days=365,
)
SERVERS = "system:serviceaccount:bench:servers"
ORCHESTRATOR = "system:serviceaccount:bench:orchestrator"


def node(name: str = "n1", ip: str = "10.0.0.1", labels: dict[str, str] | None = None) -> Any:
    return SimpleNamespace(
        metadata=SimpleNamespace(
            name=name, labels={"tpc-bench.io/network": "100000"} if labels is None else labels
        ),
        status=SimpleNamespace(addresses=[SimpleNamespace(type="InternalIP", address=ip)]),
    )


def csr(pem: bytes, *, signer: str = HOST_SIGNER, user: str = SERVERS, on: str | None = "n1",
        usages: list[str] | None = None, seconds: int | None = None) -> Any:  # fmt: skip
    return SimpleNamespace(
        spec=SimpleNamespace(
            request=base64.b64encode(pem).decode(),
            signer_name=signer,
            username=user,
            extra={NODE_NAME_EXTRA: [on]} if on else {},
            usages=usages or ["digital signature", "key encipherment", "server auth"],
            expiration_seconds=seconds,
        )
    )


def host_request(name: str = "n1", ips: tuple[str, ...] = ("10.0.0.1",)) -> bytes:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return signing_request_pem(CertificateWanted("host", name, ips), key)


def test_a_host_request_for_the_requesting_pods_node_is_approved() -> None:
    verdict = judge(csr(host_request(), seconds=30 * 86400 + 1), node(), POLICY)
    assert verdict.approved and verdict.kind == "host"
    assert (verdict.name, verdict.ips, verdict.days) == ("n1", ("10.0.0.1",), 31)


@pytest.mark.parametrize(
    ("request_args", "csr_args", "the_node", "reason"),
    [
        ({}, {"user": ORCHESTRATOR}, node(), "NotTheServers"),
        ({}, {"on": None}, node(), "NotBoundToANode"),
        ({"name": "n2"}, {}, node(), "NameMismatch"),
        ({"ips": ("10.0.0.2",)}, {}, node(), "AddressMismatch"),
        ({"ips": ()}, {}, node(), "AddressMismatch"),
        ({}, {}, node(labels={}), "NotABenchmarkNode"),
        ({}, {}, None, "UnknownNode"),
        ({}, {"usages": ["code signing"]}, node(), "UsageNotAllowed"),
        ({}, {"signer": "example.org/other"}, node(), "UnknownSigner"),
    ],
)
def test_anything_else_is_denied_with_its_reason(
    request_args: dict, csr_args: dict, the_node: Any, reason: str
) -> None:
    verdict = judge(csr(host_request(**request_args), **csr_args), the_node, POLICY)
    assert not verdict.approved and verdict.reason == reason, verdict.message


def test_extra_names_and_weak_keys_are_denied() -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    names = [x509.DNSName("n1"), x509.IPAddress(ipaddress.ip_address("10.0.0.1")),
             x509.RFC822Name("admin@example.org")]  # fmt: skip
    pem = (
        x509.CertificateSigningRequestBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "n1")]))
        .add_extension(x509.SubjectAlternativeName(names), critical=False)
        .sign(key, hashes.SHA256())
        .public_bytes(serialization.Encoding.PEM)
    )
    assert judge(csr(pem), node(), POLICY).reason == "NameMismatch"
    weak = ec.generate_private_key(ec.SECP256R1())
    pem = signing_request_pem(CertificateWanted("host", "n1", ("10.0.0.1",)), weak)
    assert judge(csr(pem), node(), POLICY).reason == "WeakKey"
    assert judge(csr(b"not a request"), node(), POLICY).reason == "BadRequest"


def test_the_client_certificate_goes_to_the_orchestrator_for_its_name_only() -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    good = signing_request_pem(CertificateWanted("client", "orchestrator"), key)
    client_usages = ["digital signature", "key encipherment", "client auth"]
    verdict = judge(csr(good, signer=CLIENT_SIGNER, user=ORCHESTRATOR, on=None,
                        usages=client_usages), None, POLICY)  # fmt: skip
    assert verdict.approved and verdict.name == "orchestrator"
    other = signing_request_pem(CertificateWanted("client", "root"), key)
    denied = judge(csr(other, signer=CLIENT_SIGNER, user=ORCHESTRATOR, usages=client_usages),
                   None, POLICY)  # fmt: skip
    assert denied.reason == "NameMismatch"
    assert judge(csr(good, signer=CLIENT_SIGNER, usages=client_usages), None, POLICY).reason == (
        "NotTheOrchestrator"
    )


def test_an_approved_key_is_signed_like_an_issued_host_certificate(tmp_path: Path) -> None:
    authority = CertificateAuthority.init(tmp_path / "ca")
    verdict = judge(csr(host_request()), node(), POLICY)
    assert verdict.public_key is not None
    cert = authority.sign_host_key(verdict.public_key, verdict.name, ips=verdict.ips, days=3)
    issued = x509.load_pem_x509_certificate(
        authority.issue_host("n1", ips=["10.0.0.1"]).cert.read_bytes()
    )
    assert cert.subject == issued.subject and cert.issuer == issued.issuer
    assert cert.extensions.get_extension_for_class(x509.SubjectAlternativeName) == (
        issued.extensions.get_extension_for_class(x509.SubjectAlternativeName)
    )
    assert cert.not_valid_after_utc - cert.not_valid_before_utc < dt.timedelta(days=3, minutes=6)
    assert authority.host_subject_dn("n1") == "/DC=org/DC=tpc-bench/OU=Services/CN=n1"


def test_renewal_is_due_with_a_third_of_the_lifetime_left(tmp_path: Path) -> None:
    authority = CertificateAuthority.init(tmp_path / "ca")
    issued = authority.issue_host("n1", ips=["10.0.0.1"], days=30)
    cert = x509.load_pem_x509_certificate(issued.cert.read_bytes())
    due = renewal_due(issued.cert)
    left = cert.not_valid_after_utc - due
    lifetime = cert.not_valid_after_utc - cert.not_valid_before_utc
    assert abs(left - lifetime / 3) < dt.timedelta(seconds=1)
    now = dt.datetime.now(dt.UTC)
    assert renewal_due(tmp_path / "missing.pem", now) == now  # nothing there: renew now


ISSUER_POLICY = replace(
    POLICY, issuer_service_account="issuer", issuer_name="token-issuer.bench.svc"
)
ISSUER = "system:serviceaccount:bench:issuer"
ISSUER_USAGES = ["digital signature", "key encipherment", "server auth"]


def issuer_csr(
    name: str = "token-issuer.bench.svc", ips: tuple[str, ...] = (), **options: Any
) -> Any:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = signing_request_pem(CertificateWanted("issuer", name, ips), key)
    return csr(pem, **{"signer": ISSUER_SIGNER, "user": ISSUER, "on": None,
                       "usages": ISSUER_USAGES, **options})  # fmt: skip


def test_the_token_issuer_gets_a_server_certificate_for_its_service_name_only(
    tmp_path: Path,
) -> None:
    verdict = judge(issuer_csr(), None, ISSUER_POLICY)
    assert verdict.approved and (verdict.kind, verdict.name, verdict.ips) == (
        "issuer",
        "token-issuer.bench.svc",
        (),
    )
    assert verdict.public_key is not None
    cert = CertificateAuthority.init(tmp_path / "ca").sign_host_key(
        verdict.public_key, verdict.name, days=verdict.days
    )
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["token-issuer.bench.svc"]
    assert san.get_values_for_type(x509.IPAddress) == []


@pytest.mark.parametrize(
    ("request_options", "policy", "reason"),
    [
        ({"user": SERVERS}, ISSUER_POLICY, "NotTheIssuer"),
        ({"user": ORCHESTRATOR}, ISSUER_POLICY, "NotTheIssuer"),
        ({"name": "webapp.bench.svc"}, ISSUER_POLICY, "NameMismatch"),
        ({"ips": ("10.96.0.10",)}, ISSUER_POLICY, "NameMismatch"),
        ({"usages": [*ISSUER_USAGES, "client auth"]}, ISSUER_POLICY, "UsageNotAllowed"),
        ({}, POLICY, "UnknownSigner"),  # a release without tokens signs no issuer certificate
    ],
)
def test_any_other_issuer_request_is_denied_with_its_reason(
    request_options: dict[str, Any], policy: SignerPolicy, reason: str
) -> None:
    verdict = judge(issuer_csr(**request_options), None, policy)
    assert not verdict.approved and verdict.reason == reason, verdict.message
