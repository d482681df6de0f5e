"""Which certificate signing requests our cluster signer grants: pure rules, no API calls.

A server pod asks for its host certificate with its own ServiceAccount token. That token is
bound to the pod, so the API server writes the pod's node into the request
(`spec.extra["authentication.kubernetes.io/node-name"]`); the requester cannot forge it.
A host certificate is granted only for that node's name and InternalIP, to the servers'
ServiceAccount, on a node carrying the benchmark label. The orchestrator's client
certificate is granted to the orchestrator's ServiceAccount, for the configured name only;
the token issuer's serving certificate to the issuer's ServiceAccount, for its Service's DNS
name only. Anything else is denied with a reason the requester sees.
"""

from __future__ import annotations

import base64
import ipaddress
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID

HOST_SIGNER = "tpc-bench.io/host"
CLIENT_SIGNER = "tpc-bench.io/client"
ISSUER_SIGNER = "tpc-bench.io/issuer"
NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"
MIN_KEY_BITS = 2048
# What a requester may ask for; the certificate's usages are ours anyway (authority.py).
HOST_REQUEST_USAGES = {"digital signature", "key encipherment", "server auth", "client auth"}
CLIENT_REQUEST_USAGES = {"digital signature", "key encipherment", "client auth"}
ISSUER_REQUEST_USAGES = {"digital signature", "key encipherment", "server auth"}


@dataclass(frozen=True)
class SignerPolicy:
    """Who may have which certificate; the chart fills it from its values."""

    namespace: str
    servers_service_account: str
    orchestrator_service_account: str
    node_labels: Mapping[str, str] = field(default_factory=dict)  # benchmark nodes carry these
    client_name: str = "orchestrator"
    host_signer: str = HOST_SIGNER
    client_signer: str = CLIENT_SIGNER
    max_days: int = 365
    # The token issuer's ServiceAccount and Service DNS name; empty: no issuer certificates.
    issuer_service_account: str = ""
    issuer_name: str = ""
    issuer_signer: str = ISSUER_SIGNER

    def account(self, service_account: str) -> str:
        return f"system:serviceaccount:{self.namespace}:{service_account}"


@dataclass(frozen=True)
class Verdict:
    """Approve (and sign what `kind`, `name`, `ips` say, for `days`) or deny, with a reason."""

    approved: bool
    reason: str  # CamelCase, as Kubernetes condition reasons are
    message: str
    kind: str = ""  # "host" | "client" | "issuer"
    name: str = ""
    ips: tuple[str, ...] = ()
    days: int = 0
    public_key: rsa.RSAPublicKey | None = None


def deny(reason: str, message: str) -> Verdict:
    return Verdict(False, reason, message)


def node_internal_ips(node: Any) -> list[str]:
    """A Node object's InternalIP addresses."""
    addresses = (node.status.addresses if node and node.status else None) or []
    return [a.address for a in addresses if a.type == "InternalIP"]


def node_name_of_requester(csr: Any) -> str | None:
    """The node the requesting pod runs on, as the API server recorded it."""
    extra = csr.spec.extra or {}
    values = extra.get(NODE_NAME_EXTRA) or []
    return values[0] if len(values) == 1 else None


def _parse_request(csr: Any) -> x509.CertificateSigningRequest | Verdict:
    try:
        raw = base64.b64decode(csr.spec.request)
        request = x509.load_pem_x509_csr(raw)
    except (ValueError, TypeError) as exc:
        return deny("BadRequest", f"spec.request is not a PEM certificate request: {exc}")
    if not request.is_signature_valid:
        return deny("BadRequest", "the request's signature does not verify")
    key = request.public_key()
    if not isinstance(key, rsa.RSAPublicKey) or key.key_size < MIN_KEY_BITS:
        return deny("WeakKey", f"the key must be RSA of at least {MIN_KEY_BITS} bits")
    return request


def _common_name(request: x509.CertificateSigningRequest) -> str | None:
    names = request.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(names[0].value) if len(names) == 1 else None


def _sans(request: x509.CertificateSigningRequest) -> tuple[list[str], list[str], bool]:
    """(DNS names, IP addresses, whether anything else was asked for)."""
    try:
        san = request.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return [], [], False
    dns = san.get_values_for_type(x509.DNSName)
    ips = [str(ip) for ip in san.get_values_for_type(x509.IPAddress)]
    return dns, ips, len(dns) + len(ips) != len(list(san))


def _days(csr: Any, policy: SignerPolicy) -> int:
    seconds = csr.spec.expiration_seconds
    if not seconds:
        return policy.max_days
    return max(1, min(policy.max_days, math.ceil(seconds / 86400)))


def _grant(
    csr: Any,
    policy: SignerPolicy,
    request: x509.CertificateSigningRequest,
    reason: str,
    message: str,
    kind: str,
    name: str,
    ips: Sequence[str] = (),
) -> Verdict:
    """Approval: sign `kind` for `name` (and `ips`) with the requester's own key."""
    return Verdict(
        True,
        reason,
        message,
        kind=kind,
        name=name,
        ips=tuple(ips),
        days=_days(csr, policy),
        public_key=request.public_key(),  # type: ignore[arg-type]
    )


def _usages_allowed(csr: Any, allowed: set[str]) -> str | None:
    extra = set(csr.spec.usages or []) - allowed
    return f"usages {sorted(extra)} are not granted (allowed: {sorted(allowed)})" if extra else None


def judge(csr: Any, node: Any | None, policy: SignerPolicy) -> Verdict:
    """The verdict on one request; `node` is the Node its requester runs on (None if none)."""
    if csr.spec.signer_name == policy.host_signer:
        return _judge_host(csr, node, policy)
    if csr.spec.signer_name == policy.client_signer:
        return _judge_named(csr, policy, _client_rule(policy))
    if csr.spec.signer_name == policy.issuer_signer and policy.issuer_name:
        return _judge_named(csr, policy, _issuer_rule(policy))
    return deny("UnknownSigner", f"this signer does not sign for {csr.spec.signer_name}")


def _judge_host(csr: Any, node: Any | None, policy: SignerPolicy) -> Verdict:
    expected = policy.account(policy.servers_service_account)
    if csr.spec.username != expected:
        return deny(
            "NotTheServers",
            f"requested by {csr.spec.username}; host certificates go to {expected} only",
        )
    node_name = node_name_of_requester(csr)
    if node_name is None:
        return deny(
            "NotBoundToANode",
            "the requester's token is not bound to a pod on a node; request with the pod's "
            "own ServiceAccount token",
        )
    if problem := _usages_allowed(csr, HOST_REQUEST_USAGES):
        return deny("UsageNotAllowed", problem)
    request = _parse_request(csr)
    if isinstance(request, Verdict):
        return request
    if node is None:
        return deny("UnknownNode", f"the requesting pod's node {node_name} does not exist")
    labels = node.metadata.labels or {}
    missing = {k: v for k, v in policy.node_labels.items() if labels.get(k) != v}
    if missing:
        wanted = ", ".join(f"{k}={v}" for k, v in missing.items())
        return deny("NotABenchmarkNode", f"node {node_name} does not carry {wanted}")
    dns, ips, other = _sans(request)
    name = _common_name(request)
    if other or name != node_name or set(dns) != {node_name}:
        return deny(
            "NameMismatch",
            f"asks for CN {name!r} and DNS names {sorted(dns)} (and no other names), but the "
            f"requesting pod runs on node {node_name}",
        )
    node_ips = node_internal_ips(node)
    if not ips or not _same_addresses(ips, node_ips):
        return deny(
            "AddressMismatch",
            f"asks for IP addresses {sorted(ips)}, but node {node_name} has InternalIP "
            f"{', '.join(node_ips) or 'none'}",
        )
    message = f"host certificate for node {node_name} ({', '.join(ips)})"
    return _grant(csr, policy, request, "NodeMatches", message, "host", node_name, ips)


def _same_addresses(asked: Sequence[str], node_ips: Sequence[str]) -> bool:
    """Every address asked for is one of the node's InternalIPs (compared as addresses)."""
    known = {ipaddress.ip_address(ip) for ip in node_ips}
    return all(ipaddress.ip_address(ip) in known for ip in asked)


@dataclass(frozen=True)
class _Named:
    """A certificate for one fixed name, granted to one ServiceAccount only."""

    kind: str  # "client" | "issuer"
    account: str
    refusal: str  # the reason when another account asks
    usages: set[str]
    name: str
    dns: tuple[str, ...]  # the DNS names it carries: none (client), its name (issuer)
    granted: str  # the reason when it is granted


def _client_rule(policy: SignerPolicy) -> _Named:
    account = policy.account(policy.orchestrator_service_account)
    return _Named("client", account, "NotTheOrchestrator", CLIENT_REQUEST_USAGES,
                  policy.client_name, (), "OrchestratorMatches")  # fmt: skip


def _issuer_rule(policy: SignerPolicy) -> _Named:
    account = policy.account(policy.issuer_service_account)
    return _Named("issuer", account, "NotTheIssuer", ISSUER_REQUEST_USAGES,
                  policy.issuer_name, (policy.issuer_name,), "IssuerMatches")  # fmt: skip


def _judge_named(csr: Any, policy: SignerPolicy, rule: _Named) -> Verdict:
    if csr.spec.username != rule.account:
        return deny(
            rule.refusal,
            f"requested by {csr.spec.username}; {rule.kind} certificates go to {rule.account} only",
        )
    if problem := _usages_allowed(csr, rule.usages):
        return deny("UsageNotAllowed", problem)
    request = _parse_request(csr)
    if isinstance(request, Verdict):
        return request
    dns, ips, other = _sans(request)
    name = _common_name(request)
    if name != rule.name or sorted(dns) != sorted(rule.dns) or ips or other:
        return deny(
            "NameMismatch",
            f"asks for CN {name!r}, DNS names {sorted(dns)} and addresses {sorted(ips)}; the "
            f"{rule.kind} certificate is for CN {rule.name!r} with DNS names {list(rule.dns)} "
            "and nothing else",
        )
    message = f"{rule.kind} certificate {rule.name}"
    return _grant(csr, policy, request, rule.granted, message, rule.kind, rule.name)
