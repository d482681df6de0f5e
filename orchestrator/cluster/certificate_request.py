"""Ask the cluster's signer for a certificate through the CSR API (`tpcbench ca request`).

A server pod's init container runs it with the pod's own ServiceAccount token: the key is
made here and never leaves the pod; the signer sees the pod's node in the request and signs
only for that node's name and address. The token issuer's pod asks the same way for its
Service's name (kind issuer). Run with `--keep-renewed` beside the servers, it asks again
when a third of the certificate's life is left.
"""

from __future__ import annotations

import base64
import datetime as dt
import logging
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.x509.oid import NameOID

from ca.csr_policy import CLIENT_SIGNER, HOST_SIGNER, ISSUER_SIGNER
from ca.keys import key_pem, new_key, write_private, write_public
from orchestrator.errors import UserError

log = logging.getLogger(__name__)

HOST, CLIENT, ISSUER = "host", "client", "issuer"
KINDS = (HOST, CLIENT, ISSUER)
FILE_NAMES = {
    HOST: ("hostcert.pem", "hostkey.pem"),
    CLIENT: ("usercert.pem", "userkey.pem"),
    ISSUER: ("hostcert.pem", "hostkey.pem"),  # a server's certificate, for a Service's name
}
USAGES = {
    HOST: ["digital signature", "key encipherment", "server auth", "client auth"],
    CLIENT: ["digital signature", "key encipherment", "client auth"],
    ISSUER: ["digital signature", "key encipherment", "server auth"],
}
DEFAULT_SIGNERS = {HOST: HOST_SIGNER, CLIENT: CLIENT_SIGNER, ISSUER: ISSUER_SIGNER}
RENEW_WHEN_LEFT = 1 / 3  # of the certificate's lifetime


@dataclass(frozen=True)
class CertificateWanted:
    kind: str  # HOST | CLIENT | ISSUER
    name: str  # the node name (host), the client's name, the issuer Service's DNS name
    ips: tuple[str, ...] = ()
    days: int = 365
    signer: str = ""

    @property
    def signer_name(self) -> str:
        return self.signer or DEFAULT_SIGNERS[self.kind]

    def paths(self, out_dir: Path) -> tuple[Path, Path]:
        cert, key = FILE_NAMES[self.kind]
        return Path(out_dir) / cert, Path(out_dir) / key


def signing_request_pem(wanted: CertificateWanted, key: Any) -> bytes:
    """A PKCS#10 request: CN = name; for a host or the issuer, SANs = the name and any
    addresses."""
    import ipaddress

    builder = x509.CertificateSigningRequestBuilder().subject_name(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, wanted.name)])
    )
    if wanted.kind in (HOST, ISSUER):
        names: list[x509.GeneralName] = [x509.DNSName(wanted.name)]
        names += [x509.IPAddress(ipaddress.ip_address(ip)) for ip in wanted.ips]
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)


def _verdict(csr: Any) -> tuple[str, str] | None:
    """("Denied" | "Failed", message) once the signer has refused, else None."""
    for condition in (csr.status.conditions if csr.status else None) or []:
        if condition.type in ("Denied", "Failed") and condition.status == "True":
            return condition.type, f"{condition.reason}: {condition.message}"
    return None


def request_certificate(
    api_client: Any,
    wanted: CertificateWanted,
    *,
    timeout: float = 300.0,
    poll: float = 1.0,
) -> tuple[bytes, bytes]:
    """(certificate PEM, key PEM) once the signer has signed; a refusal is a UserError."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    api = client.CertificatesV1Api(api_client)
    key = new_key()
    name = f"tpc-bench-{wanted.kind}-{wanted.name}-{secrets.token_hex(4)}".lower()
    body = client.V1CertificateSigningRequest(
        metadata=client.V1ObjectMeta(
            name=name,
            labels={"app.kubernetes.io/name": "tpc-bench", "tpc-bench.io/certificate": wanted.kind},
        ),
        spec=client.V1CertificateSigningRequestSpec(
            request=base64.b64encode(signing_request_pem(wanted, key)).decode(),
            signer_name=wanted.signer_name,
            usages=USAGES[wanted.kind],
            expiration_seconds=wanted.days * 86400,
        ),
    )
    try:
        api.create_certificate_signing_request(body)
    except ApiException as exc:
        raise UserError(
            f"cannot create the CertificateSigningRequest {name}: {exc.status} {exc.reason}; "
            "the ServiceAccount needs create and get on certificatesigningrequests"
        ) from exc
    log.info("asked %s for a %s certificate for %s (%s)", wanted.signer_name, wanted.kind,
             wanted.name, name)  # fmt: skip
    deadline = time.monotonic() + timeout
    while True:
        csr = api.read_certificate_signing_request(name)
        refused = _verdict(csr)
        if refused:
            raise UserError(f"the signer refused {name} ({refused[0]}): {refused[1]}")
        if csr.status and csr.status.certificate:
            return base64.b64decode(csr.status.certificate), key_pem(key)
        if time.monotonic() > deadline:
            raise UserError(
                f"no certificate for {name} after {timeout:.0f} s: is the tpc-bench signer "
                f"running? (kubectl get csr {name}; kubectl logs deploy/<release>-signer)"
            )
        time.sleep(poll)


def obtain(api_client: Any, wanted: CertificateWanted, out_dir: Path, **options: Any) -> Path:
    """Request a certificate and write it (and its key, 0600) into `out_dir`."""
    cert_pem, key_data = request_certificate(api_client, wanted, **options)
    cert_path, key_path = wanted.paths(out_dir)
    write_private(key_path, key_data)  # the key first: a cert never names a missing key
    write_public(cert_path, cert_pem)
    return cert_path


def renewal_due(cert_path: Path, now: dt.datetime | None = None) -> dt.datetime:
    """When the certificate at `cert_path` should be renewed (now, if it is unreadable)."""
    now = now or dt.datetime.now(dt.UTC)
    try:
        cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    except (OSError, ValueError):
        return now
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    return end - (end - start) * RENEW_WHEN_LEFT


def keep_renewed(
    api_client: Any,
    wanted: CertificateWanted,
    out_dir: Path,
    stop: threading.Event,
    *,
    max_sleep: float = 3600.0,
    **options: Any,
) -> None:
    """Until `stop`: renew the certificate in `out_dir` whenever its renewal is due."""
    cert_path, _ = wanted.paths(out_dir)
    while not stop.is_set():
        due = renewal_due(cert_path)
        wait = (due - dt.datetime.now(dt.UTC)).total_seconds()
        if wait <= 0:
            try:
                obtain(api_client, wanted, out_dir, **options)
                log.info("renewed %s (next renewal %s)", cert_path, renewal_due(cert_path))
                continue
            except UserError as exc:
                log.warning("renewal of %s failed: %s; trying again in 60 s", cert_path, exc)
                wait = 60.0
        stop.wait(min(wait, max_sleep))
