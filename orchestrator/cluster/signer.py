"""The cluster's certificate signer (`tpcbench ca signer`): the one pod that holds the CA key.

It keeps the CA in a Secret (making it on first start unless the CA is the site's own),
publishes what everyone else needs in two ConfigMaps (the grid-security directory and the
GridFTP grid-mapfile), then watches CertificateSigningRequests for its signer names and
approves and signs, or denies, each one by the rules of csr_policy.py. With a token issuer,
it also keeps the issuer's signing key in a Secret of its own (made on first start; the
orchestrator mounts it to mint tokens) and publishes the issuer's two public documents in a
ConfigMap (the issuer's pod serves them).
"""

from __future__ import annotations

import base64
import datetime as dt
import logging
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from prometheus_client import CollectorRegistry, Counter, generate_latest

from ca.authority import CAError, CertificateAuthority
from ca.csr_policy import SignerPolicy, Verdict, deny, judge, node_name_of_requester
from ca.grid_security import grid_security_files
from ca.keys import write_private, write_public
from ca.tokens import TokenError, ensure_issuer_key, issuer_key_path, load_private_key
from orchestrator.errors import UserError
from orchestrator.servers import layout, render_grid_mapfile
from orchestrator.servers.access import hosts_dn_prefix, render_xrootd_gridmap
from orchestrator.token_issuer import issuer_documents

log = logging.getLogger(__name__)

CA_CERT_KEY = "tls.crt"  # the keys cert-manager and kubernetes.io/tls Secrets use
CA_KEY_KEY = "tls.key"
GRID_MAPFILE_KEY = "grid-mapfile"
XROOTD_GRIDMAP_KEY = layout.XROOTD_GRIDMAP.name
CA_BUNDLE_KEY = "ca.crt"
TOKEN_KEY_KEY = "issuer-key.pem"  # the token issuer's signing key in its Secret
FINAL_CONDITIONS = {"Denied", "Failed"}
HEALTHY_CONTACT_AGE = 300.0


@dataclass(frozen=True)
class TokenIssuerConfig:
    """The token issuer whose signing key the signer keeps and whose documents it publishes."""

    url: str
    key_secret: str  # holds TOKEN_KEY_KEY; the orchestrator mounts it
    documents_configmap: str  # the two documents; the issuer's pod mounts it


@dataclass(frozen=True)
class SignerConfig:
    policy: SignerPolicy
    ca_secret: str
    grid_security_configmap: str
    grid_mapfile_configmap: str
    create_ca: bool = True  # False: the Secret must already hold the site's CA
    ca_subject: str | None = None  # for a CA made here; default: our CA's subject
    grid_user: str = layout.SERVER_USER  # the local account the orchestrator's DN maps to
    client_dn: str | None = None  # the orchestrator's DN if not ours (a site's own certificate)
    tokens: TokenIssuerConfig | None = None


def _condition_types(csr: Any) -> set[str]:
    conditions = (csr.status.conditions if csr.status else None) or []
    return {c.type for c in conditions if c.status == "True"}


class SignerMetrics:
    """What /metrics shows: requests answered, by kind and verdict."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.answered = Counter(
            "tpcbench_signer_requests",
            "Certificate signing requests answered, by kind (host, client) and verdict.",
            ["kind", "verdict"],
            registry=self.registry,
        )

    def exposition(self) -> bytes:
        return generate_latest(self.registry)


class ClusterSigner:
    """Signs for `config.policy`'s signer names with the CA kept in `config.ca_secret`."""

    def __init__(self, api_client: Any, config: SignerConfig, workdir: Path) -> None:
        from kubernetes import client

        self.config = config
        self.core = client.CoreV1Api(api_client)
        self.certificates = client.CertificatesV1Api(api_client)
        self.workdir = Path(workdir)
        self.ca: CertificateAuthority | None = None
        self.token_key: Path | None = None
        self.metrics = SignerMetrics()
        self.last_contact = 0.0

    def health(self) -> tuple[bool, dict[str, Any]]:
        """Healthy while the CA is loaded and the API answered within the last 5 minutes."""
        age = time.monotonic() - self.last_contact
        healthy = self.ca is not None and age < HEALTHY_CONTACT_AGE
        return healthy, {"ca": self.ca.subject_dn if self.ca else None, "api_age_s": round(age)}

    # -- the CA and what it publishes ------------------------------------------------------

    def _secret_data(self, name: str, what: str) -> dict[str, str]:
        from kubernetes.client.exceptions import ApiException

        namespace = self.config.policy.namespace
        try:
            secret = self.core.read_namespaced_secret(name, namespace)
        except ApiException as exc:
            raise UserError(
                f"cannot read the {what} Secret {namespace}/{name}: {exc.status} {exc.reason}"
            ) from exc
        return dict(secret.data or {})

    def _fill_secret(self, name: str, files: dict[str, Path]) -> None:
        data = {key: base64.b64encode(path.read_bytes()).decode() for key, path in files.items()}
        self.core.patch_namespaced_secret(name, self.config.policy.namespace, {"data": data})

    def load_or_create_ca(self) -> CertificateAuthority:
        namespace, name = self.config.policy.namespace, self.config.ca_secret
        data = self._secret_data(name, "CA")
        directory = self.workdir / "ca"
        if data.get(CA_CERT_KEY) and data.get(CA_KEY_KEY):
            write_public(directory / "ca" / "ca-cert.pem", base64.b64decode(data[CA_CERT_KEY]))
            write_private(directory / "ca" / "ca-key.pem", base64.b64decode(data[CA_KEY_KEY]))
            try:
                self.ca = CertificateAuthority.load(directory)
            except CAError as exc:
                raise UserError(f"the CA in Secret {namespace}/{name} is unusable: {exc}") from exc
            log.info("CA %s loaded from Secret %s/%s", self.ca.subject_dn, namespace, name)
            return self.ca
        if not self.config.create_ca:
            raise UserError(
                f"the CA Secret {namespace}/{name} holds no {CA_CERT_KEY} and {CA_KEY_KEY}; "
                "put the site's CA there (kubectl create secret tls ...) or let the signer "
                "make one (ca.existingSecret unset)"
            )
        self.ca = CertificateAuthority.init(directory, subject=self.config.ca_subject)
        self._fill_secret(name, {CA_CERT_KEY: self.ca.cert_path, CA_KEY_KEY: self.ca.key_path})
        log.info("CA %s made and kept in Secret %s/%s", self.ca.subject_dn, namespace, name)
        return self.ca

    def load_or_create_token_key(self) -> Path | None:
        """The token issuer's signing key, beside the CA here as in the lab (ca/tokens.py):
        from its Secret, or made on first start and kept there; None without an issuer."""
        tokens = self.config.tokens
        if tokens is None:
            return None
        where = f"{self.config.policy.namespace}/{tokens.key_secret}"
        stored = self._secret_data(tokens.key_secret, "token issuer key").get(TOKEN_KEY_KEY)
        directory = self.workdir / "ca"
        path = issuer_key_path(directory)
        if stored:
            write_private(path, base64.b64decode(stored))
            try:
                load_private_key(path)
            except TokenError as exc:
                raise UserError(f"the token issuer key in Secret {where}: {exc}") from exc
            log.info("token issuer key loaded from Secret %s", where)
        else:
            self._fill_secret(tokens.key_secret, {TOKEN_KEY_KEY: ensure_issuer_key(directory)})
            log.info("token issuer key made and kept in Secret %s", where)
        self.token_key = path
        return path

    def publish(self) -> None:
        """The grid-security directory and the grid-mapfile, for the servers to mount."""
        ca = self._ca()
        files = grid_security_files(ca.certificate, ca.empty_crl())
        certdir = {name: content.decode() for name, content in files.items()}
        certdir[CA_BUNDLE_KEY] = ca.certificate.public_bytes(serialization.Encoding.PEM).decode()
        client_dn = self.config.client_dn or ca.client_subject_dn(self.config.policy.client_name)
        # GridFTP maps the orchestrator to its server account; XRootD maps it and every host of
        # our CA to the identities its authorization names (servers/access.py)
        mapfiles = {
            GRID_MAPFILE_KEY: render_grid_mapfile({client_dn: self.config.grid_user}),
            XROOTD_GRIDMAP_KEY: render_xrootd_gridmap([client_dn], hosts_dn_prefix(ca)),
        }
        namespace = self.config.policy.namespace
        self.core.patch_namespaced_config_map(
            self.config.grid_security_configmap, namespace, {"data": certdir}
        )
        self.core.patch_namespaced_config_map(
            self.config.grid_mapfile_configmap, namespace, {"data": mapfiles}
        )
        log.info("published the grid-security directory and the grid maps (%s)", client_dn)
        tokens = self.config.tokens
        if tokens is not None and self.token_key is not None:
            documents = issuer_documents(tokens.url, self.token_key)
            self.core.patch_namespaced_config_map(
                tokens.documents_configmap, namespace, {"data": documents}
            )
            log.info("published the token issuer's documents for %s", tokens.url)

    def _ca(self) -> CertificateAuthority:
        if self.ca is None:
            raise RuntimeError("load_or_create_ca() first")
        return self.ca

    # -- requests -------------------------------------------------------------------------

    def signer_names(self) -> list[str]:
        policy = self.config.policy
        issuer = [policy.issuer_signer] if policy.issuer_name else []
        return [policy.host_signer, policy.client_signer, *issuer]

    def ours(self, csr: Any) -> bool:
        return csr.spec.signer_name in self.signer_names()

    def process(self, csr: Any) -> Verdict | None:
        """Decide and act on one request of ours; None when there is nothing left to do."""
        conditions = _condition_types(csr)
        if not self.ours(csr) or conditions & FINAL_CONDITIONS:
            return None
        if "Approved" in conditions and csr.status.certificate:
            return None
        verdict = self._judge(csr)
        name = csr.metadata.name
        if not verdict.approved:
            self._set_condition(name, "Denied", verdict)
        else:
            if "Approved" not in conditions:
                self._set_condition(name, "Approved", verdict)
            self._sign(name, verdict)
        answer = "approved" if verdict.approved else "denied"
        self.metrics.answered.labels(verdict.kind or "unknown", answer).inc()
        log.info("%s %s: %s (%s)", answer, name, verdict.message, verdict.reason)
        return verdict

    def _judge(self, csr: Any) -> Verdict:
        from kubernetes.client.exceptions import ApiException

        node = None
        node_name = node_name_of_requester(csr)
        if csr.spec.signer_name == self.config.policy.host_signer and node_name:
            try:
                node = self.core.read_node(node_name)
            except ApiException as exc:
                if exc.status != 404:
                    return deny("NodeUnreadable", f"cannot read node {node_name}: {exc.reason}")
        return judge(csr, node, self.config.policy)

    def _set_condition(self, name: str, kind: str, verdict: Verdict) -> None:
        from kubernetes import client

        csr = self.certificates.read_certificate_signing_request(name)
        csr.status = csr.status or client.V1CertificateSigningRequestStatus()
        csr.status.conditions = [
            *(csr.status.conditions or []),
            client.V1CertificateSigningRequestCondition(
                type=kind,
                status="True",
                reason=verdict.reason,
                message=verdict.message,
                last_update_time=dt.datetime.now(dt.UTC),
            ),
        ]
        self.certificates.replace_certificate_signing_request_approval(name, csr)

    def _sign(self, name: str, verdict: Verdict) -> None:
        ca = self._ca()
        assert verdict.public_key is not None
        if verdict.kind in ("host", "issuer"):  # the issuer's: a server's, without addresses
            cert = ca.sign_host_key(
                verdict.public_key, verdict.name, ips=verdict.ips, days=verdict.days
            )
        else:
            cert = ca.sign_client_key(verdict.public_key, verdict.name, days=verdict.days)
        pem = cert.public_bytes(serialization.Encoding.PEM)
        csr = self.certificates.read_certificate_signing_request(name)
        csr.status.certificate = base64.b64encode(pem).decode()
        self.certificates.replace_certificate_signing_request_status(name, csr)

    def process_pending(self) -> list[tuple[str, Verdict]]:
        """One pass over every request of ours that is waiting."""
        done = []
        for csr in self.certificates.list_certificate_signing_request().items:
            verdict = self.process(csr)
            if verdict is not None:
                done.append((csr.metadata.name, verdict))
        self._touch()
        return done

    def _touch(self) -> None:
        self.last_contact = time.monotonic()

    def run(self, stop: threading.Event, resync: float = 30.0) -> None:
        """Until `stop`: answer each request as it arrives (a watch), with a full pass every
        `resync` seconds; API errors are logged and retried, never fatal."""
        from kubernetes import watch
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        while not stop.is_set():
            try:
                self.process_pending()
                stream = watch.Watch().stream(
                    self.certificates.list_certificate_signing_request,
                    timeout_seconds=max(1, int(resync)),
                )
                for event in stream:
                    if stop.is_set():
                        break
                    if event["type"] in ("ADDED", "MODIFIED"):
                        self.process(event["object"])
                    self._touch()
            except (ApiException, HTTPError, OSError) as exc:
                log.warning("Kubernetes API: %s; retrying in 5 s", exc)
                stop.wait(5)
