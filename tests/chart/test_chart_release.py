"""`helm install` into the simulated cluster, then what the release's parts may and may not do,
with their own ServiceAccounts: the signer (a real process, the chart's arguments and
account), the servers' certificate requests, discovery; then upgrade and uninstall.

The tests run in file order and share one release.
"""

from __future__ import annotations

import base64
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509
from kubernetes import client
from kubernetes.client.exceptions import ApiException
from kubernetes.config import new_client_from_config

from orchestrator.cluster.pod_exec import run_in_pod
from orchestrator.discovery import KubernetesDiscovery
from orchestrator.discovery.kubernetes import HOST_DN_TEMPLATE_ANNOTATION
from orchestrator.errors import UserError
from tests.support.helm_chart import CHART, Cluster, Helm, release_values, tpcbench_argv

pytestmark = pytest.mark.cluster

NAMESPACE = "tpcb-chart"
RELEASE = "bench"
NODES = {f"chart-node-{i}": f"10.88.1.{i}" for i in range(1, 5)}
LABELLED = ["chart-node-1", "chart-node-2", "chart-node-3"]
LABEL = {"tpc-bench.io/network": "100000"}
FULLNAME = f"{RELEASE}-tpc-bench"

Eventually = Callable[..., Any]


@dataclass
class Release:
    cluster: Cluster
    helm: Helm
    workdir: Path
    signer: subprocess.Popen[bytes] | None = None
    leftovers: list[str] = field(default_factory=list)

    def deployment(self, part: str) -> client.V1Deployment:
        return client.AppsV1Api(self.cluster.api).read_namespaced_deployment(
            f"{FULLNAME}-{part}", NAMESPACE
        )

    def pod_of(self, component: str, node: str | None = None) -> client.V1Pod:
        pods = self.cluster.pods(NAMESPACE, component)
        if node is not None:
            pods = [p for p in pods if p.spec.node_name == node]
        assert len(pods) == 1, [p.metadata.name for p in pods]
        return pods[0]

    def kubeconfig(self, account: str, pod: client.V1Pod | None = None) -> Path:
        path = self.workdir / f"{account}-{time.monotonic_ns()}.kubeconfig"
        return self.cluster.kubeconfig(path, NAMESPACE, f"{FULLNAME}-{account}", pod)

    def secret(self, suffix: str) -> dict[str, str]:
        data = self.cluster.core.read_namespaced_secret(f"{FULLNAME}-{suffix}", NAMESPACE).data
        return dict(data or {})

    def config_map(self, suffix: str) -> dict[str, str]:
        data = self.cluster.core.read_namespaced_config_map(f"{FULLNAME}-{suffix}", NAMESPACE)
        return dict(data.data or {})


def run(argv: list[str], timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture(scope="module")
def release(
    cluster: Cluster, cluster_helm: Helm, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Release]:
    cluster.add_nodes({n: NODES[n] for n in LABELLED}, LABEL)
    cluster.add_nodes({"chart-node-4": NODES["chart-node-4"]}, {})  # not a benchmark node
    cluster.add_volumes("chart-pv", 2)
    installed = Release(cluster, cluster_helm, tmp_path_factory.mktemp("release"))
    try:
        cluster_helm.run(
            "install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--create-namespace",
            "--wait", "--timeout", "5m", *release_values(),
        )  # fmt: skip
        yield installed
    finally:
        if installed.signer is not None and installed.signer.poll() is None:
            installed.signer.send_signal(signal.SIGTERM)
            installed.signer.wait(timeout=30)
        cluster_helm.run("uninstall", RELEASE, "--namespace", NAMESPACE, "--wait", check=False)
        for claim in cluster.core.list_namespaced_persistent_volume_claim(NAMESPACE).items:
            cluster.core.delete_namespaced_persistent_volume_claim(claim.metadata.name, NAMESPACE)
        cluster.core.delete_namespace(NAMESPACE)
        cluster.delete_nodes(list(NODES))
        for i in range(2):
            cluster.core.delete_persistent_volume(f"chart-pv-{i}")


def test_install_puts_one_xrootd_and_one_gridftp_pod_on_each_labelled_node(
    release: Release,
) -> None:
    for component in ("xrootd", "gridftp"):
        pods = release.cluster.pods(NAMESPACE, component)
        assert sorted(p.spec.node_name for p in pods) == LABELLED
        for pod in pods:
            assert pod.spec.host_network is True
            assert pod.status.phase == "Running"
            assert pod.status.host_ip == NODES[pod.spec.node_name]
            ready = {c.type: c.status for c in pod.status.conditions or []}
            assert ready.get("Ready") == "True"
    for part in ("orchestrator", "webapp", "signer"):
        assert release.deployment(part).status.available_replicas == 1


def test_the_signer_publishes_the_ca_and_the_grid_mapfile(release: Release) -> None:
    deployment = release.deployment("signer")
    signer_pod = release.pod_of("signer")
    container = deployment.spec.template.spec.containers[0]
    kubeconfig = release.kubeconfig("signer", signer_pod)
    argv = [*tpcbench_argv(container), f"--kubeconfig={kubeconfig}", "--metrics-port=0"]
    release.signer = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while not release.config_map("grid-mapfile") and time.monotonic() < deadline:
        assert release.signer.poll() is None, release.signer.stderr.read().decode()  # type: ignore[union-attr]
        time.sleep(0.3)
    ca = release.secret("ca")
    assert set(ca) == {"tls.crt", "tls.key"}  # made on first start, kept in the Secret
    certdir = release.config_map("grid-security")
    hashes = [name for name in certdir if name.endswith(".0")]
    assert len(hashes) == 1
    digest = hashes[0][:-2]
    assert {f"{digest}.signing_policy", f"{digest}.namespaces", f"{digest}.r0", "ca.crt"} <= set(
        certdir
    )
    mapfiles = release.config_map("grid-mapfile")
    assert mapfiles["grid-mapfile"] == '"/DC=org/DC=tpc-bench/OU=People/CN=orchestrator" tpcbench\n'
    # XRootD's: the orchestrator by its DN, every host of the CA by the hosts' DN prefix
    assert mapfiles["xrootd-gridmap"].splitlines() == [
        '"/DC=org/DC=tpc-bench/OU=People/CN=orchestrator" tpcbench-orchestrator',
        '"^/DC=org/DC=tpc-bench/OU=Services/CN=" tpcbench-server',
    ]


def write_certdir(release: Release, where: Path) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    for name, content in release.config_map("grid-security").items():
        (where / name).write_text(content)
    return where


def request_host(
    release: Release, pod: client.V1Pod, name: str, ip: str, out: Path
) -> subprocess.CompletedProcess[str]:
    """The server pods' init container, with `pod`'s own token (bound to the pod)."""
    init = release.pod_of("xrootd", "chart-node-1").spec.init_containers[0]
    argv = tpcbench_argv(init, {"NODE_NAME": name, "HOST_IP": ip})
    argv = [a if not a.startswith("--out-dir=") else f"--out-dir={out}" for a in argv]
    kubeconfig = release.kubeconfig("servers", pod)
    return run([*argv, f"--kubeconfig={kubeconfig}", "--timeout=60"])


def test_a_server_pod_gets_a_certificate_for_its_own_node(release: Release, tmp_path: Path) -> None:
    pod = release.pod_of("xrootd", "chart-node-2")
    done = request_host(release, pod, "chart-node-2", NODES["chart-node-2"], tmp_path / "pki")
    assert done.returncode == 0, done.stderr
    cert_path = tmp_path / "pki" / "hostcert.pem"
    assert oct((tmp_path / "pki" / "hostkey.pem").stat().st_mode & 0o777) == "0o600"
    certdir = write_certdir(release, tmp_path / "certificates")
    verified = run(["openssl", "verify", "-CApath", str(certdir), "-crl_check", str(cert_path)])
    assert verified.returncode == 0 and ": OK" in verified.stdout, verified.stdout + verified.stderr
    cert = x509.load_pem_x509_certificate(cert_path.read_bytes())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert san.get_values_for_type(x509.DNSName) == ["chart-node-2"]
    assert [str(a) for a in san.get_values_for_type(x509.IPAddress)] == [NODES["chart-node-2"]]
    # the DN discovery derives from the pods' annotation is the certificate's
    template = pod.metadata.annotations[HOST_DN_TEMPLATE_ANNOTATION]
    subject = "/" + "/".join(reversed(cert.subject.rfc4514_string().split(",")))
    assert subject == template.replace("{node}", "chart-node-2")


@pytest.mark.parametrize(
    ("name", "ip", "reason"),
    [
        ("chart-node-3", NODES["chart-node-3"], "NameMismatch"),  # another node's name
        ("chart-node-1", NODES["chart-node-3"], "AddressMismatch"),  # another node's address
    ],
)
def test_a_request_for_another_node_is_denied_with_a_reason(
    release: Release, tmp_path: Path, name: str, ip: str, reason: str
) -> None:
    pod = release.pod_of("xrootd", "chart-node-1")
    done = request_host(release, pod, name, ip, tmp_path)
    assert done.returncode == 2
    assert "refused" in done.stderr and reason in done.stderr
    assert (
        "runs on node chart-node-1" in done.stderr or "chart-node-1 has InternalIP" in done.stderr
    )
    assert not (tmp_path / "hostcert.pem").exists()


def test_a_pod_on_an_unlabelled_node_is_denied(release: Release, tmp_path: Path) -> None:
    intruder = client.V1Pod(
        metadata=client.V1ObjectMeta(name="intruder", namespace=NAMESPACE),
        spec=client.V1PodSpec(
            node_name="chart-node-4",
            service_account_name=f"{FULLNAME}-servers",
            containers=[client.V1Container(name="c", image="none")],
        ),
    )
    pod = release.cluster.core.create_namespaced_pod(NAMESPACE, intruder)
    try:
        done = request_host(release, pod, "chart-node-4", NODES["chart-node-4"], tmp_path)
        assert done.returncode == 2 and "NotABenchmarkNode" in done.stderr, done.stderr
    finally:
        release.cluster.core.delete_namespaced_pod("intruder", NAMESPACE, grace_period_seconds=0)


def test_a_token_not_bound_to_a_pod_gets_no_host_certificate(
    release: Release, tmp_path: Path
) -> None:
    init = release.pod_of("gridftp", "chart-node-1").spec.init_containers[0]
    argv = tpcbench_argv(init, {"NODE_NAME": "chart-node-1", "HOST_IP": NODES["chart-node-1"]})
    argv = [a if not a.startswith("--out-dir=") else f"--out-dir={tmp_path}" for a in argv]
    done = run([*argv, f"--kubeconfig={release.kubeconfig('servers')}", "--timeout=60"])
    assert done.returncode == 2 and "NotBoundToANode" in done.stderr, done.stderr


def forbidden(kubeconfig: Path, action: Callable[[client.CoreV1Api], object]) -> int:
    api = client.CoreV1Api(new_client_from_config(config_file=str(kubeconfig)))
    try:
        action(api)
    except ApiException as exc:
        return exc.status
    return 200


def test_neither_servers_nor_orchestrator_can_read_the_ca_secret(release: Release) -> None:
    secret = f"{FULLNAME}-ca"
    for account, component in (("servers", "xrootd"), ("orchestrator", "orchestrator")):
        kubeconfig = release.kubeconfig(account, release.cluster.pods(NAMESPACE, component)[0])
        assert (
            forbidden(kubeconfig, lambda api: api.read_namespaced_secret(secret, NAMESPACE)) == 403
        )
        assert forbidden(kubeconfig, lambda api: api.list_namespaced_secret(NAMESPACE)) == 403


def test_without_the_baseline_the_orchestrator_may_not_exec_in_the_server_pods(
    release: Release,
) -> None:
    config = release.kubeconfig("orchestrator", release.pod_of("orchestrator"))
    server = f"{NAMESPACE}/{release.pod_of('xrootd', 'chart-node-1').metadata.name}"
    with pytest.raises(UserError, match=r"may not exec into pod .* \(the chart grants them with"):
        run_in_pod(server, "xrootd", ["true"], 10, api_client=new_client_from_config(str(config)))


def test_discovery_with_the_orchestrator_account_finds_exactly_the_labelled_nodes(
    release: Release,
) -> None:
    kubeconfig = release.kubeconfig("orchestrator", release.pod_of("orchestrator"))
    endpoints = KubernetesDiscovery(kubeconfig=kubeconfig, namespace=NAMESPACE).discover()
    assert [(e.name, e.address) for e in endpoints] == [(n, NODES[n]) for n in LABELLED]
    for endpoint in endpoints:
        assert endpoint.ports == {"https": 8443, "root": 1094, "gridftp": 2811, "probe": 9106}
        assert endpoint.data_root == "/data"
        assert endpoint.host_dn == f"/DC=org/DC=tpc-bench/OU=Services/CN={endpoint.name}"


def test_the_helm_test_discovery_hook_passes(release: Release, cluster_helm: Helm) -> None:
    hooks = yaml.safe_load_all(cluster_helm.run("get", "hooks", RELEASE, "-n", NAMESPACE).stdout)
    pods = [h for h in hooks if h and h["metadata"]["annotations"]["helm.sh/hook"] == "test"]
    assert len(pods) == 2  # both hooks run on real kubelets in test_chart_on_kubelets.py
    discovery = next(p for p in pods if p["spec"]["containers"][0].get("args"))
    assert discovery["spec"]["serviceAccountName"] == f"{FULLNAME}-orchestrator"
    args = discovery["spec"]["containers"][0]["args"]
    kubeconfig = release.kubeconfig("orchestrator", release.pod_of("orchestrator"))
    done = subprocess.run(
        tpcbench_argv(client.V1Container(name="test", args=args)),
        capture_output=True, text=True, timeout=120, check=False,
        env={"KUBECONFIG": str(kubeconfig), "PATH": "/usr/bin:/bin"},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "3 ready node(s)" in done.stdout


def test_the_orchestrator_gets_its_client_certificate_from_the_signer(
    release: Release, tmp_path: Path
) -> None:
    pod = release.pod_of("orchestrator")
    init = pod.spec.init_containers[0]
    argv = [a if not a.startswith("--out-dir=") else f"--out-dir={tmp_path}"
            for a in tpcbench_argv(init)]  # fmt: skip
    done = run([*argv, f"--kubeconfig={release.kubeconfig('orchestrator', pod)}", "--timeout=60"])
    assert done.returncode == 0, done.stderr
    cert = x509.load_pem_x509_certificate((tmp_path / "usercert.pem").read_bytes())
    assert cert.subject.rfc4514_string() == "CN=orchestrator,OU=People,DC=tpc-bench,DC=org"
    # a server pod cannot pass for the orchestrator
    server = release.pod_of("xrootd", "chart-node-1")
    done = run([*argv, f"--kubeconfig={release.kubeconfig('servers', server)}", "--timeout=60"])
    assert done.returncode == 2 and "NotTheOrchestrator" in done.stderr, done.stderr


def test_upgrade_keeps_the_ca_the_token_and_the_database_password(
    release: Release, cluster_helm: Helm
) -> None:
    before = {s: release.secret(s) for s in ("ca", "webapp", "database")}
    assert before["ca"]  # filled by the signer
    cluster_helm.run(
        "upgrade", RELEASE, str(CHART), "--namespace", NAMESPACE, "--wait", "--timeout", "5m",
        *release_values(**{"campaign.transfers": "3"}),
    )  # fmt: skip
    after = {s: release.secret(s) for s in ("ca", "webapp", "database")}
    assert after == before
    ds = client.AppsV1Api(release.cluster.api).read_namespaced_daemon_set(
        f"{FULLNAME}-xrootd", NAMESPACE
    )
    data = next(v for v in ds.spec.template.spec.volumes if v.name == "data")
    assert data.empty_dir.size_limit == str(4 * (16 << 20) + (256 << 20))  # the new K applied
    assert base64.b64decode(after["webapp"]["api-token"])  # generated, not empty


def test_uninstall_removes_everything_but_the_volumes_and_the_database_password(
    release: Release, cluster_helm: Helm, eventually: Eventually
) -> None:
    if release.signer is not None:
        release.signer.send_signal(signal.SIGTERM)
        release.signer.wait(timeout=30)
    release.leftovers.append(release.secret("database")["password"])
    cluster_helm.run("uninstall", RELEASE, "--namespace", NAMESPACE, "--wait")
    core, apps = release.cluster.core, client.AppsV1Api(release.cluster.api)
    rbac = client.RbacAuthorizationV1Api(release.cluster.api)

    def left() -> dict[str, list[str]]:
        names = {
            "daemonsets": apps.list_namespaced_daemon_set(NAMESPACE).items,
            "deployments": apps.list_namespaced_deployment(NAMESPACE).items,
            "statefulsets": apps.list_namespaced_stateful_set(NAMESPACE).items,
            "services": core.list_namespaced_service(NAMESPACE).items,
            "secrets": core.list_namespaced_secret(NAMESPACE).items,
            "configmaps": [
                c
                for c in core.list_namespaced_config_map(NAMESPACE).items
                if c.metadata.name != "kube-root-ca.crt"
            ],
            "serviceaccounts": [
                a
                for a in core.list_namespaced_service_account(NAMESPACE).items
                if a.metadata.name != "default"
            ],
            "clusterroles": [
                r for r in rbac.list_cluster_role().items if FULLNAME in r.metadata.name
            ],
            "clusterrolebindings": [
                b for b in rbac.list_cluster_role_binding().items if FULLNAME in b.metadata.name
            ],
            "roles": rbac.list_namespaced_role(NAMESPACE).items,
            "rolebindings": rbac.list_namespaced_role_binding(NAMESPACE).items,
            "pods": core.list_namespaced_pod(NAMESPACE).items,
        }
        return {kind: [o.metadata.name for o in items] for kind, items in names.items() if items}

    kept = {"secrets": [f"{FULLNAME}-database"]}  # with the volume its database needs it
    eventually(left, lambda found: found == kept, "nothing of the release left but the kept")
    claims = sorted(
        c.metadata.name for c in core.list_namespaced_persistent_volume_claim(NAMESPACE).items
    )
    assert claims == sorted([f"data-{FULLNAME}-postgresql-0", f"{FULLNAME}-spool"])


def test_a_reinstall_under_the_same_name_finds_the_kept_database_password(
    release: Release, cluster_helm: Helm
) -> None:
    assert release.leftovers, "runs after the uninstall test"
    cluster_helm.run(
        "install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--wait", "--timeout", "5m",
        *release_values(),
    )  # fmt: skip
    assert release.secret("database")["password"] == release.leftovers[-1]
    url = base64.b64decode(release.secret("database")["url"]).decode()
    assert base64.b64decode(release.leftovers[-1]).decode() in url
