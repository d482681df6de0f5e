"""A release with `campaign.auth: [x509, token]` in the simulated cluster: the signer (a real
process, the chart's arguments and account) makes the token issuer's signing key into its
Secret once and keeps it, publishes the issuer's documents, and signs the issuer's serving
certificate for its Service name only, through the API server's RBAC and CSR admission.

kwok runs no container, so each test plays one (tests/support/helm_chart.py says how).
"""

from __future__ import annotations

import base64
import json
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from kubernetes import client

from ca.tokens import public_jwk
from orchestrator.cluster.signer import TOKEN_KEY_KEY
from tests.support.helm_chart import CHART, Cluster, Helm, release_values, tpcbench_argv

pytestmark = pytest.mark.cluster

NAMESPACE = "tpcb-tokens"
RELEASE = "tok"
FULLNAME = f"{RELEASE}-tpc-bench"
NODE, ADDRESS = "tok-node-1", "10.88.2.1"
URL = f"https://{FULLNAME}-token-issuer.{NAMESPACE}.svc"


@dataclass
class TokenRelease:
    cluster: Cluster
    workdir: Path

    def pod(self, component: str) -> client.V1Pod:
        (pod,) = self.cluster.pods(NAMESPACE, component)
        return pod

    def kubeconfig(self, account: str, component: str) -> Path:
        path = self.workdir / f"{account}-{time.monotonic_ns()}.kubeconfig"
        return self.cluster.kubeconfig(
            path, NAMESPACE, f"{FULLNAME}-{account}", self.pod(component)
        )

    def signer_once(self) -> subprocess.CompletedProcess[str]:
        """The signer's container with its own account, answering what waits, then exiting."""
        container = self.pod("signer").spec.containers[0]
        kubeconfig = self.kubeconfig("signer", "signer")
        argv = [*tpcbench_argv(container), f"--kubeconfig={kubeconfig}", "--once"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        return done

    def answered(self, requesting: subprocess.Popen[str]) -> str:
        """The signer, run until the request it waits for is answered; the request's log."""
        deadline = time.monotonic() + 90
        while requesting.poll() is None and time.monotonic() < deadline:
            self.signer_once()
            time.sleep(0.5)
        return requesting.communicate(timeout=30)[1]

    def secret(self, suffix: str) -> dict[str, bytes]:
        data = self.cluster.core.read_namespaced_secret(f"{FULLNAME}-{suffix}", NAMESPACE).data
        return {k: base64.b64decode(v) for k, v in (data or {}).items()}

    def documents(self) -> dict[str, dict]:
        found = self.cluster.core.read_namespaced_config_map(f"{FULLNAME}-token-issuer", NAMESPACE)
        return {name: json.loads(text) for name, text in (found.data or {}).items()}

    def request_issuer_certificate(
        self, account: str, component: str, out: Path
    ) -> subprocess.Popen[str]:
        """The issuer pod's init container, with `account`'s token bound to a `component` pod."""
        init = self.pod("token-issuer").spec.init_containers[0]
        argv = [a if not a.startswith("--out-dir=") else f"--out-dir={out}"
                for a in tpcbench_argv(init)]  # fmt: skip
        kubeconfig = self.kubeconfig(account, component)
        return subprocess.Popen(
            [*argv, f"--kubeconfig={kubeconfig}", "--timeout=60"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip


@pytest.fixture(scope="module")
def release(
    cluster: Cluster, cluster_helm: Helm, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[TokenRelease]:
    cluster.add_nodes({NODE: ADDRESS}, {"tpc-bench.io/network": "100000"})
    cluster.add_volumes("tok-pv", 2)
    try:
        cluster_helm.run(
            "install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--create-namespace",
            "--values", str(CHART / "ci" / "tokens-values.yaml"), "--wait", "--timeout", "5m",
            *release_values(),
        )  # fmt: skip
        yield TokenRelease(cluster, tmp_path_factory.mktemp("tokens"))
    finally:
        cluster_helm.run("uninstall", RELEASE, "--namespace", NAMESPACE, "--wait", check=False)
        for claim in cluster.core.list_namespaced_persistent_volume_claim(NAMESPACE).items:
            cluster.core.delete_namespaced_persistent_volume_claim(claim.metadata.name, NAMESPACE)
        cluster.core.delete_namespace(NAMESPACE)
        cluster.delete_nodes([NODE])
        for i in range(2):
            cluster.core.delete_persistent_volume(f"tok-pv-{i}")


def test_the_signer_makes_the_signing_key_once_and_publishes_its_documents(
    release: TokenRelease,
) -> None:
    assert release.secret("token-key") == {}  # the chart's Secret is empty until the signer
    release.signer_once()
    key = release.secret("token-key")
    assert set(key) == {TOKEN_KEY_KEY}
    public = load_pem_private_key(key[TOKEN_KEY_KEY], password=None).public_key()
    documents = release.documents()
    assert documents["openid-configuration.json"]["issuer"] == URL
    assert documents["openid-configuration.json"]["jwks_uri"] == URL + "/jwks"
    assert documents["jwks.json"]["keys"] == [public_jwk(public)]  # type: ignore[arg-type]
    # a restarted signer keeps the key (tokens minted before stay valid)
    release.signer_once()
    assert release.secret("token-key") == key
    assert release.documents() == documents


def test_the_issuer_gets_a_serving_certificate_for_its_service_name(
    release: TokenRelease, tmp_path: Path
) -> None:
    requesting = release.request_issuer_certificate("token-issuer", "token-issuer", tmp_path)
    stderr = release.answered(requesting)
    assert requesting.returncode == 0, stderr
    cert = x509.load_pem_x509_certificate((tmp_path / "hostcert.pem").read_bytes())
    names = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert names.get_values_for_type(x509.DNSName) == [urlsplit(URL).hostname]
    assert names.get_values_for_type(x509.IPAddress) == []
    ca = x509.load_pem_x509_certificate(release.secret("ca")["tls.crt"])
    cert.verify_directly_issued_by(ca)


def test_no_other_account_gets_the_issuers_certificate(
    release: TokenRelease, tmp_path: Path
) -> None:
    requesting = release.request_issuer_certificate("servers", "xrootd", tmp_path)
    stderr = release.answered(requesting)
    assert requesting.returncode == 2 and "NotTheIssuer" in stderr, stderr
    assert not (tmp_path / "hostcert.pem").exists()
