"""The control plane's credentials and command lines: etcd, kube-apiserver,
kube-controller-manager and kube-scheduler (v1.31.4, `scripts/simcluster/build.sh`).

One description serves two callers: the cluster lab (`lab up --kubernetes`, whose nodes are
real kubelets in the lab's namespaces) and the test suite's simulated cluster (kwok nodes,
everything on 127.0.0.1). Who starts the processes differs; what they run does not.

    plane = ControlPlane(workdir, bin_dir, address="10.99.0.1", port=6443, ...)
    plane.write_credentials(users=[KubeUser("system:node:lab-1", ("system:nodes",))])
    argv = plane.apiserver_argv()
"""

from __future__ import annotations

import json
import secrets
import shutil
import socket
import ssl
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from ca.authority import CertificateAuthority

SERVICE_RANGE = "10.96.0.0/16"
KUBERNETES_SERVICE_IP = "10.96.0.1"  # the first address of the range: the `kubernetes` Service
CLUSTER_DNS_IP = "10.96.0.10"
CLUSTER_DOMAIN = "cluster.local"
SERVICE_NAMES = (
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    f"kubernetes.default.svc.{CLUSTER_DOMAIN}",
    "localhost",
)
ADMIN = "admin"


@dataclass(frozen=True)
class KubeUser:
    """A static-token identity: a kubelet (system:node:<name>), kube-proxy, the admin."""

    name: str
    groups: tuple[str, ...] = ()
    token: str = field(default_factory=lambda: secrets.token_hex(16))

    def line(self) -> str:
        groups = ",".join(self.groups)
        return f'{self.token},{self.name},{self.name},"{groups}"\n'


@dataclass
class ControlPlane:
    """Files under `workdir`; the API server on https://`address`:`port`."""

    workdir: Path
    bin_dir: Path
    address: str
    port: int
    etcd_port: int
    etcd_peer_port: int
    etcd_data: Path  # memory-backed (/dev/shm): etcd's fsyncs would dominate a lab's disk
    controllers: str = "*"
    node_monitor_grace: str = "40s"
    admin: KubeUser = field(default_factory=lambda: KubeUser(ADMIN, ("system:masters",)))

    @property
    def server(self) -> str:
        return f"https://{self.address}:{self.port}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.etcd_port}"

    @property
    def ca_file(self) -> Path:
        return self.workdir / "ca.crt"

    @property
    def kubeconfig(self) -> Path:
        """The admin's kubeconfig."""
        return self.workdir / "kubeconfig"

    # -- credentials -------------------------------------------------------------------------

    def write_credentials(self, users: Sequence[KubeUser] = ()) -> None:
        """A fresh cluster CA, the API server's serving certificate (valid for its address,
        the `kubernetes` Service IP and names), its kubelet client certificate, the
        ServiceAccount signing key, the static tokens and the admin kubeconfig."""
        w = self.workdir
        w.mkdir(parents=True, exist_ok=True)
        authority = CertificateAuthority.init(
            w / "cluster-ca", days=30, subject="/CN=tpc-bench lab cluster CA"
        )
        ips = list(dict.fromkeys([self.address, KUBERNETES_SERVICE_IP, "127.0.0.1"]))
        serving = authority.issue_host("kubernetes", ips=ips, dns=SERVICE_NAMES, days=30)
        kubelet_client = authority.issue_client("kube-apiserver-kubelet-client", days=30)
        shutil.copyfile(authority.cert_path, self.ca_file)
        for source, target in (
            (serving.cert, "apiserver.crt"),
            (serving.key, "apiserver.key"),
            (kubelet_client.cert, "apiserver-kubelet-client.crt"),
            (kubelet_client.key, "apiserver-kubelet-client.key"),
        ):
            shutil.copyfile(source, w / target)
            (w / target).chmod(0o600)
        _write_service_account_keypair(private=w / "sa.key", public=w / "sa.pub")
        tokens = w / "tokens.csv"
        tokens.write_text("".join(u.line() for u in (self.admin, *users)))
        tokens.chmod(0o600)
        self.write_kubeconfig(self.kubeconfig, self.admin)

    def write_kubeconfig(self, path: Path, user: KubeUser, namespace: str | None = None) -> Path:
        write_kubeconfig(path, self.server, self.ca_file, user.token, user.name, namespace)
        return path

    # -- command lines -----------------------------------------------------------------------

    def etcd_argv(self, etcd: str) -> list[str]:
        peer = f"http://127.0.0.1:{self.etcd_peer_port}"
        return [
            etcd,
            "--name=tpcbench",
            f"--data-dir={self.etcd_data}",
            f"--listen-client-urls={self.etcd_url}",
            f"--advertise-client-urls={self.etcd_url}",
            f"--listen-peer-urls={peer}",
            f"--initial-advertise-peer-urls={peer}",
            f"--initial-cluster=tpcbench={peer}",
        ]

    def apiserver_argv(self) -> list[str]:
        w = self.workdir
        return [
            str(self.bin_dir / "kube-apiserver"),
            f"--etcd-servers={self.etcd_url}",
            f"--bind-address={self.address}",
            f"--advertise-address={self.address}",
            f"--secure-port={self.port}",
            f"--tls-cert-file={w / 'apiserver.crt'}",
            f"--tls-private-key-file={w / 'apiserver.key'}",
            f"--client-ca-file={self.ca_file}",
            f"--kubelet-client-certificate={w / 'apiserver-kubelet-client.crt'}",
            f"--kubelet-client-key={w / 'apiserver-kubelet-client.key'}",
            # `kubectl logs/exec` reach a kubelet by its lab address, not its (unresolvable) name
            "--kubelet-preferred-address-types=InternalIP",
            f"--token-auth-file={w / 'tokens.csv'}",
            "--authorization-mode=Node,RBAC",
            "--service-account-issuer=https://kubernetes.default.svc",
            f"--service-account-key-file={w / 'sa.pub'}",
            f"--service-account-signing-key-file={w / 'sa.key'}",
            f"--service-cluster-ip-range={SERVICE_RANGE}",
        ]

    def controller_manager_argv(self) -> list[str]:
        return [
            str(self.bin_dir / "kube-controller-manager"),
            f"--kubeconfig={self.kubeconfig}",
            "--leader-elect=false",
            "--secure-port=0",
            f"--controllers={self.controllers}",
            f"--node-monitor-grace-period={self.node_monitor_grace}",
            f"--service-account-private-key-file={self.workdir / 'sa.key'}",
            f"--root-ca-file={self.ca_file}",
            "--use-service-account-credentials=true",
        ]

    def scheduler_argv(self) -> list[str]:
        return [
            str(self.bin_dir / "kube-scheduler"),
            f"--kubeconfig={self.kubeconfig}",
            "--leader-elect=false",
            "--secure-port=0",
        ]

    # -- readiness ---------------------------------------------------------------------------

    def get(self, path: str) -> int:
        """The API server's HTTP status for `path` as the admin (0: not answering)."""
        context = ssl.create_default_context(cafile=str(self.ca_file))
        request = urllib.request.Request(
            self.server + path, headers={"Authorization": f"Bearer {self.admin.token}"}
        )
        try:
            with urllib.request.urlopen(request, context=context, timeout=10) as response:
                return int(response.status)
        except urllib.error.HTTPError as exc:
            return exc.code
        except (urllib.error.URLError, OSError):
            return 0


def write_kubeconfig(
    path: Path, server: str, ca_file: Path, token: str, user: str, namespace: str | None = None
) -> None:
    """A kubeconfig (JSON is valid YAML) for `server` with CA verification and a bearer token."""
    context = {"cluster": "tpcbench", "user": user} | (
        {"namespace": namespace} if namespace else {}
    )
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "tpcbench",
                "cluster": {"server": server, "certificate-authority": str(ca_file)},
            }
        ],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": context}],
        "current-context": user,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config, indent=2))
    path.chmod(0o600)


def free_ports(count: int) -> list[int]:
    """`count` distinct TCP ports free on 127.0.0.1 right now (etcd's, the test API's)."""
    sockets = [socket.socket() for _ in range(count)]
    try:
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _write_service_account_keypair(*, private: Path, public: Path) -> None:
    """The key the API server signs ServiceAccount tokens with (RSA: RS256 tokens)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    private.chmod(0o600)
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
